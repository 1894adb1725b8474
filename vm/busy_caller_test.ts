/**
 * A host that blocks its own event loop while a call goes on (synchronous
 * work right after `invoke()`) must not lift the call's limits on the
 * `worker` isolation: the realm's process holds the resident memory bound
 * and the call's deadline itself, from its idle main thread.
 */

import assert from "node:assert/strict";
import { createVmSandbox, type VmSandboxLimits } from "./vm_sandbox.ts";
import {
  blockWhileRunning,
  childPids,
  cpuTicks,
  newChildren,
} from "../sandbox/_proc_stat_test.ts";
import {
  readResidentBytes,
  residentBoundBytes,
} from "../sandbox/resident_memory.ts";

const MiB = 1024 * 1024;
/** How long the host blocks at most: far past any limit below. */
const BLOCK_MS = 20_000;
/** How long a realm may take to start on a loaded machine. */
const START_MS = 30_000;
const hasProc = residentBoundBytes(MiB) !== null;

const PLUGIN = `
export async function fill() {
  const keep = [];
  for (let i = 0; i < 128; i++) keep.push(new Uint8Array(16 * 1024 * 1024).fill(1));
  await new Promise(() => {});
}
export function spin() { for (;;) {} }
`;

/** Waits, without blocking, until `ready` holds; fails after START_MS. */
async function until(ready: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + START_MS;
  while (!ready()) {
    if (Date.now() >= deadline) {
      throw new Error(`${what} within ${START_MS} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A started worker realm, and its process's pid. */
async function startedSandbox(limits: VmSandboxLimits) {
  const before = new Set(childPids());
  const sandbox = createVmSandbox({
    pluginId: "busy",
    isolation: "worker",
    pluginModule: { kind: "source", source: PLUGIN, identifier: "busy.js" },
    limits,
  });
  await sandbox.start();
  const [realm] = await newChildren(before, START_MS);
  return { sandbox, realm: realm! };
}

function residentBytes(pid: number): number {
  return readResidentBytes(pid) ?? 0;
}

Deno.test({
  name:
    "createVmSandbox() ends a worker realm that fills ArrayBuffers with OUT_OF_MEMORY while the host blocks its event loop, below three times the limit",
  ignore: !hasProc,
  async fn() {
    const memoryLimitBytes = 256 * MiB;
    const { sandbox, realm } = await startedSandbox({
      memoryLimitBytes,
      timeoutMs: BLOCK_MS * 2,
    });
    await using _ = sandbox;
    const rest = residentBytes(realm);
    // At most 2 GiB, so a realm that is not held stops on its own.
    const answer = sandbox.invoke("fill", null);
    // Blocks once the plugin has begun to allocate, so the host's loop is
    // held for the rest of the call.
    await until(
      () => residentBytes(realm) > rest + 32 * MiB,
      "The plugin did not begin to allocate",
    );
    const { peakBytes, ended } = blockWhileRunning(realm, BLOCK_MS);
    const result = await answer;
    assert.equal(result.ok ? "ok" : result.error.code, "OUT_OF_MEMORY");
    assert.ok(
      peakBytes < 3 * memoryLimitBytes,
      `the realm held ${Math.round(peakBytes / MiB)} MiB`,
    );
    assert.ok(ended, "the realm outlived the host's blocked loop");
  },
});

Deno.test({
  name:
    "createVmSandbox() ends a worker realm stuck in a loop with TIMEOUT while the host blocks its event loop",
  ignore: !hasProc,
  async fn() {
    const { sandbox, realm } = await startedSandbox({ timeoutMs: 500 });
    await using _ = sandbox;
    const idle = cpuTicks(realm);
    const answer = sandbox.invoke("spin", null);
    // Blocks once the plugin burns the realm's CPU (10 ticks: 100 ms).
    await until(
      () => cpuTicks(realm) > idle + 10,
      "The plugin did not start",
    );
    const { ended } = blockWhileRunning(realm, BLOCK_MS);
    const result = await answer;
    assert.equal(result.ok ? "ok" : result.error.code, "TIMEOUT");
    assert.ok(ended, "the realm outlived the host's blocked loop");
  },
});
