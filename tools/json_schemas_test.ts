/**
 * The published JSON Schemas (`schemas/`) as a client on another platform
 * reads them: with ajv's Draft 2020-12 validator in strict mode, never with
 * zod. Each schema must compile there, accept what cordon really sends, and
 * refuse what cordon's zod schema refuses, and the reverse.
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { Ajv2020 } from "ajv/dist/2020.js";
import { createDiskCatalog } from "../catalog/disk_catalog.ts";
import { planStagedTree } from "../catalog/stage.ts";
import { createDeliveryHandler } from "../delivery/handler.ts";
import { createHostPluginModule } from "../plugin/host_plugin_module.ts";
import { createQuickJSLoader } from "../loader/mod.ts";
import { EMPTY_CATALOG } from "../catalog/mod.ts";
import { renderSchemas, SCHEMAS as ZOD } from "./write_schemas.ts";
import * as protocol from "../protocol/mod.ts";

const SCHEMAS_DIR = new URL("../schemas/", import.meta.url);
const FIXTURE_PACKS = new URL("../fixtures/packs/", import.meta.url);
const DIGEST = "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=";

type Validate = (value: unknown) => boolean;

/** Compiles every committed schema; strict mode throws on anything unknown. */
async function compileAll(): Promise<Map<string, Validate>> {
  const warnings: unknown[][] = [];
  const logger = {
    log: () => {},
    warn: (...args: unknown[]) => warnings.push(args),
    error: (...args: unknown[]) => warnings.push(args),
  };
  const ajv = new Ajv2020({ strict: true, logger });
  const validators = new Map<string, Validate>();
  for (const name of Object.keys(ZOD)) {
    const text = await Deno.readTextFile(new URL(`${name}.json`, SCHEMAS_DIR));
    const validate = ajv.compile(JSON.parse(text));
    validators.set(name, (value) => validate(value) as boolean);
  }
  assert.deepEqual(warnings, []);
  return validators;
}

const validators = await compileAll();

/** Whether ajv accepts the value as it crosses the wire: as JSON text. */
function ajvAccepts(name: string, value: unknown): boolean {
  return validators.get(name)!(JSON.parse(JSON.stringify(value)));
}

function assertPublishedAccepts(name: string, value: unknown): void {
  assert.equal(
    ajvAccepts(name, value),
    true,
    `schemas/${name}.json refuses ${JSON.stringify(value).slice(0, 300)}`,
  );
}

Deno.test("every published schema names every wire shape and compiles in ajv's strict mode", () => {
  assert.deepEqual(
    Object.keys(renderSchemas()).sort(),
    Object.keys(ZOD).map((name) => `${name}.json`).sort(),
  );
  assert.equal(validators.size, Object.keys(ZOD).length);
});

Deno.test("every pattern of a published schema is a regular expression with the u flag", async () => {
  const patterns = new Set<string>();
  const collect = (node: unknown): void => {
    if (typeof node !== "object" || node === null) return;
    for (const [key, inner] of Object.entries(node)) {
      if (key === "pattern" && typeof inner === "string") patterns.add(inner);
      collect(inner);
    }
  };
  for (const name of Object.keys(ZOD)) {
    collect(JSON.parse(
      await Deno.readTextFile(new URL(`${name}.json`, SCHEMAS_DIR)),
    ));
  }
  assert.ok(patterns.size > 5);
  for (const pattern of patterns) {
    assert.doesNotThrow(() => new RegExp(pattern, "u"), pattern);
  }
});

/** Every object node of the published schemas, each schema's root first. */
async function publishedNodes(): Promise<Record<string, unknown>[]> {
  const nodes: Record<string, unknown>[] = [];
  const collect = (node: unknown): void => {
    if (typeof node !== "object" || node === null) return;
    if (!Array.isArray(node)) nodes.push(node as Record<string, unknown>);
    for (const inner of Object.values(node)) collect(inner);
  };
  for (const name of Object.keys(ZOD)) {
    collect(JSON.parse(
      await Deno.readTextFile(new URL(`${name}.json`, SCHEMAS_DIR)),
    ));
  }
  return nodes;
}

