import assert from "node:assert/strict";
import {
  unreadable,
  withPollutedPrototype,
} from "../protocol/_test_hostile_test.ts";
import { createHash } from "node:crypto";
import fs from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import {
  AuthorizedDeliverySchema,
  CordonError,
  type Declaration,
  DeliveryRefusalSchema,
  PackDiagnosticSchema,
  type PackRef,
  PackSummarySchema,
  type Requester,
} from "../protocol/mod.ts";
import { createDiskCatalog, type DiskCatalog } from "./disk_catalog.ts";
import { moduleIdFor } from "./digest.ts";
import {
  bytesOf,
  deliveryAuthorizer,
  packEntitlement,
} from "./in_memory_delivery.ts";

const FIXTURE_PACKS = fileURLToPath(
  new URL("../fixtures/packs", import.meta.url),
);

interface TempDir extends AsyncDisposable {
  path: string;
}

async function tempDir(): Promise<TempDir> {
  const path = await Deno.makeTempDir({ prefix: "cordon_catalog_" });
  return {
    path,
    async [Symbol.asyncDispose]() {
      await Deno.remove(path, { recursive: true });
    },
  };
}

interface PackSpec {
  name?: string;
  version?: string;
  exports?: Record<string, string>;
  internal?: string[];
  /** Raw package.json text, instead of one built from the fields above. */
  manifest?: string;
  files?: Record<string, string | Uint8Array>;
}

async function writePack(
  packsDir: string,
  folder: string,
  spec: PackSpec,
): Promise<string> {
  const dir = `${packsDir}/${folder}`;
  await Deno.mkdir(dir, { recursive: true });
  const manifest = spec.manifest ?? JSON.stringify({
    name: spec.name ?? folder,
    version: spec.version ?? "1.0.0",
    cordon: {
      exports: spec.exports ?? { ".": "./index.js" },
      internal: spec.internal ?? [],
    },
  });
  await Deno.writeTextFile(`${dir}/package.json`, manifest);
  for (const [file, content] of Object.entries(spec.files ?? {})) {
    const path = `${dir}/${file.slice(2)}`;
    await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
    if (typeof content === "string") await Deno.writeTextFile(path, content);
    else await Deno.writeFile(path, content);
  }
  return dir;
}

function declare(...packages: Declaration["packages"]): Declaration {
  return { source: "export default 1;", packages };
}

function nodeSri(data: string | Uint8Array): string {
  return `sha256-${createHash("sha256").update(data).digest("base64")}`;
}

function codesByPack(catalog: DiskCatalog): Record<string, string[]> {
  const codes: Record<string, string[]> = {};
  for (const d of catalog.diagnostics()) (codes[d.pack] ??= []).push(d.code);
  return codes;
}

const GOOD: PackSpec = {
  internal: ["./lib/helper.js"],
  files: {
    "./index.js":
      'import { helper } from "./lib/helper.js";\nexport const good = helper();\n',
    "./lib/helper.js": "export const helper = () => 42;\n",
  },
};

Deno.test("createDiskCatalog() installs the fixture packs with their graphs", async () => {
  const catalog = await createDiskCatalog(FIXTURE_PACKS);
  const summaries = catalog.summaries();
  const names = summaries.map((s) => s.name);
  for (
    const name of ["@cordon-fixtures/clock", "@cordon-fixtures/math", "greet"]
  ) {
    assert.ok(names.includes(name), name);
  }
  assert.deepEqual(names, [...names].sort());
  for (const summary of summaries) {
    assert.equal(PackSummarySchema.safeParse(summary).success, true);
  }
  const fixtureDiagnostics = catalog.diagnostics().filter((d) =>
    ["greet", "@cordon-fixtures/math", "@cordon-fixtures/clock"].includes(
      d.pack,
    )
  );
  assert.deepEqual(fixtureDiagnostics, []);

  const math = summaries.find((s) => s.name === "@cordon-fixtures/math")!;
  const byPath = new Map(math.modules.map((m) => [m.path, m]));
  const roundId = byPath.get("./lib/round.js")!.id;
  assert.deepEqual(byPath.get("./index.js")!.dependencyIds, [roundId]);
  assert.deepEqual(byPath.get("./trig.js")!.dependencyIds, [roundId]);
  assert.deepEqual(byPath.get("./trig.js")!.exportedAs, ["./trig"]);

  const clock = summaries.find((s) => s.name === "@cordon-fixtures/clock")!;
  const clockByPath = new Map(clock.modules.map((m) => [m.path, m]));
  assert.deepEqual(clockByPath.get("./index.js")!.dependencyIds, [
    clockByPath.get("./lib/format.js")!.id,
  ]);
  assert.deepEqual(clockByPath.get("./lib/format.js")!.dependencyIds, [
    clockByPath.get("./lib/pad.js")!.id,
  ]);
});

Deno.test("createDiskCatalog() digests equal an independent SHA-256 of each file", async () => {
  await using dir = await tempDir();
  const bom = new Uint8Array([
    0xef,
    0xbb,
    0xbf,
    ...new TextEncoder().encode("export const é = '✓';\n"),
  ]);
  await writePack(dir.path, "bytes", {
    internal: ["./bom.js"],
    files: { "./index.js": 'export * from "./bom.js";\n', "./bom.js": bom },
  });
  const catalog = await createDiskCatalog(dir.path);
  const [summary] = catalog.summaries();
  assert.equal(summary?.modules.length, 2);
  for (const module of summary!.modules) {
    const bytes = await Deno.readFile(
      `${dir.path}/bytes/${module.path.slice(2)}`,
    );
    assert.equal(module.digest, nodeSri(bytes));
    const delivery = await catalog.authorizeDelivery(module.id);
    assert.ok(delivery.ok);
    assert.equal(
      nodeSri(new TextEncoder().encode(delivery.content)),
      nodeSri(bytes),
    );
    // Delivery gets the file as read, for the digest discovery computed.
    assert.deepEqual(bytesOf(delivery), bytes);
  }
});

