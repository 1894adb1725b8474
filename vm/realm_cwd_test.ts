import assert from "node:assert/strict";
import { createVmSandbox } from "./vm_sandbox.ts";

/** Runs `use` with this process's working folder deleted under it. */
async function inDeletedFolder<T>(use: () => Promise<T>): Promise<T> {
  const home = Deno.cwd();
  const gone = await Deno.makeTempDir();
  Deno.chdir(gone);
  await Deno.remove(gone);
  try {
    return await use();
  } finally {
    Deno.chdir(home);
  }
}

for (const isolation of ["process", "worker", "quickjs"] as const) {
  Deno.test(`createVmSandbox({ isolation: "${isolation}" }) starts its realm when the host's working folder was deleted`, async () => {
    const result = await inDeletedFolder(async () => {
      await using sandbox = createVmSandbox({
        pluginId: "hi",
        pluginModule: {
          kind: "source",
          source: "export const hi = (name) => `hi ${name}`;",
          identifier: "hi.js",
        },
        isolation,
      });
      return await sandbox.invoke("hi", "ada");
    });
    assert.deepEqual(
      result.ok && result.value,
      "hi ada",
      JSON.stringify(result),
    );
  });
}
