import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  type PackManifest,
  type PackManifestInput,
  PackManifestSchema,
  PackSummarySchema,
} from "../protocol/mod.ts";
import { moduleIdFor } from "./digest.ts";
import { buildPackGraph, moduleGraphDigest, type PackGraph } from "./graph.ts";

function nodeSri(text: string): string {
  return `sha256-${createHash("sha256").update(text).digest("base64")}`;
}

function manifestOf(cordon: PackManifestInput["cordon"]): PackManifest {
  return PackManifestSchema.parse({
    name: "@acme/chain",
    version: "1.0.0",
    cordon,
  });
}

const CHAIN = manifestOf({
  exports: { ".": "./a.js", "./other": "./d.js" },
  internal: ["./lib/b.js", "./lib/c.js", "./lib/unused.js"],
});

const CHAIN_SOURCES: Record<string, string> = {
  "./a.js":
    'import { b } from "./lib/b.js";\nexport const a = () => b() + 1;\n',
  "./lib/b.js":
    'import { c } from "./c.js";\nexport const b = () => c() * 2;\n',
  "./lib/c.js": "export const c = () => 20;\n",
  "./d.js": "export const d = 4;\n",
  "./lib/unused.js": "export const unused = true;\n",
};

async function build(
  manifest: PackManifest,
  sources: Record<string, string>,
): Promise<PackGraph> {
  const result = await buildPackGraph(manifest, sources);
  if (!result.ok) throw new Error(`expected a graph: ${result.message}`);
  return result.graph;
}

function graphDigests(graph: PackGraph): Record<string, string> {
  return Object.fromEntries(
    graph.summary.modules.map((m) => [m.path, m.graphDigest]),
  );
}

Deno.test("buildPackGraph() lists every declared module with ids, digests and dependencies", async () => {
  const graph = await build(CHAIN, CHAIN_SOURCES);
  assert.equal(PackSummarySchema.safeParse(graph.summary).success, true);
  assert.deepEqual(graph.sources, CHAIN_SOURCES);
  const byPath = new Map(graph.summary.modules.map((m) => [m.path, m]));
  assert.deepEqual(graph.summary.modules.map((m) => m.path), [
    "./a.js",
    "./d.js",
    "./lib/b.js",
    "./lib/c.js",
    "./lib/unused.js",
  ]);
  for (const [path, source] of Object.entries(CHAIN_SOURCES)) {
    const module = byPath.get(path)!;
    assert.equal(module.digest, nodeSri(source));
    assert.equal(module.id, await moduleIdFor("@acme/chain", "1.0.0", path));
  }
  assert.deepEqual(byPath.get("./a.js")!.exportedAs, ["."]);
  assert.deepEqual(byPath.get("./d.js")!.exportedAs, ["./other"]);
  assert.deepEqual(byPath.get("./lib/c.js")!.exportedAs, []);
  assert.deepEqual(byPath.get("./a.js")!.dependencyIds, [
    byPath.get("./lib/b.js")!.id,
  ]);
  assert.deepEqual(byPath.get("./lib/b.js")!.dependencyIds, [
    byPath.get("./lib/c.js")!.id,
  ]);
});

Deno.test("buildPackGraph() graph digests equal an independent computation", async () => {
  const graph = await build(CHAIN, CHAIN_SOURCES);
  const digest = (path: string) => nodeSri(CHAIN_SOURCES[path]!);
  const expectedA = nodeSri(JSON.stringify([
    ["./a.js", digest("./a.js")],
    ["./lib/b.js", digest("./lib/b.js")],
    ["./lib/c.js", digest("./lib/c.js")],
  ]));
  const expectedD = nodeSri(JSON.stringify([["./d.js", digest("./d.js")]]));
  assert.equal(graphDigests(graph)["./a.js"], expectedA);
  assert.equal(graphDigests(graph)["./d.js"], expectedD);
  assert.equal(
    graph.summary.graphDigest,
    nodeSri(JSON.stringify([[".", expectedA], ["./other", expectedD]])),
  );
});

