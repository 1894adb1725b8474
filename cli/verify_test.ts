import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { parseVerifyArgs, runVerify } from "./verify.ts";
import { runStage } from "./stage.ts";

const PACKS = fileURLToPath(new URL("../fixtures/packs/", import.meta.url));

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

Deno.test("verify refuses a tree or a previous index it cannot read in one line with a code", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/index.json`, "[]");
    const cases = [
      [
        [`${dir}/nope`],
        "error: PATH_UNUSABLE: Cannot read the staged tree: NotFound; pass the folder deno task stage wrote",
      ],
      [
        [dir, "--previous", `${dir}/nope`],
        "error: PATH_UNUSABLE: Cannot read the previous staged index: NotFound; pass a staged tree's folder or its index.json",
      ],
      [
        [dir, "--previous", `${dir}/index.json`],
        "error: STAGED_INDEX_INVALID: Cannot read the previous staged index: it does not match the staged index schema (schemas/staged_index.json)",
      ],
    ] as const;
    for (const [args, line] of cases) {
      const err: string[] = [];
      const code = await runVerify(args, {
        printError: (text) => err.push(text),
      });
      assert.equal(code, 1, line);
      assert.deepEqual(err, [line]);
    }
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

Deno.test("verify --help gives every exit code, 2 for bad flags among them", async () => {
  const out: string[] = [];
  assert.equal(await runVerify(["--help"], { print: (l) => out.push(l) }), 0);
  assert.match(
    out.join("\n"),
    /Exit code: 0 when the tree is sound, 1 when it has problems or cannot be\s+read, 2 for bad flags\.$/,
  );
  const err: string[] = [];
  assert.equal(
    await runVerify(["--nope"], { printError: (l) => err.push(l) }),
    2,
  );
});

Deno.test("verify counts one pack, one module and one problem in the singular", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/packs/greet`, { recursive: true });
    await Deno.copyFile(
      `${PACKS}greet/package.json`,
      `${dir}/packs/greet/package.json`,
    );
    await Deno.copyFile(
      `${PACKS}greet/index.js`,
      `${dir}/packs/greet/index.js`,
    );
    const quiet = { print: () => {}, printError: () => {} };
    const args = ["--packs", `${dir}/packs`, "--out", `${dir}/a`];
    assert.equal(await runStage(args, quiet), 0);
    const out: string[] = [];
    const print = (line: string) => out.push(line);
    assert.equal(await runVerify([`${dir}/a`], { print }), 0);
    assert.match(out.at(-1)!, /^OK: 1 pack, 1 module, \d+ files hashed in /);
    await Deno.writeTextFile(`${dir}/a/stray.js`, "x");
    out.length = 0;
    assert.equal(await runVerify([`${dir}/a`], { print }), 1);
    assert.match(out.at(-1)!, /^FAILED: 1 problem \(1 pack, 1 module, /);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the verify CLI without --allow-read exits 1 with one PATH_UNUSABLE line that asks for the permission, not for another folder", async () => {
  const denied = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      fileURLToPath(new URL("./verify.ts", import.meta.url)),
      fileURLToPath(new URL("../fixtures/", import.meta.url)),
    ],
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(denied.code, 1);
  assert.equal(denied.stdout.length, 0);
  assert.equal(
    new TextDecoder().decode(denied.stderr),
    "error: PATH_UNUSABLE: Cannot read the staged tree: NotCapable; run with --allow-read covering it\n",
  );
});