Deno.test("createDiskCatalog() rejects each broken pack with its own diagnostic and keeps the others", async (t) => {
  await using dir = await tempDir();
  await using outside = await tempDir();
  await Deno.writeTextFile(
    `${outside.path}/stolen.js`,
    "export const secret = 1;\n",
  );
  await Deno.mkdir(`${outside.path}/lib`);
  await Deno.writeTextFile(
    `${outside.path}/lib/helper.js`,
    "export const helper = 1;\n",
  );
  const packs = dir.path;

  await writePack(packs, "good", GOOD);
  await writePack(packs, "@scope/good", { ...GOOD, name: "@scope/good" });
  await writePack(packs, "schema", {
    manifest: JSON.stringify({
      name: "schema",
      version: "1.0.0",
      cordon: { exports: {} },
    }),
  });
  await writePack(packs, "not-json", { manifest: "{ name: " });
  await Deno.mkdir(`${packs}/no-manifest`);
  await writePack(packs, "misnamed", { name: "other", files: GOOD.files });
  await writePack(packs, "@scope/misnamed", {
    name: "@other/misnamed",
    files: GOOD.files,
  });
  await writePack(packs, "symlink-file", { files: {} });
  await Deno.symlink(
    `${outside.path}/stolen.js`,
    `${packs}/symlink-file/index.js`,
  );
  await writePack(packs, "symlink-dir", {
    internal: ["./lib/helper.js"],
    files: { "./index.js": 'export * from "./lib/helper.js";\n' },
  });
  await Deno.symlink(`${outside.path}/lib`, `${packs}/symlink-dir/lib`);
  await writePack(packs, "symlink-sibling", { files: {} });
  await Deno.symlink(
    `${packs}/good/index.js`,
    `${packs}/symlink-sibling/index.js`,
  );
  await writePack(packs, "symlink-manifest", { files: GOOD.files });
  await Deno.remove(`${packs}/symlink-manifest/package.json`);
  await Deno.writeTextFile(
    `${outside.path}/package.json`,
    JSON.stringify({
      name: "symlink-manifest",
      version: "1.0.0",
      cordon: { exports: { ".": "./index.js" } },
    }),
  );
  await Deno.symlink(
    `${outside.path}/package.json`,
    `${packs}/symlink-manifest/package.json`,
  );
  await writePack(packs, "dot-dot", {
    files: { "./index.js": 'import "../good/index.js";\n' },
  });
  await writePack(packs, "encoded-dot-dot", {
    files: { "./index.js": 'import "./%2e%2e/good/index.js";\n' },
  });
  await writePack(packs, "dynamic", {
    files: {
      "./index.js": 'export const load = () => import("./index.js");\n',
    },
  });
  await writePack(packs, "requires", {
    files: {
      "./index.js": 'const fs = require("node:fs");\nexport default fs;\n',
    },
  });
  await writePack(packs, "undeclared", {
    files: {
      "./index.js":
        'import { secret } from "./secret.js";\nexport default secret;\n',
      "./secret.js": "export const secret = 1;\n",
    },
  });
  await writePack(packs, "bare", {
    files: { "./index.js": 'import fs from "fs";\nexport default fs;\n' },
  });
  await writePack(packs, "big", {
    files: { "./index.js": `export const big = "${"x".repeat(5000)}";\n` },
  });
  await writePack(packs, "missing-file", { files: {} });
  await writePack(packs, "dir-not-file", { files: {} });
  await Deno.mkdir(`${packs}/dir-not-file/index.js`);
  await writePack(packs, "not-utf8", {
    files: { "./index.js": new Uint8Array([0x65, 0x78, 0xff, 0xfe]) },
  });
  await writePack(packs, "nul", {
    files: { "./index.js": "export const a = 1; // \0\nexport const b = 2;\n" },
  });
  await writePack(packs, "does-not-parse", {
    exports: { ".": "./lib/index.js" },
    files: { "./lib/index.js": "export const a = 1;\nexport const v = ;\n" },
  });
  await writePack(packs, "twin", GOOD);
  await writePack(packs, "TWIN", { ...GOOD, name: "twin" });
  await Deno.mkdir(`${packs}/_generated/ignored`, { recursive: true });
  await Deno.mkdir(`${packs}/.cache`);
  await Deno.writeTextFile(`${packs}/README.md`, "not a pack\n");
  // A pack folder linked from a place that moved, and a link to itself.
  await Deno.symlink(`${packs}/moved-away`, `${packs}/dangling`);
  await Deno.symlink(`${packs}/looping`, `${packs}/looping`);
  await Deno.mkdir(`${packs}/@links`);
  await Deno.symlink(`${packs}/gone`, `${packs}/@links/dangling`);

  const catalog = await createDiskCatalog(packs, { maxModuleBytes: 4096 });
  const codes = codesByPack(catalog);
  const expected: Record<string, string[]> = {
    "@links/dangling": ["PACK_MANIFEST_INVALID"],
    "@scope/misnamed": ["PACK_MANIFEST_INVALID"],
    "TWIN": ["PACK_DUPLICATE"],
    "bare": ["PACK_IMPORT_ESCAPE"],
    "big": ["PACK_FILE_TOO_LARGE"],
    "dir-not-file": ["PACK_FILE_MISSING"],
    "does-not-parse": ["PACK_MODULE_SYNTAX"],
    "dot-dot": ["PACK_IMPORT_ESCAPE"],
    "dangling": ["PACK_MANIFEST_INVALID"],
    "dynamic": ["PACK_DYNAMIC_IMPORT"],
    "encoded-dot-dot": ["PACK_IMPORT_ESCAPE"],
    "looping": ["PACK_MANIFEST_INVALID"],
    "misnamed": ["PACK_MANIFEST_INVALID"],
    "missing-file": ["PACK_FILE_MISSING"],
    "no-manifest": ["PACK_MANIFEST_INVALID"],
    "not-json": ["PACK_MANIFEST_INVALID"],
    "not-utf8": ["PACK_MODULE_SYNTAX"],
    "nul": ["PACK_MODULE_SYNTAX"],
    "requires": ["PACK_DYNAMIC_IMPORT"],
    "schema": ["PACK_MANIFEST_INVALID"],
    "symlink-dir": ["PACK_FILE_OUTSIDE"],
    "symlink-file": ["PACK_FILE_OUTSIDE"],
    "symlink-manifest": ["PACK_FILE_OUTSIDE"],
    "symlink-sibling": ["PACK_FILE_OUTSIDE"],
    "twin": ["PACK_DUPLICATE"],
    "undeclared": ["PACK_IMPORT_UNDECLARED"],
  };
  assert.deepEqual(codes, expected);

  await t.step("the good packs survive the broken ones", () => {
    assert.deepEqual(catalog.summaries().map((s) => s.name), [
      "@scope/good",
      "good",
    ]);
    const resolution = catalog.resolveForExecution(
      declare("good", "@scope/good"),
    );
    assert.deepEqual(resolution.statuses.map((s) => s.status), ["ok", "ok"]);
  });

  await t.step(
    "diagnostics are valid, name the pack and say what to do",
    () => {
      for (const d of catalog.diagnostics()) {
        assert.equal(PackDiagnosticSchema.safeParse(d).success, true);
        assert.ok(
          d.message.startsWith(`Cannot use pack "${d.pack}": `),
          d.message,
        );
        assert.doesNotMatch(d.message, /\.$/);
        assert.match(d.message, /; [a-z]/);
      }
      const byPack = new Map(
        catalog.diagnostics().map((d) => [d.pack, d.message]),
      );
      assert.match(
        byPack.get("schema")!,
        /cordon\.exports: A pack exports at least one subpath/,
      );
      assert.match(
        byPack.get("misnamed")!,
        /names the pack "other" but its folder is "misnamed"/,
      );
      assert.match(
        byPack.get("big")!,
        /\.\/index\.js is \d+ bytes, over the 4096-byte cap/,
      );
      assert.match(byPack.get("undeclared")!, /imports "\.\/secret\.js"/);
      const syntax = byPack.get("does-not-parse")!;
      assert.match(
        syntax,
        /: \.\/lib\/index\.js is not a valid ES module: Unexpected token at line 2, column 18; /,
      );
      assert.ok(!syntax.includes(packs), syntax);
      assert.match(
        byPack.get("twin")!,
        /folders "TWIN", "twin" all declare "twin"/,
      );
    },
  );

  await t.step(
    "a rejected pack resolves as not installed, with the reason",
    () => {
      const [status] = catalog.resolveForExecution(declare("dynamic")).statuses;
      if (status === undefined || status.status === "ok") {
        assert.fail("expected a failed status");
      }
      assert.equal(status.status, "not-installed");
      assert.equal(status.code, "PACK_NOT_INSTALLED");
      assert.match(
        status.message,
        /^Pack "dynamic" is not installed: discovery rejected it \(PACK_DYNAMIC_IMPORT\)/,
      );
    },
  );

  await t.step(
    "no diagnostic or summary contains the packs folder's path",
    async () => {
      const text = JSON.stringify([catalog.diagnostics(), catalog.summaries()]);
      for (const path of [packs, await Deno.realPath(packs), outside.path]) {
        assert.equal(text.includes(path), false, path);
      }
    },
  );
});

Deno.test("createDiskCatalog() reads a package.json saved with a byte order mark, as npm does", async () => {
  await using dir = await tempDir();
  await writePack(dir.path, "bom", {
    manifest: "\uFEFF" + JSON.stringify({
      name: "bom",
      version: "1.0.0",
      cordon: { exports: { ".": "./index.js" } },
    }),
    files: { "./index.js": "export const bom = 1;\n" },
  });
  const catalog = await createDiskCatalog(dir.path);
  assert.deepEqual(catalog.diagnostics(), []);
  assert.deepEqual(catalog.summaries().map((pack) => pack.name), ["bom"]);
});

Deno.test("createDiskCatalog() installs a pack as other editors and platforms save it, in a folder whose path holds # % ? and ü, each file a module whose digest is its bytes", async () => {
  await using dir = await tempDir();
  // Deno.makeTempDir() takes no "?" in a prefix.
  const packs = `${dir.path}/packs # %?\u00fc`;
  const nfc = "\u00e9.js";
  const nfd = "e\u0301.js";
  const files: Record<string, string> = {
    "./index.js": [
      '\uFEFFimport { bom } from "./bom.js";',
      `import { nfc } from "./${nfc}";`,
      `import { nfd } from "./${nfd}";`,
      'import { upper } from "./Lib.js";',
      'import { lower } from "./lib.js";',
      // Allowed in a string since ES2019, and left raw by some editors.
      'export const all = [bom, nfc, nfd, upper, lower, "a\u2028b\u2029c"];',
      "",
    ].join("\r\n"),
    "./bom.js": "\uFEFFexport const bom = 1;\r\n",
    [`./${nfc}`]: "export const nfc = 2;\n",
    [`./${nfd}`]: "export const nfd = 3;\n",
    "./Lib.js": "export const upper = 4;\n",
    "./lib.js": "export const lower = 5;\n",
  };
  const internal = Object.keys(files).filter((file) => file !== "./index.js");
  await writePack(packs, "saved", {
    manifest: "\uFEFF" + JSON.stringify(
      {
        name: "saved",
        version: "1.0.0",
        cordon: { exports: { ".": "./index.js" }, internal },
      },
      null,
      2,
    ).replaceAll("\n", "\r\n"),
    files,
  });
  const catalog = await createDiskCatalog(packs);
  assert.deepEqual(catalog.diagnostics(), []);
  const [pack] = catalog.summaries();
  assert.equal(pack?.modules.length, 6);
  const ids = new Map(pack.modules.map((module) => [module.path, module.id]));
  const index = pack.modules.find((module) => module.path === "./index.js")!;
  assert.deepEqual(
    [...index.dependencyIds].sort(),
    internal.map((file) => ids.get(file)).sort(),
  );
  for (const module of pack.modules) {
    const bytes = await Deno.readFile(`${packs}/saved/${module.path}`);
    const digest = `sha256-${
      createHash("sha256").update(bytes).digest("base64")
    }`;
    assert.equal(module.digest, digest, module.path);
    const delivery = await catalog.authorizeDelivery(module.id, {});
    assert.ok(delivery.ok && delivery.digest === digest, module.path);
    assert.deepEqual(
      new TextEncoder().encode(delivery.content),
      bytes,
      module.path,
    );
  }
});

Deno.test('createDiskCatalog() rejects a manifest that exports a subpath "__proto__" rather than drop it', async () => {
  await using dir = await tempDir();
  await writePack(dir.path, "proto", {
    ...GOOD,
    manifest:
      '{"name":"proto","version":"1.0.0","cordon":{"exports":{".":"./index.js","__proto__":"./index.js"},"internal":["./lib/helper.js"]}}',
  });
  const catalog = await createDiskCatalog(dir.path);
  assert.deepEqual(catalog.summaries(), []);
  assert.deepEqual(
    catalog.diagnostics().map((d) => [d.code, d.message]),
    [[
      "PACK_MANIFEST_INVALID",
      'Cannot use pack "proto": package.json exports a subpath "__proto__"; export subpaths of the form . or ./name',
    ]],
  );
});