/** Every node of the published schemas that holds a pattern. */
async function patternNodes(): Promise<{ pattern: string; not?: unknown }[]> {
  return (await publishedNodes()).filter((node) =>
    typeof node.pattern === "string"
  ) as { pattern: string; not?: unknown }[];
}

/** The escapes of a pattern: `\\d` is one, `\\\\d` a backslash then `d`. */
function escapesOf(pattern: string): string[] {
  const escapes: string[] = [];
  for (let i = 0; i < pattern.length; i++) {
    if (pattern[i] === "\\") escapes.push(pattern[++i] ?? "");
  }
  return escapes;
}

Deno.test("every published pattern means the same in Python's regular expressions as in ECMA-262", async () => {
  const nodes = await patternNodes();
  assert.ok(nodes.length > 20);
  for (const node of nodes) {
    // \d, \w, \s and \b are Unicode-wide in Python's re: [0-9] instead.
    assert.deepEqual(
      escapesOf(node.pattern).filter((escape) => /^[dDwWsSbB]$/.test(escape)),
      [],
      node.pattern,
    );
    // Python's $ matches before a final newline; RE2 has no lookahead, so
    // the schema refuses that newline in a second keyword.
    if (node.pattern.endsWith("$") && node.pattern !== "\\n$") {
      assert.deepEqual(node.not, { pattern: "\\n$" }, node.pattern);
    }
  }
  assert.deepEqual(escapesOf("a\\\\d\\d"), ["\\", "d"]);
  const moduleId = validators.get("module_id")!;
  assert.equal(moduleId("mIndex_01"), true);
  assert.equal(moduleId("mIndex_01\n"), false);
});

Deno.test("every number a published schema admits is finite, as zod's numbers are, with a bound on each side", async () => {
  // Python's json reads 1e400 as inf and a 400-digit integer as itself;
  // both are numbers to its jsonschema, so only a bound refuses them.
  const isNumber = (type: unknown) =>
    type === "number" || (Array.isArray(type) && type.includes("number"));
  const unbounded = (await publishedNodes()).filter((node) =>
    isNumber(node.type) && node.const === undefined &&
    !((node.minimum !== undefined || node.exclusiveMinimum !== undefined) &&
      (node.maximum !== undefined || node.exclusiveMaximum !== undefined))
  );
  assert.deepEqual(unbounded, []);
});

Deno.test("the published schemas accept the fixture packs' manifests", async () => {
  for (
    const pack of [
      "greet",
      "@cordon-fixtures/clock",
      "@cordon-fixtures/math",
      "@cordon-fixtures/probe",
    ]
  ) {
    const manifest = await Deno.readTextFile(
      new URL(`${pack}/package.json`, FIXTURE_PACKS),
    );
    assertPublishedAccepts("pack_manifest", JSON.parse(manifest));
  }
});

/** A copy of the fixture packs with one pack discovery rejects. */
async function packsWithBrokenOne(): Promise<string> {
  const dir = await Deno.makeTempDir();
  const source = fileURLToPath(FIXTURE_PACKS);
  for (const pack of ["greet", "@cordon-fixtures/math"]) {
    await Deno.mkdir(`${dir}/${pack}/lib`, { recursive: true });
    for (
      const file of ["package.json", "index.js", "trig.js", "lib/round.js"]
    ) {
      await Deno.copyFile(`${source}${pack}/${file}`, `${dir}/${pack}/${file}`)
        .catch((error) => {
          if (!(error instanceof Deno.errors.NotFound)) throw error;
        });
    }
  }
  await Deno.mkdir(`${dir}/broken`);
  await Deno.writeTextFile(
    `${dir}/broken/package.json`,
    JSON.stringify({ name: "broken", version: "not semver" }),
  );
  return dir;
}