Deno.test("buildPackGraph() changes every graph digest above a changed deep dependency", async () => {
  const before = await build(CHAIN, CHAIN_SOURCES);
  const after = await build(CHAIN, {
    ...CHAIN_SOURCES,
    "./lib/c.js": "export const c = () => 21;\n",
  });
  const [b, a] = [graphDigests(before), graphDigests(after)];
  for (const path of ["./a.js", "./lib/b.js", "./lib/c.js"]) {
    assert.notEqual(a[path], b[path], path);
  }
  assert.equal(a["./d.js"], b["./d.js"]);
  assert.notEqual(after.summary.graphDigest, before.summary.graphDigest);
});

Deno.test("buildPackGraph() keeps graph digests when an unrelated module changes", async () => {
  const before = await build(CHAIN, CHAIN_SOURCES);
  const after = await build(CHAIN, {
    ...CHAIN_SOURCES,
    "./lib/unused.js": "export const unused = false;\n",
  });
  const [b, a] = [graphDigests(before), graphDigests(after)];
  for (const path of ["./a.js", "./d.js", "./lib/b.js", "./lib/c.js"]) {
    assert.equal(a[path], b[path], path);
  }
  assert.notEqual(a["./lib/unused.js"], b["./lib/unused.js"]);
  assert.equal(after.summary.graphDigest, before.summary.graphDigest);
});

Deno.test("buildPackGraph() handles import cycles and covers both modules", async () => {
  const manifest = manifestOf({
    exports: { ".": "./x.js" },
    internal: ["./y.js"],
  });
  const sources = {
    "./x.js": 'import "./y.js"; export const x = 1;',
    "./y.js": 'import "./x.js"; export const y = 2;',
  };
  const graph = await build(manifest, sources);
  const changed = await build(manifest, {
    ...sources,
    "./y.js": 'import "./x.js"; export const y = 3;',
  });
  assert.notEqual(
    graphDigests(changed)["./x.js"],
    graphDigests(graph)["./x.js"],
  );
  assert.equal(
    graphDigests(graph)["./x.js"],
    await moduleGraphDigest(
      { path: "./x.js", digest: nodeSri(sources["./x.js"]) },
      [{ path: "./y.js", digest: nodeSri(sources["./y.js"]) }],
    ),
  );
});

Deno.test("buildPackGraph() lists a file once with every subpath that exports it", async () => {
  const manifest = manifestOf({ exports: { "./z": "./m.js", ".": "./m.js" } });
  const graph = await build(manifest, { "./m.js": "export {};" });
  assert.equal(graph.summary.modules.length, 1);
  assert.deepEqual(graph.summary.modules[0]!.exportedAs, [".", "./z"]);
});

Deno.test("buildPackGraph() lists each file's subpaths in order when a manifest maps thousands of subpaths to few files", async () => {
  const exports: Record<string, string> = {};
  for (let i = 4999; i >= 0; i--) {
    exports[`./s${i}`] = i % 2 === 0 ? "./even.js" : "./odd.js";
  }
  const graph = await build(manifestOf({ exports }), {
    "./even.js": "export {};",
    "./odd.js": "export {};",
  });
  const byPath = new Map(graph.summary.modules.map((m) => [m.path, m]));
  const expected = (parity: number) =>
    Object.keys(exports).filter((subpath) =>
      Number(subpath.slice(3)) % 2 === parity
    ).sort();
  assert.deepEqual(byPath.get("./even.js")!.exportedAs, expected(0));
  assert.deepEqual(byPath.get("./odd.js")!.exportedAs, expected(1));
});

