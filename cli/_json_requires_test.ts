import assert from "node:assert/strict";
import { withJsonRequiresNamed } from "./_json_requires.ts";
import type { TarFile } from "./_tar.ts";

function filesOf(files: Record<string, string | Uint8Array<ArrayBuffer>>) {
  return Object.entries(files).map(([path, content]): TarFile => ({
    path,
    bytes: typeof content === "string"
      ? new TextEncoder().encode(content)
      : content,
  }));
}

function textOf(files: TarFile[], path: string): string {
  return new TextDecoder().decode(files.find((f) => f.path === path)!.bytes);
}

Deno.test("withJsonRequiresNamed() names the JSON file Node's require loads, a folder's index.json too", () => {
  const files = withJsonRequiresNamed(filesOf({
    "lib/index.js":
      "module.exports = [require('../data'), require(\"./table\"), require( './table/' ), require(\"..\")];\n",
    "data.json": "{}",
    "lib/table/index.json": "[]",
    "index.json": "1",
  }));
  assert.equal(
    textOf(files, "lib/index.js"),
    "module.exports = [require('../data.json'), require(\"./table/index.json\"), require( './table/index.json' ), require(\"../index.json\")];\n",
  );
});

Deno.test("withJsonRequiresNamed() leaves a require Node resolves to another file, or that climbs out of the package, as it is", () => {
  const source =
    'require("./both"); require("./exact"); require("./dir"); require("./own"); require("../../outside"); require("./missing"); require("pkg/data");\n';
  const input = filesOf({
    "lib/a.js": source,
    "lib/both.js": "",
    "lib/both.json": "{}",
    "lib/exact": "",
    "lib/exact.json": "{}",
    "lib/dir/index.js": "",
    "lib/dir/index.json": "{}",
    "lib/own/package.json": '{"main":"main.js"}',
    "lib/own/index.json": "{}",
    "outside.json": "{}",
  });
  const files = withJsonRequiresNamed(input);
  assert.equal(textOf(files, "lib/a.js"), source);
  assert.equal(files[0], input[0]);
});

Deno.test("withJsonRequiresNamed() leaves ES modules and files that are not UTF-8 byte for byte", () => {
  const latin1 = new Uint8Array([
    ...new TextEncoder().encode('require("./data"); // '),
    0xe9,
  ]);
  const input = filesOf({
    "a.mjs": 'require("./data");\n',
    "b.js": latin1,
    "data.json": "{}",
  });
  const files = withJsonRequiresNamed(input);
  assert.equal(files[0], input[0]);
  assert.equal(files[1], input[1]);
});

Deno.test("withJsonRequiresNamed() takes a require of . or .. for its folder, as Node does, never for a JSON file beside it", () => {
  // Node loads lib/index.js for both, not lib.json.
  const source = 'require("."); require("..");\n';
  const input = filesOf({
    "lib/a.js": source,
    "lib/sub/b.js": source,
    "lib.json": "{}",
    "lib/sub.json": "{}",
    "lib/index.js": "",
  });
  const files = withJsonRequiresNamed(input);
  assert.equal(textOf(files, "lib/a.js"), source);
  assert.equal(textOf(files, "lib/sub/b.js"), source);
});

Deno.test("withJsonRequiresNamed() names the JSON file Node's require loads for a package of the tree by its name, the nearest one up the folders", () => {
  const source =
    'require("ids"); require("ids/deprecated"); require("@s/list/data/"); require("near");\n';
  const placed = new Map([
    ["node_modules/ids", {
      manifest: { name: "ids" },
      files: filesOf({ "index.json": "[]", "deprecated.json": "[]" }),
    }],
    ["node_modules/@s/list", {
      manifest: { name: "@s/list" },
      files: filesOf({ "data/index.json": "{}" }),
    }],
    ["node_modules/near", {
      manifest: { name: "near" },
      files: filesOf({ "index.js": "" }),
    }],
    ["node_modules/app/node_modules/near", {
      manifest: { name: "near" },
      files: filesOf({ "index.json": "1" }),
    }],
  ]);
  const files = withJsonRequiresNamed(filesOf({ "lib/a.js": source }), {
    dir: "node_modules/app",
    placed,
  });
  assert.equal(
    textOf(files, "lib/a.js"),
    'require("ids/index.json"); require("ids/deprecated.json"); require("@s/list/data/index.json"); require("near/index.json");\n',
  );
});

Deno.test("withJsonRequiresNamed() leaves a require of a package whose exports or main decide, which loads JavaScript, or which the tree lacks, as it is", () => {
  const source =
    'require("mapped"); require("mained"); require("js"); require("js/data.js"); require("missing"); require("node:fs");\n';
  const placed = new Map([
    ["node_modules/mapped", {
      manifest: { name: "mapped", exports: "./index.json" },
      files: filesOf({ "index.json": "[]" }),
    }],
    ["node_modules/mained", {
      manifest: { name: "mained", main: "lib" },
      files: filesOf({ "index.json": "[]" }),
    }],
    ["node_modules/js", {
      manifest: { name: "js" },
      files: filesOf({ "index.js": "", "index.json": "[]", "data.js": "" }),
    }],
  ]);
  const input = filesOf({ "a.js": source });
  const files = withJsonRequiresNamed(input, {
    dir: "node_modules/app",
    placed,
  });
  assert.equal(files[0], input[0]);
});

Deno.test("withJsonRequiresNamed() names the JSON file of a require that ends in a long run of slashes, and of a package required from deep in the tree", () => {
  const slashes = "/".repeat(50_000);
  const deep = Array.from({ length: 500 }, (_, i) => `d${i % 10}`).join("/");
  const files = withJsonRequiresNamed(
    filesOf({
      "a.js": `require("./table${slashes}"); require("./data${slashes}x");\n`,
      "table/index.json": "[]",
      [`${deep}/b.js`]: 'require("ids"); require("@s/ids");\n',
    }),
    {
      dir: "node_modules/p",
      placed: new Map([
        ["node_modules/ids", {
          manifest: {},
          files: filesOf({ "index.json": "[]" }),
        }],
        ["node_modules/@s/ids", { manifest: { main: "x.js" }, files: [] }],
      ]),
    },
  );
  assert.equal(
    textOf(files, "a.js"),
    `require("./table/index.json"); require("./data${slashes}x");\n`,
  );
  assert.equal(
    textOf(files, `${deep}/b.js`),
    'require("ids/index.json"); require("@s/ids");\n',
  );
});
