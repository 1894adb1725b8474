import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { createDiskCatalog } from "../catalog/disk_catalog.ts";
import { createDeliveryHandler } from "../delivery/handler.ts";
import type { SandboxResult } from "../protocol/mod.ts";
import { parseRunArgs, runCli, USAGE } from "./run.ts";
import { subfolder, taskFrom } from "./_test_task_test.ts";

const PACKS = fileURLToPath(new URL("../fixtures/packs/", import.meta.url));
const MAIN = fileURLToPath(new URL("./run.ts", import.meta.url));

async function withGuest(
  source: string,
  body: (file: string) => Promise<void>,
): Promise<void> {
  const file = await Deno.makeTempFile({ suffix: ".js" });
  try {
    await Deno.writeTextFile(file, source);
    await body(file);
  } finally {
    await Deno.remove(file);
  }
}

async function cli(args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(args, {
    print: (text) => out.push(text),
    printError: (text) => err.push(text),
  });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

Deno.test("parseRunArgs() reads the file, packages, catalog and limits", () => {
  assert.deepEqual(
    parseRunArgs([
      "guest.js",
      "--packages=greet, @cordon-fixtures/math",
      "--server",
      "http://127.0.0.1:8000",
      "--timeout-ms",
      "250",
    ]),
    {
      file: "guest.js",
      packages: ["greet", "@cordon-fixtures/math"],
      serverUrl: "http://127.0.0.1:8000",
      timeoutMs: 250,
      inThread: false,
      help: false,
    },
  );
  assert.deepEqual(parseRunArgs(["guest.js"]).packages, []);
  assert.equal(parseRunArgs(["guest.js", "--in-thread"]).inThread, true);
  assert.equal(parseRunArgs(["--help"]).help, true);
  assert.throws(() => parseRunArgs([]), TypeError);
  assert.throws(() => parseRunArgs(["a.js", "b.js"]), TypeError);
  assert.throws(() => parseRunArgs(["a.js", "--context", "{nope"]), TypeError);
  assert.throws(() => parseRunArgs(["a.js", "--packs"]), TypeError);
  assert.throws(
    () => parseRunArgs(["a.js", "--timeout-ms", "1e3"]),
    RangeError,
  );
  assert.throws(
    () => parseRunArgs(["a.js", "--timeout-ms=1", "--timeout-ms=2"]),
    TypeError,
  );
});

Deno.test("runCli() runs a guest file over the fixture packs and prints the result", async () => {
  await withGuest(
    'import { add } from "@cordon-fixtures/math";\nexport default (context) => add(context.n, 40);',
    async (file) => {
      const { code, out } = await cli([
        file,
        "--packages",
        "@cordon-fixtures/math",
        "--packs",
        PACKS,
        "--context",
        '{"n":2}',
      ]);
      assert.equal(code, 0);
      const result = JSON.parse(out) as SandboxResult;
      assert.equal(result.ok && result.value, 42);
    },
  );
});

Deno.test("runCli() prints the guest's result as JSON a terminal cannot be steered by", async () => {
  const text = "\u009b2J\u202eexe.txt\u2028\u007f\u{e0041}";
  await withGuest(
    `console.log(${JSON.stringify(text)});\nexport default ${
      JSON.stringify({ [text]: text })
    };`,
    async (file) => {
      const { code, out } = await cli([file, "--in-thread"]);
      assert.equal(code, 0);
      assert.doesNotMatch(out, /[\x7f-\x9f\p{Cf}\p{Zl}]/u);
      const result = JSON.parse(out) as SandboxResult;
      assert.deepEqual(result.ok && result.value, { [text]: text });
      assert.equal(result.logs[0]?.message, text);
    },
  );
});

Deno.test("runCli() exits 1 with the failure as JSON when the run fails", async () => {
  await withGuest('import "node:fs";\nexport default 1;', async (file) => {
    const { code, out } = await cli([file]);
    assert.equal(code, 1);
    const result = JSON.parse(out) as SandboxResult;
    assert.equal(!result.ok && result.error.code, "IMPORT_NODE_BUILTIN");
  });
});

Deno.test("runCli() refuses a guest file it cannot read in one line with PATH_UNUSABLE, naming the path once", async () => {
  const missing = await cli(["/nonexistent/guest.js"]);
  assert.equal(missing.code, 1);
  assert.equal(
    missing.err,
    'error: PATH_UNUSABLE: Cannot read the guest file "/nonexistent/guest.js": NotFound; pass a JavaScript file this command may read',
  );
  // A device that never ends and a folder are refused before any read.
  for (const path of ["/dev/zero", "/tmp"]) {
    const refused = await cli([path]);
    assert.equal(refused.code, 1, path);
    assert.equal(
      refused.err,
      `error: PATH_UNUSABLE: Cannot read the guest file "${path}": it is not a regular file; pass a JavaScript file`,
      path,
    );
  }
  // A name too long is an OS error the runtime has no class for: named by
  // its code, as the others by their class, not by the runtime's message.
  const long = `${"a".repeat(300)}.js`;
  const tooLong = await cli([long]);
  assert.equal(tooLong.code, 1);
  assert.equal(
    tooLong.err,
    `error: PATH_UNUSABLE: Cannot read the guest file "${long}": ENAMETOOLONG; pass a JavaScript file this command may read`,
  );
  const huge = await Deno.makeTempFile({ suffix: ".js" });
  try {
    await Deno.truncate(huge, 16 * 1024 * 1024 + 1);
    const refused = await cli([huge]);
    assert.equal(refused.code, 1);
    assert.match(
      refused.err,
      /^error: PATH_UNUSABLE: Cannot read the guest file "[^"]+": it is larger than 16777216 bytes$/,
    );
  } finally {
    await Deno.remove(huge);
  }
});

