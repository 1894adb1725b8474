import assert from "node:assert/strict";
import { packCli } from "./pack.ts";
import { runCli } from "./run.ts";
import { runServer } from "./serve.ts";
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
