import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { runStage } from "./stage.ts";
import { runVerify } from "./verify.ts";
import { subfolder, taskFrom } from "./_test_task_test.ts";

const PACKS = fileURLToPath(new URL("../fixtures/packs/", import.meta.url));

async function capture(
  run: (
    args: string[],
    options: {
      print: (line: string) => void;
      printError: (line: string) => void;
    },
  ) => Promise<number>,
  args: string[],
) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await run(args, {
    print: (line) => out.push(line),
    printError: (line) => err.push(line),
  });
  return { code, out, err };
}

/** Writes a pack whose manifest names `name` and lists `internal`. */
async function writePack(folder: string, name: string, internal: string[]) {
  await Deno.mkdir(folder, { recursive: true });
  await Deno.writeTextFile(
    `${folder}/package.json`,
    JSON.stringify({
      name,
      version: "1.0.0",
      cordon: { exports: { ".": "./index.js" }, internal },
    }),
  );
  await Deno.writeTextFile(`${folder}/index.js`, "export const x = 1;\n");
}

Deno.test("stage writes a tree that verify passes, and each prints one summary line", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const staged = await capture(runStage, [
      "--packs",
      PACKS,
      "--out",
      `${dir}/out`,
    ]);
    assert.equal(staged.code, 0, staged.err.join("\n"));
    assert.equal(staged.out.length, 1);
    assert.match(staged.out[0]!, /^Staged 4 packs and 10 modules \(17 files\)/);
    const verified = await capture(runVerify, [`${dir}/out`]);
    assert.equal(verified.code, 0);
    assert.match(verified.out[0]!, /^OK: 4 packs, 10 modules, 15 files hashed/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("stage prints a rejected pack's folder and file names escaped, one line each", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const packs = `${dir}/packs`;
    // A folder named with an escape sequence, whose manifest names "esc".
    await writePack(`${packs}/esc\u001b[2J`, "esc", []);
    // A manifest that lists a missing file whose name holds a newline.
    await writePack(`${packs}/forge`, "forge", ["./a\u001b[31m\nFORGED.js"]);
    const { code, err } = await capture(runStage, [
      "--packs",
      packs,
      "--out",
      `${dir}/out`,
    ]);
    assert.equal(code, 1);
    assert.deepEqual(err.slice(0, 2), [
      'rejected esc\\x1b[2J: PACK_MANIFEST_INVALID: Cannot use pack "esc\\x1b[2J": package.json names the pack "esc" but its folder is "esc\\x1b[2J"; install the pack in a folder named after it',
      'rejected forge: PACK_MANIFEST_INVALID: Cannot use pack "forge": package.json does not match the pack manifest schema: cordon.internal.0: A pack file is ./<path>.js or .mjs inside the pack, without empty, . or .. segments, backslashes or control characters; fix the manifest\'s cordon section so it validates against schemas/pack_manifest.json',
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("stage refuses bad flags with exit code 2 and one line", async () => {
  for (
    const args of [
      [],
      ["--packs", PACKS],
      ["--out", "x"],
      ["--packs", PACKS, "--out", "x", "--bogus"],
      ["--packs", PACKS, "--packs", PACKS, "--out", "x"],
      ["stray", "--packs", PACKS, "--out", "x"],
    ]
  ) {
    const { code, err } = await capture(runStage, args);
    assert.equal(code, 2, args.join(" "));
    assert.equal(err.length, 1);
    assert.match(
      err[0]!,
      /^error: CLI_FLAGS_INVALID: Cannot read the flags: .*--help/,
    );
  }
});

Deno.test("stage fails on rejected packs unless --allow-rejected, naming no machine path", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/packs/broken`, { recursive: true });
    await Deno.writeTextFile(`${dir}/packs/broken/package.json`, "{");
    const refused = await capture(runStage, [
      "--packs",
      `${dir}/packs`,
      "--out",
      `${dir}/out`,
    ]);
    assert.equal(refused.code, 1);
    assert.match(refused.err[0]!, /^rejected broken: PACK_MANIFEST_INVALID: /);
    assert.equal(
      refused.err.at(-1),
      "error: STAGE_PACKS_REJECTED: discovery found 1 problem; nothing was written; fix the packs, or pass --allow-rejected to stage the others",
    );
    assert.ok(refused.err.every((line) => !line.includes(dir)));
    await assert.rejects(() => Deno.stat(`${dir}/out`), Deno.errors.NotFound);
    const allowed = await capture(runStage, [
      "--packs",
      `${dir}/packs`,
      "--out",
      `${dir}/out`,
      "--allow-rejected",
    ]);
    assert.equal(allowed.code, 0);
    assert.match(allowed.out[0]!, /^Staged 0 packs and 0 modules/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("stage refuses a missing packs folder, an output it cannot write, a folder that is not empty and one inside the packs folder in one line each, with a code", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const missing = await capture(runStage, [
      "--packs",
      `${dir}/nope`,
      "--out",
      `${dir}/out`,
    ]);
    assert.equal(missing.code, 1);
    assert.deepEqual(missing.err, [
      "error: PATH_UNUSABLE: Cannot read the packs folder: NotFound; check that it exists, is a folder and is readable",
    ]);
    await Deno.writeTextFile(`${dir}/file.txt`, "x");
    const unwritable = await capture(runStage, [
      "--packs",
      PACKS,
      "--out",
      `${dir}/file.txt/out`,
    ]);
    assert.equal(unwritable.code, 1);
    assert.deepEqual(unwritable.err, [
      "error: PATH_UNUSABLE: Cannot write the staged tree: NotADirectory; check that the output folder is writable and its disk has room, then remove what was written (it has no index.json) and stage again",
    ]);
    await Deno.remove(`${dir}/file.txt`);
    await Deno.writeTextFile(`${dir}/x.txt`, "x");
    const full = await capture(runStage, ["--packs", PACKS, "--out", dir]);
    assert.equal(full.code, 1);
    assert.deepEqual(full.err, [
      "error: STAGE_OUTPUT_NOT_EMPTY: Cannot stage into the output folder: it is not empty; stage into a new or empty folder",
    ]);
    const inside = await capture(runStage, [
      "--packs",
      dir,
      "--out",
      `${dir}/staged`,
    ]);
    assert.equal(inside.code, 1);
    assert.deepEqual(inside.err, [
      "error: STAGE_OUTPUT_INSIDE_PACKS: Cannot stage into the output folder: it is inside the packs folder, whose next discovery would take the staged tree for a pack; stage into a folder outside the packs folder",
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno task stage and deno task verify run as commands and fail without a stack trace", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const task = (args: string[]) =>
      new Deno.Command(Deno.execPath(), {
        args: ["task", "-q", ...args],
        cwd: new URL("../", import.meta.url),
        env: { NO_COLOR: "1" },
      }).output();
    const staged = await task([
      "stage",
      "--packs",
      "fixtures/packs",
      "--out",
      `${dir}/out`,
    ]);
    assert.equal(staged.code, 0);
    await Deno.writeTextFile(`${dir}/out/extra.js`, "x");
    const verified = await task(["verify", `${dir}/out`]);
    const text = new TextDecoder().decode(verified.stdout);
    assert.equal(verified.code, 1);
    assert.deepEqual(text.trim().split("\n").map((l) => l.split(":")[0]), [
      "STAGED_FILE_EXTRA",
      "FAILED",
    ]);
    const bad = await task(["verify", `${dir}/nope`]);
    const err = new TextDecoder().decode(bad.stderr);
    assert.equal(bad.code, 1);
    assert.equal(err.trim().split("\n").length, 1, err);
    assert.ok(!err.includes(dir) && !err.includes(" at "), err);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("runStage() and runVerify() refuse a misspelt option", async () => {
  await assert.rejects(runStage(["--help"], { prnt: () => {} } as never), {
    name: "TypeError",
    message:
      "Cannot run the stage command: unknown option prnt; did you mean print?",
  });
  await assert.rejects(runVerify(["--help"], { out: () => {} } as never), {
    name: "TypeError",
    message: "Cannot run the verify command: unknown option out",
  });
});

Deno.test("deno task stage and deno task verify read relative paths from the folder they were started in", async () => {
  await using dir = await subfolder();
  // From the subfolder, this is the fixture packs; from the folder of
  // deno.json, it is outside the project.
  const staged = await taskFrom(dir.path, [
    "stage",
    "--packs",
    "../../fixtures/packs",
    "--out",
    "staged",
  ]);
  assert.equal(staged.code, 0, staged.err);
  assert.ok((await Deno.stat(`${dir.path}/staged/index.json`)).isFile);
  const verified = await taskFrom(dir.path, ["verify", "staged"]);
  assert.equal(verified.code, 0, verified.err);
  assert.match(verified.out, /^OK: /m);
});
