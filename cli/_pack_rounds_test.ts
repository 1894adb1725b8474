import assert from "node:assert/strict";
import type { EntryPoint } from "./_npm_entries.ts";
import { type BuiltPack, settle } from "./_pack_rounds.ts";

Deno.test("settle() tries no other build of an entry the load check ran out of time for, and tries one of an entry that failed", async () => {
  const entries: EntryPoint[] = [
    {
      subpath: ".",
      file: "a.js",
      alternatives: ["a.node.js"],
      browserFiles: [],
      notes: [],
    },
    {
      subpath: "./x",
      file: "x.js",
      alternatives: ["x.node.js"],
      browserFiles: [],
      notes: [],
    },
  ];
  const built: string[][] = [];
  const build = (some: readonly EntryPoint[]): Promise<BuiltPack> => {
    built.push(some.map((entry) => entry.file));
    const failing = some.filter((entry) => !entry.file.includes(".node."));
    return Promise.resolve({
      files: [],
      modules: some.length,
      bytes: 0,
      checks: some.map((entry) => ({
        subpath: entry.subpath,
        problems: failing.includes(entry) ? ["it failed"] : [],
        warnings: [],
      })),
      retryAlone: new Set(),
      unchecked: new Set(
        failing.filter((entry) => entry.subpath === ".")
          .map((entry) => entry.subpath),
      ),
    });
  };
  const settled = await settle(build, entries, false);
  assert.deepEqual(built, [["a.js", "x.js"], ["x.node.js"]]);
  assert.deepEqual(
    settled.checks.map((check) => [check.subpath, check.problems]),
    [[".", ["it failed"]], ["./x", []]],
  );
});
