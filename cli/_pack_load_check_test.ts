import assert from "node:assert/strict";
import { loadCheck, LoadCheckBudget } from "./_pack_load_check.ts";

/** Writes pack `name` into `dir`: one module per subpath, with its source. */
async function writePack(
  dir: string,
  name: string,
  modules: Record<string, string>,
): Promise<void> {
  const folder = `${dir}/${name}`;
  await Deno.mkdir(folder, { recursive: true });
  const exports: Record<string, string> = {};
  for (const [subpath, source] of Object.entries(modules)) {
    const file = subpath === "." ? "index.js" : `${subpath.slice(2)}.js`;
    exports[subpath] = `./${file}`;
    await Deno.writeTextFile(`${folder}/${file}`, source);
  }
  await Deno.writeTextFile(
    `${folder}/package.json`,
    JSON.stringify({ name, version: "1.0.0", cordon: { exports } }),
  );
}

Deno.test("loadCheck() spends a budget on entries whose top level never ends that does not grow with their number: each is refused at the limit of one entry, those past the budget as not checked, and an entry that loads still loads", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const loops = "for (;;) {}\nexport {};\n";
    await writePack(dir, "loops", {
      ".": "export const one = 1;\n",
      "./b": loops,
      "./c": loops,
      "./d": loops,
      "./e": loops,
    });
    // The import of all entries and each of ./b and ./c may take 300 ms;
    // ./d gets what is left of 700 ms, ./e nothing.
    const budget = new LoadCheckBudget({
      batchTimeoutMs: 300,
      entryTimeoutMs: 300,
      aloneBudgetMs: 700,
    });
    const subpaths = [".", "./b", "./c", "./d", "./e"];
    const failures = await loadCheck(dir, "loops", subpaths, budget);
    assert.deepEqual([...failures.keys()], subpaths.slice(1));
    for (const subpath of ["./b", "./c"]) {
      assert.match(
        failures.get(subpath)!.problem,
        /^importing it in the sandbox fails with TIMEOUT: its top level does not finish within 300 ms, the load check's limit for one entry/,
      );
    }
    assert.match(
      failures.get("./e")!.problem,
      /^not checked: the load check's 700 ms for importing this package's entries one by one ran out on the entries before it; pack it by itself with --subpaths$/,
    );
    for (const failure of failures.values()) {
      assert.equal(failure.mayWorkAlone, false);
    }
    // Spent, the budget still lets entries that load together pass, and
    // refuses the rest unchecked instead of running them.
    assert.deepEqual(await loadCheck(dir, "loops", ["."], budget), new Map());
    const after = await loadCheck(dir, "loops", [".", "./b"], budget);
    assert.match(after.get(".")!.problem, /^not checked: /);
    assert.match(after.get("./b")!.problem, /^not checked: /);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
