import assert from "node:assert/strict";
import { isRunning } from "./_proc_stat_test.ts";

/**
 * Starts a caller process that runs `source` in a sandbox, kills the caller
 * with SIGKILL once the guest runs, and returns the pids of the sandbox
 * children it had.
 */
async function orphanChildren(
  factory: "createWorkerSandbox" | "createProcessSandbox",
  source: string,
): Promise<number[]> {
  const dir = await Deno.makeTempDir();
  try {
    const script = `${dir}/caller.ts`;
    await Deno.writeTextFile(
      script,
      `import { ${factory} } from ${
        JSON.stringify(new URL("./mod.ts", import.meta.url).href)
      };
import { childPids } from ${
        JSON.stringify(new URL("./_proc_stat_test.ts", import.meta.url).href)
      };
const sandbox = ${factory}();
sandbox.run(${JSON.stringify(source)}, null, { timeoutMs: 600_000 });
await new Promise((resolve) => setTimeout(resolve, 1_500));
console.log(JSON.stringify(childPids()));
setInterval(() => {}, 1_000);
`,
    );
    const caller = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        `--config=${new URL("../deno.json", import.meta.url).pathname}`,
        script,
      ],
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    const reader = caller.stdout.pipeThrough(new TextDecoderStream())
      .getReader();
    let line = "";
    while (!line.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) break;
      line += value;
    }
    caller.kill("SIGKILL");
    await reader.cancel();
    await caller.status;
    return JSON.parse(line) as number[];
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Waits until none of `pids` runs; false when some still run after the bound. */
async function allExit(pids: number[], boundMs: number): Promise<boolean> {
  for (let waited = 0; waited < boundMs; waited += 100) {
    if (pids.every((pid) => !isRunning(pid))) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return pids.every((pid) => !isRunning(pid));
}

Deno.test("a worker host exits when its caller dies, even with a guest stuck in a loop", async () => {
  const pids = await orphanChildren("createWorkerSandbox", "for (;;) {}");
  assert.equal(pids.length, 1, "one worker host ran the guest");
  const exited = await allExit(pids, 10_000);
  if (!exited) { for (const pid of pids) Deno.kill(pid, "SIGKILL"); }
  assert.ok(exited, "the orphaned host must not keep running");
});

Deno.test("a process-tier child whose guest awaits exits when its caller dies", async () => {
  const pids = await orphanChildren(
    "createProcessSandbox",
    "export default new Promise(() => {});",
  );
  assert.equal(pids.length, 1, "one child ran the guest");
  const exited = await allExit(pids, 10_000);
  if (!exited) { for (const pid of pids) Deno.kill(pid, "SIGKILL"); }
  assert.ok(exited, "the orphaned child must not keep running");
});