Deno.test("runCli() quotes a guest file's path in its error line with escapes and a length cap, so a hostile file name cannot repaint the terminal, reorder the line or forge another", async () => {
  const hostile =
    "/nonexistent/\u001b[2J\u001b]0;title\u0007\r\nerror: forged \u202e\u2066\u009b2J.js";
  const { code, err } = await cli([hostile]);
  assert.equal(code, 1);
  assert.equal(
    err,
    String
      .raw`error: PATH_UNUSABLE: Cannot read the guest file "/nonexistent/\u001b[2J\u001b]0;title\u0007\r\nerror: forged \u202e\u2066\u009b2J.js": NotFound; pass a JavaScript file this command may read`,
  );
  // The runtime's own refusal of a NUL repeats the path raw: it is not
  // the line's reason.
  const nul = await cli([`${hostile}\0`]);
  assert.equal(nul.code, 1);
  assert.equal(
    nul.err,
    String
      .raw`error: PATH_UNUSABLE: Cannot read the guest file "/nonexistent/\u001b[2J\u001b]0;title\u0007\r\nerror: forged \u202e\u2066\u009b2J.js\u0000": its name holds a NUL character, which no file name can; pass a JavaScript file this command may read`,
  );
  const huge = await cli([`/nonexistent/${"a".repeat(10 * 1024 * 1024)}.js`]);
  assert.equal(huge.code, 1);
  assert.match(
    huge.err,
    /^error: PATH_UNUSABLE: Cannot read the guest file "\/nonexistent\/a+…": ENAMETOOLONG; pass a JavaScript file this command may read$/,
  );
  assert.ok(huge.err.length < 1200, `${huge.err.length} characters`);
});

Deno.test("runCli() refuses a guest file that is not UTF-8 instead of running it with its bytes replaced", async () => {
  const file = await Deno.makeTempFile({ suffix: ".js" });
  try {
    // "café" saved as Latin-1: decoded leniently it would run as "caf\ufffd".
    await Deno.writeFile(
      file,
      new Uint8Array([
        ...new TextEncoder().encode('export default "caf'),
        0xe9,
        0x22,
        0x3b,
      ]),
    );
    const { code, out, err } = await cli([file, "--in-thread"]);
    assert.equal(code, 1);
    assert.equal(out, "");
    assert.match(
      err,
      /^error: PATH_UNUSABLE: Cannot read the guest file ".*": it is not UTF-8 text; save it as UTF-8$/,
    );
  } finally {
    await Deno.remove(file);
  }
});

Deno.test("runCli() refuses a packs folder it cannot read with PATH_UNUSABLE, and a --server that is no URL as bad flags", async () => {
  await withGuest("export default 1;", async (file) => {
    const missing = await cli([file, "--packs", "/nonexistent/packs"]);
    assert.equal(missing.code, 1);
    assert.equal(
      missing.err,
      "error: PATH_UNUSABLE: Cannot read the packs folder: NotFound; check that it exists, is a folder and is readable",
    );
    const notUrl = await cli([file, "--server", "localhost"]);
    assert.equal(notUrl.code, 2);
    assert.equal(
      notUrl.err,
      "error: CLI_FLAGS_INVALID: Cannot read the flags: --server must be an absolute URL such as http://127.0.0.1:8000; run with --help for the flags",
    );
  });
});

Deno.test("runCli() exits 2 for bad flags and 0 for --help", async () => {
  const bad = await cli(["guest.js", "--nope"]);
  assert.equal(bad.code, 2);
  assert.match(bad.err, /is not a flag of this command/);
  const help = await cli(["--help"]);
  assert.equal(help.code, 0);
  assert.equal(help.out, USAGE);
});

