import assert from "node:assert/strict";
import { createProcessSandbox } from "./process_sandbox.ts";
import { createWorkerSandbox } from "./worker_sandbox.ts";
import { inDeletedFolder } from "./_deleted_folder_test.ts";

Deno.test("createWorkerSandbox() runs guest code when the host's working folder was deleted", async () => {
  const result = await inDeletedFolder(async () => {
    await using sandbox = createWorkerSandbox();
    return await sandbox.run("export default 1 + 1;", { timeoutMs: 10_000 });
  });
  assert.deepEqual(result.ok && result.value, 2, JSON.stringify(result));
});

Deno.test("createProcessSandbox() answers SANDBOX_UNAVAILABLE naming the deleted working folder, not a permission, when the host's working folder was deleted", async () => {
  const result = await inDeletedFolder(async () => {
    await using sandbox = createProcessSandbox();
    return await sandbox.run("export default 1 + 1;", { timeoutMs: 10_000 });
  });
  assert.equal(result.ok, false);
  assert.equal(result.error.code, "SANDBOX_UNAVAILABLE");
  assert.match(result.error.message, /working folder no longer exists/);
  assert.doesNotMatch(result.error.message, /--allow-run/);
});
