import assert from "node:assert/strict";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createDiskCatalog } from "../catalog/disk_catalog.ts";
import { createQuickJSLoader } from "../loader/quickjs_loader.ts";
import { settleWithin } from "../protocol/deadline.ts";
import { unhandledDuring } from "../protocol/_test_unhandled_test.ts";
import { addFoldersOf } from "../protocol/replace_file.ts";
import {
  CordonError,
  type ErrorCode,
  PackManifestSchema,
} from "../protocol/mod.ts";
import { checkIntegrity } from "./_npm_fetch.ts";
import { readTarball } from "./_tar.ts";
import { packCli, packNpm, parsePackArgs } from "./pack.ts";
import { subfolder, taskFrom } from "./_test_task_test.ts";

const encoder = new TextEncoder();

/** A ustar archive of files, each under `package/` unless `raw`. */
function tar(
  files: Record<string, string>,
  raw = false,
): Uint8Array<ArrayBuffer> {
  return tarOf(
    Object.entries(files).map((
      [name, text],
    ) => [raw ? name : `package/${name}`, text, "0"]),
  );
}

/** A ustar archive of entries: name, text and type flag (`0` a file). */
function tarOf(entries: [string, string, string][]): Uint8Array<ArrayBuffer> {
  const blocks: Uint8Array[] = [];
  for (const [name, text, type] of entries) {
    const body = encoder.encode(text);
    const header = new Uint8Array(512);
    header.set(encoder.encode(name));
    header.set(encoder.encode("0000644\0"), 100);
    header.set(
      encoder.encode(body.length.toString(8).padStart(11, "0") + "\0"),
      124,
    );
    header.set(encoder.encode("        "), 148);
    header[156] = type.charCodeAt(0);
    header.set(encoder.encode("ustar\u000000"), 257);
    let sum = 0;
    for (const byte of header) sum += byte;
    header.set(encoder.encode(sum.toString(8).padStart(6, "0") + "\0 "), 148);
    blocks.push(
      header,
      body,
      new Uint8Array((512 - (body.length % 512)) % 512),
    );
  }
  blocks.push(new Uint8Array(1024));
  const out = new Uint8Array(blocks.reduce((n, b) => n + b.length, 0));
  let offset = 0;
  for (const block of blocks) {
    out.set(block, offset);
    offset += block.length;
  }
  return out;
}

async function gzip(
  bytes: Uint8Array<ArrayBuffer>,
): Promise<Uint8Array<ArrayBuffer>> {
  const stream = new Blob([bytes]).stream().pipeThrough(
    new CompressionStream("gzip"),
  );
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

async function sri(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-512", bytes));
  return `sha512-${btoa(String.fromCharCode(...digest))}`;
}

interface FakePackage {
  files: Record<string, string>;
  /** Overrides the integrity the registry states. */
  integrity?: string;
  /**
   * Overrides the tarball's bytes, given the packed ones and the tar
   * archive they gzip (the integrity stated is theirs).
   */
  tarball?: (
    tgz: Uint8Array<ArrayBuffer>,
    archive: Uint8Array<ArrayBuffer>,
  ) => Uint8Array<ArrayBuffer> | Promise<Uint8Array<ArrayBuffer>>;
}

/** Bytes one after another. */
function concatBytes(...parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, part) => n + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/**
 * A tarball of `archive` in gzip members, each holding the blocks up to
 * the next cut: npm reads the members as one stream.
 */
async function gzipMembers(
  archive: Uint8Array<ArrayBuffer>,
  cuts: readonly number[],
): Promise<Uint8Array<ArrayBuffer>> {
  const ends = [...cuts, archive.length];
  const members = await Promise.all(
    ends.map((end, i) => gzip(archive.slice(i === 0 ? 0 : ends[i - 1], end))),
  );
  return concatBytes(...members);
}

/**
 * Asserts that `promise` rejects with a `CordonError` of `code` whose
 * one-line message matches `message`.
 */
async function assertCode(
  promise: Promise<unknown>,
  code: ErrorCode,
  message: RegExp,
): Promise<CordonError> {
  let caught: unknown;
  await assert.rejects(promise, (error: unknown) => {
    caught = error;
    return true;
  });
  assert.ok(caught instanceof CordonError, `not a CordonError: ${caught}`);
  assert.equal(caught.code, code, caught.message);
  assert.match(caught.message, message);
  assert.doesNotMatch(caught.message, /\n/);
  return caught;
}

/**
 * Packs `name` from a fake registry holding `files` (with `subpaths`, when
 * given), checks every entry packed without problems, then runs `source`,
 * which imports the pack, in a loader over it: the run's value, or its
 * error code.
 */
function packAndRun(
  name: string,
  files: Record<string, string>,
  source: string,
  subpaths?: string[],
): Promise<unknown> {
  return runPacked({ [name]: { files } }, name, source, subpaths);
}

/**
 * {@linkcode packAndRun} for a registry of several `packages`, by default
 * running a guest that exports the pack's default export.
 */
async function runPacked(
  packages: Record<string, FakePackage>,
  name: string,
  source = `import value from "${name}"; export default value;`,
  subpaths?: string[],
): Promise<unknown> {
  await using registry = await fakeRegistry(packages);
  const outDir = await Deno.makeTempDir();
  try {
    const report = await packNpm(name, {
      outDir,
      registry: registry.url,
      ...(subpaths === undefined ? {} : { subpaths }),
    });
    for (const entry of report.entries) assert.deepEqual(entry.problems, []);
    const catalog = await createDiskCatalog(outDir);
    using loader = await createQuickJSLoader({ catalog });
    const result = await loader.run({ source, packages: [name] });
    return result.ok ? result.value : result.error.code;
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
}

/** A registry on a free port serving one version of each package. */
async function fakeRegistry(packages: Record<string, FakePackage>) {
  const tarballs = new Map<string, Uint8Array<ArrayBuffer>>();
  const documents = new Map<string, unknown>();
  for (const [name, pkg] of Object.entries(packages)) {
    const archive = tar(pkg.files);
    const packed = await gzip(archive);
    const tgz = pkg.tarball === undefined
      ? packed
      : await pkg.tarball(packed, archive);
    // npm reads a package.json that opens with a byte order mark.
    const manifest = JSON.parse(
      pkg.files["package.json"]!.replace(/^\uFEFF/, ""),
    );
    tarballs.set(`/${name}.tgz`, tgz);
    documents.set(`/${name}`, {
      "dist-tags": { latest: manifest.version },
      versions: {
        [manifest.version]: {
          dependencies: manifest.dependencies,
          dist: {
            tarball: `TARBALL/${name}.tgz`,
            integrity: pkg.integrity ?? await sri(tgz),
          },
        },
      },
    });
  }
  const server: Deno.HttpServer<Deno.NetAddr> = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request): Response => {
      const path = new URL(request.url).pathname;
      const base: string = `http://127.0.0.1:${server.addr.port}`;
      const tgz = tarballs.get(path);
      if (tgz !== undefined) return new Response(tgz);
      const document = documents.get(path);
      if (document === undefined) {
        return new Response("not found", {
          status: 404,
        });
      }
      return Response.json(
        JSON.parse(JSON.stringify(document).replaceAll("TARBALL", base)),
      );
    },
  );
  return Object.assign(server, { url: `http://127.0.0.1:${server.addr.port}` });
}

async function listFiles(
  dir: string,
  prefix = "",
): Promise<Map<string, Uint8Array>> {
  const out = new Map<string, Uint8Array>();
  for await (const entry of Deno.readDir(`${dir}/${prefix}`)) {
    const path = prefix === "" ? entry.name : `${prefix}/${entry.name}`;
    if (entry.isDirectory) {
      for (const [inner, bytes] of await listFiles(dir, path)) {
        out.set(inner, bytes);
      }
    } else out.set(path, await Deno.readFile(`${dir}/${path}`));
  }
  return out;
}

const GOOD = {
  "package.json": JSON.stringify({
    name: "tiny",
    version: "1.0.0",
    license: "MIT",
    type: "module",
    exports: {
      ".": "./index.js",
      "./extra": "./extra.js",
      "./cli": "./cli.js",
    },
    dependencies: { "tiny-dep": "^2.0.0" },
  }),
  "index.js":
    'import { twice } from "tiny-dep";\nimport { shared } from "./lib/shared.js";\nexport const main = (n) => twice(shared(n));\n',
  "extra.js":
    'import { shared } from "./lib/shared.js";\nexport const extra = (n) => shared(n) + 1;\n',
  "lib/shared.js": "export const shared = (n) => n * 10;\n",
  "cli.js":
    'import { readFileSync } from "node:fs";\nexport const read = () => readFileSync("x");\n',
};

/** The files of a one-module package `name`, with `exports` beside ".". */
function oneModulePackage(
  name: string,
  exports: Record<string, string> = {},
): Record<string, string> {
  return {
    "package.json": JSON.stringify({
      name,
      version: "1.0.0",
      type: "module",
      exports: { ".": "./index.js", ...exports },
    }),
    "index.js": "export const one = 1;\n",
  };
}
const DEP = {
  "package.json": JSON.stringify({
    name: "tiny-dep",
    version: "2.1.0",
    type: "module",
    main: "dep.js",
  }),
  "dep.js": "export const twice = (n) => n * 2;\n",
};