Deno.test("createDiskCatalog() rejects a pack named like a Node built-in, which no sandbox may import", async () => {
  await using dir = await tempDir();
  // Import-policy rule 2 denies these names whatever the declaration says,
  // so such a pack would be listed as installed and never load.
  for (const name of ["fs", "events", "punycode"]) {
    await writePack(dir.path, name, GOOD);
  }
  await writePack(dir.path, "@acme/fs", { ...GOOD, name: "@acme/fs" });
  const catalog = await createDiskCatalog(dir.path);
  assert.deepEqual(catalog.summaries().map((pack) => pack.name), ["@acme/fs"]);
  assert.deepEqual(
    catalog.diagnostics().map((d) => [d.pack, d.code, d.message]),
    ["events", "fs", "punycode"].map((name) => [
      name,
      "PACK_MANIFEST_INVALID",
      `Cannot use pack "${name}": its name is a Node built-in's, which the import policy denies in every sandbox; install the package under another name`,
    ]),
  );
  const resolution = catalog.resolveForExecution(declare("fs"));
  assert.equal(resolution.statuses[0]!.status, "not-installed");
});

Deno.test("createDiskCatalog() rejects a manifest with 200,000 wrong entries as not matching its schema", async () => {
  await using dir = await tempDir();
  await writePack(dir.path, "wide", {
    ...GOOD,
    manifest: JSON.stringify({
      name: "wide",
      version: "1.0.0",
      cordon: {
        exports: { ".": "./index.js" },
        internal: new Array(200_000).fill(1),
      },
    }),
  });
  await writePack(dir.path, "good", GOOD);
  const catalog = await createDiskCatalog(dir.path);
  assert.deepEqual(catalog.summaries().map((pack) => pack.name), ["good"]);
  const [diagnostic] = catalog.diagnostics();
  assert.equal(diagnostic?.code, "PACK_MANIFEST_INVALID");
  assert.match(
    diagnostic.message,
    /package\.json does not match the pack manifest schema: it breaks the schema in more places than can be listed/,
  );
});

Deno.test("createDiskCatalog() accepts a symlink that stays inside its pack", async () => {
  await using dir = await tempDir();
  await writePack(dir.path, "linked", {
    files: { "./real.js": "export const real = true;\n" },
  });
  await Deno.symlink(
    `${dir.path}/linked/real.js`,
    `${dir.path}/linked/index.js`,
  );
  const catalog = await createDiskCatalog(dir.path);
  assert.deepEqual(catalog.diagnostics(), []);
  const [module] = catalog.summaries()[0]!.modules;
  assert.equal(module?.digest, nodeSri("export const real = true;\n"));
});

Deno.test("authorizeDelivery() delivers a module listed through a link that stays inside its pack", async () => {
  await using dir = await tempDir();
  await writePack(dir.path, "linked", {
    files: { "./real.js": "export const real = true;\n" },
  });
  await Deno.symlink("real.js", `${dir.path}/linked/index.js`);
  const catalog = await createDiskCatalog(dir.path);
  const [module] = catalog.summaries()[0]!.modules;
  const answer = await catalog.authorizeDelivery(module!.id);
  assert.equal(answer.ok && answer.content, "export const real = true;\n");
});

Deno.test("authorizeDelivery() refuses with PACK_FILE_CHANGED a module a link to a file outside the pack replaced after discovery, though that file holds the listed bytes", async () => {
  await using dir = await tempDir();
  const source = "export const real = true;\n";
  await writePack(`${dir.path}/packs`, "math", {
    files: { "./index.js": source },
  });
  await Deno.writeTextFile(`${dir.path}/outside.js`, source);
  const catalog = await createDiskCatalog(`${dir.path}/packs`);
  const [module] = catalog.summaries()[0]!.modules;
  const file = `${dir.path}/packs/math/index.js`;
  await Deno.remove(file);
  await Deno.symlink(`${dir.path}/outside.js`, file);
  const answer = await catalog.authorizeDelivery(module!.id);
  assert.equal(answer.ok === false && answer.code, "PACK_FILE_CHANGED");
});

Deno.test("authorizeDelivery() refuses with PACK_FILE_CHANGED a module whose folder a link out of the pack replaced after discovery, though the file there holds the listed bytes", async () => {
  await using dir = await tempDir();
  const source = "export const more = 3;\n";
  await writePack(`${dir.path}/packs`, "math", {
    exports: { ".": "./lib/more.js" },
    files: { "./lib/more.js": source },
  });
  await Deno.mkdir(`${dir.path}/outside`);
  await Deno.writeTextFile(`${dir.path}/outside/more.js`, source);
  const catalog = await createDiskCatalog(`${dir.path}/packs`);
  const [module] = catalog.summaries()[0]!.modules;
  await Deno.remove(`${dir.path}/packs/math/lib`, { recursive: true });
  await Deno.symlink(`${dir.path}/outside`, `${dir.path}/packs/math/lib`);
  const answer = await catalog.authorizeDelivery(module!.id);
  assert.equal(answer.ok === false && answer.code, "PACK_FILE_CHANGED");
});

Deno.test("authorizeDelivery() delivers a module whose folder a link inside its pack replaced after discovery", async () => {
  await using dir = await tempDir();
  const source = "export const more = 3;\n";
  await writePack(dir.path, "math", {
    exports: { ".": "./lib/more.js" },
    files: { "./lib/more.js": source, "./moved/more.js": source },
  });
  const catalog = await createDiskCatalog(dir.path);
  const [module] = catalog.summaries()[0]!.modules;
  await Deno.remove(`${dir.path}/math/lib`, { recursive: true });
  await Deno.symlink("moved", `${dir.path}/math/lib`);
  const answer = await catalog.authorizeDelivery(module!.id);
  assert.equal(answer.ok && answer.content, source);
});

Deno.test("createDiskCatalog() installs a pack with more modules than one read turn", async () => {
  await using dir = await tempDir();
  const count = 70;
  const files: Record<string, string> = {
    "./index.js": 'export { value } from "./lib/m1.js";\n',
  };
  for (let i = 1; i <= count; i++) {
    files[`./lib/m${i}.js`] = i < count
      ? `export { value } from "./m${i + 1}.js";\n`
      : "export const value = 70;\n";
  }
  await writePack(dir.path, "long", {
    internal: Object.keys(files).slice(1),
    files,
  });
  const catalog = await createDiskCatalog(dir.path);
  assert.deepEqual(catalog.diagnostics(), []);
  const [summary] = catalog.summaries();
  assert.equal(summary?.modules.length, count + 1);
  const index = summary!.modules.find((m) => m.path === "./index.js")!;
  const closure = Object.entries(files).filter(([path]) =>
    path !== "./index.js"
  )
    .map(([path, source]) => [path, nodeSri(source)] as const)
    .sort(([a], [b]) => (a < b ? -1 : 1));
  assert.equal(
    index.graphDigest,
    nodeSri(
      JSON.stringify([
        ["./index.js", nodeSri(files["./index.js"]!)],
        ...closure,
      ]),
    ),
  );
});

Deno.test("createDiskCatalog() ids are stable across catalogs and equal moduleIdFor()", async () => {
  const first = await createDiskCatalog(FIXTURE_PACKS);
  const second = await createDiskCatalog(FIXTURE_PACKS);
  assert.deepEqual(second.summaries(), first.summaries());
  const greet = first.summaries().find((s) => s.name === "greet")!;
  assert.equal(
    greet.modules[0]!.id,
    await moduleIdFor("greet", "1.0.0", "./index.js"),
  );
});

Deno.test("rescan() changes every graph digest above a changed deep dependency, and no other", async () => {
  await using dir = await tempDir();
  const pack = await writePack(dir.path, "deep", {
    exports: { ".": "./index.js", "./other": "./other.js" },
    internal: ["./lib/mid.js", "./lib/leaf.js", "./lib/spare.js"],
    files: {
      "./index.js": 'export { mid } from "./lib/mid.js";\n',
      "./lib/mid.js":
        'import { leaf } from "./leaf.js";\nexport const mid = leaf + 1;\n',
      "./lib/leaf.js": "export const leaf = 1;\n",
      "./other.js": "export const other = 0;\n",
      "./lib/spare.js": "export const spare = 0;\n",
    },
  });
  const catalog = await createDiskCatalog(dir.path);
  const snapshot = () => {
    const [summary] = catalog.summaries();
    return {
      pack: summary!.graphDigest,
      modules: Object.fromEntries(
        summary!.modules.map((m) => [m.path, m.graphDigest]),
      ),
      ids: summary!.modules.map((m) => m.id),
    };
  };
  const before = snapshot();

  await Deno.writeTextFile(`${pack}/lib/spare.js`, "export const spare = 1;\n");
  await catalog.rescan();
  const unrelated = snapshot();
  assert.equal(unrelated.pack, before.pack);
  for (
    const path of ["./index.js", "./lib/mid.js", "./lib/leaf.js", "./other.js"]
  ) {
    assert.equal(unrelated.modules[path], before.modules[path], path);
  }
  assert.notEqual(
    unrelated.modules["./lib/spare.js"],
    before.modules["./lib/spare.js"],
  );

  await Deno.writeTextFile(`${pack}/lib/leaf.js`, "export const leaf = 2;\n");
  await catalog.rescan();
  const deep = snapshot();
  assert.notEqual(deep.pack, before.pack);
  for (const path of ["./index.js", "./lib/mid.js", "./lib/leaf.js"]) {
    assert.notEqual(deep.modules[path], before.modules[path], path);
  }
  assert.equal(deep.modules["./other.js"], before.modules["./other.js"]);
  assert.deepEqual(deep.ids, before.ids);
});

