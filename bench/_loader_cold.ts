/**
 * The cold start probe of `loader_bench.ts`: in a fresh process, imports
 * the loader as users do (a static import of `@cordon/cordon/loader`, which
 * is `loader/mod.ts`), creates it over an empty catalog and runs one module,
 * printing the times as JSON.
 *
 * The imports are static, as in `_raw_cold.ts`: a dynamic `import()` makes
 * Deno prepare the module graph a second time when it runs, which cost this
 * probe about 10 ms and raw quickjs-emscripten's about 3 ms. Times count
 * from the process's time origin, so `createMs` includes Deno loading the
 * loader's modules.
 *
 * @module
 */

import { createQuickJSLoader } from "../loader/mod.ts";
import { EMPTY_CATALOG } from "../catalog/empty_catalog.ts";

using loader = await createQuickJSLoader({ catalog: EMPTY_CATALOG });
const created = performance.now();
const result = await loader.run({ source: "export default 1 + 1;" });
const ran = performance.now();
if (!result.ok || result.value !== 2) throw new Error("the first run failed");
console.log(JSON.stringify({ createMs: created, firstRunMs: ran - created }));
