/**
 * A caller that blocks its own event loop while a run goes on (synchronous
 * work right after `run()`) must not lift the run's limits: the worker
 * tier's host holds the deadline and the resident memory bound beside the
 * guest, not only on the caller's loop, and the kernel holds a process
 * tier child's CPU limit.
 */

import assert from "node:assert/strict";
import {
  createWorkerSandbox,
  type WorkerSandbox,
  type WorkerSandboxOptions,
} from "./worker_sandbox.ts";
import { createProcessSandbox } from "./process_sandbox.ts";
import {
  blockWhileRunning,
  childPids,
  cpuTicks,
  isRunning,
  newChildren,
} from "./_proc_stat_test.ts";
import { readResidentBytes, residentBoundBytes } from "./resident_memory.ts";
import { PRLIMIT } from "./_cpu_limit.ts";

const MiB = 1024 * 1024;
/** How long the caller blocks at most: far past any limit below. */
const BLOCK_MS = 20_000;
/** How long a host may take to start on a loaded machine. */
const START_MS = 30_000;
const hasProc = residentBoundBytes(MiB) !== null;
/**
 * How long the caller blocks at most while the kernel ends a process tier
 * child: its CPU limit is a few seconds of CPU, which a loaded machine
 * gives it over a much longer time.
 */
const CPU_BLOCK_MS = 90_000;

function hasPrlimit(): boolean {
  try {
    return Deno.statSync(PRLIMIT).isFile;
  } catch {
    return false;
  }
}

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

/** A warm pool of one, and its host's pid. */
async function warmSandbox(
  options: WorkerSandboxOptions,
): Promise<{ sandbox: WorkerSandbox; host: number }> {
  const before = new Set(childPids());
  const sandbox = createWorkerSandbox({ ...options, pool: 1 });
  await sandbox.ready();
  const [host] = await newChildren(before, START_MS);
  return { sandbox, host: host! };
}

Deno.test({
  name:
    "createWorkerSandbox() ends a guest that fills ArrayBuffers with OUT_OF_MEMORY while the caller blocks its event loop, below three times the limit",
  ignore: !hasProc,
  async fn() {
    const memoryLimitBytes = 128 * MiB;
    const { sandbox, host } = await warmSandbox({
      memoryLimitBytes,
      timeoutMs: BLOCK_MS * 2,
    });
    await using _ = sandbox;
    const rest = residentBytes(host);
    // At most 2 GiB, so a host that is not held stops on its own.
    const answer = sandbox.run(
      "export default async () => { const keep = []; for (let i = 0; i < 128; i++) keep.push(new Uint8Array(16 * 1024 * 1024).fill(1)); await new Promise(() => {}); };",
    );
    // Blocks once the guest has begun to allocate, so the caller's loop
    // is held for the rest of the run.
    await until(
      () => residentBytes(host) > rest + 32 * MiB,
      "The guest did not begin to allocate",
    );
    const { peakBytes, ended } = blockWhileRunning(host, BLOCK_MS);
    const result = await answer;
    assert.equal(result.ok ? "ok" : result.error.code, "OUT_OF_MEMORY");
    assert.ok(
      peakBytes < 3 * memoryLimitBytes,
      `the host held ${Math.round(peakBytes / MiB)} MiB`,
    );
    assert.ok(ended, "the host outlived the caller's blocked loop");
  },
});

Deno.test({
  name:
    "createWorkerSandbox() ends a guest stuck in a loop with TIMEOUT while the caller blocks its event loop",
  ignore: !hasProc,
  async fn() {
    const { sandbox, host } = await warmSandbox({ timeoutMs: 500 });
    await using _ = sandbox;
    const idle = cpuTicks(host);
    const answer = sandbox.run("export default () => { for (;;) {} };");
    // Blocks once the guest burns the host's CPU (10 ticks: 100 ms).
    await until(
      () => cpuTicks(host) > idle + 10,
      "The guest did not start",
    );
    const { ended } = blockWhileRunning(host, BLOCK_MS);
    const result = await answer;
    assert.equal(result.ok ? "ok" : result.error.code, "TIMEOUT");
    assert.ok(ended, "the host outlived the caller's blocked loop");
  },
});

Deno.test({
  name:
    "createProcessSandbox() ends a guest stuck in a loop with TIMEOUT while the caller blocks its event loop, where prlimit may run",
  ignore: !hasProc || !hasPrlimit(),
  async fn() {
    await using sandbox = createProcessSandbox({ timeoutMs: 500 });
    const before = new Set(childPids());
    const answer = sandbox.run("export default () => { for (;;) {} };");
    const [child] = await newChildren(before, START_MS);
    // Blocks once the guest burns the child's CPU (10 ticks: 100 ms).
    await until(
      () => !isRunning(child!) || cpuTicks(child!) > 10,
      "The guest did not start",
    );
    const { ended } = blockWhileRunning(child!, CPU_BLOCK_MS);
    const result = await answer;
    assert.equal(result.ok ? "ok" : result.error.code, "TIMEOUT");
    assert.ok(ended, "the child outlived the caller's blocked loop");
  },
});

function residentBytes(pid: number): number {
  return readResidentBytes(pid) ?? 0;
}