Deno.test("packNpm() bundles entries with shared code in a chunk, inlines dependencies, leaves out an entry that needs node:fs and records where the pack came from", async () => {
  await using registry = await fakeRegistry({
    tiny: { files: GOOD },
    "tiny-dep": { files: DEP },
  });
  const outDir = await Deno.makeTempDir();
  try {
    const report = await packNpm("tiny", { outDir, registry: registry.url });
    assert.equal(report.written, true);
    const cli = report.entries.find((entry) => entry.subpath === "./cli")!;
    // The policy's words tell a guest to declare a pack, which a package
    // cannot do about its own import: the report says what a packer can.
    assert.deepEqual(cli.problems, [
      './cli.js imports "node:fs", which the sandbox lacks (IMPORT_NODE_BUILTIN): Node built-ins are denied; the package offers no build of it for browsers, so it needs Node',
    ]);
    const manifest = PackManifestSchema.parse(
      JSON.parse(await Deno.readTextFile(`${outDir}/tiny/package.json`)),
    );
    assert.deepEqual(Object.keys(manifest.cordon.exports), [".", "./extra"]);
    assert.equal(manifest.cordon.internal.length, 1, "one shared chunk");
    assert.equal(manifest.cordon.npm?.license, "MIT");
    assert.match(manifest.cordon.npm?.integrity ?? "", /^sha512-/);
    assert.deepEqual(manifest.cordon.npm?.bundled.map((ref) => ref.name), [
      "tiny-dep",
    ]);
    assert.deepEqual(
      manifest.cordon.npm?.report?.map((entry) => entry.subpath),
      ["./cli"],
    );
    const chunk = await Deno.readTextFile(
      `${outDir}/tiny/${manifest.cordon.internal[0]!.slice(2)}`,
    );
    assert.match(chunk, /n \* 10/);
    const entry = await Deno.readTextFile(
      `${outDir}/tiny/${manifest.cordon.exports["."]!.slice(2)}`,
    );
    assert.doesNotMatch(entry, /n \* 10/, "shared code is not duplicated");
    const catalog = await createDiskCatalog(outDir);
    using loader = await createQuickJSLoader({ catalog });
    const result = await loader.run({
      source:
        'import { main } from "tiny"; import { extra } from "tiny/extra"; export default [main(2), extra(2)];',
      packages: ["tiny"],
    });
    assert.deepEqual(result.ok && result.value, [40, 21]);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() lists in bundled only the dependencies whose files the pack's modules hold: a types-only package and one only a left-out entry imports were listed as inlined", async () => {
  await using registry = await fakeRegistry({
    "uses-some": {
      files: {
        "package.json": JSON.stringify({
          name: "uses-some",
          version: "1.0.0",
          type: "module",
          exports: { ".": "./index.js", "./big": "./big.js" },
          dependencies: {
            "tiny-dep": "^2.0.0",
            "types-only": "^1.0.0",
            "fs-user": "^1.0.0",
          },
        }),
        "index.js":
          'import { twice } from "tiny-dep";\nexport const main = (n) => twice(n);\n',
        "big.js": 'export { read } from "fs-user";\n',
      },
    },
    "tiny-dep": { files: DEP },
    "types-only": {
      files: {
        "package.json": JSON.stringify({
          name: "types-only",
          version: "1.0.0",
          types: "index.d.ts",
        }),
        "index.d.ts": "export type T = number;\n",
      },
    },
    "fs-user": {
      files: {
        "package.json": JSON.stringify({
          name: "fs-user",
          version: "1.0.0",
          type: "module",
          main: "index.js",
        }),
        "index.js":
          'import { readFileSync } from "node:fs";\nexport const read = () => readFileSync("x");\n',
      },
    },
  });
  const outDir = await Deno.makeTempDir();
  try {
    const report = await packNpm("uses-some", {
      outDir,
      registry: registry.url,
    });
    assert.deepEqual(
      report.entries.map((entry) => [entry.subpath, entry.problems.length]),
      [[".", 0], ["./big", 1]],
    );
    const manifest = PackManifestSchema.parse(
      JSON.parse(await Deno.readTextFile(`${outDir}/uses-some/package.json`)),
    );
    assert.deepEqual(manifest.cordon.npm?.bundled.map((ref) => ref.name), [
      "tiny-dep",
    ]);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() packs a package whose dependencies have names npm no longer gives new packages (~, over 214 characters), and records them in bundled, where discovery refused the pack's manifest", async () => {
  const long = `long-${"n".repeat(215)}`;
  const dependent = {
    "package.json": JSON.stringify({
      name: "old-deps",
      version: "1.0.0",
      main: "index.js",
      dependencies: { "tilde~dep": "^1.0.0", [long]: "^1.0.0" },
    }),
    "index.js":
      `module.exports = [require("tilde~dep"), require("${long}")];\n`,
  };
  const dependency = (name: string, value: number) => ({
    files: {
      "package.json": JSON.stringify({
        name,
        version: "1.0.0",
        main: "index.js",
      }),
      "index.js": `module.exports = ${value};\n`,
    },
  });
  await using registry = await fakeRegistry({
    "old-deps": { files: dependent },
    "tilde~dep": dependency("tilde~dep", 1),
    [long]: dependency(long, 2),
  });
  const outDir = await Deno.makeTempDir();
  try {
    const report = await packNpm("old-deps", {
      outDir,
      registry: registry.url,
    });
    assert.deepEqual(
      report.entries.map((entry) => [entry.subpath, entry.problems]),
      [[".", []]],
    );
    const manifest = PackManifestSchema.parse(
      JSON.parse(await Deno.readTextFile(`${outDir}/old-deps/package.json`)),
    );
    assert.deepEqual(
      manifest.cordon.npm?.bundled.map((ref) => ref.name).sort(),
      [long, "tilde~dep"].sort(),
    );
    const catalog = await createDiskCatalog(outDir);
    using loader = await createQuickJSLoader({ catalog });
    const result = await loader.run({
      source: 'import value from "old-deps"; export default value;',
      packages: ["old-deps"],
    });
    assert.deepEqual(result.ok && result.value, [1, 2]);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() bundles dependencies with capitals and ~ ' ! ( ) * in their names, as browser-pack depends on JSONStream, where it refused the package as depending on no npm name, and names a missing peer so spelt", async () => {
  const names = ["JSONStream", "crazy!", "it's(x)*"];
  const dependency = (name: string) => ({
    files: {
      "package.json": JSON.stringify({
        name,
        version: "1.0.0",
        main: "index.js",
      }),
      "index.js": `module.exports = ${JSON.stringify(name)};\n`,
    },
  });
  await using registry = await fakeRegistry({
    "old-deps": {
      files: {
        "package.json": JSON.stringify({
          name: "old-deps",
          version: "1.0.0",
          type: "module",
          exports: { ".": "./index.js", "./peer": "./peer.js" },
          dependencies: Object.fromEntries(names.map((name) => [name, "^1"])),
          peerDependencies: { PeerCap: "*" },
        }),
        "index.js": names.map((name, i) =>
          `import n${i} from ${JSON.stringify(name)};\n`
        ).join("") + "export default [n0, n1, n2];\n",
        "peer.js": 'export { default } from "PeerCap";\n',
      },
    },
    ...Object.fromEntries(names.map((name) => [name, dependency(name)])),
  });
  const outDir = await Deno.makeTempDir();
  try {
    const report = await packNpm("old-deps", {
      outDir,
      registry: registry.url,
    });
    assert.deepEqual(
      report.entries.map((entry) => [entry.subpath, entry.problems.length]),
      [[".", 0], ["./peer", 1]],
    );
    assert.match(
      report.entries[1]!.problems[0]!,
      /^\.\/peer\.js imports "PeerCap", a peer or optional dependency the packer does not install; /,
    );
    const manifest = PackManifestSchema.parse(
      JSON.parse(await Deno.readTextFile(`${outDir}/old-deps/package.json`)),
    );
    assert.deepEqual(
      manifest.cordon.npm?.bundled.map((ref) => ref.name).sort(),
      [...names].sort(),
    );
    const catalog = await createDiskCatalog(outDir);
    using loader = await createQuickJSLoader({ catalog });
    const result = await loader.run({
      source: 'import value from "old-deps"; export default value;',
      packages: ["old-deps"],
    });
    assert.deepEqual(result.ok && result.value, names);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() refuses before any fetch a package whose npm name is no pack name, naming the rule it breaks, where it called JSONStream no npm name and packed foo~bar into a pack no declaration can name", async (t) => {
  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const unreachable = `http://127.0.0.1:${(closed.addr as Deno.NetAddr).port}`;
  closed.close();
  const cases: [string, string][] = [
    ["JSONStream@1", "it has capital letters"],
    ["foo~bar", "it has one of ~ ' ! ( ) *"],
    ["crazy!", "it has one of ~ ' ! ( ) *"],
    ["x".repeat(215), "it is over 214 characters long"],
    ["-dash", "it or its part after the scope starts with - or _"],
    ["@s/_under", "it or its part after the scope starts with - or _"],
  ];
  for (const [spec, why] of cases) {
    await t.step(spec.slice(0, 20), async () => {
      const name = spec.replace(/(?<=.)@.*$/, "");
      const outDir = await Deno.makeTempDir();
      try {
        await assertCode(
          packNpm(spec, { outDir, registry: unreachable }),
          "NPM_NOT_BUNDLABLE",
          new RegExp(
            `^Cannot pack ${
              name.replace(/[.*+?^${}()|[\]\\~!'-]/g, "\\$&")
            }: guest code declares and imports a pack by its package's name, and this one is no pack name \\(lowercase npm-style, name or @scope/name\\): ${
              why.replace(/[.*+?^${}()|[\]\\~!'-]/g, "\\$&")
            }; `,
          ),
        );
        assert.deepEqual([...Deno.readDirSync(outDir)], []);
      } finally {
        await Deno.remove(outDir, { recursive: true });
      }
    });
  }
  await t.step("the command says so with its code and goes on", async () => {
    const errors: string[] = [];
    const outDir = await Deno.makeTempDir();
    try {
      assert.deepEqual(
        parsePackArgs(["JSONStream", "--out", outDir]).specs,
        ["JSONStream"],
      );
      const code = await packCli(
        ["JSONStream", "--out", outDir, "--registry", unreachable],
        { printError: (line) => errors.push(line), print: () => {} },
      );
      assert.equal(code, 1);
      assert.equal(errors.length, 1);
      assert.match(
        errors[0]!,
        /^error: NPM_NOT_BUNDLABLE: Cannot pack JSONStream: .*: it has capital letters; /,
      );
    } finally {
      await Deno.remove(outDir, { recursive: true });
    }
  });
});

Deno.test('packNpm() reads a tarball of several gzip members as one stream, as npm does, where it refused it as "failed to write whole buffer"', async () => {
  await using registry = await fakeRegistry({
    // The first entry's header ends the first member and its data opens
    // the second; the third member is the rest.
    "tiny-dep": {
      files: DEP,
      tarball: (_tgz, archive) => gzipMembers(archive, [512, 1024]),
    },
  });
  const outDir = await Deno.makeTempDir();
  try {
    const report = await packNpm("tiny-dep", {
      outDir,
      registry: registry.url,
    });
    assert.equal(report.written, true);
    const files = await listFiles(`${outDir}/tiny-dep`);
    assert.ok(files.has("package.json"), [...files.keys()].join(", "));
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() refuses a tarball with bytes after its gzip stream that are not zero with NPM_PACKAGE_INVALID and says so, and writes nothing", async () => {
  const garbage = new TextEncoder().encode("garbage!");
  await using registry = await fakeRegistry({
    "tiny-dep": {
      files: DEP,
      tarball: (tgz) => concatBytes(tgz, garbage),
    },
  });
  const outDir = await Deno.makeTempDir();
  try {
    await assertCode(
      packNpm("tiny-dep", { outDir, registry: registry.url }),
      "NPM_PACKAGE_INVALID",
      /^Cannot unpack tiny-dep@2\.1\.0: it has bytes after its gzip stream that are neither another gzip member nor zero padding; pack another version, or report it to the package's authors$/,
    );
    assert.deepEqual([...Deno.readDirSync(outDir)], []);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() refuses a tarball naming one path twice with NPM_PACKAGE_INVALID, where it packed the later file, and writes nothing", async () => {
  await using registry = await fakeRegistry({
    "tiny-dep": {
      files: DEP,
      tarball: () =>
        gzip(tarOf([
          ["package/package.json", DEP["package.json"], "0"],
          ["package/index.js", "export const a = 1;\n", "0"],
          ["package/./index.js", "export const a = 2;\n", "0"],
        ])),
    },
  });
  const outDir = await Deno.makeTempDir();
  try {
    await assertCode(
      packNpm("tiny-dep", { outDir, registry: registry.url }),
      "NPM_PACKAGE_INVALID",
      /^Cannot unpack tiny-dep@2\.1\.0: it names "index\.js" twice, as "package\/index\.js" and as "package\/\.\/index\.js", and unpacking would keep only the later; pack another version, or report it to the package's authors$/,
    );
    assert.deepEqual([...Deno.readDirSync(outDir)], []);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() bounds what a tarball of several gzip members unpacks to across all of them", async () => {
  const MiB = 1024 * 1024;
  const files = { ...DEP, "padding.txt": "0".repeat(4 * MiB) };
  await using registry = await fakeRegistry({
    // Each member unpacks to under 3 MiB, the two together to over it.
    "tiny-dep": {
      files,
      tarball: (_tgz, archive) => gzipMembers(archive, [2 * MiB]),
    },
  });
  const outDir = await Deno.makeTempDir();
  try {
    await assertCode(
      packNpm("tiny-dep", {
        outDir,
        registry: registry.url,
        maxUnpackedBytes: 3 * MiB,
      }),
      "NPM_PACKAGE_INVALID",
      /^Cannot unpack tiny-dep@2\.1\.0: with it the package tree of tiny-dep unpacks to over 3145728 bytes/,
    );
    assert.deepEqual([...Deno.readDirSync(outDir)], []);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() refuses a tarball that does not match the registry's integrity, and writes nothing", async () => {
  await using registry = await fakeRegistry({
    "tiny-dep": { files: DEP, integrity: `sha512-${btoa("x".repeat(64))}` },
  });
  const outDir = await Deno.makeTempDir();
  try {
    await assertCode(
      packNpm("tiny-dep", { outDir, registry: registry.url }),
      "NPM_INTEGRITY_MISMATCH",
      /does not match the registry's integrity sha512/,
    );
    assert.deepEqual([...Deno.readDirSync(outDir)], []);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

/** Runs `body` with environment variables set, then puts them back. */
async function withEnv<T>(
  vars: Record<string, string>,
  body: () => Promise<T>,
): Promise<T> {
  const before = Object.keys(vars).map((name) => [name, Deno.env.get(name)]);
  for (const [name, value] of Object.entries(vars)) Deno.env.set(name, value);
  try {
    return await body();
  } finally {
    for (const [name, value] of before) {
      if (value === undefined) Deno.env.delete(name!);
      else Deno.env.set(name!, value);
    }
  }
}

Deno.test("packNpm() writes into an outDir given as a file: URL of a folder whose path holds a space, # and é, and refuses another URL before any request", async () => {
  await using registry = await fakeRegistry({ "tiny-dep": { files: DEP } });
  const parent = await Deno.makeTempDir();
  try {
    const outDir = `${parent}/my packs #1 é`;
    await Deno.mkdir(outDir);
    const report = await packNpm("tiny-dep", {
      outDir: pathToFileURL(outDir),
      registry: registry.url,
    });
    assert.equal(report.written, true);
    assert.ok((await Deno.stat(`${outDir}/tiny-dep/package.json`)).isFile);
    await assert.rejects(
      packNpm("tiny-dep", {
        outDir: new URL("https://example.com/packs"),
        registry: "http://127.0.0.1:9",
      }),
      new TypeError(
        "Cannot pack an npm package: outDir must be a folder path or a file: URL, not a https: URL",
      ),
    );
  } finally {
    await Deno.remove(parent, { recursive: true });
  }
});

Deno.test({
  name:
    "packNpm() gives the pack's folder the permissions of any new folder, so a server run as another user can read it, where it kept the 0700 of a private temporary folder",
  ignore: Deno.build.os === "windows",
  async fn() {
    await using registry = await fakeRegistry({ "tiny-dep": { files: DEP } });
    const outDir = await Deno.makeTempDir();
    try {
      await packNpm("tiny-dep", { outDir, registry: registry.url });
      await Deno.mkdir(`${outDir}/plain`);
      const modeOf = async (path: string) =>
        ((await Deno.stat(path)).mode ?? 0) & 0o777;
      assert.equal(
        (await modeOf(`${outDir}/tiny-dep`)).toString(8),
        (await modeOf(`${outDir}/plain`)).toString(8),
      );
    } finally {
      await Deno.remove(outDir, { recursive: true });
    }
  },
});

Deno.test("packNpm() says PATH_UNUSABLE naming DENO_DIR and HOME when Deno cannot write the cache folder it downloads the bundler into, where it blamed the package with NPM_NOT_BUNDLABLE", async () => {
  await using registry = await fakeRegistry({ "tiny-dep": { files: DEP } });
  const parent = await Deno.makeTempDir();
  try {
    // A folder under a file cannot be made, even by root.
    await Deno.writeTextFile(`${parent}/file`, "");
    const outDir = `${parent}/out`;
    await Deno.mkdir(outDir);
    await withEnv({ DENO_DIR: `${parent}/file/deno` }, () =>
      assertCode(
        packNpm("tiny-dep", { outDir, registry: registry.url }),
        "PATH_UNUSABLE",
        /^Cannot bundle tiny-dep@2\.1\.0: Deno cannot write its cache folder .*\/file\/deno, where it keeps the bundler it downloads.*set DENO_DIR to a folder this command may write, or HOME to one whose \.cache it may write/,
      ));
    assert.deepEqual([...Deno.readDirSync(outDir)], []);
  } finally {
    await Deno.remove(parent, { recursive: true });
  }
});

Deno.test("packNpm() says PATH_UNUSABLE naming TMPDIR when the temp folder's path holds a comma, where it blamed the package with NPM_NOT_BUNDLABLE", async () => {
  await using registry = await fakeRegistry({ "tiny-dep": { files: DEP } });
  const parent = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${parent}/a,b`);
    const outDir = `${parent}/out`;
    await Deno.mkdir(outDir);
    await withEnv({ TMPDIR: `${parent}/a,b` }, () =>
      assertCode(
        packNpm("tiny-dep", { outDir, registry: registry.url }),
        "PATH_UNUSABLE",
        /^Cannot bundle tiny-dep@2\.1\.0: the temp folder's path holds a comma, which a permission flag cannot carry: set TMPDIR to a folder without one$/,
      ));
    assert.deepEqual([...Deno.readDirSync(outDir)], []);
    assert.deepEqual([...Deno.readDirSync(`${parent}/a,b`)], []);
  } finally {
    await Deno.remove(parent, { recursive: true });
  }
});

Deno.test("packNpm() does not write a pack no entry of which works, unless forced, and then it carries the report", async () => {
  const files = {
    "package.json": JSON.stringify({
      name: "patches",
      version: "1.0.0",
      type: "module",
      main: "p.js",
    }),
    "p.js":
      "Array.prototype.last = function () { return this[this.length - 1]; };\nexport const ok = 1;\n",
  };
  await using registry = await fakeRegistry({ patches: { files } });
  const outDir = await Deno.makeTempDir();
  try {
    const refused = await packNpm("patches", {
      outDir,
      registry: registry.url,
    });
    assert.equal(refused.written, false);
    assert.match(
      refused.entries[0]!.problems[0]!,
      /the sandbox freezes every built-in/,
    );
    assert.deepEqual([...Deno.readDirSync(outDir)], []);
    const forced = await packNpm("patches", {
      outDir,
      registry: registry.url,
      force: true,
    });
    assert.equal(forced.written, true);
    const manifest = JSON.parse(
      await Deno.readTextFile(`${outDir}/patches/package.json`),
    );
    assert.equal(manifest.cordon.npm.report[0].subpath, ".");
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() packs a module that adds a global of its own, as zod 4 does, and the global holds in the run", async () => {
  const files = {
    "package.json": JSON.stringify({
      name: "globals",
      version: "1.0.0",
      type: "module",
      main: "g.js",
    }),
    "g.js":
      "globalThis.__globalsConfig ??= { n: 0 };\nexport const bump = () => ++globalThis.__globalsConfig.n;\n",
  };
  await using registry = await fakeRegistry({ globals: { files } });
  const outDir = await Deno.makeTempDir();
  try {
    const report = await packNpm("globals", {
      outDir,
      registry: registry.url,
    });
    assert.deepEqual(report.entries[0]!.problems, []);
    assert.equal(report.written, true);
    using loader = await createQuickJSLoader({
      catalog: await createDiskCatalog(outDir),
    });
    for (let run = 0; run < 2; run++) {
      const result = await loader.run({
        source:
          'import { bump } from "globals";\nexport default [bump(), bump()];',
        packages: ["globals"],
      });
      // Each run starts from the state the pack's top level left.
      assert.deepEqual(result.ok && result.value, [1, 2]);
    }
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() leaves out an entry that imports a peer dependency the tree lacks, and packs the others", async () => {
  const files = {
    "package.json": JSON.stringify({
      name: "with-peer",
      version: "1.0.0",
      type: "module",
      exports: {
        ".": "./main.js",
        "./server": "./server.js",
        "./legacy": "./legacy.cjs",
      },
      peerDependencies: { "not-installed-renderer": "^1" },
    }),
    "main.js": "export const answer = 42;\n",
    "server.js":
      'import render from "not-installed-renderer";\nexport const serve = () => render();\n',
    "legacy.cjs": 'module.exports = require("not-installed-renderer");\n',
  };
  await using registry = await fakeRegistry({ "with-peer": { files } });
  const outDir = await Deno.makeTempDir();
  try {
    const report = await packNpm("with-peer", {
      outDir,
      registry: registry.url,
    });
    const bySubpath = new Map(
      report.entries.map((entry) => [entry.subpath, entry.problems]),
    );
    assert.deepEqual(bySubpath.get("."), []);
    assert.deepEqual(bySubpath.get("./server"), [
      `./server.js imports "not-installed-renderer", a peer or optional dependency the packer does not install; a pack module may import only files of its own pack, not another pack's`,
    ]);
    assert.deepEqual(bySubpath.get("./legacy"), [
      `importing it in the sandbox fails with GUEST_ERROR (Dynamic require of "not-installed-renderer" is not supported): it calls require("not-installed-renderer") when imported, a peer or optional dependency the packer does not install; a pack module may import only files of its own pack, not another pack's`,
    ]);
    assert.equal(report.written, true);
    const manifest = JSON.parse(
      await Deno.readTextFile(`${outDir}/with-peer/package.json`),
    );
    assert.deepEqual(Object.keys(manifest.cordon.exports), ["."]);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() names a peer dependency the tree lacks whose name is a Node built-in's as the package it is, as crc 4 declares npm's buffer", async () => {
  const files = {
    "package.json": JSON.stringify({
      name: "with-buffer-peer",
      version: "1.0.0",
      type: "module",
      exports: {
        ".": "./main.js",
        "./bytes": "./bytes.js",
        "./legacy": "./legacy.cjs",
      },
      peerDependencies: { buffer: ">=6.0.3" },
      peerDependenciesMeta: { buffer: { optional: true } },
    }),
    "main.js": "export const answer = 42;\n",
    "bytes.js":
      'import { Buffer } from "buffer";\nexport const from = (text) => Buffer.from(text);\n',
    "legacy.cjs": 'module.exports = require("buffer").Buffer;\n',
  };
  await using registry = await fakeRegistry({ "with-buffer-peer": { files } });
  const outDir = await Deno.makeTempDir();
  try {
    const report = await packNpm("with-buffer-peer", {
      outDir,
      registry: registry.url,
    });
    const bySubpath = new Map(
      report.entries.map((entry) => [entry.subpath, entry.problems]),
    );
    assert.deepEqual(bySubpath.get("."), []);
    assert.deepEqual(bySubpath.get("./bytes"), [
      `./bytes.js imports "buffer", a peer or optional dependency the packer does not install; a pack module may import only files of its own pack, not another pack's`,
    ]);
    assert.deepEqual(bySubpath.get("./legacy"), [
      `importing it in the sandbox fails with GUEST_ERROR (Dynamic require of "buffer" is not supported): it calls require("buffer") when imported, a peer or optional dependency the packer does not install; a pack module may import only files of its own pack, not another pack's`,
    ]);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() leaves out an entry the bundler cannot build and packs the others, as txml's ./transform-stream imports a file the package lacks", async () => {
  const files = {
    "package.json": JSON.stringify({
      name: "one-broken",
      version: "1.0.0",
      type: "module",
      exports: {
        ".": "./main.js",
        "./stream": "./stream.js",
        "./helper": "./helper.js",
      },
    }),
    "main.js": "export const answer = 42;\n",
    "helper.js": "export const helper = () => 'h';\n",
    "stream.js":
      'import { parse } from "./Parse.js";\nexport const stream = () => parse();\n',
  };
  await using registry = await fakeRegistry({ "one-broken": { files } });
  const outDir = await Deno.makeTempDir();
  try {
    const report = await packNpm("one-broken", {
      outDir,
      registry: registry.url,
    });
    const bySubpath = new Map(
      report.entries.map((entry) => [entry.subpath, entry.problems]),
    );
    assert.deepEqual(bySubpath.get("."), []);
    assert.deepEqual(bySubpath.get("./helper"), []);
    const problems = bySubpath.get("./stream") ?? [];
    assert.equal(problems.length, 1);
    assert.match(
      problems[0]!,
      /^the bundler cannot build it: .*Parse\.js.*; pack another build or leave it out$/,
    );
    assert.doesNotMatch(problems[0]!, /cordon-pack-|\/tmp\//);
    assert.equal(report.written, true);
    const manifest = JSON.parse(
      await Deno.readTextFile(`${outDir}/one-broken/package.json`),
    );
    assert.deepEqual(Object.keys(manifest.cordon.exports), [".", "./helper"]);
    assert.deepEqual(manifest.cordon.npm.report, [
      { subpath: "./stream", problems },
    ]);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() bundles alone an entry that throws at import in the build of every entry, as the bundler ran modules the entries share out of the package's order (subscript's ./jessie), and packs that build", async () => {
  // comment.js creates parse.comment and shebang.js, which imports it
  // first, extends it. Entries reach the two through different sets of
  // entries, so each lands in a chunk of its own, and the bundler drops
  // the import between them (it binds nothing) and imports shebang.js's
  // chunk first (evanw/esbuild#399). An entry that needs Intl fails for
  // what the sandbox lacks, which building alone cannot change.
  const files = {
    "package.json": JSON.stringify({
      name: "out-of-order",
      version: "1.0.0",
      type: "module",
      exports: {
        ".": "./parse.js",
        "./comment": "./comment.js",
        "./shebang": "./shebang.js",
        "./jessie": "./jessie.js",
        "./intl": "./intl.js",
      },
    }),
    "parse.js": "export const parse = {};\n",
    "comment.js":
      'import { parse } from "./parse.js";\nparse.comment ??= { "//": "\\n" };\n',
    "shebang.js":
      'import "./comment.js";\nimport { parse } from "./parse.js";\nparse.comment["#!"] = "\\n";\n',
    "jessie.js":
      'import "./shebang.js";\nexport { parse } from "./parse.js";\n',
    "intl.js":
      'import { parse } from "./parse.js";\nexport const n = new Intl.NumberFormat("en").format(parse.n);\n',
  };
  await using registry = await fakeRegistry({ "out-of-order": { files } });
  const outDir = await Deno.makeTempDir();
  try {
    const report = await packNpm("out-of-order", {
      outDir,
      registry: registry.url,
    });
    assert.equal(report.written, true);
    const bySubpath = new Map(
      report.entries.map((entry) => [entry.subpath, entry]),
    );
    for (const subpath of [".", "./comment", "./jessie", "./shebang"]) {
      assert.deepEqual(bySubpath.get(subpath)?.problems, [], subpath);
    }
    const alone =
      /^bundled alone, as in the build it shares with the other entries importing it in the sandbox fails with GUEST_ERROR \(cannot set property '#!' of undefined\): the bundler can run the modules entries share in another order than the package imports them \(evanw\/esbuild#399\); its module instances are not shared with the pack's other entries$/;
    for (const subpath of ["./jessie", "./shebang"]) {
      const notes = bySubpath.get(subpath)!.warnings;
      assert.equal(notes.length, 1, subpath);
      assert.match(notes[0]!, alone);
    }
    for (const subpath of [".", "./comment", "./intl"]) {
      assert.deepEqual(bySubpath.get(subpath)!.warnings, [], subpath);
    }
    assert.match(
      bySubpath.get("./intl")!.problems.join("\n"),
      /the sandbox has no global Intl/,
    );
    const manifest = PackManifestSchema.parse(
      JSON.parse(
        await Deno.readTextFile(`${outDir}/out-of-order/package.json`),
      ),
    );
    assert.match(manifest.cordon.exports["./jessie"]!, /^\.\/alone-\d\//);
    assert.match(manifest.cordon.exports["./shebang"]!, /^\.\/alone-\d\//);
    assert.equal(manifest.cordon.exports["."], "./parse.js");
    using loader = await createQuickJSLoader({
      catalog: await createDiskCatalog(outDir),
    });
    const result = await loader.run({
      source: 'import { parse } from "out-of-order/jessie";\n' +
        'import { parse as shared } from "out-of-order";\n' +
        "export default [parse.comment, parse === shared];",
      packages: ["out-of-order"],
    });
    assert.deepEqual(result.ok && result.value, [
      { "//": "\n", "#!": "\n" },
      false,
    ]);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() leaves out an entry whose module is over a catalog's size cap and packs the others, as date-fns/locale beside date-fns/format", async () => {
  const files = {
    "package.json": JSON.stringify({
      name: "with-huge",
      version: "1.0.0",
      type: "module",
      exports: { "./small": "./small.js", "./huge": "./huge.js" },
    }),
    "small.js": "export const answer = 42;\n",
    "huge.js": `export const text = "${"x".repeat(1024 * 1024)}";\n`,
  };
  await using registry = await fakeRegistry({ "with-huge": { files } });
  const outDir = await Deno.makeTempDir();
  try {
    const report = await packNpm("with-huge", {
      outDir,
      registry: registry.url,
    });
    const bySubpath = new Map(
      report.entries.map((entry) => [entry.subpath, entry.problems]),
    );
    assert.deepEqual(bySubpath.get("./small"), []);
    assert.match(
      bySubpath.get("./huge")?.join("\n") ?? "",
      /^\.\/huge\.js is \d+ bytes, over the 1048576 bytes a catalog serves by default \(PACK_FILE_TOO_LARGE\)/,
    );
    assert.equal(report.written, true);
    const manifest = JSON.parse(
      await Deno.readTextFile(`${outDir}/with-huge/package.json`),
    );
    assert.deepEqual(Object.keys(manifest.cordon.exports), ["./small"]);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() keeps a module whose browser field disables a file: the bundler's NUL in its comment goes, and the module runs whole", async () => {
  const files = {
    "package.json": JSON.stringify({
      name: "with-disabled",
      version: "1.0.0",
      main: "index.js",
      browser: { "./inspect.js": false },
    }),
    "index.js":
      'var inspect = require("./inspect.js");\nmodule.exports = { answer: 42, inspect: typeof inspect };\n',
    "inspect.js": 'module.exports = require("util").inspect;\n',
  };
  await using registry = await fakeRegistry({ "with-disabled": { files } });
  const outDir = await Deno.makeTempDir();
  try {
    const report = await packNpm("with-disabled", {
      outDir,
      registry: registry.url,
    });
    assert.deepEqual(report.entries.map((entry) => entry.problems), [[]]);
    const text = await Deno.readTextFile(`${outDir}/with-disabled/index.js`);
    assert.match(text, /^\/\/ deno:deno-browser-disabled:/m);
    assert.ok(!text.includes("\0"));
    const catalog = await createDiskCatalog(outDir);
    using loader = await createQuickJSLoader({ catalog });
    const result = await loader.run({
      source: 'import pack from "with-disabled"; export default pack;',
      packages: ["with-disabled"],
    });
    assert.deepEqual(result.ok && result.value, {
      answer: 42,
      inspect: "object",
    });
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() gives an import() of a module the browser field disables its empty namespace, as flexsearch's Node worker path needs, and refuses an entry with any other import()", async () => {
  const files = {
    "package.json": JSON.stringify({
      name: "node-path",
      version: "1.0.0",
      type: "module",
      exports: { ".": "./index.js", "./lazy": "./lazy.js" },
      browser: { worker_threads: false },
    }),
    "index.js":
      'export const keys = (node) => node ? import("worker_threads").then((ns) => [Object.keys(ns), ns.default]) : [];\n',
    "lazy.js": 'export const load = () => import("./index.js");\n',
  };
  await using registry = await fakeRegistry({ "node-path": { files } });
  const outDir = await Deno.makeTempDir();
  try {
    const report = await packNpm("node-path", {
      outDir,
      registry: registry.url,
    });
    assert.deepEqual(report.entries.map((entry) => entry.subpath), [
      ".",
      "./lazy",
    ]);
    assert.deepEqual(report.entries[0]!.problems, []);
    assert.match(report.entries[1]!.problems.join(), /uses import\(\)/);
    const catalog = await createDiskCatalog(outDir);
    using loader = await createQuickJSLoader({ catalog });
    const result = await loader.run({
      source:
        'import { keys } from "node-path"; export default [keys(false), await keys(true)];',
      packages: ["node-path"],
    });
    assert.deepEqual(result.ok && result.value, [[], [["default"], {}]]);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() bundles the npm package named like a Node built-in that a package's lookup reaches, as browser bundlers do: readable-stream's require(\"buffer\") and safe-buffer's, which relies on the buffer its dependents install, were left as node:buffer", async () => {
  const packages = {
    "uses-buffer": {
      files: {
        "package.json": JSON.stringify({
          name: "uses-buffer",
          version: "1.0.0",
          main: "index.js",
          dependencies: { buffer: "^6.0.0", "safe-like": "^1.0.0" },
        }),
        "index.js":
          'const { Buffer } = require("buffer");\nmodule.exports = [Buffer.from("hi"), require("safe-like")];\n',
      },
    },
    "safe-like": {
      files: {
        "package.json": JSON.stringify({
          name: "safe-like",
          version: "1.0.0",
          main: "index.js",
        }),
        "index.js": 'module.exports = require("buffer").Buffer.from("safe");\n',
      },
    },
    buffer: {
      files: {
        "package.json": JSON.stringify({
          name: "buffer",
          version: "6.0.3",
          main: "index.js",
        }),
        "index.js":
          'exports.Buffer = { from: (text) => "polyfill " + text };\n',
      },
    },
  };
  assert.deepEqual(await runPacked(packages, "uses-buffer"), [
    "polyfill hi",
    "polyfill safe",
  ]);
});

Deno.test("packNpm() bundles the npm package named like a Node built-in for a package whose browser field is a string, and keeps that field's file as its main: graphology's import of events was left as node:events", async () => {
  const packages = {
    "graph-like": {
      files: {
        "package.json": JSON.stringify({
          name: "graph-like",
          version: "1.0.0",
          browser: "dist/umd.js",
          module: "dist/esm.js",
          main: "dist/cjs.js",
          exports: { import: "./dist/index.mjs", require: "./dist/cjs.js" },
          dependencies: { events: "^3.0.0", "umd-like": "^1.0.0" },
        }),
        "dist/index.mjs":
          'import { EventEmitter } from "events";\nimport umd from "umd-like";\nexport default [new EventEmitter().kind, umd];\n',
        "dist/cjs.js": 'module.exports = require("node:events");\n',
      },
    },
    "umd-like": {
      files: {
        "package.json": JSON.stringify({
          name: "umd-like",
          version: "1.0.0",
          browser: "./browser.js",
          module: "esm.js",
          main: "main.js",
        }),
        "browser.js":
          'module.exports = "browser build with " + new (require("events").EventEmitter)().kind;\n',
        "esm.js": 'export default "module build";\n',
        "main.js": 'module.exports = "main build";\n',
      },
    },
    events: {
      files: {
        "package.json": JSON.stringify({
          name: "events",
          version: "3.3.0",
          main: "events.js",
        }),
        "events.js":
          'exports.EventEmitter = function EventEmitter() { this.kind = "polyfill"; };\n',
      },
    },
  };
  assert.deepEqual(await runPacked(packages, "graph-like"), [
    "polyfill",
    "browser build with polyfill",
  ]);
});

Deno.test("packNpm() drops an import of a Node built-in that binds nothing, as rolldown's runtime chunk has, and keeps one that binds a name", async () => {
  // confbox's rolldown runtime opens with `import "node:module";`: in
  // Node it runs nothing the importing module sees.
  const files = {
    "package.json": JSON.stringify({
      name: "bare-builtin",
      version: "1.0.0",
      type: "module",
      exports: { ".": "./index.js", "./fs": "./fs.js" },
    }),
    "index.js":
      'import "node:module";\nimport "path";\nexport const answer = 42;\n',
    "fs.js":
      'import { readFileSync } from "node:fs";\nexport { readFileSync };\n',
  };
  await using registry = await fakeRegistry({ "bare-builtin": { files } });
  const outDir = await Deno.makeTempDir();
  try {
    const report = await packNpm("bare-builtin", {
      outDir,
      registry: registry.url,
    });
    assert.deepEqual(report.entries.map((entry) => entry.subpath), [
      ".",
      "./fs",
    ]);
    assert.deepEqual(report.entries[0]!.problems, []);
    assert.match(report.entries[1]!.problems.join(), /imports "node:fs"/);
    const text = await Deno.readTextFile(`${outDir}/bare-builtin/index.js`);
    assert.doesNotMatch(text, /node:/);
    const catalog = await createDiskCatalog(outDir);
    using loader = await createQuickJSLoader({ catalog });
    const result = await loader.run({
      source: 'import { answer } from "bare-builtin"; export default answer;',
      packages: ["bare-builtin"],
    });
    assert.deepEqual(result.ok && result.value, 42);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() reads at most 64 MiB of a registry answer, refuses metadata that is not what npm serves, and writes nothing", async (t) => {
  const MiB = 1024 * 1024;
  let sent = 0;
  /** 1 MiB chunks up to 256 MiB, counting what the client pulled. */
  const flood = () =>
    new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= 256 * MiB) return controller.close();
        sent += MiB;
        controller.enqueue(new Uint8Array(MiB));
      },
    });
  let answer: (base: string) => Response = () => new Response(null);
  await using server: Deno.HttpServer<Deno.NetAddr> = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request): Response =>
      new URL(request.url).pathname === "/x.tgz"
        ? new Response(flood())
        : answer(`http://127.0.0.1:${server.addr.port}`),
  );
  const registry = `http://127.0.0.1:${server.addr.port}`;
  const version = (dist: unknown) => ({
    "dist-tags": { latest: "1.0.0" },
    versions: { "1.0.0": { dist } },
  });
  const cases: [string, (base: string) => Response, ErrorCode, RegExp][] = [
    [
      "an endless tarball",
      (base) =>
        Response.json(
          version({ tarball: `${base}/x.tgz`, integrity: "sha512-AAAA" }),
        ),
      "NPM_FETCH_FAILED",
      /^Cannot use the tarball of x@1\.0\.0: it is over 64 MiB; check the registry$/,
    ],
    [
      "endless metadata",
      () => new Response(flood()),
      "NPM_FETCH_FAILED",
      /^Cannot use the registry metadata of x: it is over 64 MiB; check the registry$/,
    ],
    [
      "a tarball URL that is a local file",
      () =>
        Response.json(
          version({ tarball: "file:///dev/zero", integrity: "sha512-AAAA" }),
        ),
      "NPM_FETCH_FAILED",
      /^Cannot fetch x@1\.0\.0: the registry gives a tarball URL that is not http\(s\)/,
    ],
    [
      "metadata that is null",
      () => Response.json(null),
      "NPM_PACKAGE_INVALID",
      /^Cannot use the registry metadata of x: it is not a JSON object/,
    ],
    [
      "metadata that is not JSON",
      () => new Response("{ not json"),
      "NPM_PACKAGE_INVALID",
      /^Cannot use the registry metadata of x: it is not a JSON object/,
    ],
    [
      "versions that are a number",
      () => Response.json({ "dist-tags": { latest: "1.0.0" }, versions: 5 }),
      "NPM_PACKAGE_INVALID",
      /^Cannot resolve x@latest: the registry's metadata of the package lists its versions as no object; check the --registry URL$/,
    ],
    [
      "an integrity that is a number",
      (base) => Response.json(version({ tarball: `${base}/x`, integrity: 5 })),
      "NPM_PACKAGE_INVALID",
      /^Cannot use x@1\.0\.0: the registry gives no integrity hash/,
    ],
  ];
  for (const [what, serve, code, message] of cases) {
    await t.step(what, async () => {
      answer = serve;
      sent = 0;
      const outDir = await Deno.makeTempDir();
      try {
        await assertCode(packNpm("x", { outDir, registry }), code, message);
        assert.ok(sent < 128 * MiB, `${sent / MiB} MiB were read`);
        assert.deepEqual([...Deno.readDirSync(outDir)], []);
      } finally {
        await Deno.remove(outDir, { recursive: true });
      }
    });
  }
});

Deno.test("packNpm() bounds the registry metadata a whole package tree reads at 256 MiB together, naming the package, where it read and held every answer of up to 64 MiB, and a tree of four 60 MiB answers took it to 2.3 GB", async () => {
  const MiB = 1024 * 1024;
  const dependencies = Object.fromEntries(
    Array.from({ length: 5 }, (_, i) => [`dep${i}`, "1.0.0"]),
  );
  const root = await gzip(tar({
    "package.json": JSON.stringify({
      name: "x",
      version: "1.0.0",
      main: "index.js",
      dependencies,
    }),
    "index.js": "module.exports = 1;\n",
  }));
  const dep = await gzip(tar({
    "package.json": JSON.stringify({ name: "dep", version: "1.0.0" }),
    "index.js": "module.exports = 2;\n",
  }));
  let depMetadata: Uint8Array<ArrayBuffer> | undefined;
  await using server: Deno.HttpServer<Deno.NetAddr> = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request): Promise<Response> => {
      const base = `http://127.0.0.1:${server.addr.port}`;
      const path = new URL(request.url).pathname;
      if (path === "/x.tgz") return new Response(root);
      if (path === "/dep.tgz") return new Response(dep);
      const version = async (
        tarball: string,
        bytes: Uint8Array<ArrayBuffer>,
      ) => ({
        "dist-tags": { latest: "1.0.0" },
        versions: {
          "1.0.0": { dist: { tarball, integrity: await sri(bytes) } },
        },
      });
      if (path === "/x") {
        return Response.json(await version(`${base}/x.tgz`, root));
      }
      // Each dependency's metadata: 60 MiB, under the bound of one answer.
      const json = JSON.stringify({
        ...await version(`${base}/dep.tgz`, dep),
        readme: "",
      });
      depMetadata ??= new TextEncoder().encode(
        json.replace('"readme":""', `"readme":"${"x".repeat(60 * MiB)}"`),
      );
      return new Response(depMetadata);
    },
  );
  const outDir = await Deno.makeTempDir();
  try {
    await assertCode(
      packNpm("x", {
        outDir,
        registry: `http://127.0.0.1:${server.addr.port}`,
      }),
      "NPM_NOT_BUNDLABLE",
      /^Cannot install x: the registry metadata of its packages is over 256 MiB together; pack a package with fewer dependencies, or check the --registry URL$/,
    );
    assert.deepEqual([...Deno.readDirSync(outDir)], []);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() bounds what a whole package tree unpacks to, not each tarball alone: a tree of small gzip bombs is refused at the package that passes maxUnpackedBytes, named with the bound", async () => {
  const MiB = 1024 * 1024;
  // Each tarball is a few KiB and unpacks to 2 MiB, far under the bound
  // of one tarball; three of them pass a bound of 5 MiB for the tree.
  const bomb = (name: string): FakePackage => ({
    files: {
      "package.json": JSON.stringify({
        name,
        version: "1.0.0",
        type: "module",
        main: "index.js",
      }),
      "index.js": "export default 1;\n",
      "padding.txt": "0".repeat(2 * MiB),
    },
  });
  const names = ["bomb-1", "bomb-2", "bomb-3", "bomb-4"];
  await using registry = await fakeRegistry({
    ...Object.fromEntries(names.map((name) => [name, bomb(name)])),
    bombs: {
      files: {
        "package.json": JSON.stringify({
          name: "bombs",
          version: "1.0.0",
          type: "module",
          main: "index.js",
          dependencies: Object.fromEntries(names.map((name) => [name, "1"])),
        }),
        "index.js": "export default 1;\n",
      },
    },
  });
  const outDir = await Deno.makeTempDir();
  try {
    await assertCode(
      packNpm("bombs", {
        outDir,
        registry: registry.url,
        maxUnpackedBytes: 5 * MiB,
      }),
      "NPM_PACKAGE_INVALID",
      /^Cannot unpack bomb-3@1\.0\.0: with it the package tree of bombs unpacks to over 5242880 bytes \(maxUnpackedBytes, --max-unpacked-bytes\); pack a package with fewer or smaller dependencies, or raise that bound if you trust the packages$/,
    );
    assert.deepEqual([...Deno.readDirSync(outDir)], []);
    // Each call has a bound of its own: a tree of one bomb packs under it.
    const report = await packNpm("bomb-1", {
      outDir,
      registry: registry.url,
      maxUnpackedBytes: 5 * MiB,
    });
    assert.equal(report.written, true);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
  await assert.rejects(
    packNpm("bombs", { outDir: "never-written", maxUnpackedBytes: 0 }),
    /maxUnpackedBytes must be an integer from 1 to 8589934592 bytes/,
  );
  assert.equal(
    parsePackArgs(["a", "--out", "x", "--max-unpacked-bytes", "1048576"])
      .maxUnpackedBytes,
    1048576,
  );
  assert.throws(
    () => parsePackArgs(["a", "--out", "x", "--max-unpacked-bytes", "0"]),
    /--max-unpacked-bytes must be an integer from 1 to 8589934592/,
  );
});

Deno.test("packNpm() records the licence a package states in npm's older licenses array", async () => {
  const withLicenses = (name: string, licenses: unknown[]) => ({
    ...oneModulePackage(name),
    "package.json": JSON.stringify({
      name,
      version: "1.0.0",
      type: "module",
      exports: { ".": "./index.js" },
      licenses,
    }),
  });
  await using registry = await fakeRegistry({
    single: {
      files: withLicenses("single", [
        { type: "Apache-2.0", url: "http://www.apache.org/licenses/" },
      ]),
    },
    dual: { files: withLicenses("dual", [{ type: "MIT" }, "GPL-2.0"]) },
    none: { files: withLicenses("none", []) },
  });
  const outDir = await Deno.makeTempDir();
  try {
    const licenses = [];
    for (const name of ["single", "dual", "none"]) {
      const report = await packNpm(name, { outDir, registry: registry.url });
      licenses.push(report.license);
    }
    assert.deepEqual(licenses, [
      "Apache-2.0",
      "(MIT OR GPL-2.0)",
      "UNLICENSED",
    ]);
    const manifest = JSON.parse(
      await Deno.readTextFile(`${outDir}/single/package.json`),
    );
    assert.equal(manifest.license, "Apache-2.0");
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("readTarball() refuses an archive whose paths leave the package", async () => {
  const archive = await gzip(tar({ "package/../../etc/x.js": "x" }, true));
  await assert.rejects(readTarball(archive, 1 << 20), /outside the package/);
  const { files: fine } = await readTarball(
    await gzip(tar({ "package/a/b.js": "ok" }, true)),
    1 << 20,
  );
  assert.deepEqual(fine.map((file) => file.path), ["a/b.js"]);
});

Deno.test("readTarball() quotes a refused path with escapes, so a hostile entry name in its error cannot repaint the terminal or reorder the line", async () => {
  const name = "package/../\u202e\u009b2J\u001b]52;c;eA==\u0007\nx.js";
  await assert.rejects(
    readTarball(await gzip(tar({ [name]: "x" }, true)), 1 << 20),
    {
      message: String
        .raw`it names a file outside the package: "package/../\u202e\u009b2J\u001b]52;c;eA==\u0007\nx.js"`,
    },
  );
});

Deno.test("readTarball() reads an archive padded with zero bytes after its gzip stream, as early npm versions wrote them, stops at a zero byte there as npm's zlib does, and refuses other bytes there", async () => {
  const archive = await gzip(tar({ "package/index.js": "ok" }, true));
  const followedBy = (tail: number[]) => {
    const bytes = new Uint8Array(archive.length + tail.length);
    bytes.set(archive);
    bytes.set(tail, archive.length);
    return bytes;
  };
  for (const tail of [new Array(1150).fill(0), [0, 0, 0, 1]]) {
    const { files } = await readTarball(followedBy(tail), 1 << 20);
    assert.deepEqual(
      files.map((file) => [file.path, new TextDecoder().decode(file.bytes)]),
      [["index.js", "ok"]],
    );
  }
  await assert.rejects(
    readTarball(followedBy([1, 0, 0, 0]), 1 << 20),
    /^Error: it has bytes after its gzip stream that are neither another gzip member nor zero padding; pack another version/,
  );
});

Deno.test("readTarball() reads a tarball of 1,000 gzip members as one stream", async () => {
  const archive = tar({ "package/index.js": "ok" }, true);
  const cuts = Array.from({ length: 999 }, (_, i) => i + 1);
  const { files } = await readTarball(
    await gzipMembers(archive, cuts),
    1 << 20,
  );
  assert.deepEqual(files.map((file) => file.path), ["index.js"]);
});

Deno.test("readTarball() says a tarball that is not gzip, is truncated or is damaged is so", async () => {
  const archive = await gzip(tar({ "package/index.js": "ok" }, true));
  await assert.rejects(
    readTarball(new TextEncoder().encode("<html>"), 1 << 20),
    /^Error: it is not gzip; pack another version/,
  );
  await assert.rejects(
    readTarball(archive.slice(0, archive.length - 6), 1 << 20),
    /^Error: its gzip stream is truncated; pack another version/,
  );
  const damaged = archive.slice();
  damaged[damaged.length - 6] = damaged[damaged.length - 6]! ^ 0xff;
  await assert.rejects(
    readTarball(damaged, 1 << 20),
    /^Error: its gzip stream is damaged \(incorrect data check\); pack another version/,
  );
});

/**
 * `archive` with every byte 0x01 in its headers' name fields and pax
 * data changed to `byte` and each checksum written again, so a test can
 * name an entry in bytes that are not UTF-8.
 */
function withByte(
  archive: Uint8Array<ArrayBuffer>,
  byte: number,
): Uint8Array<ArrayBuffer> {
  const out = archive.map((value) => value === 1 ? byte : value);
  for (let offset = 0; offset + 512 <= out.length; offset += 512) {
    const header = out.subarray(offset, offset + 512);
    if (latin1(header.subarray(257, 262)) !== "ustar") continue;
    header.set(encoder.encode("        "), 148);
    let sum = 0;
    for (const value of header) sum += value;
    header.set(encoder.encode(sum.toString(8).padStart(6, "0") + "\0 "), 148);
  }
  return out;
}

Deno.test("readTarball() refuses two entries at one path however they spell it, where it kept the later and lost the other file, and a path that is a file and a folder", async () => {
  const spellings = [
    ["package/a.js", "package/a.js"],
    ["package/a.js", "package//a.js"],
    ["package/a.js", "./package/./a.js"],
    ["package/a.js", "other/a.js"],
    ["package/lib/a.js", "package/lib//a.js/"],
  ];
  for (const [first, second] of spellings) {
    const path = first!.slice("package/".length);
    await assert.rejects(
      readTarball(
        await gzip(tarOf([
          [first!, "first", "0"],
          ["package/b.js", "b", "0"],
          [second!, "second", "0"],
        ])),
        1 << 20,
      ),
      {
        message:
          `it names "${path}" twice, as "${first}" and as "${second}", and unpacking would keep only the later; pack another version, or report it to the package's authors`,
      },
    );
  }
  const { files: cased } = await readTarball(
    await gzip(tar({ "package/A.js": "upper", "package/a.js": "lower" }, true)),
    1 << 20,
  );
  assert.deepEqual(
    cased.map((file) => [file.path, new TextDecoder().decode(file.bytes)]),
    [["A.js", "upper"], ["a.js", "lower"]],
  );
  await assert.rejects(
    readTarball(
      await gzip(tar({ "package/lib": "x", "package/lib/a.js": "y" }, true)),
      1 << 20,
    ),
    /it names "lib" both as a file and as a folder/,
  );
});

Deno.test("readTarball() refuses an entry named in bytes that are not UTF-8, which npm reads with U+FFFD so that two such entries were one file, and quotes the name with escapes", async () => {
  const twoBad = tarOf([
    ["package/a\u0001.js", "first", "0"],
    ["package/a\u0002.js", "second", "0"],
  ]).map((value) => value === 2 ? 0xfe : value);
  const refused = {
    message:
      'it names an entry "package/a\uFFFD.js" that holds bytes that are not UTF-8 (read as U+FFFD), which npm would write under another name; pack another version, or report it to the package\'s authors',
  };
  await assert.rejects(
    readTarball(await gzip(withByte(twoBad, 0xff)), 1 << 20),
    refused,
  );
  const viaPax = tarOf([
    ["PaxHeader", paxRecord("path", "package/a\u0001.js"), "x"],
    ["package/short.js", "x", "0"],
  ]);
  await assert.rejects(
    readTarball(await gzip(withByte(viaPax, 0xff)), 1 << 20),
    refused,
  );
  const viaLongName = tarOf([
    ["././@LongLink", "package/a\u0001.js", "L"],
    ["package/short.js", "x", "0"],
  ]);
  await assert.rejects(
    readTarball(await gzip(withByte(viaLongName, 0xff)), 1 << 20),
    refused,
  );
  // A header's own name cut in the middle of a character, as packers cut
  // it to fit, is no entry's name when a pax path stands for it.
  const cut = tarOf([
    ["PaxHeader", paxRecord("path", "package/\u00e9.js"), "x"],
    ["package/\u0001.js", "x", "0"],
  ]);
  const { files } = await readTarball(
    await gzip(withByte(cut, 0xc3)),
    1 << 20,
  );
  assert.deepEqual(files.map((file) => file.path), ["\u00e9.js"]);
});

Deno.test("readTarball() refuses a path over 1024 characters and an archive that makes over 10,000 folders and more than its files, where a tiny archive naming a path of 160,000 folders kept it busy for half a minute and one of 5,000 files 70 folders deep made 350,000 folders on the disk", async () => {
  const path = `package/${"a/".repeat(506)}b.js`;
  const named = (name: string): [string, string, string][] => [
    ["PaxHeader", paxRecord("path", name), "x"],
    ["package/short.js", "x", "0"],
  ];
  const { files } = await readTarball(await gzip(tarOf(named(path))), 1 << 20);
  assert.deepEqual(files.map((file) => file.path.length), [1016]);
  await assert.rejects(
    readTarball(await gzip(tarOf(named(`${path}/c.js`))), 1 << 20),
    /^Error: it names a path of over 1024 characters, longer than any package's: "package\/a\/a\//,
  );
  const deep = (count: number): [string, string, string][] =>
    Array.from({ length: count }, (_, i) => [`package/${i}/a/b.js`, "", "0"]);
  const { files: many } = await readTarball(
    await gzip(tarOf(deep(4999))),
    1 << 24,
  );
  assert.equal(many.length, 4999);
  await assert.rejects(
    readTarball(await gzip(tarOf(deep(5001))), 1 << 24),
    /^Error: it makes over 10000 folders for its 5001 files, more than any package's: at most 10000, or one for each file$/,
  );
  await assert.rejects(
    readTarball(await gzip(tarOf(deep(11_000))), 1 << 25),
    /^Error: it makes over 11000 folders for its 11000 files, more than any package's: at most 10000, or one for each file$/,
  );
});

Deno.test("readTarball() takes an archive of over 10,000 folders that holds more files than folders, as @stdlib/stats 0.4.1 makes 10,080 for its 14,598 files, where it refused every @stdlib package", async () => {
  // @stdlib/stats's shape: a folder a module, each with its own package.json,
  // lib/ and docs/types/, under a few folders of groups.
  const files = [
    "package.json",
    "lib/index.js",
    "lib/main.js",
    "docs/repl.txt",
    "docs/types/index.d.ts",
  ];
  const modules = Array.from({ length: 2_600 }, (_, i) => `base/m${i}`);
  const entries: [string, string, string][] = modules.flatMap((module) =>
    files.map((file): [string, string, string] => [
      `package/${module}/${file}`,
      "",
      "0",
    ])
  );
  const { files: read } = await readTarball(
    await gzip(tarOf(entries)),
    1 << 24,
  );
  assert.equal(read.length, 13_000);
  assert.equal(read.at(-1)!.path, "base/m2599/docs/types/index.d.ts");
  const folders = new Set<string>();
  for (const file of read) addFoldersOf(file.path, folders);
  assert.equal(folders.size, 10_401);
});

Deno.test("readTarball() refuses a header that fails its checksum and takes a pax header's size for the next entry's, as npm reads them, where it read both archives as other files than npm installs", async () => {
  const archive = tar({ "package/a.js": "benign", "package/b.js": "b" }, true);
  // b.js's header, after a.js's header and data: its checksum one digit off.
  archive[1024 + 148] = archive[1024 + 148]! ^ 1;
  await assert.rejects(
    readTarball(await gzip(archive), 1 << 20),
    /^Error: a header fails its checksum, so npm would read the archive otherwise$/,
  );
  archive.set(new TextEncoder().encode("zzzzzz"), 1024 + 148);
  await assert.rejects(
    readTarball(await gzip(archive), 1 << 20),
    /^Error: a header fails its checksum, so npm would read the archive otherwise$/,
  );
  const { files } = await readTarball(
    await gzip(tarOf([
      ["PaxHeader", paxRecord("size", "1024"), "x"],
      ["package/a.js", "x", "0"],
      ["package/b.js", "", "0"],
    ])),
    1 << 20,
  );
  assert.deepEqual(
    files.map((file) => [file.path, file.bytes.length]),
    [["a.js", 1024]],
  );
});

Deno.test("readTarball() refuses a pax size before another extended header or in a global header, and keeps a long name across a pax header, where npm read those archives as other files than it packed", async () => {
  // npm reads a.js as 1024 bytes, holding b.js; the packer read the long
  // name's header as 1024 bytes, swallowing a.js's.
  await assert.rejects(
    readTarball(
      await gzip(tarOf([
        ["PaxHeader", paxRecord("size", "1024"), "x"],
        ["././@LongLink", "package/long.js", "L"],
        ["package/a.js", "a", "0"],
        ["package/b.js", "b", "0"],
      ])),
      1 << 20,
    ),
    /^Error: a pax header's size is followed by another extended header, which npm versions read differently$/,
  );
  // npm reads every later entry as empty, and each data block as a header.
  await assert.rejects(
    readTarball(
      await gzip(tarOf([
        ["GlobalHead", paxRecord("size", "0"), "g"],
        ["package/a.js", "", "0"],
        ["package/b.js", "b", "0"],
      ])),
      1 << 20,
    ),
    /^Error: a global pax header sets a size, which npm would take for every later entry's$/,
  );
  const { files } = await readTarball(
    await gzip(tarOf([
      ["GlobalHead", paxRecord("comment", "a commit"), "g"],
      ["././@LongLink", "package/long.js", "L"],
      ["PaxHeader", paxRecord("mtime", "1"), "x"],
      ["package/a.js", "a", "0"],
    ])),
    1 << 20,
  );
  assert.deepEqual(files.map((file) => file.path), ["long.js"]);
});

Deno.test("readTarball() refuses a header npm skips for its path or link target, where it read the header's data as a file that npm reads as headers", async () => {
  // npm skips such a header alone and reads its data, here evil.js's header
  // and bytes, as the archive's next entry.
  const smuggled = tarOf([["package/evil.js", "evil", "0"]]).slice(0, 1024);
  const carrying = (name: string, type: string, linkname = "") => {
    const archive = tarOf([[name, latin1(smuggled), type]]);
    const header = archive.subarray(0, 512);
    header.set(new TextEncoder().encode(linkname), 157);
    header.set(new TextEncoder().encode("        "), 148);
    const sum = header.reduce((total, byte) => total + byte, 0);
    header.set(
      new TextEncoder().encode(sum.toString(8).padStart(6, "0") + "\0 "),
      148,
    );
    return archive;
  };
  const cases: [Uint8Array<ArrayBuffer>, RegExp][] = [
    [carrying("", "0"), /^Error: a header names no path, so npm would skip it/],
    [
      carrying("package/a.js", "0", "b.js"),
      /^Error: a header that is no link names a link target, so npm would skip it/,
    ],
    [
      carrying("package/a.js", "2"),
      /^Error: a link names no target, so npm would skip it/,
    ],
  ];
  for (const [archive, refusal] of cases) {
    await assert.rejects(readTarball(await gzip(archive), 1 << 20), refusal);
  }
});

/** Bytes as a string of one character each, so a tar entry holds them. */
function latin1(bytes: Uint8Array): string {
  return String.fromCharCode(...bytes);
}

/** One pax record: its length counts its own digits and bytes. */
function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  const bytes = new TextEncoder().encode(body).length;
  let length = bytes + 1;
  while (String(length).length + bytes !== length) length++;
  return `${length}${body}`;
}

Deno.test("readTarball() reads a pax header's path by its records' lengths in bytes, non-ASCII names included", async () => {
  const path = `package/${"é".repeat(100)}.js`;
  const { files } = await readTarball(
    await gzip(tarOf([
      [
        "PaxHeader",
        paxRecord("comment", "café") + paxRecord("path", path),
        "x",
      ],
      ["package/short.js", "x", "0"],
    ])),
    1 << 20,
  );
  assert.deepEqual(files.map((file) => file.path), [`${"é".repeat(100)}.js`]);
});

Deno.test("packNpm() refuses a package whose file cannot be written without naming its work folder", async () => {
  // A pax header names the next file: 300 bytes, longer than a file name
  // may be.
  const path = `package/${"a".repeat(300)}.js`;
  const record = ` path=${path}\n`;
  const length = record.length + String(record.length + 3).length;
  const tgz = await gzip(tarOf([
    [
      "package/package.json",
      JSON.stringify({ name: "long", version: "1.0.0" }),
      "0",
    ],
    ["package/index.js", "export default 1;\n", "0"],
    ["PaxHeader", `${length}${record}`, "x"],
    ["package/short.js", "x", "0"],
  ]));
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request): Promise<Response> =>
      new URL(request.url).pathname === "/long.tgz"
        ? new Response(tgz)
        : Response.json({
          "dist-tags": { latest: "1.0.0" },
          versions: {
            "1.0.0": {
              dist: {
                tarball: `http://127.0.0.1:${server.addr.port}/long.tgz`,
                integrity: await sri(tgz),
              },
            },
          },
        }),
  );
  await using _server = server;
  const outDir = await Deno.makeTempDir();
  try {
    await assertCode(
      packNpm("long", {
        outDir,
        registry: `http://127.0.0.1:${server.addr.port}`,
      }),
      "NPM_PACKAGE_INVALID",
      /^Cannot unpack long@1\.0\.0: its files cannot be written to disk \(ENAMETOOLONG\); check the package's file names$/,
    );
    assert.deepEqual([...Deno.readDirSync(outDir)], []);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() keeps the bundler from reading a host file a package names, by absolute path, by climbing out with .., as text or through its browser field, and names no host path", async (t) => {
  const host = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      `${host}/secret.js`,
      'export default "HOST SECRET";\n',
    );
    await Deno.writeTextFile(
      `${host}/secret.json`,
      '{ "token": "HOST SECRET" }\n',
    );
    await Deno.writeTextFile(`${host}/secret`, "HOST SECRET\n");
    await Deno.writeTextFile(`${host}/secret.txt`, "HOST SECRET\n");
    // The work folder is a temporary folder too: climbing past the root
    // stays at the root, so enough `..` reach any file from there.
    const climb = `${"../".repeat(40)}${host.slice(1)}`;
    const esm = (source: string) => ({
      "package.json": JSON.stringify({
        name: "reader",
        version: "1.0.0",
        type: "module",
        main: "index.js",
      }),
      "index.js": source,
    });
    // A package whose main module imports `specifier` and exports it.
    const importing = (specifier: string, attributes = "") =>
      esm(
        `import s from ${JSON.stringify(specifier)}${attributes};\n` +
          "export default s;\n",
      );
    const cases: [string, Record<string, string>][] = [
      ["an absolute path", importing(`${host}/secret.js`)],
      ["a file URL", importing(`file://${host}/secret.js`)],
      [
        "a relative path that climbs out of the work folder",
        importing(`${climb}/secret.json`),
      ],
      [
        "a text import of a file without an extension",
        importing(`${host}/secret`, ' with { type: "text" }'),
      ],
      [
        "a missing file just above the work folder, whose URL the bundler's error gave",
        importing("../../../missing.js"),
      ],
      [
        "a missing host file, which the bundler's error told apart from one that is there",
        importing(`${host}/missing.js`),
      ],
      [
        "a CommonJS require of a missing file above the work folder",
        {
          "package.json": JSON.stringify({
            name: "reader",
            version: "1.0.0",
            main: "index.js",
          }),
          "index.js": 'module.exports = require("../../../missing.json");\n',
        },
      ],
      [
        "a .txt file, which the bundler loads itself",
        importing(`${climb}/secret.txt`),
      ],
      [
        "a JSON import of a file that is not JSON, whose first word the bundler's error quotes",
        importing(`${host}/secret`, ' with { type: "json" }'),
      ],
      [
        "the browser field",
        {
          "package.json": JSON.stringify({
            name: "reader",
            version: "1.0.0",
            main: "index.js",
            browser: { "./data.js": `${host}/secret.js` },
          }),
          "index.js": 'module.exports = require("./data.js");\n',
          "data.js": "module.exports = 1;\n",
        },
      ],
    ];
    for (const [what, files] of cases) {
      await t.step(what, async () => {
        await using registry = await fakeRegistry({ reader: { files } });
        const outDir = await Deno.makeTempDir();
        try {
          const error = await assertCode(
            packNpm("reader", { outDir, registry: registry.url }),
            "NPM_NOT_BUNDLABLE",
            /^Cannot bundle reader@1\.0\.0: it reads a file outside the package tree, which the bundler may not read; /,
          );
          assert.doesNotMatch(
            error.message,
            /HOST|\/tmp\/|cordon-pack-/,
          );
          assert.ok(!error.message.includes(host));
          assert.deepEqual([...Deno.readDirSync(outDir)], []);
        } finally {
          await Deno.remove(outDir, { recursive: true });
        }
      });
    }
  } finally {
    await Deno.remove(host, { recursive: true });
  }
});

Deno.test("packing the same npm versions twice gives byte-identical packs", async () => {
  const first = await Deno.makeTempDir();
  const second = await Deno.makeTempDir();
  try {
    for (const outDir of [first, second]) {
      await packNpm("dayjs@1.11.23", {
        outDir,
        subpaths: [".", "./plugin/utc", "./plugin/relativeTime"],
      });
      await packNpm("fast-xml-parser@5.12.1", { outDir });
    }
    const a = await listFiles(first);
    const b = await listFiles(second);
    assert.ok(a.size > 5);
    assert.deepEqual([...a.keys()].sort(), [...b.keys()].sort());
    for (const [path, bytes] of a) assert.deepEqual(b.get(path), bytes, path);
  } finally {
    await Deno.remove(first, { recursive: true });
    await Deno.remove(second, { recursive: true });
  }
});

Deno.test("parsePackArgs() refuses bad command lines in one line each", () => {
  const cases: [string[], RegExp][] = [
    [["--out", "x"], /name at least one npm package/],
    [["date-fns"], /--out names the packs folder/],
    [["Not A Name", "--out", "x"], /Cannot read the package spec/],
    [
      ["a", "b", "--out", "x", "--subpaths", "."],
      /--subpaths applies to one package/,
    ],
    [
      ["a", "--out", "x", "--registry", "ftp://x"],
      /--registry must be an http/,
    ],
    [["a", "--out", "x", "--bogus"], /"--bogus" is not a flag/],
  ];
  for (const [args, message] of cases) {
    assert.throws(() => parsePackArgs(args), (error: Error) => {
      assert.ok(error instanceof TypeError);
      assert.match(error.message, message);
      assert.doesNotMatch(error.message, /\n/);
      return true;
    });
  }
});

Deno.test("packCli() exits 2 for bad flags, and 1 when a package cannot be fetched or --out is a file, each line with its code", async () => {
  const errors: string[] = [];
  const printError = (line: string) => errors.push(line);
  assert.equal(await packCli(["--out"], { printError }), 2);
  await using registry = await fakeRegistry({});
  const outDir = await Deno.makeTempDir();
  try {
    errors.length = 0;
    const code = await packCli([
      "missing",
      "--out",
      outDir,
      "--registry",
      registry.url,
    ], {
      printError,
      print: () => {},
    });
    assert.equal(code, 1);
    assert.deepEqual(errors, [
      "error: NPM_NOT_FOUND: Cannot fetch the registry metadata of missing: the registry answered 404; check the name and version",
    ]);
    // An --out that is a file is refused before the registry is asked,
    // which would answer NPM_NOT_FOUND.
    errors.length = 0;
    await Deno.writeTextFile(`${outDir}/file`, "x");
    assert.equal(
      await packCli([
        "missing",
        "--out",
        `${outDir}/file`,
        "--registry",
        registry.url,
      ], {
        printError,
        print: () => {},
      }),
      1,
    );
    assert.deepEqual(errors, [
      "error: PATH_UNUSABLE: Cannot write into --out: it is a file, not a folder; pass the packs folder to write into (it is created when absent)",
    ]);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packCli() says a pack it cannot write into --out in one line with PATH_UNUSABLE, and counts one entry as one", async () => {
  await using registry = await fakeRegistry({
    "@s%2ftiny": { files: oneModulePackage("@s/tiny") },
  });
  const outDir = await Deno.makeTempDir();
  try {
    const args = ["@s/tiny", "--out", outDir, "--registry", registry.url];
    const lines: string[] = [];
    const errors: string[] = [];
    const options = {
      print: (line: string) => lines.push(line),
      printError: (line: string) => errors.push(line),
    };
    // The scope's folder is a file: the pack has nowhere to go.
    await Deno.writeTextFile(`${outDir}/@s`, "x");
    assert.equal(await packCli(args, options), 1);
    assert.equal(errors.length, 1, errors.join("\n"));
    assert.match(
      errors[0]!,
      /^error: PATH_UNUSABLE: Cannot write the pack into --out: [A-Za-z]+; check that it is a folder this command may write and its disk has room$/,
    );
    await Deno.remove(`${outDir}/@s`);
    assert.equal(await packCli(args, options), 0);
    assert.match(
      lines[0]!,
      /^@s\/tiny@1\.0\.0 \(.*\): 1 entry, 1 module, \d+ bytes$/,
    );
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packCli() names an OS error the runtime has no class for (a name too long) by its code in its PATH_UNUSABLE line, never by the runtime's message, which names its hidden folder", async () => {
  await using registry = await fakeRegistry({
    tiny: { files: oneModulePackage("tiny") },
  });
  const outDir = await Deno.makeTempDir();
  try {
    const errors: string[] = [];
    const options = {
      print: () => {},
      printError: (line: string) => errors.push(line),
    };
    // An --out whose own path the system cannot take.
    const unnamable = `${outDir}/${"d".repeat(300)}`;
    assert.equal(await packCli(["tiny", "--out", unnamable], options), 1);
    assert.deepEqual(errors, [
      "error: PATH_UNUSABLE: Cannot write into --out: it cannot be read (ENAMETOOLONG); pass a packs folder this command may read and write",
    ]);
    // An --out that exists, below which the pack's hidden folder is a path
    // too long for the system (4,096 bytes on Linux).
    errors.length = 0;
    let deep = outDir;
    while (deep.length < 4080) deep += `/${"d".repeat(200)}`;
    deep = deep.slice(0, 4085).replace(/\/$/, "");
    await Deno.mkdir(deep, { recursive: true });
    const args = ["tiny", "--out", deep, "--registry", registry.url];
    assert.equal(await packCli(args, options), 1);
    assert.deepEqual(errors, [
      "error: PATH_UNUSABLE: Cannot write the pack into --out: ENAMETOOLONG; check that it is a folder this command may write and its disk has room",
    ]);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packCli() says a package no entry of which works in one line with NPM_NO_ENTRY_WORKS, after the report that gives each entry's reasons", async () => {
  await using registry = await fakeRegistry({
    patches: {
      files: {
        "package.json": JSON.stringify({
          name: "patches",
          version: "1.0.0",
          type: "module",
          main: "p.js",
        }),
        "p.js":
          "Array.prototype.last = function () {};\nexport const ok = 1;\n",
      },
    },
  });
  const outDir = await Deno.makeTempDir();
  try {
    const args = ["patches", "--out", outDir, "--registry", registry.url];
    const lines: string[] = [];
    const errors: string[] = [];
    const options = {
      print: (line: string) => lines.push(line),
      printError: (line: string) => errors.push(line),
    };
    assert.equal(await packCli(args, options), 1);
    assert.deepEqual(errors, [
      "error: NPM_NO_ENTRY_WORKS: Cannot pack patches@1.0.0: no entry works in a sandbox (the report above gives each entry's reasons); pack another build or version of the package, or pass --force to write it with the report",
    ]);
    const refused = lines.indexOf("  .: refused");
    assert.notEqual(refused, -1, lines.join("\n"));
    assert.match(
      lines[refused + 1]!,
      /^ {4}cannot work: .*the sandbox freezes every built-in/,
    );
    assert.equal(lines.at(-1), "  not written");
    assert.deepEqual([...Deno.readDirSync(outDir)], []);
    errors.length = 0;
    assert.equal(await packCli([...args, "--force"], options), 1);
    assert.deepEqual(errors, [], "a pack written with --force is no error");
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("checkIntegrity() checks the strongest hash the registry gives, falls back to the shasum, and refuses when there is none", async () => {
  const bytes = encoder.encode("tarball bytes");
  const sha512 = await sri(bytes);
  const sha1 = [...new Uint8Array(await crypto.subtle.digest("SHA-1", bytes))]
    .map((byte) => byte.toString(16).padStart(2, "0")).join("");
  const what = "x@1.0.0";
  assert.equal(
    await checkIntegrity(bytes, { integrity: `sha1-AAAA ${sha512}`, what }),
    sha512,
  );
  assert.match(await checkIntegrity(bytes, { shasum: sha1, what }), /^sha1-/);
  // A weaker hash that matches does not excuse a stronger one that does not.
  const sha1Entry = `sha1-${
    btoa(String.fromCharCode(
      ...new Uint8Array(await crypto.subtle.digest("SHA-1", bytes)),
    ))
  }`;
  assert.equal(
    await checkIntegrity(bytes, { integrity: sha1Entry, what }),
    sha1Entry,
  );
  await assertCode(
    checkIntegrity(bytes, {
      integrity: `sha512-${"A".repeat(86)}== ${sha1Entry}`,
      what,
    }),
    "NPM_INTEGRITY_MISMATCH",
    /does not match the registry's integrity sha512/,
  );
  await assertCode(
    checkIntegrity(bytes, { shasum: "0".repeat(40), what }),
    "NPM_INTEGRITY_MISMATCH",
    /does not match the registry's shasum/,
  );
  await assertCode(
    checkIntegrity(bytes, { what }),
    "NPM_PACKAGE_INVALID",
    /gives no integrity hash/,
  );
});

Deno.test("packNpm() applies a package's browser field to a built-in it imports: crypto mapped to false is no import of node:crypto, and the Web Crypto path runs", async () => {
  const files = {
    "package.json": JSON.stringify({
      name: "web-first",
      version: "1.0.0",
      type: "module",
      exports: { ".": "./index.js" },
      browser: { crypto: false },
    }),
    "index.js":
      'import nodeCrypto from "crypto";\nexport const bytes = (n) => typeof crypto !== "undefined" ? crypto.getRandomValues(new Uint8Array(n)).length : nodeCrypto.randomBytes(n).length;\n',
  };
  assert.equal(
    await packAndRun(
      "web-first",
      files,
      'import { bytes } from "web-first"; export default bytes(4);',
    ),
    4,
  );
});

Deno.test("packNpm() packs a CommonJS require of a JSON file by its name without .json, as Node resolves it, in the package and its dependencies", async () => {
  // node-emoji 2's dependency emojilib 2 requires `./emojis` for
  // emojis.json; the bundler looks for JavaScript files only there.
  const packages = {
    "json-data": {
      files: {
        "package.json": JSON.stringify({
          name: "json-data",
          version: "1.0.0",
          main: "index.js",
          dependencies: { "json-dep": "^1.0.0" },
        }),
        "index.js":
          'module.exports = [require("./data"), require(\'./table\'), require("./lib/../data"), require("./both"), require("json-dep")];\n',
        "data.json": '{"x":1}',
        "table/index.json": '{"y":2}',
        "both.js": 'module.exports = "the .js file comes first";\n',
        "both.json": '"not this"',
      },
    },
    "json-dep": {
      files: {
        "package.json": JSON.stringify({
          name: "json-dep",
          version: "1.0.0",
          main: "lib/index.js",
        }),
        "lib/index.js": 'module.exports = require("../emojis").length;\n',
        "emojis.json": '["a","b","c"]',
      },
    },
  };
  assert.deepEqual(await runPacked(packages, "json-data"), [
    { x: 1 },
    { y: 2 },
    { x: 1 },
    "the .js file comes first",
    3,
  ]);
});

Deno.test("packNpm() packs a require of a dependency by its name that Node resolves to a JSON file, an index.json with no main among them", async () => {
  // spdx-expression-parse requires spdx-license-ids (index.json, no
  // main) and spdx-license-ids/deprecated (deprecated.json).
  const packages = {
    "license-parse": {
      files: {
        "package.json": JSON.stringify({
          name: "license-parse",
          version: "1.0.0",
          main: "index.js",
          dependencies: { "license-ids": "^1.0.0" },
        }),
        "index.js":
          'module.exports = require("license-ids").concat(require("license-ids/deprecated"));\n',
      },
    },
    "license-ids": {
      files: {
        "package.json": JSON.stringify({
          name: "license-ids",
          version: "1.0.0",
        }),
        "index.json": '["MIT","ISC"]',
        "deprecated.json": '["GPL-2.0"]',
      },
    },
  };
  assert.deepEqual(await runPacked(packages, "license-parse"), [
    "MIT",
    "ISC",
    "GPL-2.0",
  ]);
});

Deno.test("packNpm() gives a CommonJS entry the named exports Node and Deno give it: each property of module.exports, as it was when the module ran", async () => {
  const files = {
    "package.json": JSON.stringify({
      name: "old-style",
      version: "1.0.0",
      main: "index.js",
    }),
    // The bundler gathers licence comments after the entry's last line.
    "index.js": "/** @license old-style */\n" +
      'exports.sprintf = (f, v) => f.replace("%s", v);\nexports["delete"] = 1;\nexports["not-a-name"] = 2;\nexports.__esModule = true;\nexports.default = "d";\nexports.later = 1;\nexports.bump = () => { exports.later++; return exports.later; };\n',
  };
  assert.deepEqual(
    await packAndRun(
      "old-style",
      files,
      'import pack, { sprintf, delete as del, bump, later, "module.exports" as whole } from "old-style";\nimport * as ns from "old-style";\nexport default [sprintf("a %s", "b"), del, bump(), later, pack.later, pack.default, Object.keys(ns).sort(), whole === pack];',
    ),
    [
      "a b",
      1,
      2,
      1,
      2,
      "d",
      ["bump", "default", "delete", "later", "module.exports", "sprintf"],
      true,
    ],
  );
});

Deno.test("packNpm() gives an ES module entry the names of a CommonJS module it re-exports with export *, as Node and Deno do, beside its own exports", async () => {
  const files = {
    "package.json": JSON.stringify({
      name: "star-cjs",
      version: "1.0.0",
      exports: { ".": { import: "./index.mjs", require: "./lib/index.js" } },
    }),
    "index.mjs":
      'import { Schema } from "./lib/index.js";\nexport * from "./lib/index.js";\nexport const own = "own";\nexport default Schema;\n',
    "lib/index.js":
      'exports.__esModule = true;\nexports.Schema = "schema";\nexports.string = "string";\nexports.own = "lib own";\nexports.default = "lib default";\nexports.later = 1;\nexports.bump = () => ++exports.later;\n',
  };
  assert.deepEqual(
    await packAndRun(
      "star-cjs",
      files,
      'import pack, { Schema, string, own, bump, later } from "star-cjs";\nimport * as ns from "star-cjs";\nexport default [pack, Schema, string, own, bump(), later, Object.keys(ns).sort()];',
    ),
    [
      "schema",
      "schema",
      "string",
      "own",
      2,
      1,
      ["Schema", "bump", "default", "later", "own", "string"],
    ],
  );
});

Deno.test("packNpm() reads a package.json that opens with a byte order mark, as npm does, for the package and its dependencies", async () => {
  const withBom = (files: Record<string, string>) => ({
    ...files,
    "package.json": `\uFEFF${files["package.json"]}`,
  });
  const value = await runPacked(
    {
      "tiny-dep": { files: withBom(DEP) },
      "bom-app": {
        files: withBom({
          "package.json": JSON.stringify({
            name: "bom-app",
            version: "1.0.0",
            type: "module",
            exports: { ".": "./index.js" },
            dependencies: { "tiny-dep": "^2.0.0" },
          }),
          "index.js":
            'import { twice } from "tiny-dep";\nexport default twice(21);\n',
        }),
      },
    },
    "bom-app",
  );
  assert.equal(value, 42);
});

Deno.test("packNpm() packs a subpath that is a folder with its own package.json, as fp-ts/function is, when the package has no exports", async () => {
  const files = {
    "package.json": JSON.stringify({
      name: "legacy-folders",
      version: "1.0.0",
      main: "./lib/index.js",
      module: "./es6/index.js",
    }),
    "lib/index.js": "exports.id = (x) => x;\n",
    "es6/index.js": "export const id = (x) => x;\n",
    "lib/function.js": "exports.pipe = (a, f) => f(a);\n",
    "es6/function.js": "export const pipe = (a, f) => f(a);\n",
    "function/package.json": JSON.stringify({
      main: "../lib/function.js",
      module: "../es6/function.js",
    }),
    "escape/package.json": JSON.stringify({ main: "../../outside.js" }),
  };
  {
    await using registry = await fakeRegistry({ "legacy-folders": { files } });
    const outDir = await Deno.makeTempDir();
    await assertCode(
      packNpm("legacy-folders", {
        outDir,
        registry: registry.url,
        subpaths: ["./escape"],
      }),
      "NPM_NOT_BUNDLABLE",
      /has no file for "\.\/escape"/,
    ).finally(() => Deno.remove(outDir, { recursive: true }));
  }
  assert.equal(
    await packAndRun(
      "legacy-folders",
      files,
      'import { pipe } from "legacy-folders/function"; import { id } from "legacy-folders"; export default pipe(2, id);',
      [".", "./function"],
    ),
    2,
  );
});

Deno.test("packNpm() keeps the names of classes and functions the bundler renames, as code that reads constructor.name needs", async () => {
  const files = {
    "package.json": JSON.stringify({
      name: "named",
      version: "1.0.0",
      type: "module",
      main: "index.js",
    }),
    "index.js":
      'import { Matrix as Other, helper as otherHelper } from "./other.js";\nexport class Matrix {\n  static of() { return new Matrix(); }\n  toString() { return `${this.constructor.name} {}`; }\n}\nexport function helper() { return helper.name; }\nexport const names = () => [Matrix.name, String(Matrix.of()), helper(), Other.name, otherHelper.name];\n',
    "other.js": "export class Matrix {}\nexport function helper() {}\n",
  };
  assert.deepEqual(
    await packAndRun(
      "named",
      files,
      'import { names } from "named"; export default names();',
    ),
    ["Matrix", "Matrix {}", "helper", "Matrix", "helper"],
  );
});

Deno.test("packNpm() packs a named subpath that the package exports through a pattern, as zustand/vanilla is", async () => {
  const files = {
    "package.json": JSON.stringify({
      name: "patterned",
      version: "1.0.0",
      main: "./index.js",
      exports: {
        ".": { import: "./esm/index.mjs", default: "./index.js" },
        "./*": { import: "./esm/*.mjs", default: "./*.js" },
        "./internal/*": null,
      },
    }),
    "index.js": "exports.main = 'cjs';\n",
    "esm/index.mjs": "export const main = 'esm';\n",
    "vanilla.js": "exports.store = 'cjs';\n",
    "esm/vanilla.mjs": "export const store = 'esm';\n",
    "esm/internal/secret.mjs": "export const secret = 1;\n",
  };
  {
    await using registry = await fakeRegistry({ patterned: { files } });
    const outDir = await Deno.makeTempDir();
    try {
      for (const subpath of ["./missing", "./internal/secret", "./../esm/x"]) {
        await assert.rejects(
          packNpm("patterned", {
            outDir,
            registry: registry.url,
            subpaths: [subpath],
          }),
          /does not export|has no file for|is not a subpath/,
          subpath,
        );
      }
    } finally {
      await Deno.remove(outDir, { recursive: true });
    }
  }
  assert.deepEqual(
    await packAndRun(
      "patterned",
      files,
      'import { main } from "patterned"; import { store } from "patterned/vanilla"; export default [main, store];',
      [".", "./vanilla"],
    ),
    ["esm", "esm"],
  );
});

Deno.test("packNpm() takes a package's worker build before its browser build, for its entries and its dependencies, as the sandbox has no DOM", async () => {
  // decode-named-character-reference's browser build decodes with
  // document.createElement; micromark and remark reach it.
  const exportsByCondition = {
    ".": {
      deno: "./deno.js",
      worker: "./worker.js",
      browser: "./dom.js",
      default: "./index.js",
    },
  };
  const builds = {
    "deno.js": 'export const build = "deno";\n',
    "worker.js": 'export const build = "worker";\n',
    "dom.js": "export const build = document.title;\n",
    "index.js": 'export const build = "default";\n',
  };
  await using registry = await fakeRegistry({
    "dom-free": {
      files: {
        "package.json": JSON.stringify({
          name: "dom-free",
          version: "1.0.0",
          exports: exportsByCondition,
        }),
        ...builds,
      },
    },
    "uses-dom-free": {
      files: {
        "package.json": JSON.stringify({
          name: "uses-dom-free",
          version: "1.0.0",
          exports: { ".": { browser: "./main.js", default: "./main.js" } },
          dependencies: { "dom-free": "1.0.0" },
        }),
        "main.js":
          'import { build } from "dom-free";\nexport const viaDependency = build;\n',
      },
    },
  });
  const outDir = await Deno.makeTempDir();
  try {
    for (const name of ["dom-free", "uses-dom-free"]) {
      const report = await packNpm(name, { outDir, registry: registry.url });
      assert.deepEqual(report.entries.map((entry) => entry.problems), [[]]);
    }
    const catalog = await createDiskCatalog(outDir);
    using loader = await createQuickJSLoader({ catalog });
    const result = await loader.run({
      source:
        'import { build } from "dom-free"; import { viaDependency } from "uses-dom-free"; export default [build, viaDependency];',
      packages: ["dom-free", "uses-dom-free"],
    });
    assert.deepEqual(result.ok && result.value, ["worker", "worker"]);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() names why the subpaths it was asked for cannot be entries, as a pattern with only a require target", async () => {
  // mnemonist exports "./*" to CommonJS files under `require` alone, which
  // an ES module import (Node's, Deno's, a bundler's) does not match.
  await using registry = await fakeRegistry({
    "require-only": {
      files: {
        "package.json": JSON.stringify({
          name: "require-only",
          version: "1.0.0",
          exports: {
            ".": { import: "./index.mjs" },
            "./*": { require: "./*.js" },
          },
        }),
        "index.mjs": "export const main = 1;\n",
        "queue.js": "exports.queue = 1;\n",
      },
    },
  });
  const outDir = await Deno.makeTempDir();
  try {
    await assertCode(
      packNpm("require-only", {
        outDir,
        registry: registry.url,
        subpaths: ["./queue"],
      }),
      "NPM_NOT_BUNDLABLE",
      /^Cannot pack require-only@1\.0\.0: it has no JavaScript entry point a pack can export \(\.\/queue has no browser, import or default target\); name another subpath with --subpaths, or pack another version$/,
    );
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() leaves out a subpath whose exports map it to null under a browser condition, instead of packing the Node build after it", async () => {
  // @mswjs/interceptors exports "./net": { browser: null, default: <node> }.
  await using registry = await fakeRegistry({
    "node-parts": {
      files: {
        "package.json": JSON.stringify({
          name: "node-parts",
          version: "1.0.0",
          exports: {
            ".": { browser: "./web.js", default: "./node.js" },
            "./net": { browser: null, default: "./net.js" },
            "./hidden": null,
          },
        }),
        "web.js": "export const where = 'web';\n",
        "node.js": "export const where = 'node';\n",
        "net.js": "export const net = 1;\n",
      },
    },
  });
  const outDir = await Deno.makeTempDir();
  try {
    const report = await packNpm("node-parts", {
      outDir,
      registry: registry.url,
    });
    assert.deepEqual(report.entries.map((entry) => entry.subpath), ["."]);
    assert.deepEqual(report.skipped, [
      {
        subpath: "./net",
        reason:
          "is not for browsers: the package's exports map it to null under a browser condition",
      },
      {
        subpath: "./hidden",
        reason: "is not exported: the package's exports map it to null",
      },
    ]);
    await assertCode(
      packNpm("node-parts", {
        outDir: `${outDir}/named`,
        registry: registry.url,
        subpaths: ["./net"],
      }),
      "NPM_NOT_BUNDLABLE",
      /\(\.\/net is not for browsers: the package's exports map it to null under a browser condition\)/,
    );
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() bundles the file a package's browser field puts in place of its main or module file, as liquidjs's is", async () => {
  const files = {
    "package.json": JSON.stringify({
      name: "two-builds",
      version: "1.0.0",
      main: "dist/lib.node.js",
      module: "dist/lib.node.mjs",
      browser: {
        "./dist/lib.node.js": "./dist/lib.browser.js",
        "./dist/lib.node.mjs": "./dist/lib.browser.mjs",
      },
    }),
    "dist/lib.node.mjs":
      'import { readFileSync } from "node:fs";\nexport const where = () => typeof readFileSync;\n',
    "dist/lib.node.js": 'exports.where = () => typeof require("fs");\n',
    "dist/lib.browser.mjs": 'export const where = () => "browser";\n',
    "dist/lib.browser.js": 'exports.where = () => "browser-cjs";\n',
  };
  assert.equal(
    await packAndRun(
      "two-builds",
      files,
      'import { where } from "two-builds"; export default where();',
    ),
    "browser",
  );
});

Deno.test("packNpm() packs the package's next build when the build a bundler prefers cannot work, and says why in a note", async () => {
  // json5's browser build bundles core-js 2, which replaces
  // Function.prototype.toString; its module build does not.
  const files = {
    "package.json": JSON.stringify({
      name: "polyfilled",
      version: "1.0.0",
      main: "lib/index.js",
      module: "dist/index.mjs",
      browser: "dist/index.js",
    }),
    "dist/index.js": `"use strict";
delete Function.prototype.toString;
exports.parse = (text) => "umd " + text;
`,
    "dist/index.mjs": 'export default { parse: (text) => "esm " + text };\n',
    "lib/index.js": 'exports.parse = (text) => "cjs " + text;\n',
  };
  await using registry = await fakeRegistry({ polyfilled: { files } });
  const outDir = await Deno.makeTempDir();
  try {
    const report = await packNpm("polyfilled", {
      outDir,
      registry: registry.url,
    });
    assert.equal(report.written, true);
    assert.deepEqual(report.entries[0]!.problems, []);
    assert.match(
      report.entries[0]!.warnings.join("\n"),
      /^the package's next build, \.\/dist\/index\.mjs, was tried in place of \.\/dist\/index\.js, which cannot work in the sandbox: importing it in the sandbox fails with GUEST_ERROR \(could not delete property\): the sandbox freezes every built-in/,
    );
    const catalog = await createDiskCatalog(outDir);
    using loader = await createQuickJSLoader({ catalog });
    const result = await loader.run({
      source: 'import json from "polyfilled"; export default json.parse("x");',
      packages: ["polyfilled"],
    });
    assert.deepEqual(result.ok && result.value, "esm x");
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() leaves out an entry none of whose builds works, with the last build's problems and a note for each earlier one that gives that build's own reason", async () => {
  const files = {
    "package.json": JSON.stringify({
      name: "no-good-build",
      version: "1.0.0",
      type: "module",
      exports: {
        ".": { browser: "./browser.js", import: "./node.js" },
        "./ok": "./ok.js",
      },
    }),
    "browser.js": "Object.prototype.extra = 1;\nexport const a = 1;\n",
    "node.js":
      'import { readFileSync } from "node:fs";\nexport const a = readFileSync;\n',
    "ok.js": "export const ok = true;\n",
  };
  await using registry = await fakeRegistry({ "no-good-build": { files } });
  const outDir = await Deno.makeTempDir();
  try {
    const report = await packNpm("no-good-build", {
      outDir,
      registry: registry.url,
    });
    assert.equal(report.written, true);
    const [main, ok] = report.entries;
    assert.equal(main!.subpath, ".");
    assert.match(main!.problems.join("\n"), /\.\/node\.js imports "node:fs"/);
    assert.match(
      main!.warnings.join("\n"),
      /^the package's next build, \.\/node\.js, was tried in place of \.\/browser\.js, which cannot work in the sandbox: importing it in the sandbox fails with GUEST_ERROR \(object is not extensible\): the sandbox freezes every built-in/,
    );
    assert.doesNotMatch(main!.warnings.join("\n"), /node:fs/);
    assert.deepEqual(ok, { subpath: "./ok", problems: [], warnings: [] });
    const manifest = JSON.parse(
      await Deno.readTextFile(`${outDir}/no-good-build/package.json`),
    );
    assert.deepEqual(Object.keys(manifest.cordon.exports), ["./ok"]);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() says an entry QuickJS cannot parse meets a limit of the engine, without the advice meant for an installed pack", async () => {
  const files = {
    "package.json": JSON.stringify({
      name: "v-flag",
      version: "1.0.0",
      type: "module",
      main: "index.js",
    }),
    // QuickJS refuses a `-` outside a class under the `v` flag.
    "index.js": "export const slice = /^(-?\\d*):(-?\\d*)$/v;\n",
  };
  await using registry = await fakeRegistry({ "v-flag": { files } });
  const outDir = await Deno.makeTempDir();
  try {
    const report = await packNpm("v-flag", { outDir, registry: registry.url });
    assert.equal(report.written, false);
    const problems = report.entries[0]!.problems.join("\n");
    assert.match(
      problems,
      /fails with PACK_MODULE_SYNTAX \(A pack module is not a valid ES module: .+\): QuickJS cannot parse a module the bundler wrote, a limit of the engine, not of the sandbox/,
    );
    assert.doesNotMatch(problems, /reinstall/);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() notes a read of RegExp's legacy statics, which QuickJS lacks", async () => {
  const files = {
    "package.json": JSON.stringify({
      name: "legacy-statics",
      version: "1.0.0",
      type: "module",
      main: "index.js",
    }),
    "index.js":
      "export function first(text) {\n  /(\\d+)/.test(text);\n  return RegExp.$1;\n}\n",
  };
  assert.equal(
    await packAndRun(
      "legacy-statics",
      files,
      'import { first } from "legacy-statics"; export default String(first("a12"));',
    ),
    "undefined",
  );
  await using registry = await fakeRegistry({ "legacy-statics": { files } });
  const outDir = await Deno.makeTempDir();
  try {
    const report = await packNpm("legacy-statics", {
      outDir,
      registry: registry.url,
    });
    assert.equal(report.entries[0]!.warnings.length, 1);
    assert.match(
      report.entries[0]!.warnings[0]!,
      /^\.\/index\.js line \d+ reads a legacy static of RegExp \(RegExp\.\$1, RegExp\.lastMatch and the like\), which QuickJS lacks: it reads undefined in the sandbox, so that code goes wrong$/,
    );
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() notes a call of eval, and not a method of the package's own named eval", async () => {
  const files = {
    "package.json": JSON.stringify({
      name: "own-eval",
      version: "1.0.0",
      type: "module",
      main: "index.js",
    }),
    "index.js": [
      "const poly = { eval(a, x = 0) { return a * x; } };",
      "class Curve { eval(point) { return point + 1; } }",
      "export function both(x) { return [poly.eval(2, x), new Curve().eval(x)]; }",
      "export function run(code) { if (eval(code)) { return 1; } return 0; }",
      "",
    ].join("\n"),
  };
  assert.deepEqual(
    await packAndRun(
      "own-eval",
      files,
      'import { both } from "own-eval"; export default both(3);',
    ),
    [6, 4],
  );
  await using registry = await fakeRegistry({ "own-eval": { files } });
  const outDir = await Deno.makeTempDir();
  try {
    const report = await packNpm("own-eval", {
      outDir,
      registry: registry.url,
    });
    const [note, ...others] = report.entries[0]!.warnings;
    assert.deepEqual(others, []);
    assert.match(
      note!,
      /^\.\/index\.js line \d+ calls eval: code generation from strings is denied in the sandbox, so that call throws EvalError$/,
    );
    const line = Number(note!.match(/line (\d+)/)![1]);
    const source = await Deno.readTextFile(`${outDir}/own-eval/index.js`);
    assert.match(source.split("\n")[line - 1]!, /if \(eval\(code\)\)/);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() notes a read of the global process with its line, and not one behind typeof process on its line, prose, or the package's own process", async () => {
  // node-html-markdown 2 reads process.env.LOG_PERF in every call: the
  // entry loads, and each call throws.
  const files = {
    "package.json": JSON.stringify({
      name: "reads-process",
      version: "1.0.0",
      type: "module",
      main: "index.js",
    }),
    "index.js": [
      "// Each token to process. The guarded read below is no note.",
      'export const onNode = typeof process !== "undefined" && process.versions != null;',
      "export function shout(text) {",
      '  if (process.env.LOG_PERF) console.time("shout");',
      "  return text.toUpperCase();",
      "}",
      "",
    ].join("\n"),
  };
  assert.deepEqual(
    await packAndRun(
      "reads-process",
      files,
      'import { onNode, shout } from "reads-process";\nlet threw = "no";\ntry { shout("a"); } catch (error) { threw = `${error.name}: ${error.message}`; }\nexport default [onNode, threw];',
    ),
    [false, "ReferenceError: 'process' is not defined"],
  );
  await using registry = await fakeRegistry({
    "reads-process": { files },
    "own-process": {
      files: {
        "package.json": JSON.stringify({
          name: "own-process",
          version: "1.0.0",
          type: "module",
          main: "index.js",
        }),
        "index.js":
          "var process = { env: {} };\nexport const debug = () => process.env.DEBUG ?? null;\n",
      },
    },
    // A bundler's renamed binding (Rollup writes `process$1`) is another
    // name: it neither is the global nor checks it.
    "renamed-process": {
      files: {
        "package.json": JSON.stringify({
          name: "renamed-process",
          version: "1.0.0",
          type: "module",
          main: "index.js",
        }),
        "index.js": [
          "var process$1 = { env: {} };",
          'export const local = () => typeof process$1 !== "undefined" && process$1.env;',
          "export const mode = () => process.env.DEBUG;",
          "",
        ].join("\n"),
      },
    },
  });
  const outDir = await Deno.makeTempDir();
  try {
    const report = await packNpm("reads-process", {
      outDir,
      registry: registry.url,
    });
    const [note, ...others] = report.entries[0]!.warnings;
    assert.deepEqual(others, []);
    assert.match(
      note!,
      /^\.\/index\.js line \d+ reads the global process, which the sandbox lacks \(it has no Node globals\): that code throws ReferenceError if it runs; the package offers no build for browsers and no other module, so it needs Node$/,
    );
    const line = Number(note!.match(/line (\d+)/)![1]);
    const source = await Deno.readTextFile(`${outDir}/reads-process/index.js`);
    assert.match(
      source.split("\n")[line - 1]!,
      /if \(process\.env\.LOG_PERF\)/,
    );
    const own = await packNpm("own-process", {
      outDir,
      registry: registry.url,
    });
    assert.deepEqual(own.entries[0]!.warnings, []);
    const renamed = await packNpm("renamed-process", {
      outDir,
      registry: registry.url,
    });
    const [renamedNote, ...renamedOthers] = renamed.entries[0]!.warnings;
    assert.deepEqual(renamedOthers, []);
    const renamedLine = Number(renamedNote?.match(/line (\d+) reads/)?.[1]);
    const renamedSource = await Deno.readTextFile(
      `${outDir}/renamed-process/index.js`,
    );
    assert.match(
      renamedSource.split("\n")[renamedLine - 1] ?? "",
      /process\.env\.DEBUG/,
    );
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() passes over a read of process or a call of eval in a comment, and notes the first one in code", async () => {
  // @fluent/bundle's JSDoc shows `NODE_ENV: () => process.env.NODE_ENV` in
  // an example: its only read of process, in a comment, never runs.
  // The bundler keeps a comment on a class member, as that one is.
  const example = [
    "export class Bundle {",
    "  /**",
    "   * Makes a bundle.",
    "   *     functions: { NODE_ENV: () => process.env.NODE_ENV }",
    "   *     eval(text)",
    "   */",
    "  constructor(id) { this.id = id; }",
    "}",
  ];
  const pkg = (name: string) =>
    JSON.stringify({
      name,
      version: "1.0.0",
      type: "module",
      main: "index.js",
    });
  await using registry = await fakeRegistry({
    "commented-process": {
      files: {
        "package.json": pkg("commented-process"),
        "index.js": [
          ...example,
          "",
        ].join("\n"),
      },
    },
    "commented-then-read": {
      files: {
        "package.json": pkg("commented-then-read"),
        "index.js": [
          ...example,
          "/* process.exit(1) */ export const exit = () => process.exit(1); // process.env",
          "",
        ].join("\n"),
      },
    },
  });
  const outDir = await Deno.makeTempDir();
  try {
    const quiet = await packNpm("commented-process", {
      outDir,
      registry: registry.url,
    });
    const packed = await Deno.readTextFile(
      `${outDir}/commented-process/index.js`,
    );
    // The pack keeps the comment, so the check had it to pass over.
    assert.match(packed, /process\.env\.NODE_ENV/);
    assert.match(packed, /\* +eval\(text\)/);
    assert.deepEqual(quiet.entries[0]!.warnings, []);

    const read = await packNpm("commented-then-read", {
      outDir,
      registry: registry.url,
    });
    const [note, ...others] = read.entries[0]!.warnings;
    assert.deepEqual(others, []);
    assert.match(note!, /^\.\/index\.js line \d+ reads the global process/);
    const line = Number(note!.match(/line (\d+)/)![1]);
    const source = await Deno.readTextFile(
      `${outDir}/commented-then-read/index.js`,
    );
    assert.match(source.split("\n")[line - 1]!, /=> process\.exit\(1\)/);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() notes WebAssembly and a file found through import.meta.url, which a pack cannot use, and the module still loads", async () => {
  // hash-wasm compiles embedded modules when called; brotli-wasm fetches
  // its .wasm file from beside its module.
  const files = {
    "package.json": JSON.stringify({
      name: "wasm-inside",
      version: "1.0.0",
      type: "module",
      main: "index.js",
    }),
    "index.js":
      'export const hash = () => WebAssembly.compile(new Uint8Array([0, 97, 115, 109]));\nexport const wasmUrl = () => new URL("./x_bg.wasm", import.meta.url);\nexport const ready = "yes";\n',
  };
  assert.deepEqual(
    await packAndRun(
      "wasm-inside",
      files,
      'import { hash, ready } from "wasm-inside";\nlet threw = "no";\ntry { hash(); } catch (error) { threw = error.name; }\nexport default [ready, threw];',
    ),
    ["yes", "ReferenceError"],
  );
  await using registry = await fakeRegistry({ "wasm-inside": { files } });
  const outDir = await Deno.makeTempDir();
  try {
    const report = await packNpm("wasm-inside", {
      outDir,
      registry: registry.url,
    });
    const [webAssembly, metaUrl] = report.entries[0]!.warnings;
    assert.equal(report.entries[0]!.warnings.length, 2);
    assert.match(
      metaUrl!,
      /^\.\/index\.js line \d+ finds a file beside it through import\.meta\.url: a pack holds only its modules and the sandbox cannot fetch that file, so the code that reads it fails$/,
    );
    assert.match(
      webAssembly!,
      /^\.\/index\.js line \d+ uses WebAssembly, which the sandbox lacks \(it has no WebAssembly global\): code that compiles or instantiates a WebAssembly module throws ReferenceError; use a build or package written in JavaScript$/,
    );
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() says an entry QuickJS cannot compile meets a limit of the engine, not of the sandbox", async () => {
  const files = {
    "package.json": JSON.stringify({
      name: "yields-iterable",
      version: "1.0.0",
      type: "module",
      main: "index.js",
    }),
    "index.js":
      "export function* walk(t) {\n  for (const child of (yield t)) yield child;\n}\n",
  };
  await using registry = await fakeRegistry({ "yields-iterable": { files } });
  const outDir = await Deno.makeTempDir();
  try {
    const report = await packNpm("yields-iterable", {
      outDir,
      registry: registry.url,
    });
    assert.equal(report.written, false);
    assert.match(
      report.entries[0]!.problems.join("\n"),
      /\(stack underflow \(op=\d+, pc=\d+\)\): QuickJS cannot compile a function of the module, a limit of the engine, not of the sandbox \(`for \(x of yield y\)` in a generator is one cause\); use another build of the package, or another package/,
    );
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() names a call of require.resolve at import, which QuickJS words only as not a function", async () => {
  // art-template 4 finds its own file with require.resolve when imported.
  const files = {
    "package.json": JSON.stringify({
      name: "resolves-itself",
      version: "1.0.0",
      main: "index.js",
    }),
    "index.js":
      'var self = require.resolve("./index.js");\nmodule.exports = { self };\n',
  };
  await using registry = await fakeRegistry({ "resolves-itself": { files } });
  const outDir = await Deno.makeTempDir();
  try {
    const report = await packNpm("resolves-itself", {
      outDir,
      registry: registry.url,
    });
    const [entry] = report.entries;
    assert.equal(report.written, false);
    assert.match(
      entry!.problems.join("\n"),
      /\(not a function\): QuickJS does not name the function it called: a property of require the bundler left \(require\.resolve, see the notes\), which the sandbox lacks, or /,
    );
    assert.deepEqual(entry!.warnings.length, 1);
    assert.match(
      entry!.warnings[0]!,
      /^\.\/index\.js line \d+ reads require\.resolve: the sandbox has no require, so a call of it throws TypeError \(QuickJS says only "not a function"\); the package offers no build for browsers and no other module, so it needs Node$/,
    );
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() says what the sandbox lacks when an entry fails at import for a Node global, a timer, a Web API QuickJS has not or a require the bundler left", async () => {
  const files = {
    "package.json": JSON.stringify({
      name: "needs-much",
      version: "1.0.0",
      type: "module",
      exports: {
        "./buffer": "./buffer.js",
        "./timer": "./timer.js",
        "./intl": "./intl.js",
        "./stream": "./stream.cjs",
      },
    }),
    "buffer.js": 'export const b = Buffer.from("x");\n',
    "timer.js": "export const t = setTimeout(() => {}, 1);\n",
    "intl.js": 'export const n = new Intl.NumberFormat("en").format(1);\n',
    "stream.cjs": 'module.exports = require("stream");\n',
  };
  await using registry = await fakeRegistry({ "needs-much": { files } });
  const outDir = await Deno.makeTempDir();
  try {
    const report = await packNpm("needs-much", {
      outDir,
      registry: registry.url,
    });
    assert.equal(report.written, false);
    const problems = Object.fromEntries(
      report.entries.map((entry) => [entry.subpath, entry.problems.join("\n")]),
    );
    assert.match(
      problems["./buffer"]!,
      /\('Buffer' is not defined\): Buffer is a Node global, which the sandbox lacks; the package offers no build of it for browsers, so it needs Node/,
    );
    assert.match(
      problems["./timer"]!,
      /: the sandbox has no timers \(setTimeout\)/,
    );
    assert.match(
      problems["./intl"]!,
      /: the sandbox has no global Intl: QuickJS lacks it, and it is left out because it cannot be pure computation here \(Intl, Temporal, Atomics without shared memory, WebAssembly\)/,
    );
    assert.match(
      problems["./stream"]!,
      /: it calls require\("node:stream"\) when imported, and the sandbox has no require or Node built-ins/,
    );
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() tells an entry that needs Node what the package offers instead, where it said to use a build for browsers of a package that has none (reading-time 1.5.0)", async (t) => {
  const cases: {
    name: string;
    files: Record<string, string>;
    expected: Record<string, RegExp>;
  }[] = [{
    // reading-time 1.5.0's shape: no exports, a main that requires a
    // module that requires stream, beside one that needs nothing.
    name: "no-exports",
    files: {
      "package.json": JSON.stringify({
        name: "no-exports",
        version: "1.0.0",
        main: "index.js",
      }),
      "index.js":
        'module.exports = require("./lib/count");\nmodule.exports.stream = require("./lib/stream");\n',
      "lib/count.js": 'module.exports = (text) => text.split(" ").length;\n',
      "lib/stream.js": 'module.exports = require("stream").Transform;\n',
    },
    expected: {
      ".":
        /calls require\("node:stream"\) when imported, and the sandbox has no require or Node built-ins; the package offers no build for browsers: --subpaths packs one of its other modules alone \(\.\/lib\/count\.js, \.\/lib\/stream\.js\), which works if that module does not need Node$/,
    },
  }, {
    name: "browser-build",
    files: {
      "package.json": JSON.stringify({
        name: "browser-build",
        version: "1.0.0",
        type: "module",
        exports: {
          ".": { browser: "./web.js", default: "./node.js" },
          "./plain": "./plain.js",
          "./worker": { worker: "./worker.js" },
        },
      }),
      "web.js": 'import { read } from "node:fs";\nexport const r = read;\n',
      "node.js": 'import { read } from "node:fs";\nexport const r = read;\n',
      "plain.js": 'export const b = Buffer.from("x");\n',
      "worker.js": 'import { read } from "node:fs";\nexport const r = read;\n',
    },
    expected: {
      ".":
        /\.\/node\.js imports "node:fs", which the sandbox lacks \(IMPORT_NODE_BUILTIN\): Node built-ins are denied; the package's build of it for browsers, \.\/web\.js, was tried first and cannot work either, so it needs Node$/,
      "./worker":
        /\.\/worker\.js imports "node:fs", which the sandbox lacks \(IMPORT_NODE_BUILTIN\): Node built-ins are denied; this is already the package's build for browsers, so it needs Node$/,
      "./plain":
        /Buffer is a Node global, which the sandbox lacks; the package offers no build of it for browsers, so it needs Node$/,
    },
  }];
  for (const { name, files, expected } of cases) {
    await t.step(name, async () => {
      await using registry = await fakeRegistry({ [name]: { files } });
      const outDir = await Deno.makeTempDir();
      try {
        const report = await packNpm(name, { outDir, registry: registry.url });
        assert.equal(report.written, false);
        for (const [subpath, pattern] of Object.entries(expected)) {
          const entry = report.entries.find((e) => e.subpath === subpath);
          const problems = entry?.problems ?? [];
          assert.ok(
            problems.some((problem) => pattern.test(problem)),
            `${subpath}: ${problems.join("\n")}`,
          );
          for (const problem of problems) {
            assert.doesNotMatch(
              problem,
              /use a build of the package for browsers|\n/,
            );
          }
        }
      } finally {
        await Deno.remove(outDir, { recursive: true });
      }
    });
  }
});

Deno.test("packNpm() fails with a stable code for each way a package cannot be fetched or packed, and writes nothing", async (t) => {
  const noEntry = {
    "package.json": JSON.stringify({
      name: "styles",
      version: "1.0.0",
      main: "styles.css",
    }),
    "styles.css": "body { color: red; }\n",
  };
  const broken = {
    "package.json": JSON.stringify({
      name: "broken",
      version: "1.0.0",
      type: "module",
      main: "index.js",
    }),
    "index.js": "export const = ;\n",
  };
  await using registry = await fakeRegistry({
    "tiny-dep": { files: DEP },
    truncated: {
      files: { ...DEP, "package.json": DEP["package.json"] },
      // The gzip stream ends in the middle; the registry's hash is of
      // these bytes, so only unpacking can tell.
      tarball: (tgz) => tgz.slice(0, tgz.length - 12),
    },
    styles: { files: noEntry },
    broken: { files: broken },
  });
  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const unreachable = `http://127.0.0.1:${(closed.addr as Deno.NetAddr).port}`;
  closed.close();
  const cases: [string, string, string, ErrorCode, RegExp][] = [
    [
      "an unreachable registry",
      "tiny-dep",
      unreachable,
      "NPM_FETCH_FAILED",
      /^Cannot fetch the registry metadata of tiny-dep: .+; check the network and the --registry URL$/,
    ],
    [
      "a package the registry does not have",
      "absent",
      registry.url,
      "NPM_NOT_FOUND",
      /^Cannot fetch the registry metadata of absent: the registry answered 404/,
    ],
    [
      "a version the registry does not have",
      "tiny-dep@^9",
      registry.url,
      "NPM_NOT_FOUND",
      /^Cannot resolve tiny-dep@\^9: no published version is in that range; pass a range or tag that a published version matches$/,
    ],
    [
      "a truncated tarball",
      "truncated",
      registry.url,
      "NPM_PACKAGE_INVALID",
      /^Cannot unpack truncated@2\.1\.0: /,
    ],
    [
      "a package with no JavaScript entry point",
      "styles",
      registry.url,
      "NPM_NOT_BUNDLABLE",
      /^Cannot pack styles@1\.0\.0: it has no JavaScript entry point a pack can export \(\. is not JavaScript\); name one with --subpaths$/,
    ],
    [
      "a package the bundler cannot read",
      "broken",
      registry.url,
      "NPM_NOT_BUNDLABLE",
      /^Cannot bundle broken@1\.0\.0: /,
    ],
    [
      "a package named like a Node built-in, refused before any fetch",
      "punycode@2",
      unreachable,
      "NPM_NOT_BUNDLABLE",
      /^Cannot pack punycode: its name is a Node built-in's, which the import policy denies in every sandbox; pack a copy published under another name/,
    ],
  ];
  for (const [what, spec, url, code, message] of cases) {
    await t.step(what, async () => {
      const outDir = await Deno.makeTempDir();
      try {
        const error = await assertCode(
          packNpm(spec, { outDir, registry: url }),
          code,
          message,
        );
        assert.doesNotMatch(error.message, /cordon-pack-|\/tmp\//);
        assert.deepEqual([...Deno.readDirSync(outDir)], []);
      } finally {
        await Deno.remove(outDir, { recursive: true });
      }
    });
  }
});

Deno.test("packNpm() refuses a package whose exports map is nested too deep to read with NPM_PACKAGE_INVALID, where reading it overflowed the stack, and packs one nested 32 levels", async () => {
  // Built as text, so the test itself walks no value this deep.
  const nestedPackage = (name: string, levels: number) => ({
    "package.json":
      `{"name":"${name}","version":"1.0.0","type":"module","exports":{".":${
        '{"import":'.repeat(levels)
      }"./index.js"${"}".repeat(levels)}}}`,
    "index.js": "export default 32;\n",
  });
  assert.equal(
    await runPacked(
      { nested: { files: nestedPackage("nested", 32) } },
      "nested",
    ),
    32,
  );
  await using registry = await fakeRegistry({
    deep: { files: nestedPackage("deep", 100_000) },
  });
  const outDir = await Deno.makeTempDir();
  try {
    await assertCode(
      packNpm("deep", { outDir, registry: registry.url }),
      "NPM_PACKAGE_INVALID",
      /^Cannot pack deep@1\.0\.0: its exports map is nested over 32 levels deep for "\.", past any package's conditions; pack another version, or report it to the package's authors$/,
    );
    assert.deepEqual([...Deno.readDirSync(outDir)], []);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() gives up on a registry that sends headers and then stalls, within fetchTimeoutMs, and a caller's abort rejects with its reason", async (t) => {
  const tgz = await gzip(tar(DEP));
  let stall: "metadata" | "tarball" = "metadata";
  /** Sends the headers and a first chunk, then nothing, until cancelled. */
  const stalled = () =>
    new Response(
      new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(encoder.encode("{"));
        },
      }),
      { headers: { "content-type": "application/json" } },
    );
  await using server: Deno.HttpServer<Deno.NetAddr> = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request): Promise<Response> => {
      const path = new URL(request.url).pathname;
      if (path === "/tiny-dep.tgz") return stalled();
      if (stall === "metadata") return stalled();
      return Response.json({
        "dist-tags": { latest: "2.1.0" },
        versions: {
          "2.1.0": {
            dist: {
              tarball: `http://127.0.0.1:${server.addr.port}/tiny-dep.tgz`,
              integrity: await sri(tgz),
            },
          },
        },
      });
    },
  );
  const registry = `http://127.0.0.1:${server.addr.port}`;
  const outDir = await Deno.makeTempDir();
  try {
    for (const where of ["metadata", "tarball"] as const) {
      await t.step(`a stalled ${where} body is NPM_FETCH_FAILED`, async () => {
        stall = where;
        // The body stalls for good: without the timeout, packNpm() never
        // settles, and the test fails at the wait that only catches a hang.
        const packing = packNpm("tiny-dep", {
          outDir,
          registry,
          fetchTimeoutMs: 300,
        });
        await assertCode(
          settleWithin(packing, 120_000, () => {
            throw new Error("packNpm() still waited on a stalled body");
          }),
          "NPM_FETCH_FAILED",
          where === "metadata"
            ? /^Cannot fetch the registry metadata of tiny-dep: the registry did not send it in full within 300 ms; .* raise --fetch-timeout-ms \(fetchTimeoutMs\)$/
            : /^Cannot fetch the tarball of tiny-dep@2\.1\.0: the registry did not send it in full within 300 ms;/,
        );
      });
    }
    await t.step("the caller's abort is its reason, not a code", async () => {
      stall = "tarball";
      const reason = new Error("the operator stopped it");
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(reason), 200);
      try {
        await assert.rejects(
          packNpm("tiny-dep", { outDir, registry, signal: controller.signal }),
          (error: unknown) => error === reason,
        );
      } finally {
        clearTimeout(timer);
      }
      const aborted = AbortSignal.abort(reason);
      await assert.rejects(
        packNpm("tiny-dep", { outDir, registry, signal: aborted }),
        (error: unknown) => error === reason,
      );
    });
    assert.deepEqual([...Deno.readDirSync(outDir)], []);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

/** Abort reasons a caller may give, down to ones that throw when looked at. */
function abortReasons(): [string, unknown][] {
  const throwing = new Proxy({}, {
    get: () => assert.fail("the reason was read"),
    has: () => assert.fail("the reason was looked into"),
    getPrototypeOf: () => assert.fail("the reason's prototype was read"),
  });
  const revoked = Proxy.revocable({}, {});
  revoked.revoke();
  return [
    ["a string", "stopped"],
    ["a proxy whose every trap throws", throwing],
    ["a revoked proxy", revoked.proxy],
  ];
}

Deno.test("packNpm() aborted at each of its first turns rejects with the caller's reason as given, writes nothing, and packs on the next call", async () => {
  await using registry = await fakeRegistry({ "tiny-dep": { files: DEP } });
  const outDir = await Deno.makeTempDir();
  try {
    for (const [name, reason] of abortReasons()) {
      // Turn 0 aborts as the call returns, later ones while the registry's
      // answer is under way.
      for (let turn = 0; turn <= 3; turn++) {
        const controller = new AbortController();
        const packing = packNpm("tiny-dep", {
          outDir,
          registry: registry.url,
          signal: controller.signal,
        });
        await abortAfterMicrotasks(controller, turn, reason);
        // Compared by identity only: assert.rejects() would look into it,
        // and so would resolving a promise with it (its then).
        let caught: unknown = "resolved";
        try {
          await packing;
        } catch (error) {
          caught = error;
        }
        assert.ok(caught === reason, `${name}, microtask ${turn}`);
        assert.deepEqual([...Deno.readDirSync(outDir)], []);
      }
    }
    const report = await packNpm("tiny-dep", {
      outDir,
      registry: registry.url,
      signal: new AbortController().signal,
    });
    assert.equal(report.written, true);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() aborted with a revoked Proxy once the registry has answered, while the body is read, rejects with that reason and leaves no rejection unhandled", async () => {
  await using server: Deno.HttpServer<Deno.NetAddr> = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () =>
      // The headers and a first chunk, then nothing until cancelled.
      new Response(
        new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(encoder.encode("{"));
          },
        }),
        { headers: { "content-type": "application/json" } },
      ),
  );
  const { proxy: reason, revoke } = Proxy.revocable({}, {});
  revoke();
  const controller = new AbortController();
  const realFetch = globalThis.fetch;
  // The abort comes as the registry's answer reaches packNpm().
  globalThis.fetch = async (input, init) => {
    const response = await realFetch(input, init);
    controller.abort(reason);
    return response;
  };
  let caught: unknown = "resolved";
  let unhandled: unknown[];
  try {
    unhandled = await unhandledDuring(async () => {
      try {
        await packNpm("tiny-dep", {
          outDir: "never-written",
          registry: `http://127.0.0.1:${server.addr.port}`,
          signal: controller.signal,
        });
      } catch (error) {
        caught = error;
      }
    });
  } finally {
    globalThis.fetch = realFetch;
  }
  assert.ok(caught === reason, "rejected with the caller's reason");
  assert.equal(unhandled.length, 0);
});

/** Aborts `controller` with `reason` after `turns` microtasks. */
async function abortAfterMicrotasks(
  controller: AbortController,
  turns: number,
  reason: unknown,
): Promise<void> {
  for (let turn = 0; turn < turns; turn++) await Promise.resolve();
  controller.abort(reason);
}

Deno.test("packNpm() and parsePackArgs() refuse a fetch timeout that is not a whole number of milliseconds from 1", async () => {
  const outDir = "never-written";
  await assert.rejects(
    packNpm("tiny", { outDir, fetchTimeoutMs: 0 }),
    RangeError,
  );
  await assert.rejects(
    packNpm("tiny", {
      outDir,
      fetchTimeoutMs: "5" as unknown as number,
    }),
    TypeError,
  );
  assert.equal(
    parsePackArgs(["a", "--out", "x", "--fetch-timeout-ms", "500"])
      .fetchTimeoutMs,
    500,
  );
  assert.throws(
    () => parsePackArgs(["a", "--out", "x", "--fetch-timeout-ms", "0"]),
    /--fetch-timeout-ms must be an integer from 1 to 2147483647/,
  );
});

Deno.test("packCli() prints the package's subpaths and messages escaped, so a subpath cannot forge a line or repaint the terminal", async () => {
  const forged = "./x\u001b[2J\nwritten to /tmp/packs/ok";
  await using registry = await fakeRegistry({
    tiny: { files: oneModulePackage("tiny", { [forged]: "./index.js" }) },
  });
  const outDir = await Deno.makeTempDir();
  try {
    const lines: string[] = [];
    const print = (line: string) => lines.push(line);
    await packCli(["tiny", "--out", outDir, "--registry", registry.url], {
      print,
      printError: print,
    });
    const output = lines.join("\n");
    assert.ok(output.includes("./x\\x1b[2J\\nwritten to"), output);
    assert.ok(!output.includes("\u001b"), output);
    assert.equal(output.split("\n").length, lines.length);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() and packCli() refuse a misspelt option before any request", async () => {
  await assert.rejects(
    packNpm("left-pad@1", { outDir: "./nowhere", regsitry: "x" } as never),
    {
      name: "TypeError",
      message:
        "Cannot pack an npm package: unknown option regsitry; did you mean registry?",
    },
  );
  await assert.rejects(packCli(["--help"], { printErr: () => {} } as never), {
    name: "TypeError",
    message:
      "Cannot run the pack command: unknown option printErr; did you mean printError?",
  });
});

Deno.test("deno task pack writes into a relative --out in the folder it was started in", async () => {
  await using registry = await fakeRegistry({
    tiny: { files: oneModulePackage("tiny") },
  });
  await using dir = await subfolder();
  const { code, err } = await taskFrom(dir.path, [
    "pack",
    "tiny",
    "--out",
    "packs",
    "--registry",
    registry.url,
  ]);
  assert.equal(code, 0, err);
  const manifest = JSON.parse(
    await Deno.readTextFile(`${dir.path}/packs/tiny/package.json`),
  );
  assert.equal(manifest.name, "tiny");
});

/** A pack command run in its own process, as `deno task pack` runs it. */
interface PackProcess extends AsyncDisposable {
  /** Its temporary folder (`TMPDIR`), new and its own. */
  readonly tmp: string;
  /** Fires a `create` event for each folder the command makes there. */
  readonly tmpWatcher: Deno.FsWatcher;
  /** Its exit status and output, once it has exited. */
  readonly output: Promise<Deno.CommandOutput>;
  kill(signal: Deno.Signal): void;
}

/**
 * Starts cli/pack.ts with the pack task's permissions and a temporary
 * folder of its own, watched from before the start. Disposing kills it
 * if it still runs and removes the folder.
 */
async function startPack(
  args: string[],
  env: Record<string, string> = {},
): Promise<PackProcess> {
  const tmp = await Deno.makeTempDir({ prefix: "pack_tmp_" });
  const tmpWatcher = Deno.watchFs(tmp, { recursive: false });
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-read",
      "--allow-write",
      "--allow-net",
      "--allow-run",
      "--allow-env",
      "cli/pack.ts",
      ...args,
    ],
    cwd: fileURLToPath(new URL("../", import.meta.url)),
    env: { NO_COLOR: "1", TMPDIR: tmp, ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const output = child.output();
  let exited = false;
  output.finally(() => exited = true);
  return {
    tmp,
    tmpWatcher,
    output,
    kill: (signal) => child.kill(signal),
    async [Symbol.asyncDispose]() {
      tmpWatcher.close();
      if (!exited) child.kill("SIGKILL");
      await output;
      await Deno.remove(tmp, { recursive: true });
    },
  };
}

/**
 * The pack command's work folder, once it has made one in its temporary
 * folder; `undefined` when it exits first.
 */
async function workFolderOf(run: PackProcess): Promise<string | undefined> {
  const made = (async () => {
    for await (const event of run.tmpWatcher) {
      const path = event.paths.find((path) =>
        /\/cordon-pack-[^/]+$/.test(path)
      );
      if (event.kind === "create" && path !== undefined) return path;
    }
    return undefined;
  })();
  return await Promise.race([made, run.output.then(() => undefined)]);
}

/** The ids of the processes whose command line names `text`. */
async function processesNaming(text: string): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const line = await Deno.readTextFile(`/proc/${entry.name}/cmdline`);
      if (line.includes(text)) found.push(entry.name);
    } catch {
      // The process ended while the folder was read.
    }
  }
  return found;
}

Deno.test("cli/pack.ts stopped by SIGTERM while a tarball downloads ends the download, creates no packs folder, says INTERRUPTED in one line and exits 143", async () => {
  const tgz = await gzip(tar(oneModulePackage("tiny")));
  const requested = Promise.withResolvers<void>();
  await using server: Deno.HttpServer<Deno.NetAddr> = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request): Promise<Response> => {
      if (new URL(request.url).pathname === "/tiny") {
        return Response.json({
          "dist-tags": { latest: "1.0.0" },
          versions: {
            "1.0.0": {
              dist: {
                tarball: `http://127.0.0.1:${server.addr.port}/tiny.tgz`,
                integrity: await sri(tgz),
              },
            },
          },
        });
      }
      requested.resolve();
      // The first bytes, then nothing until the request ends.
      return new Response(
        new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(tgz.subarray(0, 10));
          },
        }),
      );
    },
  );
  const parent = await Deno.makeTempDir();
  const outDir = `${parent}/packs`;
  try {
    await using run = await startPack([
      "tiny",
      "--out",
      outDir,
      "--registry",
      `http://127.0.0.1:${server.addr.port}`,
    ]);
    await requested.promise;
    run.kill("SIGTERM");
    const { code, signal, stderr } = await run.output;
    const lines = new TextDecoder().decode(stderr).trimEnd().split("\n");
    // It ended by itself, not by the signal's default action.
    assert.equal(signal, null);
    assert.equal(code, 143, lines.join("\n"));
    assert.deepEqual(lines, [
      "error: INTERRUPTED: Stopped by SIGTERM before tiny was packed: nothing of it was written into --out and the work folder is removed; run the command again to pack it",
    ]);
    assert.deepEqual([...Deno.readDirSync(run.tmp)], []);
    assert.deepEqual([...Deno.readDirSync(parent)], []);
  } finally {
    await Deno.remove(parent, { recursive: true });
  }
});

Deno.test("cli/pack.ts stopped by SIGINT once it has a work folder removes it, ends its processes, leaves the installed pack as it was, names every package not packed and exits 130", async () => {
  await using registry = await fakeRegistry({
    tiny: { files: GOOD },
    "tiny-dep": { files: DEP },
  });
  const outDir = await Deno.makeTempDir();
  try {
    const old = {
      "package.json": JSON.stringify({
        name: "tiny",
        version: "0.9.0",
        cordon: { exports: { ".": "./index.js" } },
      }),
      "index.js": "export const old = true;\n",
    };
    for (const [path, text] of Object.entries(old)) {
      await Deno.mkdir(`${outDir}/tiny`, { recursive: true });
      await Deno.writeTextFile(`${outDir}/tiny/${path}`, text);
    }
    const before = await listFiles(outDir);
    await using run = await startPack([
      "tiny",
      "tiny-dep",
      "--out",
      outDir,
      "--registry",
      registry.url,
    ]);
    const work = await workFolderOf(run);
    const early = work === undefined ? await run.output : undefined;
    assert.ok(
      work !== undefined,
      `no work folder: ${new TextDecoder().decode(early?.stderr)}`,
    );
    run.kill("SIGINT");
    const { code, signal, stderr } = await run.output;
    const lines = new TextDecoder().decode(stderr).trimEnd().split("\n");
    assert.equal(signal, null);
    assert.equal(code, 130, lines.join("\n"));
    assert.deepEqual(lines, [
      "error: INTERRUPTED: Stopped by SIGINT before tiny, tiny-dep were packed: nothing of them was written into --out and the work folder is removed; run the command again to pack them",
    ]);
    assert.deepEqual([...Deno.readDirSync(run.tmp)], []);
    assert.deepEqual(await listFiles(outDir), before);
    // The bundler's process reads the work folder only: none outlived it.
    assert.deepEqual(await processesNaming(run.tmp), []);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("cli/pack.ts with a temp folder it cannot use says so with PATH_UNUSABLE, where it blamed --out", async () => {
  await using registry = await fakeRegistry({
    tiny: { files: GOOD },
    "tiny-dep": { files: DEP },
  });
  const outDir = await Deno.makeTempDir();
  try {
    await using run = await startPack(
      ["tiny", "--out", outDir, "--registry", registry.url],
      { TMPDIR: "/nonexistent/cordon-tmp" },
    );
    const { code, stderr } = await run.output;
    const text = new TextDecoder().decode(stderr);
    assert.equal(code, 1, text);
    assert.match(
      text,
      /^error: PATH_UNUSABLE: Cannot make a work folder in the temp folder: NotFound; set TMPDIR to a folder this command may write/,
    );
    assert.doesNotMatch(text, /nonexistent/);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() skips a subpath with a . or .. segment, which no import can name, and packs the others", async () => {
  await using registry = await fakeRegistry({
    "dot-subpaths": {
      files: {
        "package.json": JSON.stringify({
          name: "dot-subpaths",
          version: "1.0.0",
          type: "module",
          exports: {
            ".": "./index.js",
            "./.": "./index.js",
            "./a/../b": "./index.js",
          },
        }),
        "index.js": "export default 1;\n",
      },
    },
  });
  const outDir = await Deno.makeTempDir();
  try {
    const report = await packNpm("dot-subpaths", {
      outDir,
      registry: registry.url,
    });
    assert.deepEqual(report.skipped, [
      {
        subpath: "./.",
        reason:
          "is not a subpath a pack can export (. or ./name, without . or .. segments)",
      },
      {
        subpath: "./a/../b",
        reason:
          "is not a subpath a pack can export (. or ./name, without . or .. segments)",
      },
    ]);
    const catalog = await createDiskCatalog(outDir);
    assert.deepEqual(catalog.diagnostics(), []);
    assert.deepEqual(
      catalog.summaries()[0]!.modules.flatMap((module) => module.exportedAs),
      ["."],
    );
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() packs entries whose file names hold characters the bundler writes percent-encoded or replaces (#, ?, %, spaces, non-ASCII, :), and each runs", async () => {
  const entries: Record<string, string> = {
    ".": "a#b.js",
    "./q": "q?x.js",
    "./p": "100%.js",
    "./s": "dir x/a b.js",
    "./e": "\u00e9.js",
    "./d": "e\u0301.js",
    "./c": "[c]+&;'@:.js",
  };
  const files: Record<string, string> = {
    "package.json": JSON.stringify({
      name: "odd-files",
      version: "1.0.0",
      type: "module",
      exports: Object.fromEntries(
        Object.entries(entries).map((
          [subpath, file],
        ) => [subpath, `./${file}`]),
      ),
    }),
    "shared.js": "export const mark = '!';\n",
  };
  for (const file of Object.values(entries)) {
    const up = file.includes("/") ? "../" : "./";
    files[file] = `import { mark } from "${up}shared.js";\nexport default ${
      JSON.stringify(file)
    } + mark;\n`;
  }
  const imports = Object.keys(entries).map((subpath, i) =>
    `import v${i} from "odd-files${subpath.slice(1)}";`
  ).join("\n");
  assert.deepEqual(
    await packAndRun(
      "odd-files",
      files,
      `${imports}\nexport default [${
        Object.keys(entries).map((_, i) => `v${i}`).join(", ")
      }];`,
    ),
    Object.values(entries).map((file) => `${file}!`),
  );
});

Deno.test("packNpm() packs two entries whose files the bundler names alike (a:b.js and a_b.js), the later bundled alone, where the bundler refused the whole package for two outputs at one path", async () => {
  const files = {
    "package.json": JSON.stringify({
      name: "alike",
      version: "1.0.0",
      type: "module",
      exports: {
        ".": "./index.js",
        "./colon": "./a:b.js",
        "./under": "./a_b.js",
      },
    }),
    "shared.js": "export const mark = '!';\n",
    "index.js":
      'import { mark } from "./shared.js";\nexport default "i" + mark;\n',
    "a:b.js":
      'import { mark } from "./shared.js";\nexport default "c" + mark;\n',
    "a_b.js":
      'import { mark } from "./shared.js";\nexport default "u" + mark;\n',
  };
  assert.deepEqual(
    await packAndRun(
      "alike",
      files,
      'import i from "alike";\nimport c from "alike/colon";\nimport u from "alike/under";\nexport default [i, c, u];',
    ),
    ["i!", "c!", "u!"],
  );
  await using registry = await fakeRegistry({ alike: { files } });
  const outDir = await Deno.makeTempDir();
  try {
    const report = await packNpm("alike", { outDir, registry: registry.url });
    assert.deepEqual(
      report.entries.map((entry) => [entry.subpath, entry.warnings]),
      [
        [".", []],
        ["./colon", []],
        ["./under", [
          "bundled alone: the bundler names its module a_b.js, as it names the module of ./colon (./a:b.js), and one build cannot hold two modules at one path; its module instances are not shared with the pack's other entries",
        ]],
      ],
    );
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() leaves out an entry whose file name holds *, which the bundler cannot find, saying so, and packs the others; alone it is refused with the same words", async () => {
  const files = (exports: Record<string, string>) => ({
    "package.json": JSON.stringify({
      name: "starry",
      version: "1.0.0",
      type: "module",
      exports,
    }),
    "index.js": "export default 'i';\n",
    "a*b.js": "export default 's';\n",
  });
  const why =
    "the file of ./star (./a*b.js) has a * in its name, by which the bundler cannot find a file of a package";
  await using registry = await fakeRegistry({
    starry: { files: files({ ".": "./index.js", "./star": "./a*b.js" }) },
    "starry-alone": {
      files: {
        ...files({ "./star": "./a*b.js" }),
        "package.json": JSON.stringify({
          name: "starry-alone",
          version: "1.0.0",
          type: "module",
          exports: { "./star": "./a*b.js" },
        }),
      },
    },
  });
  const outDir = await Deno.makeTempDir();
  try {
    const report = await packNpm("starry", { outDir, registry: registry.url });
    assert.deepEqual(
      report.entries.map((entry) => [entry.subpath, entry.problems]),
      [
        [".", []],
        ["./star", [
          `the bundler cannot build it: ${why}; pack another build or leave it out`,
        ]],
      ],
    );
    assert.equal(report.written, true);
    await assertCode(
      packNpm("starry-alone", { outDir, registry: registry.url }),
      "NPM_NOT_BUNDLABLE",
      new RegExp(
        `^Cannot bundle starry-alone@1\\.0\\.0: ${
          why.replace(/[.*()]/g, "\\$&")
        }$`,
      ),
    );
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

/** A package.json of a module package `name`@`version` with `fields`. */
function manifestText(
  name: string,
  version: string,
  fields: Record<string, unknown> = {},
): string {
  return JSON.stringify({ name, version, type: "module", ...fields });
}

Deno.test("packNpm() installs a package's bundleDependencies from its tarball, nested ones too, and fetches only their dependencies the bundle lacks, as npm does, where it asked the registry for them (aws-cdk-lib's @aws/cloudformation-validate) and failed NPM_NOT_FOUND", async () => {
  await using registry = await fakeRegistry({
    "cdk-app": {
      files: {
        "package.json": manifestText("cdk-app", "1.0.0", {
          main: "index.js",
          dependencies: { "cdk-lib": "^1.0.0" },
        }),
        "index.js":
          'import { check } from "cdk-lib";\nexport default check(4);\n',
      },
    },
    "cdk-lib": {
      files: {
        "package.json": manifestText("cdk-lib", "1.2.0", {
          main: "index.js",
          // The registry has no such version: npm never asks it.
          dependencies: { "@aws/validate": "~1.17.0" },
          bundleDependencies: ["@aws/validate"],
        }),
        "index.js":
          'import { validate } from "@aws/validate";\nexport const check = (n) => validate(n);\n',
        "node_modules/@aws/validate/package.json": manifestText(
          "@aws/validate",
          "1.17.3",
          { main: "v.js", dependencies: { helper: "^1.0.0", deep: "^3.0.0" } },
        ),
        "node_modules/@aws/validate/v.js":
          'import { plus } from "helper";\nimport { times } from "deep";\nexport const validate = (n) => plus(times(n));\n',
        "node_modules/@aws/validate/node_modules/deep/package.json":
          manifestText("deep", "3.1.0", { main: "d.js" }),
        "node_modules/@aws/validate/node_modules/deep/d.js":
          "export const times = (n) => n * 10;\n",
      },
    },
    helper: {
      files: {
        "package.json": manifestText("helper", "1.4.0", { main: "h.js" }),
        "h.js": "export const plus = (n) => n + 2;\n",
      },
    },
  });
  const outDir = await Deno.makeTempDir();
  try {
    const report = await packNpm("cdk-app", { outDir, registry: registry.url });
    for (const entry of report.entries) assert.deepEqual(entry.problems, []);
    const manifest = PackManifestSchema.parse(
      JSON.parse(await Deno.readTextFile(`${outDir}/cdk-app/package.json`)),
    );
    // A bundled package is recorded as the package whose tarball held it.
    assert.deepEqual(manifest.cordon.npm?.bundled.map((ref) => ref.name), [
      "cdk-lib",
      "helper",
    ]);
    const catalog = await createDiskCatalog(outDir);
    using loader = await createQuickJSLoader({ catalog });
    const result = await loader.run({
      source: 'import value from "cdk-app"; export default value;',
      packages: ["cdk-app"],
    });
    assert.deepEqual(result.ok && result.value, 42);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("packNpm() reads a bundled package's package.json with the distrust of any, and counts bundled packages in the tree's 300", async (t) => {
  const bundler = (files: Record<string, string>) => ({
    "package.json": manifestText("bundler", "1.0.0", {
      main: "index.js",
      dependencies: { inner: "^1.0.0" },
      bundledDependencies: true,
    }),
    "index.js": "export default 1;\n",
    ...files,
  });
  const many: Record<string, string> = {};
  for (let i = 0; i < 300; i++) {
    many[`node_modules/p${i}/package.json`] = manifestText(`p${i}`, "1.0.0");
  }
  const cases: [string, Record<string, string>, ErrorCode, RegExp][] = [
    [
      "a package.json that is no JSON object",
      { "node_modules/inner/package.json": "[1]" },
      "NPM_PACKAGE_INVALID",
      /^Cannot use bundler@1\.0\.0's bundled "node_modules\/inner": its package\.json is not a JSON object with a version/,
    ],
    [
      "a package.json without a version",
      { "node_modules/inner/package.json": '{"name":"inner"}' },
      "NPM_PACKAGE_INVALID",
      /its package\.json is not a JSON object with a version/,
    ],
    [
      "a folder no npm name",
      {
        "node_modules/inner/package.json": manifestText("inner", "1.0.0"),
        "node_modules/bad name/package.json": manifestText("x", "1.0.0"),
      },
      "NPM_PACKAGE_INVALID",
      /^Cannot use bundler@1\.0\.0's bundled "node_modules\/bad name": its folder is not named as an npm package/,
    ],
    [
      "a package folder inside a folder with no package.json",
      {
        "node_modules/inner/package.json": manifestText("inner", "1.0.0"),
        "node_modules/outer/node_modules/deep/package.json": manifestText(
          "deep",
          "1.0.0",
        ),
      },
      "NPM_PACKAGE_INVALID",
      /^Cannot use bundler@1\.0\.0's bundled "node_modules\/outer": it holds a package folder but no package\.json/,
    ],
    [
      "301 packages",
      {
        "node_modules/inner/package.json": manifestText("inner", "1.0.0"),
        ...many,
      },
      "NPM_NOT_BUNDLABLE",
      /^Cannot install bundler: it needs over 300 packages/,
    ],
  ];
  for (const [what, files, code, message] of cases) {
    await t.step(what, async () => {
      await using registry = await fakeRegistry({
        bundler: { files: bundler(files) },
      });
      const outDir = await Deno.makeTempDir();
      try {
        await assertCode(
          packNpm("bundler", { outDir, registry: registry.url }),
          code,
          message,
        );
        assert.deepEqual([...Deno.readDirSync(outDir)], []);
      } finally {
        await Deno.remove(outDir, { recursive: true });
      }
    });
  }
});

Deno.test("packNpm() installs an npm: alias's package under the alias's name, as @isaacs/cliui's string-width-cjs, and a dependency on a package so named is not taken for the alias, where it refused the alias as no registry range", async () => {
  const value = await runPacked(
    {
      "tiny-dep": { files: DEP },
      "cliui-like": {
        files: {
          "package.json": manifestText("cliui-like", "1.0.0", {
            main: "index.js",
            dependencies: {
              "tiny-dep-cjs": "npm:tiny-dep@^2.0.0",
              user: "^1.0.0",
            },
          }),
          "index.js":
            'import { twice } from "tiny-dep-cjs";\nimport { name } from "user";\nexport default [twice(21), name];\n',
        },
      },
      user: {
        files: {
          "package.json": manifestText("user", "1.0.0", {
            main: "u.js",
            // The package named tiny-dep-cjs, not the alias at the top.
            dependencies: { "tiny-dep-cjs": "^2.0.0" },
          }),
          "u.js": 'export { name } from "tiny-dep-cjs";\n',
        },
      },
      "tiny-dep-cjs": {
        files: {
          "package.json": manifestText("tiny-dep-cjs", "2.5.0", {
            main: "c.js",
          }),
          "c.js": 'export const name = "the real tiny-dep-cjs";\n',
        },
      },
    },
    "cliui-like",
  );
  assert.deepEqual(value, [42, "the real tiny-dep-cjs"]);
});

Deno.test("packNpm() reads a dependency's range as npm's loose grammar does, as sails 0.9.16's underscore.string@~2.2.0rc, where it refused it as no registry range", async () => {
  const value = await runPacked(
    {
      "underscore.string": {
        files: {
          "package.json": manifestText("underscore.string", "2.2.1", {
            main: "s.js",
          }),
          "s.js": "export const trim = (s) => s.trim();\n",
        },
      },
      "sails-like": {
        files: {
          "package.json": manifestText("sails-like", "0.9.16", {
            main: "index.js",
            dependencies: { "underscore.string": "~2.2.0rc" },
          }),
          "index.js":
            'import { trim } from "underscore.string";\nexport default trim("  ok ");\n',
        },
      },
    },
    "sails-like",
  );
  assert.equal(value, "ok");
});

Deno.test("packNpm() installs a dependency named by a dist-tag at the version the tag names, as npm does with tiny-lr 0.0.4's noptify@latest, where it refused it as no registry range", async () => {
  const value = await runPacked(
    {
      "noptify": {
        files: {
          "package.json": manifestText("noptify", "0.0.3", { main: "n.js" }),
          "n.js": "export const flag = 'tagged';\n",
        },
      },
      "tiny-lr-like": {
        files: {
          "package.json": manifestText("tiny-lr-like", "0.0.4", {
            main: "index.js",
            dependencies: { "noptify": "latest" },
          }),
          "index.js": 'import { flag } from "noptify";\nexport default flag;\n',
        },
      },
    },
    "tiny-lr-like",
  );
  assert.equal(value, "tagged");
});
