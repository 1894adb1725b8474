import assert from "node:assert/strict";
import { moduleChildEnvironment } from "../protocol/host_environment.ts";
import { runScript } from "../tools/_script_run_test.ts";
import { residentLimitBytes } from "./_realm_transport.ts";

// What the vm tier needs of its host's Deno permissions: its realm is a
// Deno child process, so the host runs Deno and nothing more.

const VM_MOD = new URL("./mod.ts", import.meta.url).href;

/**
 * Runs a caller of `createVmSandbox()` under `flags`, with `limits`, and
 * returns, for each isolation, "ok", or the code (an error's name when it
 * has none) and message it was refused with.
 */
async function answersUnder(
  flags: string[],
  limits: Record<string, number> = {},
): Promise<string[][]> {
  return await runScript(
    `import { createVmSandbox } from ${JSON.stringify(VM_MOD)};
const answers = [];
for (const isolation of ["auto", "process", "worker", "quickjs"]) {
  try {
    await using sandbox = createVmSandbox({
      pluginId: "add",
      isolation,
      limits: ${JSON.stringify(limits)},
      pluginModule: {
        kind: "source",
        source: "export function add({ a, b }) { return a + b; }",
        identifier: "add.js",
      },
    });
    const result = await sandbox.invoke("add", { a: 1, b: 2 });
    answers.push(result.ok ? ["ok", String(result.value)] : [result.error.code, result.error.message]);
  } catch (error) {
    answers.push([String(error.code ?? error.name), error.message]);
  }
}
console.log(JSON.stringify(answers));
`,
    { flags },
  ) as string[][];
}

Deno.test("createVmSandbox() on Deno refuses with SANDBOX_UNAVAILABLE naming --allow-run when the host may not start Deno", async () => {
  const answers = await answersUnder([]);
  assert.equal(answers.length, 4);
  for (const [code, message] of answers) {
    assert.equal(code, "SANDBOX_UNAVAILABLE", message);
    assert.match(message!, /--allow-run=/);
  }
});

Deno.test("createVmSandbox() on Deno throws RangeError for a limit out of range before it asks for the permissions to start a realm", async () => {
  const answers = await answersUnder([], { timeoutMs: 0 });
  assert.equal(answers.length, 4);
  for (const [name, message] of answers) {
    assert.equal(name, "RangeError", message);
    assert.match(message!, /timeoutMs/);
  }
});

Deno.test("createVmSandbox() on Deno runs a plugin when the host may start Deno and read no environment variable but NODE_V8_COVERAGE", async () => {
  const answers = await answersUnder([
    `--allow-run=${Deno.execPath()}`,
    "--allow-env=NODE_V8_COVERAGE",
  ]);
  assert.deepEqual(answers, [
    ["ok", "3"],
    ["ok", "3"],
    ["ok", "3"],
    ["ok", "3"],
  ]);
});

Deno.test("a Deno realm process is handed where the host's module cache is, and no other variable", () => {
  const saved = Deno.env.get("DENO_DIR");
  Deno.env.set("DENO_DIR", "/tmp/cordon-cache");
  Deno.env.set("CORDON_TEST_SECRET", "s3cret");
  try {
    const environment = moduleChildEnvironment();
    assert.equal(environment.DENO_DIR, "/tmp/cordon-cache");
    assert.deepEqual(
      Object.keys(environment).filter((name) =>
        !["DENO_DIR", "XDG_CACHE_HOME", "HOME", "TZ"].includes(name)
      ),
      [],
    );
  } finally {
    if (saved === undefined) Deno.env.delete("DENO_DIR");
    else Deno.env.set("DENO_DIR", saved);
    Deno.env.delete("CORDON_TEST_SECRET");
  }
});

Deno.test("a QuickJS realm process's resident bound leaves room for the V8 heap it keeps beside the plugin's memory", () => {
  const MiB = 1024 * 1024;
  // A plugin that logs 48 MiB under a 32 MiB limit took its realm process
  // to 130 to 138 MiB; with the watch's 128 MiB margin alone, 160 MiB was
  // the bound, and a loaded machine passed it.
  assert.equal(
    residentLimitBytes({ isolation: "quickjs", memoryLimitBytes: 32 * MiB }),
    96 * MiB,
  );
  for (const isolation of ["process", "worker"] as const) {
    assert.equal(
      residentLimitBytes({ isolation, memoryLimitBytes: 32 * MiB }),
      32 * MiB,
    );
  }
});
