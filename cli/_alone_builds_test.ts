import assert from "node:assert/strict";
import { emptyBuild, joinBuilds } from "./_alone_builds.ts";
import type { BundleOutput } from "./_npm_bundle.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

function build(
  files: Record<string, string>,
  entryFiles: Record<string, string>,
): BundleOutput {
  return {
    files: new Map(
      Object.entries(files).map(([path, text]) => [path, bytes(text)]),
    ),
    entryFiles: new Map(Object.entries(entryFiles)),
  };
}

Deno.test("joinBuilds() puts each lone build in a folder of its own, passing over a folder the shared build has, and lists entries in the pack's order", () => {
  const shared = build(
    { "alone-1/index.js": "1", "chunk-A.js": "2", "main.js": "3" },
    { ".": "main.js", "./one": "alone-1/index.js" },
  );
  const jessie = build({ "jessie.js": "j", "chunk-A.js": "other" }, {
    "./jessie": "jessie.js",
  });
  const shebang = build({ "shebang.js": "s" }, { "./shebang": "shebang.js" });
  const joined = joinBuilds(
    shared,
    new Map([["./shebang", shebang], ["./jessie", jessie]]),
    [".", "./jessie", "./one", "./shebang"],
  );
  assert.deepEqual([...joined.files.keys()], [
    "alone-1/index.js",
    "alone-2/chunk-A.js",
    "alone-2/jessie.js",
    "alone-3/shebang.js",
    "chunk-A.js",
    "main.js",
  ]);
  assert.equal(
    new TextDecoder().decode(joined.files.get("alone-2/chunk-A.js")),
    "other",
  );
  assert.deepEqual([...joined.entryFiles], [
    [".", "main.js"],
    ["./jessie", "alone-2/jessie.js"],
    ["./one", "alone-1/index.js"],
    ["./shebang", "alone-3/shebang.js"],
  ]);
});

Deno.test("joinBuilds() makes a pack of lone builds only", () => {
  const joined = joinBuilds(
    emptyBuild(),
    new Map([["./a", build({ "a.js": "a" }, { "./a": "a.js" })]]),
    ["./a"],
  );
  assert.deepEqual([...joined.entryFiles], [["./a", "alone-1/a.js"]]);
});
