import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { runStage } from "./stage.ts";

const PACKS = fileURLToPath(new URL("../fixtures/packs/", import.meta.url));

/** Each command's file and the permissions its task grants. */
const COMMANDS: Readonly<Record<string, readonly string[]>> = {
  run: [
    "--allow-read",
    "--allow-net=127.0.0.1,localhost",
    "--allow-run",
    "--allow-env=CORDON_START_DIR",
  ],
  serve: [
    "--allow-read",
    "--allow-net=127.0.0.1,localhost",
    "--allow-env=CORDON_START_DIR",
  ],
  pack: [
    "--allow-read",
    "--allow-write",
    "--allow-net",
    "--allow-run",
    "--allow-env",
  ],
  stage: ["--allow-read", "--allow-write", "--allow-env=CORDON_START_DIR"],
  verify: ["--allow-read", "--allow-env=CORDON_START_DIR"],
};

/**
 * Runs a command as a shell script would, with `redirect` applied to it
 * (`>/dev/full`, `| true`), and returns its own exit code and what it
 * wrote to standard error (when `redirect` leaves it alone).
 */
async function inShell(command: string, args: string[], redirect: string) {
  const file = fileURLToPath(new URL(`./${command}.ts`, import.meta.url));
  const { stderr } = await new Deno.Command("bash", {
    args: [
      "-c",
      `"$@" ${redirect}; echo "exit $\{PIPESTATUS[0]}" >&2`,
      "bash",
      Deno.execPath(),
      "run",
      ...COMMANDS[command]!,
      file,
      ...args,
    ],
    env: { NO_COLOR: "1" },
    stdout: "null",
    stderr: "piped",
  }).output();
  const lines = new TextDecoder().decode(stderr).trimEnd().split("\n");
  const code = Number(/^exit (\d+)$/.exec(lines.pop()!)![1]);
  return { code, err: lines };
}

/** A staged tree of the fixture packs, removed when disposed. */
async function stagedTree() {
  const dir = await Deno.makeTempDir();
  const code = await runStage(["--packs", PACKS, "--out", `${dir}/tree`], {
    print: () => {},
    printError: () => {},
  });
  assert.equal(code, 0);
  return {
    path: `${dir}/tree`,
    [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }),
  };
}

const FULL_OUTPUT_LINE =
  "error: PATH_UNUSABLE: Cannot write to standard output: ENOSPC; check where it goes, such as a full disk";

const linuxOnly = { ignore: Deno.build.os !== "linux" };

Deno.test({
  name:
    "every command says in one coded line that its standard output is full, and exits 1",
  ...linuxOnly,
  async fn() {
    for (const command of Object.keys(COMMANDS)) {
      const { code, err } = await inShell(command, ["--help"], ">/dev/full");
      assert.equal(code, 1, command);
      assert.deepEqual(err, [FULL_OUTPUT_LINE], command);
    }
  },
});

Deno.test({
  name:
    "verify and stage say that their summary could not be written to a full standard output",
  ...linuxOnly,
  async fn() {
    await using tree = await stagedTree();
    const verified = await inShell("verify", [tree.path], ">/dev/full");
    assert.deepEqual(verified, { code: 1, err: [FULL_OUTPUT_LINE] });
    const out = `${tree.path}-again`;
    try {
      const staged = await inShell(
        "stage",
        ["--packs", PACKS, "--out", out],
        ">/dev/full",
      );
      assert.deepEqual(staged, { code: 1, err: [FULL_OUTPUT_LINE] });
    } finally {
      await Deno.remove(out, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "a command whose reader is gone ends silently with the exit code of its own work",
  ...linuxOnly,
  async fn() {
    await using tree = await stagedTree();
    assert.deepEqual(await inShell("verify", [tree.path], "| true"), {
      code: 0,
      err: [],
    });
    await Deno.remove(`${tree.path}/_headers`);
    const failed = await inShell("verify", [tree.path], "| true");
    assert.deepEqual(failed, { code: 1, err: [] });
    const guest = `${tree.path}/guest.js`;
    await Deno.writeTextFile(guest, "export default 'x'.repeat(1e6);\n");
    assert.deepEqual(await inShell("run", [guest], "| true"), {
      code: 0,
      err: [],
    });
  },
});

Deno.test({
  name: "a command whose standard error is full still exits with its own code",
  ...linuxOnly,
  async fn() {
    for (const command of Object.keys(COMMANDS)) {
      const { code } = await inShell(command, ["--bogus"], "2>/dev/full");
      assert.equal(code, 2, command);
    }
  },
});

Deno.test({
  name:
    "a command whose clean-up hangs after a first SIGINT ends at a second SIGTERM with exit code 143",
  ignore: Deno.build.os === "windows",
  async fn() {
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        fileURLToPath(new URL("./testdata/ignores_stop.ts", import.meta.url)),
      ],
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "null",
    }).spawn();
    const lines = child.stdout.pipeThrough(new TextDecoderStream())
      .getReader();
    let seen = "";
    const waitFor = async (line: string) => {
      while (!seen.includes(`${line}\n`)) {
        const { value, done } = await lines.read();
        if (done) break;
        seen += value;
      }
      assert.ok(seen.includes(`${line}\n`), `no "${line}" in ${seen}`);
    };
    await waitFor("listening");
    child.kill("SIGINT");
    await waitFor("stopping");
    child.kill("SIGTERM");
    await lines.cancel();
    // A process still waiting out its minute ends it with 0.
    assert.equal((await child.status).code, 143);
  },
});