Deno.test("runCli() answers an empty --packs as bad flags that name --packs", async () => {
  await withGuest("export default 1;", async (file) => {
    const { code, out, err } = await cli([file, "--packs=", "--in-thread"]);
    assert.equal(code, 2);
    assert.equal(out, "");
    assert.equal(
      err,
      "error: CLI_FLAGS_INVALID: Cannot read the flags: --packs must be a non-empty folder path or a file: URL; run with --help for the flags",
    );
  });
});

Deno.test("runCli() answers a limit out of range as bad flags, with their code and the flag's name and range", async () => {
  const limits = [
    [
      "--timeout-ms",
      "0",
      "--timeout-ms must be an integer from 1 to 2147483647 milliseconds",
    ],
    [
      "--memory-limit-bytes",
      "5",
      "--memory-limit-bytes must be an integer from 1048576 to 2147483647 bytes",
    ],
    [
      "--max-source-bytes",
      "2000000000",
      "--max-source-bytes must be an integer from 0 to 1073741824 bytes",
    ],
    [
      "--max-context-bytes",
      "1073741825",
      "--max-context-bytes must be an integer from 0 to 1073741824 bytes",
    ],
    [
      "--max-result-bytes",
      "134217729",
      "--max-result-bytes must be an integer from 0 to 134217728 bytes",
    ],
  ] as const;
  await withGuest("export default 1;", async (file) => {
    for (const [flag, value, refusal] of limits) {
      const { code, out, err } = await cli([file, flag, value, "--in-thread"]);
      assert.equal(code, 2, flag);
      assert.equal(out, "", flag);
      assert.equal(
        err,
        `error: CLI_FLAGS_INVALID: Cannot read the flags: ${refusal}; run with --help for the flags`,
      );
    }
  });
});

Deno.test("runCli() bounds the guest's source and context by --max-source-bytes and --max-context-bytes", async () => {
  await withGuest("export default (c) => c.a;", async (file) => {
    const run = (...flags: string[]) =>
      cli([file, "--context", '{"a":7}', "--in-thread", ...flags]);
    assert.equal(
      JSON.parse((await run("--max-source-bytes", "26")).out).value,
      7,
    );
    const longSource = await run("--max-source-bytes", "25");
    assert.equal(longSource.code, 1);
    assert.match(
      JSON.parse(longSource.out).error.message,
      /^The declaration is invalid at source: it holds at least 26 bytes of UTF-8, more than maxSourceBytes \(25\)/,
    );
    assert.equal(
      JSON.parse((await run("--max-context-bytes", "7")).out).value,
      7,
    );
    const longContext = await run("--max-context-bytes", "6");
    assert.equal(longContext.code, 1);
    assert.equal(JSON.parse(longContext.out).error.code, "DECLARATION_INVALID");
    assert.match(
      JSON.parse(longContext.out).error.message,
      /maxContextBytes \(6\)/,
    );
  });
});

Deno.test("runCli() bounds the guest's answer by --max-result-bytes", async () => {
  await withGuest('export default "é";', async (file) => {
    const run = (...flags: string[]) => cli([file, "--in-thread", ...flags]);
    // "é" and its quotes: four bytes.
    assert.equal(
      JSON.parse((await run("--max-result-bytes", "4")).out).value,
      "é",
    );
    const refused = await run("--max-result-bytes", "3");
    assert.equal(refused.code, 1);
    assert.deepEqual(JSON.parse(refused.out).error, {
      code: "RESULT_NOT_SERIALIZABLE",
      name: "RangeError",
      message:
        "Cannot return a value whose JSON text holds more than maxResultBytes (3) bytes of UTF-8 from a sandbox: return less data, or raise maxResultBytes",
    });
  });
});

Deno.test("runCli() says the result could not be written, not that the run failed, when its output is gone", async () => {
  await withGuest("export default 1;", async (file) => {
    const errors: string[] = [];
    const code = await runCli([file, "--in-thread"], {
      print: () => {
        throw new Deno.errors.BrokenPipe("Broken pipe (os error 32)");
      },
      printError: (line) => errors.push(line),
    });
    assert.equal(code, 1);
    assert.deepEqual(errors, [
      "error: PATH_UNUSABLE: Cannot write to standard output: BrokenPipe; check where it goes, such as a full disk",
    ]);
  });
});

