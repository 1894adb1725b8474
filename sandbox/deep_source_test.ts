import assert from "node:assert/strict";
import { createProcessSandbox } from "./process_sandbox.ts";
import { createWorkerSandbox } from "./worker_sandbox.ts";

// Deno parses every module it loads with recursive code on a small stack;
// guest source nested deeper than it can take aborts the worker host or
// guest process (SIGABRT), where QuickJS answers STACK_OVERFLOW. These
// sources pass the depth at which Deno 2.9.6 aborted.
const DEEP_SOURCES: Record<string, string> = {
  parentheses: `export default ${"(".repeat(800)}1${")".repeat(800)};`,
  brackets: `export default ${"[".repeat(3000)}${"]".repeat(3000)};`,
  objects: `export default ${"{a:".repeat(3000)}1${"}".repeat(3000)};`,
  arrows: `export default ${"(()=>".repeat(800)}1${")".repeat(800)};`,
  classes: `export default ${"class { m() { return ".repeat(400)}1${
    "}}".repeat(400)
  };`,
};

for (const tier of ["worker", "process"] as const) {
  Deno.test(`the ${tier} sandbox answers STACK_OVERFLOW for guest source nested too deep for Deno's module loader, and runs the next guest`, async () => {
    await using sandbox = tier === "worker"
      ? createWorkerSandbox({ pool: 1 })
      : createProcessSandbox();
    for (const [kind, source] of Object.entries(DEEP_SOURCES)) {
      const result = await sandbox.run({ source, packages: [] });
      assert.equal(result.ok, false, kind);
      if (!result.ok) {
        assert.equal(result.error.code, "STACK_OVERFLOW", kind);
        assert.match(
          result.error.message,
          /nested too deep for Deno's module loader.*split the nested expression/,
          kind,
        );
        assert.deepEqual(result.logs, [], kind);
      }
      const after = await sandbox.run({
        source: "export default 1 + 1;",
        packages: [],
      });
      assert.deepEqual(after.ok && after.value, 2, kind);
    }
  });

  Deno.test(`the ${tier} sandbox does not take a guest that prints Deno's stack overflow report for guest source too deep`, async () => {
    await using sandbox = tier === "worker"
      ? createWorkerSandbox({ pool: 1 })
      : createProcessSandbox();
    const report = JSON.stringify(
      "\nthread 'tokio-runtime-worker' (1) has overflowed its stack\nfatal runtime error: stack overflow, aborting\n",
    );
    // Deno.exit needs no permission, so a guest may end its process with
    // any exit code; Deno.kill of its own process would need none either,
    // were it not refused. The worker tier gives guests no Deno at all.
    for (
      const source of [
        `console.error(${report}); throw new Error("boom");`,
        `console.error(${report}); Deno.exit(134);`,
        `Deno.stderr.writeSync(new TextEncoder().encode(${report})); Deno.exit(134);`,
        `Deno.stderr.writeSync(new TextEncoder().encode(${report})); Deno.kill(Deno.pid, "SIGABRT");`,
      ]
    ) {
      const result = await sandbox.run({ source, packages: [] });
      assert.equal(result.ok, false, source);
      if (!result.ok) {
        assert.notEqual(result.error.code, "STACK_OVERFLOW", source);
      }
    }
  });
}