Deno.test("the published schemas accept what a disk catalog, its delivery handler and staging write", async () => {
  const packs = await packsWithBrokenOne();
  try {
    const indexPath = `${packs}.index`;
    const catalog = await createDiskCatalog(packs, { indexPath });
    const handle = createDeliveryHandler(catalog);
    const base = "http://localhost/api/sandbox-modules";
    const listing = await (await handle(new Request(base))).json();
    assertPublishedAccepts("catalog_listing", listing);
    assert.equal(listing.packs.length, 2);
    for (const pack of listing.packs) {
      assertPublishedAccepts("staged_pack", pack);
      const query = `${base}?packs=${encodeURIComponent(pack.name)}`;
      assertPublishedAccepts(
        "catalog_listing",
        await (await handle(new Request(query))).json(),
      );
      for (const module of pack.modules) {
        assertPublishedAccepts(
          "authorized_delivery",
          await catalog.authorizeDelivery(module.id),
        );
      }
    }
    assertPublishedAccepts(
      "delivery_refusal",
      await catalog.authorizeDelivery("m0"),
    );
    for (
      const [url, method] of [
        [`${base}/a%2fb`, "GET"],
        [`${base}/m0`, "GET"],
        [`${base}/m0`, "POST"],
        [`${base}?packs=..%2Fx`, "GET"],
      ]
    ) {
      const response = await handle(new Request(url!, { method }));
      assert.equal(
        response.headers.get("content-type"),
        protocol.PROBLEM_CONTENT_TYPE,
      );
      assertPublishedAccepts("problem", await response.json());
    }
    const [header, ...lines] = (await Deno.readTextFile(indexPath))
      .split("\n").filter((line) => line !== "").map((line) =>
        JSON.parse(line)
      );
    assertPublishedAccepts("discovery_index_header", header);
    assert.equal(lines.length, 3);
    for (const line of lines) {
      assertPublishedAccepts("discovery_index_pack", line);
    }
    const plan = await planStagedTree(packs);
    assertPublishedAccepts("staged_index", plan.index);
    for (const [path, bytes] of plan.files) {
      if (!path.startsWith("packs/")) continue;
      assertPublishedAccepts(
        "staged_pack",
        JSON.parse(new TextDecoder().decode(bytes)),
      );
    }
    assert.equal(plan.diagnostics.length, 1);
    assertPublishedAccepts("pack_diagnostic", plan.diagnostics[0]);
    await Deno.remove(indexPath);
  } finally {
    await Deno.remove(packs, { recursive: true });
  }
});

Deno.test("the published schema accepts QuickJS results, ok and failed", async () => {
  using loader = await createQuickJSLoader({ catalog: EMPTY_CATALOG });
  const codes = [];
  for (
    const source of [
      'console.log("hé"); export default { a: [1, -0, null, "✓"] };',
      'throw new TypeError("no");',
      "export default 1n;",
      'import fs from "node:fs"; export default fs;',
      "export default (",
    ]
  ) {
    const result = await loader.run(source);
    codes.push(result.ok ? "ok" : result.error.code);
    assertPublishedAccepts("sandbox_result", result);
  }
  assert.deepEqual(codes, [
    "ok",
    "GUEST_ERROR",
    "RESULT_NOT_SERIALIZABLE",
    "IMPORT_NODE_BUILTIN",
    "GUEST_SYNTAX_ERROR",
  ]);
});

Deno.test("the published schemas accept a plugin's request and answers as the host sends and reads them", async () => {
  const answers: unknown[] = [
    { status: 200, headers: [["content-type", "text/plain"]], body: "hé" },
    { status: 201, headers: [], bodyBase64: "AAEC" },
    { status: 204 },
  ];
  const requests: unknown[] = [];
  await using plugin = createHostPluginModule({
    manifest: { id: "echo", version: "1.0.0" },
    plugin: {
      routes: () => [{ method: "POST", path: "/:n" }],
      handleRequest: (request) => {
        requests.push(request);
        return answers[Number(request.params.n)] as protocol.SerializedResponse;
      },
    },
  });
  await plugin.start();
  for (const [n, answer] of answers.entries()) {
    const response = await plugin.routes[0]!.handler({
      request: new Request(`http://127.0.0.1/plugins/echo/${n}?q=%C3%A9`, {
        method: "POST",
        body: new Uint8Array([0, 255]),
      }),
      principalId: "u1",
      tenantId: null,
      capabilities: ["fetch"],
      params: { n: String(n) },
    });
    await response.body?.cancel();
    assert.equal(response.status, (answer as { status: number }).status);
    assertPublishedAccepts("serialized_response", answer);
  }
  assert.equal(requests.length, answers.length);
  for (const request of requests) {
    assertPublishedAccepts("serialized_request", request);
  }
});

