// A host program for realm_process.test.mjs: it lowers its own descriptor
// limit and holds every descriptor left, so its vm sandbox's realm process
// cannot open its pipes; it calls the plugin, lets the descriptors go, calls
// it again, then kills the realm that started during a call, and prints the
// outcomes as JSON.

import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { vm } from "./_helpers.mjs";

const sandbox = vm.createVmSandbox({
  pluginId: "test",
  isolation: "process",
  // The plugin is not at fault: the refusal uses up no restart.
  limits: { maxRestarts: 0 },
  pluginModule: {
    kind: "source",
    identifier: "test.js",
    source: "export const add = ({ a, b }) => a + b;" +
      "export const hang = () => new Promise(() => {});",
  },
});
try {
  execFileSync("prlimit", ["--nofile=256", "--pid", String(process.pid)]);
  const held = [];
  try {
    for (;;) held.push(fs.openSync("/dev/null"));
  } catch {
    // Every descriptor is taken.
  }
  const refused = await sandbox.invoke("add", { a: 1, b: 2 });
  for (const fd of held) fs.closeSync(fd);
  const answered = await sandbox.invoke("add", { a: 1, b: 2 });
  const hanging = sandbox.invoke("hang");
  const { realmPid } = sandbox.instruments;
  if (realmPid !== null) process.kill(realmPid, "SIGKILL");
  const died = await hanging;
  process.stdout.write(JSON.stringify({
    refused: refused.ok ? "answered" : refused.error.code,
    name: refused.ok ? "" : refused.error.name,
    message: refused.ok ? "" : refused.error.message,
    answered: answered.ok ? answered.value : answered.error.code,
    died: died.ok ? "answered" : died.error.code,
  }));
} finally {
  await sandbox.dispose();
}
