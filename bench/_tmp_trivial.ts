// usage: deno run -A /tmp/trivial.ts <tree>
const tree = Deno.args[0]!;
const { createQuickJSLoader } = await import(`${tree}/loader/mod.ts`);
const { EMPTY_CATALOG } = await import(`${tree}/catalog/empty_catalog.ts`);
using loader = await createQuickJSLoader({ catalog: EMPTY_CATALOG });
for (let i = 0; i < 500; i++) await loader.run({ source: "export default 1 + 1;" });
const batches: number[] = [];
for (let b = 0; b < 7; b++) {
  const t0 = performance.now();
  for (let i = 0; i < 500; i++) await loader.run({ source: "export default 1 + 1;" });
  batches.push((performance.now() - t0) / 500 * 1000);
}
batches.sort((a, b) => a - b);
console.log(tree, "trivial run µs (median of 7 batches of 500):", batches[3]!.toFixed(1));
