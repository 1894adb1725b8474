// A host program for vm_sandbox.test.mjs: it runs plugins that build text
// far over their realm's heap on the isolation named by its argument (the
// default when it is "auto") and
// prints each call's outcome as JSON. It runs in its own process so that a
// host ended by a plugin shows as its exit status, not as a lost runner.

import { vm } from "./_helpers.mjs";

const HUGE = "2 ** 26";

/** Plugin functions, each building a text of 64 Mi characters. */
const PLUGIN = `
import { capabilities, fetch } from "cordon:host";
const huge = () => "x".repeat(${HUGE});
const codeOf = (work) => work.then(() => "sent", (error) => error.code);
export function logLine() { console.log({ toJSON: huge }); return "logged"; }
export function logArray() { const a = []; a.length = 2 ** 27; console.log(a); return "logged"; }
export const answer = () => huge();
export const answerToJson = () => ({ body: { toJSON: huge } });
export const answerParts = () => Array.from({ length: 4 }, () => "y".repeat(2 ** 24));
export const capabilityArgs = () => codeOf(capabilities.call("echo", { text: huge() }));
export const fetchBody = () => codeOf(fetch("http://example.test/", { method: "POST", body: huge() }));
export const capabilityName = () => codeOf(capabilities.call(huge(), []));
export const fetchMethod = () => codeOf(fetch("http://example.test/", { method: huge() }));
export const fetchBytes = () => codeOf(fetch("http://example.test/", { method: "POST", body: new Uint8Array(2 ** 25) }));
export const selfStringify = () => JSON.stringify(huge()).length;
export const ping = () => "pong";
`;

const sandbox = vm.createVmSandbox({
  pluginId: "huge-text",
  isolation: process.argv[2] === "auto" ? undefined : process.argv[2],
  pluginModule: { kind: "source", source: PLUGIN, identifier: "huge.js" },
  policy: { capabilities: ["echo"], fetch: ["example.test"] },
  proxies: { capabilities: { echo: () => "echoed" } },
  limits: { memoryLimitBytes: 32 * 1024 * 1024, timeoutMs: 30_000 },
});
const outcomes = {};
try {
  for (const name of process.argv.slice(3)) {
    const result = await sandbox.invoke(name);
    const ping = await sandbox.invoke("ping");
    outcomes[name] = [result.ok ? result.value : result.error.code, ping.value];
  }
} finally {
  await sandbox.dispose();
}
console.log(JSON.stringify(outcomes));