Deno.test("rescan() that fails keeps the old state", async () => {
  await using dir = await tempDir();
  await writePack(dir.path, "good", GOOD);
  const catalog = await createDiskCatalog(`${dir.path}/`);
  const before = catalog.summaries();
  const [delivered, unread] = before[0]!.modules.map((module) => module.id);
  assert.equal((await catalog.authorizeDelivery(delivered!)).ok, true);

  const aborted = new AbortController();
  aborted.abort(new Error("stop"));
  await assert.rejects(catalog.rescan({ signal: aborted.signal }), /stop/);
  assert.deepEqual(catalog.summaries(), before);

  await Deno.rename(dir.path, `${dir.path}_moved`);
  try {
    const error = await catalog.rescan().then(() => undefined, (e: Error) => e);
    assert.ok(error instanceof CordonError);
    assert.equal(error.code, "PATH_UNUSABLE");
    assert.match(error.message, /^Cannot read the packs folder: NotFound; /);
    assert.equal(error.message.includes(dir.path), false);
    assert.deepEqual(catalog.summaries(), before);
    // Bytes are read on demand: a module delivered before is still kept;
    // one never read cannot be read while its folder is gone.
    assert.equal((await catalog.authorizeDelivery(delivered!)).ok, true);
    const gone = await catalog.authorizeDelivery(unread!);
    assert.equal(gone.ok === false && gone.code, "PACK_FILE_CHANGED");
  } finally {
    await Deno.rename(`${dir.path}_moved`, dir.path);
  }
  await catalog.rescan();
  assert.deepEqual(catalog.summaries(), before);
  assert.equal((await catalog.authorizeDelivery(unread!)).ok, true);
});

Deno.test("rescan() picks up a new version with new ids", async () => {
  await using dir = await tempDir();
  await writePack(dir.path, "good", GOOD);
  const catalog = await createDiskCatalog(dir.path);
  const oldId = catalog.summaries()[0]!.modules[0]!.id;
  await writePack(dir.path, "good", { ...GOOD, version: "1.1.0" });
  await catalog.rescan();
  assert.equal(catalog.summaries()[0]!.version, "1.1.0");
  assert.equal((await catalog.authorizeDelivery(oldId)).ok, false);
});

Deno.test("resolveForExecution() gives every declared pack a status", async () => {
  const catalog = await createDiskCatalog(FIXTURE_PACKS);
  const math = catalog.summaries().find((s) =>
    s.name === "@cordon-fixtures/math"
  )!;
  const resolution = catalog.resolveForExecution(declare(
    "@cordon-fixtures/math",
    { specifier: "greet", packVersion: "1.0.0" },
    "absent",
    { specifier: "@cordon-fixtures/clock", packVersion: "9.9.9" },
    {
      specifier: "@cordon-fixtures/clock",
      graphDigest: "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
    },
  ));
  const statuses = resolution.statuses;
  assert.deepEqual(statuses[0], {
    name: "@cordon-fixtures/math",
    status: "ok",
    version: "1.0.0",
    graphDigest: math.graphDigest,
  });
  assert.equal(statuses[1]?.status, "ok");
  assert.deepEqual(
    statuses.slice(2).map((s) => [s.status, s.status !== "ok" && s.code]),
    [
      ["not-installed", "PACK_NOT_INSTALLED"],
      ["version-mismatch", "PACK_VERSION_MISMATCH"],
      ["digest-mismatch", "PACK_DIGEST_MISMATCH"],
    ],
  );
  const messages = statuses.slice(2).map((
    s,
  ) => (s.status !== "ok" ? s.message : ""));
  assert.match(messages[0]!, /^Pack "absent" is not installed: install it/);
  assert.match(
    messages[1]!,
    /^Pack "@cordon-fixtures\/clock" is installed at version 1\.0\.0, but the declaration pins "9\.9\.9": install the pinned version/,
  );
  assert.match(
    messages[2]!,
    /^Pack "@cordon-fixtures\/clock" has graph digest sha256-.+, but the declaration pins .+: re-pin graphDigest/,
  );

  assert.deepEqual(Object.keys(resolution.packs).sort(), [
    "@cordon-fixtures/math",
    "greet",
  ]);
  const resolvedMath = resolution.packs["@cordon-fixtures/math"]!;
  assert.deepEqual(Object.keys(resolvedMath.exports).sort(), [".", "./trig"]);
  assert.deepEqual(Object.keys(resolvedMath.files).sort(), [
    "./index.js",
    "./lib/round.js",
    "./trig.js",
  ]);
  const round = resolution.modules[resolvedMath.files["./lib/round.js"]!]!;
  assert.equal(round.path, "./lib/round.js");
  assert.deepEqual(round.pack, {
    name: "@cordon-fixtures/math",
    version: "1.0.0",
  });
  assert.match(round.source, /export function round/);
  const clockIds = catalog.summaries().find((s) =>
    s.name === "@cordon-fixtures/clock"
  )!
    .modules.map((m) => m.id);
  for (const id of clockIds) assert.equal(resolution.modules[id], undefined);
  assert.ok(resolution.installed.includes("@cordon-fixtures/clock"));
  assert.deepEqual(resolution.installed, [...resolution.installed].sort());
});

Deno.test("resolveForExecution() accepts pins that match the installed pack", async () => {
  const catalog = await createDiskCatalog(FIXTURE_PACKS);
  const greet = catalog.summaries().find((s) => s.name === "greet")!;
  const resolution = catalog.resolveForExecution(declare({
    specifier: "greet",
    packVersion: "1.0.0",
    graphDigest: greet.graphDigest,
  }));
  assert.equal(resolution.statuses[0]?.status, "ok");
  assert.ok(resolution.packs.greet);
});

Deno.test("resolveForExecution() cannot be used to change the catalog", async () => {
  const catalog = await createDiskCatalog(FIXTURE_PACKS);
  const resolution = catalog.resolveForExecution(declare("greet"));
  const greet = resolution.packs.greet!;
  assert.throws(() => {
    greet.exports["."] = "tampered";
  }, TypeError);
  const again = catalog.resolveForExecution(declare("greet"));
  assert.notEqual(again.packs.greet!.exports["."], "tampered");
});

Deno.test("resolveForExecution() keeps a resolution while nothing changed, and resolves again after a rescan or a failed read", async () => {
  await using dir = await tempDir();
  await writePack(dir.path, "good", GOOD);
  await writePack(dir.path, "other", {
    files: { "./index.js": "export default 2;\n" },
  });
  const catalog = await createDiskCatalog(dir.path);
  // A file changed since discovery: the pack cannot be read as listed,
  // and that answer is not kept, so putting the file back heals it.
  await Deno.writeTextFile(`${dir.path}/other/index.js`, "export default 3;\n");
  for (let i = 0; i < 2; i++) {
    const changed = catalog.resolveForExecution(declare("other"));
    assert.equal(changed.statuses[0]?.status, "unavailable");
  }
  await Deno.writeTextFile(`${dir.path}/other/index.js`, "export default 2;\n");
  assert.equal(
    catalog.resolveForExecution(declare("other")).statuses[0]?.status,
    "ok",
  );

  const first = catalog.resolveForExecution(declare("good"));
  assert.equal(catalog.resolveForExecution(declare("good")), first);
  for (const part of [first, first.statuses, first.statuses[0], first.packs]) {
    assert.ok(Object.isFrozen(part));
  }
  const both = catalog.resolveForExecution(declare("good", "other"));
  assert.notEqual(both, first);
  assert.deepEqual(Object.keys(both.packs).sort(), ["good", "other"]);
  assert.ok(Object.isFrozen(both.modules));
  assert.equal(catalog.resolveForExecution(declare("good")), first);

  await writePack(dir.path, "good", { ...GOOD, version: "1.1.0" });
  await catalog.rescan();
  const upgraded = catalog.resolveForExecution(declare("good"));
  assert.notEqual(upgraded, first);
  assert.equal(upgraded.packs.good?.version, "1.1.0");
});

Deno.test("resolveForExecution() keeps no resolution of a pack that left memory, so it reads the pack again", async () => {
  await using dir = await tempDir();
  // Five packs of 4 MiB each: more than the catalog keeps in memory.
  const big = `export default "${"x".repeat(4 * 1024 * 1024)}";\n`;
  const names = ["p0", "p1", "p2", "p3", "p4"];
  for (const name of names) {
    await writePack(dir.path, name, { files: { "./index.js": big } });
  }
  const catalog = await createDiskCatalog(dir.path, {
    maxModuleBytes: 8 * 1024 * 1024,
  });
  const first = catalog.resolveForExecution(declare("p0"));
  assert.equal(catalog.resolveForExecution(declare("p0")), first);
  for (const name of names.slice(1)) catalog.resolveForExecution(declare(name));
  await Deno.writeTextFile(`${dir.path}/p0/index.js`, "export default 1;\n");
  const again = catalog.resolveForExecution(declare("p0"));
  assert.equal(again.statuses[0]?.status, "unavailable");
});

Deno.test("resolveForExecution() throws TypeError for a malformed package entry", async () => {
  const catalog = await createDiskCatalog(FIXTURE_PACKS);
  assert.throws(
    () => catalog.resolveForExecution(declare(42 as unknown as string)),
    TypeError,
  );
});

Deno.test("authorizeDelivery() delivers an internal helper file", async () => {
  const catalog = await createDiskCatalog(FIXTURE_PACKS);
  const math = catalog.resolveForExecution(declare("@cordon-fixtures/math"))
    .packs["@cordon-fixtures/math"]!;
  const id = math.files["./lib/round.js"]!;
  const delivery = await catalog.authorizeDelivery(id);
  assert.equal(AuthorizedDeliverySchema.safeParse(delivery).success, true);
  assert.ok(delivery.ok);
  const bytes = await Deno.readFile(
    `${FIXTURE_PACKS}/@cordon-fixtures/math/lib/round.js`,
  );
  assert.equal(delivery.content, new TextDecoder().decode(bytes));
  assert.equal(delivery.digest, nodeSri(bytes));
  assert.equal(delivery.path, "./lib/round.js");
  assert.deepEqual(delivery.dependencyIds, []);
  assert.deepEqual(delivery.pack, {
    name: "@cordon-fixtures/math",
    version: "1.0.0",
  });
});

