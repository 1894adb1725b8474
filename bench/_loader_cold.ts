/**
 * The cold start probe of `loader_bench.ts`: in a fresh process, imports
 * the loader as users do (`@cordon/cordon/loader`, which is `loader/mod.ts`),
 * creates it over an empty catalog and runs one module, printing the times
 * as JSON.
 *
 * @module
 */

const start = performance.now();
const { createQuickJSLoader } = await import("../loader/mod.ts");
const { EMPTY_CATALOG } = await import("../catalog/empty_catalog.ts");
using loader = await createQuickJSLoader({ catalog: EMPTY_CATALOG });
const created = performance.now();
const result = await loader.run({ source: "export default 1 + 1;" });
const ran = performance.now();
if (!result.ok || result.value !== 2) throw new Error("the first run failed");
console.log(
  JSON.stringify({ createMs: created - start, firstRunMs: ran - created }),
);
