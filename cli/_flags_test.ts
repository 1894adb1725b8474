import assert from "node:assert/strict";
import { packCli, parsePackArgs } from "./pack.ts";
import { parseRunArgs, runCli } from "./run.ts";
import { parseServeArgs, runServer } from "./serve.ts";
import { runStage } from "./stage.ts";
import { runVerify } from "./verify.ts";
import { nameOf } from "./_flags.ts";

const COMMANDS = { packCli, runCli, runServer, runStage, runVerify };

Deno.test("every command answers a bad flag with one line that carries CLI_FLAGS_INVALID and exit 2, and --help with its usage, which ends with its exit codes, and exit 0", async () => {
  for (const [name, command] of Object.entries(COMMANDS)) {
    const printed: string[] = [];
    const errors: string[] = [];
    const output = {
      print: (line: string) => printed.push(line),
      printError: (line: string) => errors.push(line),
    };
    assert.equal(await command(["--nope"], output), 2, name);
    assert.deepEqual(printed, [], name);
    assert.match(
      errors.join("\n"),
      /^error: CLI_FLAGS_INVALID: Cannot read the flags: "--nope" is not a flag of this (?:command|server); run with --help for the flags$/,
      name,
    );
    errors.length = 0;
    assert.equal(await command(["--help"], output), 0, name);
    assert.equal(printed.length, 1, name);
    assert.match(printed[0]!, /--help/, name);
    assert.match(
      printed[0]!,
      /\n\nExit code: 0 [^]*, 1 [^]*, 2 for bad flags(?:, [^]*)?\.$/,
      name,
    );
    assert.deepEqual(errors, [], name);
  }
});

/** Each command's numeric flags, with the arguments its parse needs besides. */
const NUMERIC_FLAGS: [
  (args: readonly string[]) => unknown,
  string[],
  string[],
][] = [
  [parseServeArgs, [], [
    "--port",
    "--header-timeout-ms",
    "--idle-timeout-ms",
    "--max-connections",
    "--shutdown-timeout-ms",
  ]],
  [parseRunArgs, ["guest.js"], ["--timeout-ms", "--memory-limit-bytes"]],
  [parsePackArgs, ["ms", "--out", "packs"], [
    "--fetch-timeout-ms",
    "--max-unpacked-bytes",
  ]],
];

Deno.test("every numeric flag of every command refuses a negative, signed, spaced, hexadecimal or exponent value as out of range (RangeError, CLI_FLAGS_INVALID), where a negative one was read as a flag and the value called missing", () => {
  for (const [parse, rest, flags] of NUMERIC_FLAGS) {
    for (const flag of flags) {
      for (
        const given of [
          [flag, "-1"],
          [`${flag}=-1`],
          [flag, "-0"],
          [flag, "-1.5"],
          [flag, "1e3"],
          [flag, "0x10"],
          [flag, " 8000"],
          [flag, "+80"],
        ]
      ) {
        const args = [...rest, ...given];
        assert.throws(
          () => parse(args),
          (error) =>
            error instanceof RangeError &&
            error.message.startsWith(`Cannot read the flags: ${flag} must be `),
          args.join(" "),
        );
      }
    }
  }
});

Deno.test("cordon serve --port -1 answers that the port must be an integer from 0 to 65535, with CLI_FLAGS_INVALID and exit 2", async () => {
  const errors: string[] = [];
  const code = await runServer(["--port", "-1"], {
    print: () => {},
    printError: (line) => errors.push(line),
  });
  assert.equal(code, 2);
  assert.deepEqual(errors, [
    'error: CLI_FLAGS_INVALID: Cannot read the flags: --port must be an integer from 0 to 65535, not "-1"; run with --help for the flags',
  ]);
});

Deno.test("nameOf() names an OS error the runtime has no class for (a full disk) by its code, never by its message, which names a path", () => {
  const full = Object.assign(
    new Error("No space left on device (os error 28): writefile '/srv/x'"),
    { code: "ENOSPC" },
  );
  assert.equal(nameOf(full), "ENOSPC");
  assert.equal(nameOf(new Error("x", { cause: full })), "ENOSPC");
  assert.equal(nameOf(new Deno.errors.NotFound("/srv/x")), "NotFound");
  assert.equal(
    nameOf(Object.assign(new Error("x"), { code: "/srv" })),
    "Error",
  );
});

Deno.test("a refused flag or number is quoted with escapes and cut short, so an argument cannot repaint the terminal or reorder the error line", async () => {
  const errors: string[] = [];
  const output = {
    print: () => {},
    printError: (line: string) => errors.push(line),
  };
  assert.equal(await runVerify(["--\u202eevil\u009b2J\u001b[2J"], output), 2);
  assert.deepEqual(errors, [
    String
      .raw`error: CLI_FLAGS_INVALID: Cannot read the flags: "--\u202eevil\u009b2J\u001b[2J" is not a flag of this command; run with --help for the flags`,
  ]);
  assert.throws(
    () => parseRunArgs(["guest.js", "--timeout-ms", "1\u2066\u0085"]),
    {
      name: "RangeError",
      message: String
        .raw`Cannot read the flags: --timeout-ms must be a whole number, not "1\u2066\u0085"`,
    },
  );
  assert.throws(
    () => parseRunArgs(["guest.js", "--timeout-ms", "\u202e".repeat(100)]),
    {
      message:
        `Cannot read the flags: --timeout-ms must be a whole number, not "${
          "\\u202e".repeat(20)
        }…"`,
    },
  );
});