Deno.test("authorizeDelivery() answers not-found for unknown and malformed ids", async () => {
  const catalog = await createDiskCatalog(FIXTURE_PACKS);
  for (
    const id of [
      "AAAAAAAAAAAAAAAAAAAAAA",
      "",
      "../etc/passwd",
      "%2e%2e",
      "a".repeat(129),
      "ids\u0000x",
    ]
  ) {
    const refusal = await catalog.authorizeDelivery(id);
    assert.equal(DeliveryRefusalSchema.safeParse(refusal).success, true);
    assert.deepEqual(
      [refusal.ok, !refusal.ok && refusal.reason, !refusal.ok && refusal.code],
      [false, "not-found", "MODULE_NOT_FOUND"],
    );
  }
});

Deno.test("authorizeDelivery() asks the entitlement policy with the pack and requester", async () => {
  const calls: [PackRef, Requester][] = [];
  const catalog = await createDiskCatalog(FIXTURE_PACKS, {
    entitlement: async (pack, requester) => {
      // The policy is shown a copy with a null prototype.
      calls.push([pack, { ...requester }]);
      await Promise.resolve();
      return requester.tenantId === "paid" || pack.name === "greet";
    },
  });
  const ids = catalog.resolveForExecution(
    declare("@cordon-fixtures/math", "greet"),
  );
  const mathId = ids.packs["@cordon-fixtures/math"]!.exports["."]!;
  const greetId = ids.packs.greet!.exports["."]!;

  const refused = await catalog.authorizeDelivery(mathId, { tenantId: "free" });
  assert.equal(refused.ok, false);
  assert.equal(!refused.ok && refused.reason, "forbidden");
  assert.equal(!refused.ok && refused.code, "DELIVERY_FORBIDDEN");
  assert.match(
    !refused.ok ? refused.message : "",
    /pack "@cordon-fixtures\/math".*refused/,
  );
  assert.equal(
    (await catalog.authorizeDelivery(mathId, { tenantId: "paid" })).ok,
    true,
  );
  assert.equal((await catalog.authorizeDelivery(greetId)).ok, true);
  assert.deepEqual(calls[0], [
    { name: "@cordon-fixtures/math", version: "1.0.0" },
    { tenantId: "free" },
  ]);
  assert.deepEqual(calls[2]?.[1], {});
});

Deno.test("authorizeDelivery() refuses what a waiting policy refuses when Promise.prototype.then was replaced after import with one that answers true for false", async () => {
  const catalog = await createDiskCatalog(FIXTURE_PACKS, {
    entitlement: async () => {
      await null;
      return false;
    },
  });
  const id = catalog.resolveForExecution(declare("greet")).packs.greet!
    .exports["."]!;
  const { then } = Promise.prototype;
  const flip = (value: unknown) => value === false ? true : value;
  Promise.prototype.then = function (
    this: Promise<unknown>,
    onFulfilled?: ((value: unknown) => unknown) | null,
    onRejected?: ((reason: unknown) => unknown) | null,
  ) {
    return then.call(
      this,
      onFulfilled && ((value: unknown) => flip(onFulfilled(flip(value)))),
      onRejected,
    );
  } as typeof then;
  let answer;
  try {
    answer = await catalog.authorizeDelivery(id);
  } finally {
    Promise.prototype.then = then;
  }
  assert.equal(answer.ok, false);
});

Deno.test("authorizeDelivery() tells the entitlement policy no signal that only a polluted Object.prototype names, when it was given none", async () => {
  const signals: unknown[] = [];
  const catalog = await createDiskCatalog(FIXTURE_PACKS, {
    entitlement: (_pack, _requester, options) => {
      signals.push(options?.signal);
      return true;
    },
  });
  const id = catalog.resolveForExecution(declare("greet")).packs.greet!
    .exports["."]!;
  const answer = await withPollutedPrototype(
    { signal: "polluted" },
    () => catalog.authorizeDelivery(id),
  );
  assert.equal(answer.ok, true);
  assert.deepEqual(signals, [undefined]);
});

Deno.test("authorizeDelivery() tells the entitlement policy no tenant or principal that only a polluted Object.prototype names", async () => {
  const seen: Requester[] = [];
  const catalog = await createDiskCatalog(FIXTURE_PACKS, {
    entitlement: (_pack, requester) => {
      seen.push({ ...requester });
      return requester.tenantId === "paid" && requester.principalId === "ada";
    },
  });
  const id = catalog.resolveForExecution(declare("greet")).packs.greet!
    .exports["."]!;
  const answers = await withPollutedPrototype(
    { tenantId: "paid", principalId: "ada" },
    () =>
      Promise.all([
        catalog.authorizeDelivery(id),
        catalog.authorizeDelivery(id, {}),
        catalog.authorizeDelivery(id, { tenantId: "paid" }),
      ]),
  );
  assert.deepEqual(answers.map((answer) => answer.ok), [false, false, false]);
  assert.deepEqual(seen, [{}, {}, { tenantId: "paid" }]);
});

Deno.test("authorizeDelivery() gives the entitlement policy the signal it was given, and options without one when it got none", async () => {
  const given: (AbortSignal | undefined)[] = [];
  const catalog = await createDiskCatalog(FIXTURE_PACKS, {
    entitlement: (_pack, _requester, options) => {
      assert.equal(typeof options, "object");
      given.push(options?.signal);
      return true;
    },
  });
  const id = catalog.summaries()[0]!.modules[0]!.id;
  const controller = new AbortController();
  assert.equal(
    (await catalog.authorizeDelivery(id, {}, { signal: controller.signal }))
      .ok,
    true,
  );
  assert.equal((await catalog.authorizeDelivery(id)).ok, true);
  assert.deepEqual(given, [controller.signal, undefined]);
  await assert.rejects(
    catalog.authorizeDelivery(id, {}, {
      signal: "soon" as unknown as AbortSignal,
    }),
    { name: "TypeError", message: /signal must be an AbortSignal/ },
  );
});

Deno.test("authorizeDelivery() answers unavailable when the policy throws", async () => {
  const catalog = await createDiskCatalog(FIXTURE_PACKS, {
    entitlement: () => {
      throw new Error(`policy store down at ${FIXTURE_PACKS}`);
    },
  });
  const id = catalog.summaries()[0]!.modules[0]!.id;
  const refusal = await catalog.authorizeDelivery(id);
  assert.equal(!refusal.ok && refusal.reason, "unavailable");
  assert.equal(!refusal.ok && refusal.code, "DELIVERY_UNAVAILABLE");
  assert.equal(JSON.stringify(refusal).includes(FIXTURE_PACKS), false);
});

Deno.test("authorizeDelivery() and a listing's entitlement check answer as for a failing policy when the policy answers a value that cannot be read", async () => {
  const catalog = await createDiskCatalog(FIXTURE_PACKS, {
    entitlement: () => unreadable() as unknown as boolean,
  });
  const summary = catalog.summaries()[0]!;
  const refusal = await catalog.authorizeDelivery(summary.modules[0]!.id);
  assert.equal(!refusal.ok && refusal.code, "DELIVERY_UNAVAILABLE");
  const entitled = packEntitlement(catalog)!;
  assert.equal(await entitled(summary, {}), false);
});

Deno.test("authorizeDelivery() waits for a policy's thenable as for a promise: the first answer counts, and only true allows", async () => {
  type Settle = (value: unknown) => void;
  const thenables: Record<
    string,
    { then(resolve: Settle, reject: Settle): void }
  > = {
    "true": { then: (resolve) => resolve(true) },
    "true-then-false": {
      then: (resolve, reject) => {
        resolve(true);
        resolve(false);
        reject(new Error("late"));
      },
    },
    "reject-then-true": {
      then: (resolve, reject) => {
        reject(new Error("store down"));
        resolve(true);
      },
    },
    "then-throws": {
      then: () => {
        throw new Error("store down");
      },
    },
    "yes": { then: (resolve) => resolve("yes") },
  };
  const catalog = await createDiskCatalog(FIXTURE_PACKS, {
    entitlement: (_pack, requester) =>
      thenables[requester.tenantId!] as unknown as Promise<boolean>,
  });
  const summary = catalog.summaries()[0]!;
  const answers: Record<string, unknown> = {};
  const listed: Record<string, unknown> = {};
  for (const tenantId of Object.keys(thenables)) {
    const answer = await catalog.authorizeDelivery(summary.modules[0]!.id, {
      tenantId,
    });
    answers[tenantId] = answer.ok || answer.code;
    listed[tenantId] = await packEntitlement(catalog)!(summary, { tenantId });
  }
  assert.deepEqual(answers, {
    "true": true,
    "true-then-false": true,
    "reject-then-true": "DELIVERY_UNAVAILABLE",
    "then-throws": "DELIVERY_UNAVAILABLE",
    "yes": "DELIVERY_FORBIDDEN",
  });
  assert.deepEqual(listed, {
    "true": true,
    "true-then-false": true,
    "reject-then-true": false,
    "then-throws": false,
    "yes": false,
  });
});

