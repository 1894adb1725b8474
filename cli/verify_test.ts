import assert from "node:assert/strict";
import { parseVerifyArgs, runVerify } from "./verify.ts";
import { runStage } from "./stage.ts";

const PACKS = new URL("../fixtures/packs/", import.meta.url).pathname;

Deno.test("verify prints one line per problem and a summary, and exits 1", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const quiet = { print: () => {}, printError: () => {} };
    assert.equal(
      await runStage(["--packs", PACKS, "--out", `${dir}/a`], quiet),
      0,
    );
    const [module] = [...Deno.readDirSync(`${dir}/a/modules`)];
    await Deno.writeTextFile(`${dir}/a/modules/${module!.name}`, "x");
    await Deno.writeTextFile(`${dir}/a/stray.js`, "x");
    await Deno.remove(`${dir}/a/_headers`);
    const out: string[] = [];
    const code = await runVerify([`${dir}/a`], {
      print: (line) => out.push(line),
    });
    assert.equal(code, 1);
    assert.deepEqual(out.map((line) => line.split(":")[0]), [
      "STAGED_FILE_MISSING",
      "STAGED_FILE_TAMPERED",
      "STAGED_FILE_EXTRA",
      "FAILED",
    ]);
    assert.match(out.at(-1)!, /^FAILED: 3 problems \(4 packs, 10 modules/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("verify prints a file name of the tree escaped, so it cannot forge a line", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const quiet = { print: () => {}, printError: () => {} };
    assert.equal(
      await runStage(["--packs", PACKS, "--out", `${dir}/a`], quiet),
      0,
    );
    await Deno.writeTextFile(`${dir}/a/x\u001b[2J\nOK: all good.js`, "x");
    const out: string[] = [];
    const code = await runVerify([`${dir}/a`], {
      print: (line) => out.push(line),
    });
    assert.equal(code, 1);
    assert.equal(out.length, 2);
    assert.equal(
      out[0],
      "STAGED_FILE_EXTRA: x\\x1b[2J\\nOK: all good.js: the staged index does not name this file; remove it, or stage the packs again into an empty folder",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("verify --previous refuses what is not a staged index, in one line", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/index.json`, "[]");
    const err: string[] = [];
    const code = await runVerify([dir, "--previous", `${dir}/index.json`], {
      printError: (line) => err.push(line),
    });
    assert.equal(code, 1);
    assert.deepEqual(err, [
      "error: Cannot read the previous staged index: it does not match the staged index schema (schemas/staged_index.json)",
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("parseVerifyArgs() takes one folder and --previous", () => {
  assert.deepEqual(parseVerifyArgs(["d"]), { dir: "d", help: false });
  assert.throws(() => parseVerifyArgs(["a", "b"]), TypeError);
  assert.throws(() => parseVerifyArgs(["a", "--previous"]), TypeError);
  assert.equal(parseVerifyArgs(["--help"]).help, true);
});
