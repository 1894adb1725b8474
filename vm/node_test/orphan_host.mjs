// A host program for realm_process.test.mjs: it starts a vm sandbox on the
// default isolation (a realm process), sends it a call that loops for ever,
// prints "looping" and waits to be killed.

import { vm } from "./_helpers.mjs";

const sandbox = vm.createVmSandbox({
  pluginId: "orphan",
  pluginModule: {
    kind: "source",
    source: "export function spin() { for (;;) {} }",
    identifier: "orphan.js",
  },
  limits: { timeoutMs: 600_000 },
});
const started = await sandbox.start();
if (!started.ok) throw new Error(JSON.stringify(started.error));
void sandbox.invoke("spin");
process.stdout.write("looping\n");