Deno.test("createDiskCatalog() answers from memory at once what authorizeDelivery() answers for a synchronous policy", async () => {
  const calls: Requester[] = [];
  const catalog = await createDiskCatalog(FIXTURE_PACKS, {
    entitlement: (pack, requester) => {
      calls.push({ ...requester });
      if (requester.tenantId === "broken") throw new Error("store down");
      return requester.tenantId === "paid" || pack.name === "greet";
    },
  });
  const ids = catalog.resolveForExecution(
    declare("@cordon-fixtures/math", "greet"),
  );
  const mathId = ids.packs["@cordon-fixtures/math"]!.exports["."]!;
  const cases: [string, Requester | undefined][] = [
    [mathId, { tenantId: "paid" }],
    [mathId, { tenantId: "free" }],
    [mathId, undefined],
    [mathId, { tenantId: "broken" }],
    [ids.packs.greet!.exports["."]!, undefined],
    ["AAAAAAAAAAAAAAAAAAAAAA", { tenantId: "paid" }],
    ["../etc/passwd", { tenantId: "paid" }],
  ];
  for (const [id, requester] of cases) {
    calls.length = 0;
    const now = deliveryAuthorizer(catalog)(id, requester);
    assert.ok(!(now instanceof Promise), `${id} answers synchronously`);
    const later = await catalog.authorizeDelivery(id, requester);
    assert.deepEqual(now, later);
    // The policy is asked once per call, and never for an unknown id.
    const known = id === mathId || id === ids.packs.greet!.exports["."];
    assert.deepEqual(calls, known ? [requester ?? {}, requester ?? {}] : []);
  }
  const paid = deliveryAuthorizer(catalog)(mathId, { tenantId: "paid" });
  assert.ok(!(paid instanceof Promise) && paid.ok);
  assert.deepEqual(
    (["free", "broken"] as const).map((tenantId) => {
      const answer = deliveryAuthorizer(catalog)(mathId, { tenantId });
      return !(answer instanceof Promise) && !answer.ok && answer.code;
    }),
    ["DELIVERY_FORBIDDEN", "DELIVERY_UNAVAILABLE"],
  );
});

Deno.test("createDiskCatalog() answers from memory with a promise for a policy that waits, and still refuses", async () => {
  const catalog = await createDiskCatalog(FIXTURE_PACKS, {
    entitlement: (_pack, requester) =>
      requester.tenantId === "broken"
        ? Promise.reject(new Error("store down"))
        : Promise.resolve(requester.tenantId === "paid"),
  });
  const id = catalog.resolveForExecution(declare("@cordon-fixtures/math"))
    .packs["@cordon-fixtures/math"]!.exports["."]!;
  const answers = [];
  for (const tenantId of ["paid", "free", "broken"]) {
    const pending = deliveryAuthorizer(catalog)(id, { tenantId });
    assert.ok(pending instanceof Promise, "an async policy gives a promise");
    answers.push(await pending);
  }
  assert.deepEqual(
    answers.map((answer) => answer.ok || answer.code),
    [true, "DELIVERY_FORBIDDEN", "DELIVERY_UNAVAILABLE"],
  );
});

Deno.test("createDiskCatalog() keeps absolute paths out of everything it hands out", async () => {
  await using dir = await tempDir();
  await using links = await tempDir();
  for (const source of ["greet", "@cordon-fixtures"]) {
    await Deno.mkdir(`${dir.path}/${source}`, { recursive: true });
  }
  for (
    const pack of ["greet", "@cordon-fixtures/math", "@cordon-fixtures/clock"]
  ) {
    for await (const file of walk(`${FIXTURE_PACKS}/${pack}`)) {
      const target = `${dir.path}/${pack}/${
        file.slice(FIXTURE_PACKS.length + pack.length + 2)
      }`;
      await Deno.mkdir(target.slice(0, target.lastIndexOf("/")), {
        recursive: true,
      });
      await Deno.copyFile(file, target);
    }
  }
  await writePack(dir.path, "broken", {
    files: { "./index.js": 'import "/x.js";' },
  });
  const packsDir = `${links.path}/packs`;
  await Deno.symlink(dir.path, packsDir);
  const catalog = await createDiskCatalog(packsDir, {
    entitlement: (pack) => pack.name !== "@cordon-fixtures/clock",
  });
  const outputs: unknown[] = [catalog.summaries(), catalog.diagnostics()];
  const resolution = catalog.resolveForExecution(declare(
    "greet",
    "@cordon-fixtures/math",
    "@cordon-fixtures/clock",
    "broken",
    { specifier: "greet", packVersion: "0.0.1" },
  ));
  outputs.push(resolution);
  for (const module of Object.values(resolution.modules)) {
    outputs.push(await catalog.authorizeDelivery(module.id));
  }
  outputs.push(await catalog.authorizeDelivery("nope"));
  assert.equal(catalog.diagnostics().length, 1);
  const text = JSON.stringify(outputs);
  assert.ok(text.includes("DELIVERY_FORBIDDEN") && text.includes('"ok":true'));
  for (
    const path of [
      packsDir,
      dir.path,
      await Deno.realPath(dir.path),
      links.path,
    ]
  ) {
    assert.equal(text.includes(path), false, path);
  }
});

async function* walk(dir: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) yield* walk(path);
    else yield path;
  }
}

Deno.test("createDiskCatalog() rejects bad options and a missing folder", async () => {
  await assert.rejects(createDiskCatalog(""), TypeError);
  await assert.rejects(
    createDiskCatalog(FIXTURE_PACKS, { maxModuleBytes: 0 }),
    RangeError,
  );
  await assert.rejects(
    createDiskCatalog(FIXTURE_PACKS, { maxModuleBytes: 1.5 }),
    RangeError,
  );
  await assert.rejects(
    createDiskCatalog(FIXTURE_PACKS, {
      entitlement: "yes" as unknown as () => boolean,
    }),
    TypeError,
  );
  await using dir = await tempDir();
  const missing = `${dir.path}/nowhere`;
  const error = await createDiskCatalog(missing).then(
    () => undefined,
    (e: Error) => e,
  );
  assert.ok(error instanceof CordonError);
  assert.equal(error.code, "PATH_UNUSABLE");
  assert.match(error.message, /^Cannot read the packs folder: NotFound/);
  assert.equal(error.message.includes(missing), false);
  assert.ok(error.cause instanceof Deno.errors.NotFound);
});

Deno.test("createDiskCatalog() rejects with the signal's reason when aborted", async () => {
  const controller = new AbortController();
  controller.abort(new Error("cancelled by test"));
  await assert.rejects(
    createDiskCatalog(FIXTURE_PACKS, { signal: controller.signal }),
    /cancelled by test/,
  );
});

Deno.test("createDiskCatalog() and rescan() refuse a misspelt option, naming the closest one", async () => {
  await assert.rejects(
    () => createDiskCatalog(FIXTURE_PACKS, { maxModuleByte: 10 } as never),
    {
      name: "TypeError",
      message:
        "Cannot create the disk catalog: unknown option maxModuleByte; did you mean maxModuleBytes?",
    },
  );
  await assert.rejects(
    () => createDiskCatalog(FIXTURE_PACKS, { maxModuleBytes: "10" as never }),
    {
      name: "TypeError",
      message:
        "Cannot create the disk catalog: maxModuleBytes must be a number of bytes",
    },
  );
  const catalog = await createDiskCatalog(FIXTURE_PACKS);
  await assert.rejects(() => catalog.rescan({ sigal: null } as never), {
    name: "TypeError",
    message:
      "Cannot rescan the packs folder: unknown option sigal; did you mean signal?",
  });
});

/** Outside text that would split, repaint or reorder a log line raw. */
const HOSTILE = "x\nINFO forged \u001b[2J\u202e";
const HOSTILE_SHOWN = "x\\nINFO forged \\x1b[2J\\u202e";

function assertNoRawHostile(message: string): void {
  for (const raw of ["\n", "\u001b", "\u202e"]) {
    assert.ok(!message.includes(raw), message);
  }
}