Deno.test("buildPackGraph() rejects a pack with the code of its first bad module", async (t) => {
  const manifest = manifestOf({
    exports: { ".": "./index.js" },
    internal: ["./lib/ok.js"],
  });
  const cases: [string, string, RegExp][] = [
    [
      'import "../outside.js";',
      "PACK_IMPORT_ESCAPE",
      /imports a specifier that leaves the pack/,
    ],
    [
      'import "lodash";',
      "PACK_IMPORT_ESCAPE",
      /imports "lodash", which is a bare specifier/,
    ],
    [
      'import "/etc/passwd.js";',
      "PACK_IMPORT_ESCAPE",
      /an absolute path or URL/,
    ],
    [
      'import "https://x.test/a.js";',
      "PACK_IMPORT_ESCAPE",
      /an absolute path or URL/,
    ],
    [
      'import "./lib/secret.js";',
      "PACK_IMPORT_UNDECLARED",
      /"\.\/lib\/secret\.js", which names a file the manifest does not list/,
    ],
    [
      'await import("./lib/ok.js");',
      "PACK_DYNAMIC_IMPORT",
      /uses import\(\) on line 1/,
    ],
    ['const fs = require("fs");', "PACK_DYNAMIC_IMPORT", /calls require/],
    [
      'import x from "./lib/ok.js" with { type: "json" };',
      "IMPORT_ATTRIBUTES",
      /attributes/,
    ],
  ];
  for (const [source, code, message] of cases) {
    await t.step(`${code}: ${source}`, async () => {
      const result = await buildPackGraph(manifest, {
        "./index.js": source,
        "./lib/ok.js": "export {};",
      });
      assert.equal(result.ok, false);
      if (result.ok) return;
      assert.equal(result.code, code);
      assert.match(
        result.message,
        /^Cannot use pack "@acme\/chain": \.\/index\.js /,
      );
      assert.match(result.message, message);
      assert.doesNotMatch(result.message, /\.$|\/etc\/passwd|x\.test/);
    });
  }
});

Deno.test("buildPackGraph() reports a declared file without a source as missing", async () => {
  const result = await buildPackGraph(
    CHAIN,
    new Map([["./a.js", "export {};"]]),
  );
  assert.equal(result.ok, false);
  assert.equal(!result.ok && result.code, "PACK_FILE_MISSING");
  assert.match(!result.ok ? result.message : "", /\.\/d\.js is missing/);
});

Deno.test("buildPackGraph() refuses a pack whose modules chain through more links than a catalog follows", async () => {
  const count = 1500;
  const file = (i: number) => `./m${i}.js`;
  const manifest = manifestOf({
    exports: { ".": file(0) },
    internal: Array.from({ length: count - 1 }, (_, i) => file(i + 1)),
  });
  const sources = Object.fromEntries(
    Array.from({ length: count }, (_, i) => [
      file(i),
      i + 1 < count ? `import "${file(i + 1)}";\n` : "export {};\n",
    ]),
  );
  const result = await buildPackGraph(manifest, sources);
  assert.equal(!result.ok && result.code, "PACK_GRAPH_TOO_LARGE");
  assert.match(
    !result.ok ? result.message : "",
    /^Cannot use pack "@acme\/chain": its modules import each other through more than 1048576 links; bundle the pack/,
  );
});

// The lexer reads `/ 1; import "./` as a regular expression after a
// function body, and the `"` that follows as the start of a string that the
// comment's `"` ends: it sees no import where the engines see one.
const HIDING =
  'export const f = function () {} / 1; import "./lib/ok.js"; // "';

Deno.test("buildPackGraph() records an import the lexer misreads after a function body, so the graph digest covers what the module runs", async () => {
  const manifest = manifestOf({
    exports: { ".": "./index.js" },
    internal: ["./lib/ok.js"],
  });
  const sources = {
    "./index.js": `${HIDING}\nexport default f;\n`,
    "./lib/ok.js": "globalThis.ran = 1;\n",
  };
  const before = await build(manifest, sources);
  const byPath = new Map(before.summary.modules.map((m) => [m.path, m]));
  assert.deepEqual(byPath.get("./index.js")!.dependencyIds, [
    byPath.get("./lib/ok.js")!.id,
  ]);
  const after = await build(manifest, {
    ...sources,
    "./lib/ok.js": "globalThis.ran = 2;\n",
  });
  assert.notEqual(after.summary.graphDigest, before.summary.graphDigest);
});

