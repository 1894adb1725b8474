import assert from "node:assert/strict";
import { createVmSandbox } from "./vm_sandbox.ts";
import { inDeletedFolder } from "../sandbox/_deleted_folder_test.ts";

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