/** Replaces the value at `path` in a copy of `base`. */
function withValue(
  base: unknown,
  path: readonly (string | number)[],
  value: unknown,
): unknown {
  const copy = structuredClone(base) as Record<string | number, unknown>;
  let node = copy;
  for (const key of path.slice(0, -1)) {
    node = node[key] as Record<string | number, unknown>;
  }
  node[path.at(-1)!] = value;
  return copy;
}

const MANIFEST = {
  name: "p",
  version: "1.0.0",
  cordon: { exports: { ".": "./index.js" } },
};
const DELIVERY = {
  ok: true,
  moduleId: "m1",
  content: "",
  mediaType: "text/javascript",
  digest: DIGEST,
  graphDigest: DIGEST,
  dependencyIds: [],
  pack: { name: "math", version: "1.0.0" },
  path: "./index.js",
};
const RESULT = {
  ok: true,
  value: 1,
  logs: [],
  logsTruncated: false,
  metrics: { tier: "vm", durationMs: 1 },
};
const INDEX_LINE = {
  folder: "math",
  files: [["package.json", 2, 0, null, null, null]],
  outcome: {
    ok: true,
    name: "math",
    version: "1.0.0",
    graphDigest: DIGEST,
    exports: { ".": "./index.js" },
    modules: [["./index.js", "m1", DIGEST, DIGEST, []]],
  },
};