Deno.test("buildPackGraph() records an import the lexer misreads after a spaced property, an escaped name or extends", async () => {
  const manifest = manifestOf({
    exports: { ".": "./index.js" },
    internal: ["./lib/ok.js"],
  });
  for (
    const hiding of [
      'const o = { return: 1 }; o. return / 1; import "./lib/ok.js"; // "',
      'const \\u{61}await = 1; \\u{61}await / 1; import "./lib/ok.js"; // "',
      "class A extends /'/.constructor {} import \"./lib/ok.js\"; // '",
    ]
  ) {
    const { summary } = await build(manifest, {
      "./index.js": `${hiding}\nexport default 1;\n`,
      "./lib/ok.js": "globalThis.ran = 1;\n",
    });
    const byPath = new Map(summary.modules.map((m) => [m.path, m]));
    assert.deepEqual(byPath.get("./index.js")!.dependencyIds, [
      byPath.get("./lib/ok.js")!.id,
    ], hiding);
  }
});

Deno.test("buildPackGraph() records the module a re-export names after a spaced member named import, where the lexer takes its exported name for the specifier", async () => {
  const manifest = manifestOf({
    exports: { ".": "./index.js" },
    internal: ["./lib/ok.js", "./lib/secret.js"],
  });
  const { summary } = await build(manifest, {
    "./index.js": "const o = { import: 1 }; o. import / 1;\n" +
      'export * as "./lib/ok.js" from "./lib/secret.js";\nexport default 1;\n',
    "./lib/ok.js": "export const ok = 1;\n",
    "./lib/secret.js": "export const secret = 1;\n",
  });
  const byPath = new Map(summary.modules.map((m) => [m.path, m]));
  assert.deepEqual(byPath.get("./index.js")!.dependencyIds, [
    byPath.get("./lib/secret.js")!.id,
  ]);
});

Deno.test("buildPackGraph() refuses what the lexer misreads after a function body as it refuses it in plain sight", async () => {
  const manifest = manifestOf({
    exports: { ".": "./index.js" },
    internal: ["./lib/ok.js"],
  });
  const cases: [string, string, RegExp][] = [
    [
      HIDING.replace("./lib/ok.js", "./lib/secret.js"),
      "PACK_IMPORT_UNDECLARED",
      /names a file the manifest does not list/,
    ],
    [
      HIDING.replace('import "./lib/ok.js"', 'import("./lib/ok.js")'),
      "PACK_DYNAMIC_IMPORT",
      /uses import\(\) on line 1/,
    ],
    // `|>` is no operator: the module does not parse.
    [
      `${HIDING}\nexport const p = 1 |> f;`,
      "PACK_MODULE_SYNTAX",
      /is not a valid ES module: Unexpected token at line 2, column 21/,
    ],
  ];
  for (const [source, code, message] of cases) {
    const result = await buildPackGraph(manifest, {
      "./index.js": source,
      "./lib/ok.js": "export {};",
    });
    assert.equal(result.ok ? "ok" : result.code, code, source);
    assert.match(result.ok ? "" : result.message, message);
  }
});

Deno.test("buildPackGraph() quotes a refused specifier with its control and bidi characters escaped", async () => {
  const manifest = PackManifestSchema.parse({
    name: "evil",
    version: "1.0.0",
    cordon: { exports: { ".": "./index.js" } },
  });
  const result = await buildPackGraph(manifest, {
    "./index.js": 'import "left-pad\\u009b2J\\u202e\\u2028";\n',
  });
  assert.equal(result.ok, false);
  if (result.ok) return;
  assert.ok(
    result.message.includes(String.raw`"left-pad\u009b2J\u202e\u2028"`),
    result.message,
  );
  assert.doesNotMatch(result.message, /[\u009b\u202e\u2028]/);
});
