import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { childPids, cpuTicks, isRunning } from "./_proc_stat_test.ts";
import { resultBound } from "./_result_bound.ts";
import { PROCESS_BOOTSTRAP_URL, v8Flags, workerHostUrl } from "./_sources.ts";
import { startHost } from "./_spawn_host_test.ts";

/** CPU ticks (1/100 s) that tell a looping guest from a starting child. */
const SPINNING_TICKS = 50;

/** The pids below `pid`: its children, theirs, and so on. */
function descendants(pid: number): number[] {
  const found: number[] = [];
  for (const child of childPids(pid)) found.push(child, ...descendants(child));
  return found;
}

/** Polls until `check` holds or `ms` have passed; whether it held. */
async function until(check: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (check()) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Ends whichever of `pids` still run. */
function killAll(pids: readonly number[]): void {
  for (const pid of pids) {
    try {
      Deno.kill(pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
}

/** What happened to a caller's sandbox processes after it was killed. */
interface Aftermath {
  /** The processes below the caller while its guest ran. */
  guests: number[];
  /** Whether the guest was seen running (spinning, when asked). */
  started: boolean;
  /**
   * Whether every one of `guests` was gone within two minutes of the kill:
   * only an orphan left running takes that long.
   */
  gone: boolean;
}

/**
 * Starts a caller process that runs `source` in a sandbox, waits until the
 * guest runs (until some process below the caller has used
 * {@linkcode SPINNING_TICKS} of CPU, when `spinning`), kills the caller
 * with SIGKILL and watches the processes that were below it. Kills any
 * that are left, so a failing test leaves nothing behind.
 */
async function killCaller(
  factory: "createWorkerSandbox" | "createProcessSandbox",
  source: string,
  spinning: boolean,
): Promise<Aftermath> {
  const dir = await Deno.makeTempDir();
  const script = `${dir}/caller.ts`;
  await Deno.writeTextFile(
    script,
    `import { ${factory} } from ${
      JSON.stringify(new URL("./mod.ts", import.meta.url).href)
    };
const sandbox = ${factory}();
sandbox.run(${JSON.stringify(source)}, { timeoutMs: 600_000 });
`,
  );
  const caller = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      `--config=${fileURLToPath(new URL("../deno.json", import.meta.url))}`,
      script,
    ],
    stdin: "null",
    stdout: "null",
    stderr: "inherit",
  }).spawn();
  let guests: number[] = [];
  let started = false;
  try {
    started = await until(() => {
      guests = descendants(caller.pid);
      return guests.length > 0 &&
        (!spinning || guests.some((pid) => cpuTicks(pid) >= SPINNING_TICKS));
    }, 30_000);
    // A guest that awaits shows no sign of having started; give it time.
    if (started && !spinning) {
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
    guests = descendants(caller.pid);
  } finally {
    caller.kill("SIGKILL");
    await caller.status;
    await Deno.remove(dir, { recursive: true });
  }
  const gone = await until(() => !guests.some(isRunning), 120_000);
  killAll(guests);
  return { guests, started, gone };
}

/** Guests whose caller is killed, and what ran each of them. */
const ORPHANS = [
  {
    guest: "a process-tier guest stuck in a loop",
    factory: "createProcessSandbox",
    source: "for (;;) {}",
    spinning: true,
    host: "child",
    orphan: "child",
  },
  {
    guest: "a worker-tier guest stuck in a loop",
    factory: "createWorkerSandbox",
    source: "for (;;) {}",
    spinning: true,
    host: "worker host",
    orphan: "host",
  },
  {
    guest: "a process-tier guest that awaits",
    factory: "createProcessSandbox",
    source: "export default new Promise(() => {});",
    spinning: false,
    host: "child",
    orphan: "child",
  },
] as const;

for (const { guest, factory, source, spinning, host, orphan } of ORPHANS) {
  Deno.test(`${guest} ends when its caller is killed with SIGKILL`, async () => {
    const { guests, started, gone } = await killCaller(
      factory,
      source,
      spinning,
    );
    assert.ok(
      started,
      `the guest must have started${spinning ? " looping" : ""}`,
    );
    assert.equal(guests.length, 1, `one ${host} ran the guest`);
    assert.ok(
      gone,
      `the orphaned ${orphan} must not keep running`,
    );
  });
}

Deno.test("a process-tier child whose parent is not the one its payload names exits before the guest runs", async () => {
  // What a child does when its caller died before `setpriv` could set the
  // parent-death signal: the caller's pid in the payload is not its parent.
  const { child, writer } = await startHost(
    [PROCESS_BOOTSTRAP_URL],
    `{"nonce":"n:","parent":-1,"maxLogBytes":1,"parseOnly":false,"source":"for (;;) {}","context":null}\n`,
    { stdout: "piped", stderr: "null" },
  );
  await writer.close();
  const exited = await until(() => !isRunning(child.pid), 120_000);
  killAll([child.pid]);
  const { code, stdout } = await child.output();
  assert.ok(exited, "the child must exit rather than run the guest");
  assert.equal(code, 0);
  assert.equal(new TextDecoder().decode(stdout), "");
});

Deno.test("a worker host exits when its stdin ends, even with a guest stuck in a loop", async () => {
  // The worker tier's own guard, and its only one where `setpriv` is not
  // used: the host's main thread never runs guest code, so it reads the end.
  const { child, writer } = await startHost(
    [
      "--unstable-worker-options",
      v8Flags(64 * 1024 * 1024),
      workerHostUrl(false),
    ],
    `${
      JSON.stringify({
        t: "run",
        id: "x",
        maxLogBytes: 1,
        source: "for (;;) {}",
        context: null,
        result: resultBound(1024),
        watch: {
          timeoutMs: 60_000,
          graceMs: 200,
          residentBytes: null,
          pollMs: 50,
        },
      })
    }\n`,
    { stdout: "piped", stderr: "null" },
  );
  const reader = child.stdout.pipeThrough(new TextDecoderStream())
    .getReader();
  let output = "";
  while (!output.includes('"started"')) {
    const { value, done } = await reader.read();
    if (done) break;
    output += value;
  }
  const spinning = await until(
    () => cpuTicks(child.pid) >= SPINNING_TICKS,
    30_000,
  );
  await writer.close();
  const exited = await until(() => !isRunning(child.pid), 120_000);
  killAll([child.pid]);
  await reader.cancel();
  await child.status;
  assert.ok(spinning, "the guest must have started looping");
  assert.ok(exited, "the host must exit when its stdin ends");
});