Deno.test("createDiskCatalog() escapes a pack folder's control and bidi characters in its diagnostic", async () => {
  await using dir = await tempDir();
  await writePack(dir.path, HOSTILE, GOOD);
  const catalog = await createDiskCatalog(dir.path);
  const [diagnostic] = catalog.diagnostics();
  assert.equal(diagnostic?.pack, HOSTILE);
  assert.match(diagnostic.message, /^Cannot use pack "x\\nINFO forged /);
  assert.ok(diagnostic.message.includes(HOSTILE_SHOWN), diagnostic.message);
  assertNoRawHostile(diagnostic.message);
});

Deno.test("createDiskCatalog() rejects a manifest naming a pack file with a control or bidi character, escaped in its diagnostic", async () => {
  await using dir = await tempDir();
  await writePack(dir.path, "evil", {
    ...GOOD,
    internal: ["./lib/helper.js", `./lib/${HOSTILE}.js`],
  });
  const catalog = await createDiskCatalog(dir.path);
  assert.deepEqual(catalog.summaries(), []);
  const [diagnostic] = catalog.diagnostics();
  assert.equal(diagnostic?.code, "PACK_MANIFEST_INVALID");
  assert.match(
    diagnostic.message,
    /^Cannot use pack "evil": package\.json does not match the pack manifest schema: cordon\.internal\.1: /,
  );
  assertNoRawHostile(diagnostic.message);
});

const PACK_FILE_RULE =
  "A pack file is ./<path>.js or .mjs inside the pack, without empty, . or .. segments, backslashes or control characters";

Deno.test("createDiskCatalog() rejects a manifest naming a pack file with an empty path segment, which the file system reads as another declared file", async () => {
  await using dir = await tempDir();
  // `./lib//helper.js` is the file `./lib/helper.js` on disk: listed, it
  // was a second module of its own id over the same bytes, and relative
  // imports from it resolved against a folder `lib//` that no file is in.
  await writePack(dir.path, "doubled", {
    ...GOOD,
    internal: ["./lib/helper.js", "./lib//helper.js"],
  });
  await writePack(dir.path, "exported", {
    ...GOOD,
    exports: { ".": "./index.js", "./helper": "./lib//helper.js" },
    internal: [],
  });
  const catalog = await createDiskCatalog(dir.path);
  assert.deepEqual(catalog.summaries(), []);
  assert.deepEqual(
    catalog.diagnostics().map((d) => [d.pack, d.code, d.message]),
    [
      ["doubled", "cordon.internal.1"],
      ["exported", "cordon.exports../helper"],
    ].map(([pack, where]) => [
      pack,
      "PACK_MANIFEST_INVALID",
      `Cannot use pack "${pack}": package.json does not match the pack manifest schema: ${where}: ${PACK_FILE_RULE}; fix the manifest's cordon section so it validates against schemas/pack_manifest.json`,
    ]),
  );
});

Deno.test("createDiskCatalog() rejects a manifest naming a pack file with a lone surrogate, which UTF-8 cannot carry", async () => {
  await using dir = await tempDir();
  // UTF-8 writes every lone surrogate as U+FFFD: the three paths named one
  // file and hashed to one module id.
  await writePack(dir.path, "surrogates", {
    exports: {
      ".": "./\ud800.js",
      "./b": "./\udc00.js",
      "./c": "./\ufffd.js",
    },
    files: { "./\ufffd.js": "export default 1;\n" },
  });
  const catalog = await createDiskCatalog(dir.path);
  assert.deepEqual(catalog.summaries(), []);
  assert.deepEqual(
    catalog.diagnostics().map((d) => [d.pack, d.code, d.message]),
    [[
      "surrogates",
      "PACK_MANIFEST_INVALID",
      `Cannot use pack "surrogates": package.json does not match the pack manifest schema: cordon.exports..: ${PACK_FILE_RULE}; cordon.exports../b: ${PACK_FILE_RULE}; fix the manifest's cordon section so it validates against schemas/pack_manifest.json`,
    ]],
  );
});

Deno.test("createDiskCatalog() rejects a manifest exporting a subpath with a . or .. segment, which no import can name", async () => {
  await using dir = await tempDir();
  // The import policy refuses `pack/..`, `pack/.` and `pack/a/../b` as
  // path escapes, so such an export was listed and never importable.
  for (
    const [pack, subpath] of [["up", "./.."], ["here", "./."], [
      "mid",
      "./a/../b",
    ]]
  ) {
    await writePack(dir.path, pack!, {
      ...GOOD,
      exports: { ".": "./index.js", [subpath!]: "./index.js" },
    });
  }
  const catalog = await createDiskCatalog(dir.path);
  assert.deepEqual(catalog.summaries(), []);
  assert.deepEqual(
    catalog.diagnostics().map((d) => [d.pack, d.code, d.message]),
    [["here", "./."], ["mid", "./a/../b"], ["up", "./.."]].map((
      [pack, subpath],
    ) => [
      pack,
      "PACK_MANIFEST_INVALID",
      `Cannot use pack "${pack}": package.json does not match the pack manifest schema: cordon.exports.${subpath}: Invalid key in record; fix the manifest's cordon section so it validates against schemas/pack_manifest.json`,
    ]),
  );
});

Deno.test("createDiskCatalog() says a manifest names a pack file whose name is too long for the file system, where it said the file cannot be read (Error)", async () => {
  await using dir = await tempDir();
  const long = `./${"a".repeat(300)}.js`;
  await writePack(dir.path, "long-name", {
    ...GOOD,
    exports: { ".": "./index.js", "./long": long },
  });
  const catalog = await createDiskCatalog(dir.path);
  assert.deepEqual(catalog.summaries(), []);
  assert.deepEqual(
    catalog.diagnostics().map((d) => [d.pack, d.code, d.message]),
    [[
      "long-name",
      "PACK_FILE_MISSING",
      `Cannot use pack "long-name": ${long} cannot be read: its name is too long for the file system (ENAMETOOLONG); give the file a shorter name (255 bytes a segment on most file systems), in the pack folder and the manifest`,
    ]],
  );
});

/** Makes a folder under `parent` whose name is `prefix` then the byte 0xFF, which is not UTF-8. */
async function mkdirNotUtf8(parent: string, prefix: string): Promise<void> {
  // Deno and Node write a path's string as UTF-8: only raw bytes make it.
  const { success } = await new Deno.Command("python3", {
    args: [
      "-c",
      "import os, sys; os.mkdir(os.fsencode(sys.argv[1]) + b'\\xff')",
      `${parent}/${prefix}`,
    ],
  }).output();
  assert.ok(success, "python3 made the folder");
}

Deno.test("createDiskCatalog() says a pack or scope folder's name is not UTF-8, where it left the pack out without a word or said the scope folder cannot be read (NotFound)", async () => {
  await using dir = await tempDir();
  await writePack(dir.path, "good", GOOD);
  await writePack(dir.path, "@scope/good", { ...GOOD, name: "@scope/good" });
  await mkdirNotUtf8(dir.path, "a");
  await mkdirNotUtf8(`${dir.path}/@scope`, "b");
  await mkdirNotUtf8(dir.path, "@s");
  for (const folder of ["a\uFFFD", "@scope/b\uFFFD", "@s\uFFFD"]) {
    // What a reader of the lossy name would find: nothing.
    await assert.rejects(
      Deno.stat(`${dir.path}/${folder}`),
      Deno.errors.NotFound,
    );
  }
  const catalog = await createDiskCatalog(dir.path);
  assert.deepEqual(
    catalog.summaries().map((summary) => summary.name),
    ["@scope/good", "good"],
  );
  assert.deepEqual(
    catalog.diagnostics().map((d) => [d.pack, d.code, d.message]),
    [
      [
        "@scope/b\uFFFD",
        "PACK_MANIFEST_INVALID",
        'Cannot use pack "@scope/b\uFFFD": its folder\'s name holds bytes that are not UTF-8 (read as U+FFFD), which no pack name does; install the pack in a folder named after it',
      ],
      [
        "@s\uFFFD",
        "PACK_MANIFEST_INVALID",
        'Cannot use scope folder "@s\uFFFD": its name holds bytes that are not UTF-8 (read as U+FFFD), which no pack name does; rename the folder after the scope of the packs it holds',
      ],
      [
        "a\uFFFD",
        "PACK_MANIFEST_INVALID",
        'Cannot use pack "a\uFFFD": its folder\'s name holds bytes that are not UTF-8 (read as U+FFFD), which no pack name does; install the pack in a folder named after it',
      ],
    ],
  );
});

Deno.test("createDiskCatalog() passes over a file whose name is not UTF-8 beside the packs and in a scope folder, as over any file, where it was refused as a pack or scope folder", async () => {
  await using dir = await tempDir();
  await writePack(dir.path, "good", GOOD);
  await writePack(dir.path, "@scope/good", { ...GOOD, name: "@scope/good" });
  const { success } = await new Deno.Command("python3", {
    args: [
      "-c",
      "import os, sys\nfor path in sys.argv[1:]: open(os.fsencode(path) + b'\\xff', 'wb').close()",
      `${dir.path}/notes`,
      `${dir.path}/@s`,
      `${dir.path}/@scope/notes`,
    ],
  }).output();
  assert.ok(success, "python3 made the files");
  // The same files with UTF-8 names are passed over.
  await Deno.writeTextFile(`${dir.path}/notes.txt`, "");
  await Deno.writeTextFile(`${dir.path}/@scope/notes.txt`, "");
  const catalog = await createDiskCatalog(dir.path);
  assert.deepEqual(
    catalog.summaries().map((summary) => summary.name),
    ["@scope/good", "good"],
  );
  assert.deepEqual(catalog.diagnostics(), []);
});

Deno.test("createDiskCatalog() takes the packs folder and indexPath as file: URLs, as Deno's file APIs do, in a folder whose path holds a space, # and é, and refuses another URL with a TypeError", async () => {
  await using temp = await tempDir();
  const dir = `${temp.path}/my packs #1 é`;
  await Deno.mkdir(dir);
  const byPath = await createDiskCatalog(FIXTURE_PACKS);
  const byUrl = await createDiskCatalog(pathToFileURL(FIXTURE_PACKS), {
    indexPath: pathToFileURL(`${dir}/index.json`),
  });
  assert.ok(byUrl.summaries().length > 0);
  assert.deepEqual(byUrl.summaries(), byPath.summaries());
  assert.ok((await Deno.stat(`${dir}/index.json`)).isFile);
  await assert.rejects(
    createDiskCatalog(new URL("https://example.com/packs")),
    new TypeError(
      "Cannot create the disk catalog: packsDir must be a folder path or a file: URL, not a https: URL",
    ),
  );
  await assert.rejects(
    createDiskCatalog(FIXTURE_PACKS, {
      indexPath: new URL("https://example.com/index.json"),
    }),
    new TypeError(
      "Cannot create the disk catalog: indexPath must be a file path or a file: URL, not a https: URL",
    ),
  );
});

Deno.test({
  name:
    "createDiskCatalog() over a packs folder Deno may not read says to grant --allow-read, where the folder exists and is readable",
  permissions: { read: false },
  async fn() {
    const error = await createDiskCatalog(FIXTURE_PACKS).then(
      () => undefined,
      (e: Error) => e,
    );
    assert.ok(error instanceof CordonError);
    assert.equal(error.code, "PATH_UNUSABLE");
    assert.equal(
      error.message,
      "Cannot read the packs folder: NotCapable; run with --allow-read covering it",
    );
    assert.ok(error.cause instanceof Deno.errors.NotCapable);
  },
});

const UPGRADE: PackSpec = {
  version: "1.1.0",
  internal: ["./lib/helper.js"],
  files: {
    "./index.js":
      'import { helper } from "./lib/helper.js";\nexport const good = helper() + 1;\n',
    "./lib/helper.js": "export const helper = () => 43;\n",
  },
};

/**
 * Runs `fn` with `swap()` called before each read of a file whose path ends
 * with `suffix`: a pack folder replaced while discovery is reading it.
 */
async function swappingOnRead<T>(
  suffix: string,
  swap: () => void,
  fn: () => Promise<T>,
): Promise<T> {
  // Discovery opens each file it reads with node:fs, which can open
  // without waiting on a named pipe.
  const { openSync } = fs;
  fs.openSync = ((...args: Parameters<typeof openSync>) => {
    if (String(args[0]).endsWith(suffix)) swap();
    return openSync(...args);
  }) as typeof openSync;
  try {
    return await fn();
  } finally {
    fs.openSync = openSync;
  }
}

/** Moves the installed pack aside and the staged one in, as an upgrade does. */
function swapFolders(installed: string, staged: string): void {
  Deno.renameSync(installed, `${installed}.old`);
  Deno.renameSync(staged, installed);
  Deno.renameSync(`${installed}.old`, staged);
}

function digestsOf(spec: PackSpec): string[] {
  return Object.keys(spec.files!).sort().map((file) =>
    nodeSri(spec.files![file]!)
  );
}

Deno.test("rescan() lists a pack folder swapped while it reads it as one version whole, never the old manifest with new modules", async () => {
  await using dir = await tempDir();
  await Deno.mkdir(`${dir.path}/packs`);
  await writePack(`${dir.path}/packs`, "good", GOOD);
  const staged = await writePack(dir.path, "good", UPGRADE);
  const catalog = await createDiskCatalog(`${dir.path}/packs`);
  let swaps = 0;
  await swappingOnRead("/lib/helper.js", () => {
    if (swaps++ === 0) swapFolders(`${dir.path}/packs/good`, staged);
  }, () => catalog.rescan());
  const [pack] = catalog.summaries();
  assert.equal(pack?.version, "1.1.0");
  assert.deepEqual(pack.modules.map((m) => m.digest), digestsOf(UPGRADE));
  assert.deepEqual(catalog.diagnostics(), []);
});

Deno.test("rescan() rejects a pack folder replaced each time it reads it with PACK_FOLDER_REPLACED, and lists it once it holds still", async () => {
  await using dir = await tempDir();
  await Deno.mkdir(`${dir.path}/packs`);
  await writePack(`${dir.path}/packs`, "good", GOOD);
  const staged = await writePack(dir.path, "good", UPGRADE);
  const catalog = await createDiskCatalog(`${dir.path}/packs`);
  await swappingOnRead(
    "/lib/helper.js",
    () => swapFolders(`${dir.path}/packs/good`, staged),
    () => catalog.rescan(),
  );
  assert.deepEqual(catalog.summaries(), []);
  const [diagnostic] = catalog.diagnostics();
  assert.equal(diagnostic?.code, "PACK_FOLDER_REPLACED");
  assert.match(
    diagnostic.message,
    /^Cannot use pack "good": its folder, or a file or folder in it, was replaced while discovery read it, 3 times in a row; /,
  );
  await catalog.rescan();
  const [pack] = catalog.summaries();
  const listed = pack?.version === "1.1.0" ? UPGRADE : GOOD;
  assert.deepEqual(pack?.modules.map((m) => m.digest), digestsOf(listed));
});

Deno.test("rescan() leaves out a pack folder moved away while it reads it, with no diagnostic", async () => {
  await using dir = await tempDir();
  await Deno.mkdir(`${dir.path}/packs`);
  await writePack(`${dir.path}/packs`, "good", GOOD);
  const catalog = await createDiskCatalog(`${dir.path}/packs`);
  let moves = 0;
  await swappingOnRead("/package.json", () => {
    if (moves++ === 0) {
      Deno.renameSync(`${dir.path}/packs/good`, `${dir.path}/good`);
    }
  }, () => catalog.rescan());
  assert.deepEqual(catalog.summaries(), []);
  assert.deepEqual(catalog.diagnostics(), []);
});

Deno.test("rescan() during a swap of the whole packs folder lists every pack of the new one, where the old one is removed while it reads it", async () => {
  await using dir = await tempDir();
  for (const [release, version] of [["1", "1.0.0"], ["2", "2.0.0"]]) {
    for (const name of ["a", "b"]) {
      await writePack(`${dir.path}/releases/${release}`, name, {
        ...GOOD,
        version,
      });
    }
  }
  const packs = `${dir.path}/packs`;
  await Deno.symlink("releases/1", packs);
  const catalog = await createDiskCatalog(packs);
  let swaps = 0;
  await swappingOnRead("/b/package.json", () => {
    if (swaps++ > 0) return;
    Deno.symlinkSync("releases/2", `${packs}.tmp`);
    Deno.renameSync(`${packs}.tmp`, packs);
    Deno.renameSync(`${dir.path}/releases/1`, `${dir.path}/removed`);
  }, () => catalog.rescan());
  assert.deepEqual(
    catalog.summaries().map((pack) => `${pack.name}@${pack.version}`),
    ["a@2.0.0", "b@2.0.0"],
  );
  assert.deepEqual(catalog.diagnostics(), []);
});

Deno.test("rescan() never lists the bytes of a file outside the pack that a link put in place of a module after it was checked", async () => {
  await using dir = await tempDir();
  await Deno.mkdir(`${dir.path}/packs`);
  await writePack(`${dir.path}/packs`, "good", GOOD);
  await Deno.writeTextFile(
    `${dir.path}/secret.js`,
    'export const secret = "s3cr3t";\n',
  );
  const catalog = await createDiskCatalog(`${dir.path}/packs`);
  const helper = `${dir.path}/packs/good/lib/helper.js`;
  let swaps = 0;
  await swappingOnRead("/lib/helper.js", () => {
    if (swaps++ > 0) return;
    Deno.removeSync(helper);
    Deno.symlinkSync(`${dir.path}/secret.js`, helper);
  }, () => catalog.rescan());
  assert.deepEqual(catalog.summaries(), []);
  assert.deepEqual(codesByPack(catalog), { good: ["PACK_FILE_OUTSIDE"] });
});

/**
 * A process that, after two minutes, leaves `marker` and opens `fifo` to
 * write, which ends an open of it for reading that waits for a writer: a
 * test whose discovery waited that long then fails, where it would hang.
 */
function pipeWriterLater(fifo: string, marker: string): Deno.ChildProcess {
  return new Deno.Command("sh", {
    args: ["-c", 'sleep 120; : > "$1"; exec 3> "$2"', "sh", marker, fifo],
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
}

Deno.test("rescan() refuses a module a named pipe replaced between its check and its open, without waiting on the pipe, where the open waited for a writer", async () => {
  await using dir = await tempDir();
  await Deno.mkdir(`${dir.path}/packs`);
  await writePack(`${dir.path}/packs`, "good", GOOD);
  const catalog = await createDiskCatalog(`${dir.path}/packs`);
  const helper = `${dir.path}/packs/good/lib/helper.js`;
  const marker = `${dir.path}/waited`;
  const writer = pipeWriterLater(helper, marker);
  try {
    let swaps = 0;
    await swappingOnRead("/lib/helper.js", () => {
      if (swaps++ > 0) return;
      Deno.removeSync(helper);
      const made = new Deno.Command("mkfifo", { args: [helper] }).outputSync();
      assert.ok(made.success, "mkfifo");
    }, () => catalog.rescan());
  } finally {
    writer.kill();
    await writer.status;
  }
  assert.equal(
    await Deno.lstat(marker).then(() => true, () => false),
    false,
    "discovery waited on the pipe until a writer came",
  );
  assert.deepEqual(catalog.summaries(), []);
  assert.deepEqual(codesByPack(catalog), { good: ["PACK_FILE_MISSING"] });
  assert.match(
    catalog.diagnostics()[0]!.message,
    /lib\/helper\.js is not a regular file/,
  );
});

Deno.test("rescan() never lists the bytes of a file outside the pack that a link put in place of a folder of the pack reaches", async () => {
  await using dir = await tempDir();
  await Deno.mkdir(`${dir.path}/packs`);
  const files = {
    "./index.js":
      'import { a } from "./lib/a.js";\nimport { b } from "./lib/b.js";\nexport default a + b;\n',
    "./lib/a.js": "export const a = 1;\n",
    "./lib/b.js": "export const b = 2;\n",
  };
  await writePack(`${dir.path}/packs`, "good", {
    internal: ["./lib/a.js", "./lib/b.js"],
    files,
  });
  await writePack(dir.path, "outside", {
    files: {
      "./a.js": files["./lib/a.js"],
      "./b.js": 'export const b = "s3cr3t";\n',
    },
  });
  const catalog = await createDiskCatalog(`${dir.path}/packs`);
  const lib = `${dir.path}/packs/good/lib`;
  const openSync = fs.openSync;
  let swaps = 0;
  // Once lib/a.js is open, lib is checked as a real folder: the link put
  // in its place then leads the read of lib/b.js out of the pack.
  fs.openSync = ((...args: Parameters<typeof openSync>) => {
    const file = openSync(...args);
    if (String(args[0]).endsWith("/lib/a.js") && swaps++ === 0) {
      Deno.renameSync(lib, `${dir.path}/lib.old`);
      Deno.symlinkSync(`${dir.path}/outside`, lib);
    }
    return file;
  }) as typeof openSync;
  try {
    await catalog.rescan();
  } finally {
    fs.openSync = openSync;
  }
  assert.equal(swaps, 1);
  const secret = nodeSri('export const b = "s3cr3t";\n');
  const listed = catalog.summaries().flatMap((pack) =>
    pack.modules.map((module) => module.digest)
  );
  assert.equal(listed.includes(secret), false);
  assert.deepEqual(codesByPack(catalog), { good: ["PACK_FILE_OUTSIDE"] });
});
