import assert from "node:assert/strict";
import { runnerSpecifier } from "./_runner_port.ts";

Deno.test("runnerSpecifier() runs the published runner by its jsr: export and any other URL as it is", () => {
  assert.equal(
    runnerSpecifier(
      new URL("https://jsr.io/@cordon/cordon/0.1.0/loader/quickjs_runner.ts"),
    ),
    "jsr:@cordon/cordon@0.1.0/loader/runner",
  );
  const local = new URL("file:///srv/app/loader/quickjs_runner.ts");
  assert.equal(runnerSpecifier(local), local.href);
  const other = new URL("https://example.com/loader/quickjs_runner.ts");
  assert.equal(runnerSpecifier(other), other.href);
});
