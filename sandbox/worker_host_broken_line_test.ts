import assert from "node:assert/strict";
import { HAS_PROC } from "../vm/node_test/leak_probe.mjs";
import { createWorkerSandbox } from "./worker_sandbox.ts";

// A worker host whose stdout breaks the protocol (here a line of JSON that
// is not an object) is a broken host: it must be ended at once, as one
// that writes a line that is not JSON is, and not stay alive, unheard,
// with the run waiting for its deadline.

const NULL_LINE_HOST = new URL("./testdata/null_line_host.ts", import.meta.url)
  .href;

/** The processes this process started that are still running. */
function childProcesses(): number[] {
  const pids: number[] = [];
  for (const task of Deno.readDirSync(`/proc/${Deno.pid}/task`)) {
    const text = Deno.readTextFileSync(
      `/proc/${Deno.pid}/task/${task.name}/children`,
    ).trim();
    if (text !== "") pids.push(...text.split(" ").map(Number));
  }
  return pids;
}

/**
 * Starts every worker host of `fn` from `url` instead of the real host's
 * source, by swapping the entry URL (the last argument) as Deno.Command is
 * built; the original is back once `fn` settles.
 */
async function withHostEntry<T>(url: string, fn: () => Promise<T>): Promise<T> {
  const original = Deno.Command;
  class SwappedCommand extends original {
    constructor(command: string | URL, options?: Deno.CommandOptions) {
      const args = [...(options?.args ?? [])];
      if (args.some((arg) => String(arg).startsWith("--unstable-worker"))) {
        args[args.length - 1] = url;
      }
      super(command, { ...options, args });
    }
  }
  Object.defineProperty(Deno, "Command", {
    value: SwappedCommand,
    configurable: true,
    writable: true,
  });
  try {
    return await fn();
  } finally {
    Object.defineProperty(Deno, "Command", {
      value: original,
      configurable: true,
      writable: true,
    });
  }
}

Deno.test({
  name:
    "createWorkerSandbox() ends a host that writes a line that is not a message object, and leaves no process behind",
  ignore: !HAS_PROC,
  async fn() {
    const before = childProcesses().length;
    await withHostEntry(NULL_LINE_HOST, async () => {
      await using sandbox = createWorkerSandbox({ pool: 0, concurrency: 1 });
      const result = await sandbox.run("export default 1;", {
        timeoutMs: 5000,
      });
      assert.equal(result.ok, false);
      assert.equal(!result.ok && result.error.code, "SANDBOX_CRASHED");
      assert.equal(childProcesses().length, before);
    });
    await using sandbox = createWorkerSandbox({ pool: 0, concurrency: 1 });
    const next = await sandbox.run("export default 2;");
    assert.equal(next.ok && next.value, 2);
  },
});