/** Values near each rule's edge, good and bad: [schema, what, value]. */
const AGREEMENT_CASES: [string, string, unknown][] = [
  ...["", "a", "x".repeat(128), "x".repeat(129), "a\n", "a b", "é", "\u202e"]
    .map((id): [string, string, unknown] => ["module_id", "module id", id]),
  ...[DIGEST, `${DIGEST}\n`, DIGEST.replace("=", ""), "sha512-x="]
    .map((d): [string, string, unknown] => ["digest", "digest", d]),
  ...[
    "a",
    "@a/b",
    "A",
    "@a/",
    ".a",
    "a\n",
    "é",
    "x".repeat(214),
    "x".repeat(215),
  ]
    .map((name): [string, string, unknown] => [
      "pack_manifest",
      "pack name",
      withValue(MANIFEST, ["name"], name),
    ]),
  ...["1.2.3", "1.2", "1.2.3-rc.1+b.2", "v1.2.3", "1.2.3\n", "١.٢.٣"]
    .map((version): [string, string, unknown] => [
      "pack_manifest",
      "version",
      withValue(MANIFEST, ["version"], version),
    ]),
  ...[
    "./x.mjs",
    "./😀.js",
    "./../x.js",
    "./a/../x.js",
    "./a//x.js",
    ".//x.js",
    "./.x.js",
    "./x.ts",
    "./a\\b.js",
    "./a\u202eb.js",
    "./a\u0085.js",
    "./a\u2028.js",
    "./\ud800.js",
    "./a\udc00b.js",
    "./\ud800\ud800.js",
  ].map((file): [string, string, unknown] => [
    "pack_manifest",
    "pack file",
    withValue(MANIFEST, ["cordon", "exports", "."], file),
  ]),
  ...["./trig", "./a.b/c", "./.", "./..", "./a/../b", "./a/./b", "./.x", "./a/"]
    .map((subpath): [string, string, unknown] => [
      "pack_manifest",
      "subpath",
      withValue(MANIFEST, ["cordon", "exports"], { [subpath]: "./x.js" }),
    ]),
  [
    "pack_manifest",
    "no export",
    withValue(MANIFEST, ["cordon", "exports"], {}),
  ],
  [
    "pack_manifest",
    "an unknown cordon field",
    withValue(MANIFEST, ["cordon", "x"], 1),
  ],
  ...[
    "./index.js",
    "./",
    "./a\u200fb.js",
    "./a\u0000b.js",
    "./a\u009fb.js",
    "./a\u00a0b.js",
    "index.js",
  ].map((path): [string, string, unknown] => [
    "authorized_delivery",
    "module path",
    withValue(DELIVERY, ["path"], path),
  ]),
  ["authorized_delivery", "ok false", withValue(DELIVERY, ["ok"], false)],
  ...[0, -0, 1.5, -1, 1e308, "1", null].map((ms): [string, string, unknown] => [
    "sandbox_result",
    "durationMs",
    withValue(RESULT, ["metrics", "durationMs"], ms),
  ]),
  ...[0, -1, 1.5, 2 ** 53, "1"].map((code): [string, string, unknown] => [
    "sandbox_result",
    "exitCode",
    withValue(RESULT, ["metrics", "exitCode"], code),
  ]),
  ["sandbox_result", "a failure with a value", {
    ...RESULT,
    ok: false,
    error: { code: "X", name: "E", message: "m" },
  }],
  ...[2, 1.5, -1, 2 ** 53].map((n): [string, string, unknown] => [
    "discovery_index_pack",
    "a file's size",
    withValue(INDEX_LINE, ["files", 0, 1], n),
  ]),
  [
    "discovery_index_pack",
    "a short file proof",
    withValue(INDEX_LINE, ["files", 0], ["package.json", 2, 0, null, null]),
  ],
  [
    "discovery_index_pack",
    "no file proof",
    withValue(INDEX_LINE, ["files"], []),
  ],
  ...["x".repeat(64), "x".repeat(65), "😀".repeat(64), "😀".repeat(65)]
    .map((version): [string, string, unknown] => [
      "declaration",
      "a pinned version's length, in code points",
      { source: "", packages: [{ specifier: "a", packVersion: version }] },
    ]),
  ...[{ source: "" }, {
    source: "",
    packages: [{ specifier: "a", packVersion: "" }],
  }, { source: "", packages: [{ specifier: "a", graphDigest: "md5-x" }] }]
    .map((d): [string, string, unknown] => ["declaration", "declaration", d]),
  ...[["a", "YQ=="], ["", ""], ["a", null], [null, "YQ=="], [null, null]].map((
    [body, bodyBase64],
  ): [string, string, unknown] => [
    "serialized_response",
    "bodies",
    { status: 200, headers: [], body, bodyBase64 },
  ]),
  ...[199, 200, 599, 600, 200.5].map((status): [string, string, unknown] => [
    "serialized_response",
    "status",
    { status, headers: [] },
  ]),
];

Deno.test("the published response schema refuses more headers than the host takes from a plugin", () => {
  const headers = (count: number) =>
    Array.from({ length: count }, (_, i) => [`x-${i}`, "1"]);
  const answer = (count: number) => ({ status: 200, headers: headers(count) });
  assert.equal(
    ajvAccepts("serialized_response", answer(protocol.MAX_RESPONSE_HEADERS)),
    true,
  );
  assert.equal(
    ajvAccepts(
      "serialized_response",
      answer(protocol.MAX_RESPONSE_HEADERS + 1),
    ),
    false,
  );
});

Deno.test("the published schemas refuse what the zod schemas refuse, and accept what they accept", () => {
  const disagreements = AGREEMENT_CASES.filter(([name, , value]) =>
    ajvAccepts(name, value) !==
      ZOD[name]!.safeParse(JSON.parse(JSON.stringify(value))).success
  ).map(([name, what, value]) =>
    `${name} ${what}: ${JSON.stringify(value).slice(0, 120)}`
  );
  assert.deepEqual(disagreements, []);
});

Deno.test("the declaration check that loads no zod reads the published schema as ajv and zod do", () => {
  const disagreements = AGREEMENT_CASES.filter(([name, , value]) =>
    name === "declaration" &&
    ajvAccepts(name, value) !==
      protocol.safeParseDeclaration(JSON.parse(JSON.stringify(value))).success
  ).map(([, what, value]) => `${what}: ${JSON.stringify(value).slice(0, 120)}`);
  assert.deepEqual(disagreements, []);
});