Deno.test("runCli() runs a guest file against a delivery server with --server", async () => {
  const disk = await createDiskCatalog(PACKS);
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    createDeliveryHandler(disk),
  );
  await withGuest(
    'import { greet } from "greet";\nexport default greet("Ada");',
    async (file) => {
      const { code, out } = await cli([
        file,
        "--packages",
        "greet",
        "--server",
        `http://127.0.0.1:${server.addr.port}`,
      ]);
      assert.equal(code, 0);
      const result = JSON.parse(out) as SandboxResult;
      assert.equal(result.ok && result.value, "Hello, Ada!");
    },
  );
});

Deno.test("the run CLI ends a guest stuck in one long built-in call at --timeout-ms", async () => {
  await withGuest(
    "export default Array.prototype.join.call({ length: 2 ** 31 });",
    async (file) => {
      // A runner left to finish the call ends it as OUT_OF_MEMORY, most of
      // a minute later (as --in-thread does): TIMEOUT alone tells the
      // runner was stopped in the call, however long the machine took.
      const { code, out } = await cli([file, "--timeout-ms", "300"]);
      assert.equal(code, 1);
      const result = JSON.parse(out) as SandboxResult;
      assert.equal(!result.ok && result.error.code, "TIMEOUT");
    },
  );
});

Deno.test("the run CLI's process exit code follows the result", async () => {
  await withGuest("export default 'done';", async (file) => {
    const ok = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-read", "--allow-run", MAIN, file],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(ok.code, 0);
    const result = JSON.parse(new TextDecoder().decode(ok.stdout));
    assert.equal(result.value, "done");
  });
  await withGuest("throw new Error('no');", async (file) => {
    const failed = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-read", "--allow-run", MAIN, file],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(failed.code, 1);
  });
});

Deno.test("deno task run reads a relative guest file and --packs from the folder it was started in", async () => {
  await using dir = await subfolder();
  await Deno.writeTextFile(
    `${dir.path}/guest.js`,
    'import { greet } from "greet"; export default greet("Ada");',
  );
  // From the subfolder, this is the fixture packs; from the folder of
  // deno.json, it is outside the project.
  const packs = "../../fixtures/packs";
  const { code, out, err } = await taskFrom(dir.path, [
    "run",
    "guest.js",
    "--packages",
    "greet",
    "--packs",
    packs,
  ]);
  assert.equal(code, 0, err);
  const result = JSON.parse(out) as SandboxResult;
  assert.equal(result.ok && result.value, "Hello, Ada!");
});

Deno.test("the run CLI without --allow-run exits 1 with one line that carries SANDBOX_UNAVAILABLE and names the permission, and nothing on stdout", async () => {
  await withGuest("export default 'done';", async (file) => {
    const denied = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-read", MAIN, file],
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(denied.code, 1);
    assert.equal(denied.stdout.length, 0);
    const errors = new TextDecoder().decode(denied.stderr).trimEnd();
    assert.match(
      errors,
      /^error: SANDBOX_UNAVAILABLE: Cannot start the QuickJS pool's runners: [^\n]*; grant --allow-run \(in Deno the runners are Deno subprocesses\)$/,
    );
  });
});

/** The ids of a Linux process's children, from /proc. */
async function childrenOf(pid: number): Promise<number[]> {
  const text = await Deno.readTextFile(`/proc/${pid}/task/${pid}/children`);
  return text.split(" ").filter((id) => id !== "").map(Number);
}

/** Waits, without a deadline of its own, until `pid` has a child. */
async function firstChildOf(pid: number): Promise<number> {
  for (;;) {
    const [child] = await childrenOf(pid);
    if (child !== undefined) return child;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

for (const [signal, exitCode] of [["SIGINT", 130], ["SIGTERM", 143]] as const) {
  Deno.test({
    name:
      `the run CLI stopped by ${signal} ends its runner process, prints no result and exits ${exitCode}`,
    ignore: Deno.build.os !== "linux",
    async fn() {
      await withGuest("export default () => { for (;;) {} };", async (file) => {
        const child = new Deno.Command(Deno.execPath(), {
          args: [
            "run",
            "--allow-read",
            "--allow-run",
            MAIN,
            file,
            "--timeout-ms",
            "600000",
          ],
          env: { NO_COLOR: "1" },
          stdout: "piped",
          stderr: "piped",
        }).spawn();
        // The command listens for the signal before it starts its runner.
        const runner = await firstChildOf(child.pid);
        child.kill(signal);
        const { code, stdout, stderr } = await child.output();
        assert.equal(code, exitCode);
        assert.equal(stdout.length, 0);
        assert.equal(
          new TextDecoder().decode(stderr),
          `error: INTERRUPTED: Stopped by ${signal} before the guest file finished: its runner process is ended and no result is printed\n`,
        );
        await assert.rejects(
          () => Deno.stat(`/proc/${runner}`),
          Deno.errors.NotFound,
        );
      });
    },
  });
}
