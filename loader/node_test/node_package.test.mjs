// The Node build as a Node project gets it: `npm install ./dist/node` links
// the folder as node_modules/@cordon/cordon, and the project imports each
// entry by name, with the runner found through import.meta.resolve. The
// package.json that makes this work is written by
// tools/write_node_package.ts (run by `deno task build:node`).

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import {
  mkdir,
  mkdtemp,
  readFile,
  rm,
  symlink,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const BUILD = fileURLToPath(new URL("../../dist/node/", import.meta.url));
const DENO_JSON = new URL("../../deno.json", import.meta.url);

/** Imports every entry by name and runs one guest on a pool of the runner. */
const APP = `
import { createQuickJSPool, EMPTY_CATALOG } from "@cordon/cordon";
const names = ["@cordon/cordon", "@cordon/cordon/catalog", "@cordon/cordon/catalog/disk", "@cordon/cordon/delivery",
  "@cordon/cordon/loader", "@cordon/cordon/vm", "@cordon/cordon/plugin", "@cordon/cordon/plugin/testing",
  "@cordon/cordon/fixtures"];
const exported = {};
for (const name of names) exported[name] = Object.keys(await import(name)).length > 0;
const pool = await createQuickJSPool({
  catalog: EMPTY_CATALOG,
  size: 1,
  runnerUrl: new URL(import.meta.resolve("@cordon/cordon/loader/runner")),
});
let value;
try {
  const result = await pool.run({ source: "export default 6 * 7;" });
  value = result.ok ? result.value : result.error.code;
} finally {
  await pool[Symbol.asyncDispose]();
}
let hidden;
try {
  await import("@cordon/cordon/loader/quickjs_runner.js");
} catch (error) {
  hidden = error.code;
}
console.log(JSON.stringify({ exported, isolation: pool.isolation, value, hidden }));
`;

test("the Node build installs as the package @cordon/cordon: a project imports each entry by name and finds the pool's runner with import.meta.resolve", async () => {
  const project = await mkdtemp(join(tmpdir(), "cordon node project "));
  try {
    await mkdir(join(project, "node_modules", "@cordon"), { recursive: true });
    await symlink(BUILD, join(project, "node_modules", "@cordon", "cordon"));
    await writeFile(join(project, "package.json"), '{ "type": "module" }\n');
    await writeFile(join(project, "app.js"), APP);
    const { stdout } = await promisify(execFile)(process.execPath, ["app.js"], {
      cwd: project,
    });
    assert.deepEqual(JSON.parse(stdout), {
      exported: {
        "@cordon/cordon": true,
        "@cordon/cordon/catalog": true,
        "@cordon/cordon/catalog/disk": true,
        "@cordon/cordon/delivery": true,
        "@cordon/cordon/loader": true,
        "@cordon/cordon/vm": true,
        "@cordon/cordon/plugin": true,
        "@cordon/cordon/plugin/testing": true,
        "@cordon/cordon/fixtures": true,
      },
      isolation: "worker",
      value: 42,
      hidden: "ERR_PACKAGE_PATH_NOT_EXPORTED",
    });
  } finally {
    await rm(project, { recursive: true, force: true });
  }
});

test("the Node build's package.json names the package and version deno.json gives, and the Node it needs", async () => {
  const deno = JSON.parse(await readFile(DENO_JSON, "utf8"));
  const pkg = JSON.parse(await readFile(join(BUILD, "package.json"), "utf8"));
  assert.equal(pkg.name, deno.name);
  assert.equal(pkg.version, deno.version);
  assert.equal(pkg.type, "module");
  assert.equal(pkg.engines.node, ">=20.16");
});
