// The disk catalog of the Node build, on Node: `@cordon/cordon/catalog/disk`
// discovers the fixture packs as the disk catalog does on Deno (the
// listing and every answer of the delivery handler over it, recorded on
// Deno by tools/write_node_fixtures.ts, are what it answers on Node, over
// node:http), refuses the same file-system tricks with the same codes (a
// link out of a pack, a pipe in place of a module, a file over the size
// cap, a file it may not read, a pack folder replaced after discovery),
// and keeps its discovery index, so a restart reads no pack again.

import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { test } from "node:test";

const BUILD = new URL("../../dist/node/", import.meta.url);
const PACKS = fileURLToPath(new URL("../../fixtures/packs/", import.meta.url));
const RECORDED = new URL("../../dist/fixtures/delivery.json", import.meta.url);
const DISK = new URL("catalog/disk_catalog.js", BUILD).href;

const { createDiskCatalog } = await import(DISK);
const { createDeliveryHandler } = await import(
  new URL("delivery/mod.js", BUILD).href
);
const { toNodeListener } = await import(new URL("plugin/mod.js", BUILD).href);

/** A temporary folder, removed after `use`. */
async function withTempDir(use) {
  const dir = await mkdtemp(join(tmpdir(), "cordon_node_disk_"));
  try {
    return await use(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Writes a pack whose entry imports ./lib/helper.js, as the Deno tests do. */
async function writePack(packs, name, files = {}) {
  const dir = join(packs, name);
  await mkdir(join(dir, "lib"), { recursive: true });
  await writeFile(
    join(dir, "package.json"),
    JSON.stringify({
      name,
      version: "1.0.0",
      cordon: { exports: { ".": "./index.js" }, internal: ["./lib/helper.js"] },
    }),
  );
  const all = {
    "index.js":
      'import { helper } from "./lib/helper.js";\nexport const value = helper();\n',
    "lib/helper.js": "export const helper = () => 42;\n",
    ...files,
  };
  for (const [file, text] of Object.entries(all)) {
    if (text !== null) await writeFile(join(dir, file), text);
  }
  return dir;
}

function mkfifo(path) {
  execFileSync("mkfifo", [path]);
}

function codesByPack(catalog) {
  const codes = {};
  for (const d of catalog.diagnostics()) (codes[d.pack] ??= []).push(d.code);
  return codes;
}

function moduleAt(catalog, name, path) {
  const pack = catalog.summaries().find((summary) => summary.name === name);
  return pack.modules.find((module) => module.path === path);
}

async function refusalCode(catalog, id) {
  const answer = await catalog.authorizeDelivery(id);
  assert.equal(answer.ok, false, "refused");
  return answer.code;
}

/** Serves `handle` on 127.0.0.1 with node:http through toNodeListener(). */
async function serve(handle) {
  const server = createServer(toNodeListener(handle));
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    origin: `http://127.0.0.1:${server.address().port}`,
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

test("createDiskCatalog() on Node lists the fixture packs as on Deno: the same ids, digests and graph digests", async () => {
  const recorded = JSON.parse(await readFile(RECORDED, "utf8"));
  const listing = JSON.parse(
    Buffer.from(recorded.responses[0].body, "base64").toString("utf8"),
  );
  const catalog = await createDiskCatalog(PACKS);
  assert.deepEqual(catalog.diagnostics(), []);
  assert.deepEqual(
    JSON.parse(JSON.stringify(catalog.summaries())),
    listing.packs,
  );
  assert.ok(listing.packs.length >= 4, "the fixture packs were recorded");
});

test("createDeliveryHandler() over the disk catalog on Node, served by node:http, answers every request as it did on Deno: status, headers and bytes", async () => {
  const recorded = JSON.parse(await readFile(RECORDED, "utf8"));
  const catalog = await createDiskCatalog(pathToFileURL(PACKS));
  const server = await serve(createDeliveryHandler(catalog));
  try {
    for (const { path, status, headers, body } of recorded.responses) {
      const response = await fetch(`${server.origin}${path}`);
      const bytes = Buffer.from(await response.arrayBuffer());
      assert.equal(response.status, status, path);
      assert.equal(bytes.toString("base64"), body, path);
      for (const [name, value] of headers) {
        assert.equal(response.headers.get(name), value, `${path}: ${name}`);
      }
    }
  } finally {
    await server.close();
  }
});

test("createDiskCatalog() on Node rejects a link out of a pack, a pipe in place of a module and a file over the size cap, each with the code it has on Deno, and installs the good pack", async () => {
  await withTempDir(async (dir) => {
    const packs = join(dir, "packs");
    await mkdir(join(dir, "outside", "lib"), { recursive: true });
    await writeFile(join(dir, "outside", "index.js"), "export const x = 1;\n");
    await writeFile(
      join(dir, "outside", "lib", "helper.js"),
      "export const helper = () => 1;\n",
    );
    await writePack(packs, "good");
    await writePack(packs, "linked-file", { "index.js": null });
    fs.symlinkSync(
      join(dir, "outside", "index.js"),
      join(packs, "linked-file", "index.js"),
    );
    const linkedDir = await writePack(packs, "linked-dir");
    await rm(join(linkedDir, "lib"), { recursive: true });
    fs.symlinkSync(join(dir, "outside", "lib"), join(linkedDir, "lib"));
    await writePack(packs, "pipe", { "index.js": null });
    mkfifo(join(packs, "pipe", "index.js"));
    await writePack(packs, "big", { "lib/helper.js": "x".repeat(2000) });

    const catalog = await createDiskCatalog(packs, { maxModuleBytes: 1000 });
    assert.deepEqual(codesByPack(catalog), {
      "big": ["PACK_FILE_TOO_LARGE"],
      "linked-dir": ["PACK_FILE_OUTSIDE"],
      "linked-file": ["PACK_FILE_OUTSIDE"],
      "pipe": ["PACK_FILE_MISSING"],
    });
    assert.deepEqual(catalog.summaries().map((pack) => pack.name), ["good"]);
    const [pipe] = catalog.diagnostics().filter((d) => d.pack === "pipe");
    assert.match(pipe.message, /\.\/index\.js is not a regular file/);
  });
});

test("createDiskCatalog() on Node rejects a pack whose module does not parse with PACK_MODULE_SYNTAX, naming the file, line and column as on Deno", async () => {
  await withTempDir(async (dir) => {
    const packs = join(dir, "packs");
    await writePack(packs, "good");
    await writePack(packs, "broken", {
      "lib/helper.js": "export const helper = () => 42;\nexport const v = ;\n",
    });
    const catalog = await createDiskCatalog(packs);
    assert.deepEqual(codesByPack(catalog), {
      "broken": ["PACK_MODULE_SYNTAX"],
    });
    assert.deepEqual(catalog.summaries().map((pack) => pack.name), ["good"]);
    const [broken] = catalog.diagnostics();
    assert.match(
      broken.message,
      /: \.\/lib\/helper\.js is not a valid ES module: Unexpected token at line 2, column 18; /,
    );
    assert.ok(!broken.message.includes(dir), broken.message);
  });
});

test("authorizeDelivery() on Node refuses with PACK_FILE_CHANGED, without waiting, a module a pipe, a link out of the pack or a larger file replaced after discovery, and a module whose folder a link out of the pack replaced", async () => {
  await withTempDir(async (dir) => {
    const packs = join(dir, "packs");
    const source = "export const helper = () => 42;\n";
    for (const name of ["pipe", "link", "large", "folder"]) {
      await writePack(packs, name);
    }
    await mkdir(join(dir, "outside"));
    await writeFile(join(dir, "outside", "helper.js"), source);
    const catalog = await createDiskCatalog(packs, { maxModuleBytes: 1000 });
    assert.deepEqual(catalog.diagnostics(), []);
    const helper = (name) => moduleAt(catalog, name, "./lib/helper.js").id;

    await rm(join(packs, "pipe", "lib", "helper.js"));
    mkfifo(join(packs, "pipe", "lib", "helper.js"));
    await rm(join(packs, "link", "lib", "helper.js"));
    fs.symlinkSync(
      join(dir, "outside", "helper.js"),
      join(packs, "link", "lib", "helper.js"),
    );
    await writeFile(join(packs, "large", "lib", "helper.js"), "x".repeat(2000));
    await rm(join(packs, "folder", "lib"), { recursive: true });
    fs.symlinkSync(join(dir, "outside"), join(packs, "folder", "lib"));

    for (const name of ["pipe", "link", "large", "folder"]) {
      assert.equal(
        await refusalCode(catalog, helper(name)),
        "PACK_FILE_CHANGED",
        name,
      );
    }
    const status = catalog.resolveForExecution({
      source: "export default 1;",
      packages: ["pipe"],
    }).statuses[0];
    assert.equal(status.code, "PACK_FILE_CHANGED");
  });
});

test("authorizeDelivery() on Node refuses with PACK_FILE_CHANGED a module of a pack folder replaced after discovery, and rescan() lists the new folder", async () => {
  await withTempDir(async (dir) => {
    const packs = join(dir, "packs");
    await writePack(packs, "swapped");
    const catalog = await createDiskCatalog(packs);
    const old = moduleAt(catalog, "swapped", "./lib/helper.js");
    const staged = await writePack(join(dir, "staged"), "swapped", {
      "lib/helper.js": "export const helper = () => 43;\n",
    });
    fs.renameSync(join(packs, "swapped"), join(dir, "old"));
    fs.renameSync(staged, join(packs, "swapped"));

    assert.equal(await refusalCode(catalog, old.id), "PACK_FILE_CHANGED");
    await catalog.rescan();
    const now = moduleAt(catalog, "swapped", "./lib/helper.js");
    assert.notEqual(now.digest, old.digest);
    const answer = await catalog.authorizeDelivery(now.id);
    assert.equal(
      answer.ok && answer.content,
      "export const helper = () => 43;\n",
    );
  });
});

/**
 * Discovers `packs` in a child process, as a user the file modes apply to:
 * root reads a file whatever its mode, so as root the child runs as nobody.
 * `nodeFlags` go to the child's node (its permission model, say).
 */
function discoverAsUser(dir, packs, nodeFlags = []) {
  const script = join(dir, "discover.mjs");
  fs.writeFileSync(
    script,
    `const { createDiskCatalog } = await import(${JSON.stringify(DISK)});\n` +
      `const catalog = await createDiskCatalog(${JSON.stringify(packs)});\n` +
      "console.log(JSON.stringify({ installed: catalog.summaries().map((p) => p.name), diagnostics: catalog.diagnostics() }));\n",
  );
  const nobody = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
  const child = spawnSync(process.execPath, [...nodeFlags, script], {
    encoding: "utf8",
    ...nobody,
  });
  assert.equal(child.status, 0, child.stderr);
  return JSON.parse(child.stdout);
}

test("createDiskCatalog() on Node rejects a file the server may not read with PACK_FILE_MISSING and says to let the server read it, and installs the others", async () => {
  await withTempDir(async (dir) => {
    fs.chmodSync(dir, 0o755);
    const packs = join(dir, "packs");
    await writePack(packs, "good");
    const sealed = await writePack(packs, "sealed");
    fs.chmodSync(join(sealed, "lib", "helper.js"), 0o000);
    const { installed, diagnostics } = discoverAsUser(dir, packs);
    assert.deepEqual(installed, ["good"]);
    assert.equal(diagnostics.length, 1);
    assert.equal(diagnostics[0].code, "PACK_FILE_MISSING");
    assert.equal(
      diagnostics[0].message,
      'Cannot use pack "sealed": ./lib/helper.js cannot be read (EACCES); let the server read the file: check its permissions, and that --allow-fs-read covers it',
    );
  });
});

/** Node's flag that turns its permission model on, by the name this Node knows. */
const PERMISSION_FLAG = process.allowedNodeEnvironmentFlags.has("--permission")
  ? "--permission"
  : "--experimental-permission";

test("createDiskCatalog() on Node names a read its permission model refused by Node's code, ERR_ACCESS_DENIED, where it said only Error, and installs the packs it may read", async () => {
  await withTempDir(async (dir) => {
    fs.chmodSync(dir, 0o755);
    const packs = join(dir, "packs");
    await writePack(packs, "good");
    // A pack linked in from a folder the server may not read.
    await writePack(join(dir, "elsewhere"), "linked");
    fs.symlinkSync(join(dir, "elsewhere", "linked"), join(packs, "linked"));
    const allowed = [fileURLToPath(BUILD), join(dir, "discover.mjs"), packs];
    const { installed, diagnostics } = discoverAsUser(dir, packs, [
      PERMISSION_FLAG,
      "--no-warnings",
      ...allowed.map((path) => `--allow-fs-read=${path}`),
    ]);
    assert.deepEqual(installed, ["good"]);
    assert.deepEqual(diagnostics, [{
      pack: "linked",
      code: "PACK_MANIFEST_INVALID",
      message:
        'Cannot use pack "linked": package.json cannot be read (ERR_ACCESS_DENIED); let the server read the file: check its permissions, and that --allow-fs-read covers it',
    }]);
  });
});

/** Runs `fn` while Date.now() is 5 s ahead, so the files are not racy. */
async function later(t, fn) {
  const now = Date.now;
  t.mock.method(Date, "now", () => now() + 5000);
  try {
    return await fn();
  } finally {
    t.mock.restoreAll();
  }
}

test("createDiskCatalog() on Node keeps its discovery index: a restart over unchanged packs opens no pack file, and lists the same packs", async (t) => {
  await withTempDir(async (dir) => {
    const packs = join(dir, "packs");
    await writePack(packs, "a");
    await writePack(packs, "b");
    const indexPath = join(dir, "index.jsonl");
    const warnings = [];
    const onIndexWarning = (warning) => warnings.push(warning);
    const first = await later(
      t,
      () => createDiskCatalog(packs, { indexPath, onIndexWarning }),
    );
    const header = JSON.parse(
      (await readFile(indexPath, "utf8")).split("\n")[0],
    );
    assert.equal(header.format, 1);

    let opened = 0;
    const openSync = fs.openSync;
    t.mock.method(fs, "openSync", (...args) => {
      opened++;
      return openSync(...args);
    });
    const now = Date.now;
    t.mock.method(Date, "now", () => now() + 5000);
    let second;
    try {
      second = await createDiskCatalog(packs, { indexPath, onIndexWarning });
    } finally {
      t.mock.restoreAll();
    }
    assert.equal(opened, 0);
    assert.deepEqual(second.summaries(), first.summaries());
    assert.deepEqual(warnings, []);
  });
});

test("createDiskCatalog() on Node reads no index at a named pipe, which would wait for a writer, and warns with DISCOVERY_INDEX_IGNORED", async () => {
  await withTempDir(async (dir) => {
    const packs = join(dir, "packs");
    await writePack(packs, "a");
    const indexPath = join(dir, "index.jsonl");
    mkfifo(indexPath);
    const warnings = [];
    const catalog = await createDiskCatalog(packs, {
      indexPath,
      onIndexWarning: (warning) => warnings.push(warning.code),
    });
    assert.deepEqual(catalog.summaries().map((pack) => pack.name), ["a"]);
    assert.deepEqual(warnings, [
      "DISCOVERY_INDEX_IGNORED",
      "DISCOVERY_INDEX_UNWRITABLE",
    ]);
    assert.ok(fs.lstatSync(indexPath).isFIFO());
  });
});

test("createDiskCatalog() on Node refuses an index inside the packs folder with DISCOVERY_INDEX_INSIDE_PACKS and a missing packs folder with PATH_UNUSABLE", async () => {
  await withTempDir(async (dir) => {
    await assert.rejects(
      createDiskCatalog(dir, { indexPath: join(dir, "sub", "index.jsonl") }),
      (error) => error.code === "DISCOVERY_INDEX_INSIDE_PACKS",
    );
    await assert.rejects(
      createDiskCatalog(join(dir, "missing")),
      (error) => {
        assert.equal(error.code, "PATH_UNUSABLE");
        assert.match(
          error.message,
          /^Cannot read the packs folder: ENOENT; check that it exists, is a folder and is readable$/,
        );
        return true;
      },
    );
  });
});
