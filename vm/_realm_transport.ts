/**
 * Starts a plugin realm off the host's thread and carries its text over one
 * channel: port messages to a `node:worker_threads` worker (`thread`), or
 * the stdin and stdout of a child process, which a Deno realm runs with no
 * permissions. Either realm can be ended for real: the worker terminated
 * (on Node) or the process killed. {@linkcode FrameQueue} hands the frames
 * read from a realm on in fair turns.
 *
 * @module
 */

import { Worker } from "node:worker_threads";
import vm from "node:vm";
import {
  type ChildProcess,
  type ChildProcessWithoutNullStreams,
  spawn,
} from "node:child_process";
import process from "node:process";
import { setImmediate } from "node:timers";
import { Buffer } from "node:buffer";
import { fileURLToPath } from "node:url";
import { getSystemErrorMap } from "node:util";
import { dyingWithParent, SETPRIV } from "../sandbox/parent_death.ts";
import { isSystemRefusal } from "../sandbox/system_helper.ts";
import {
  GUEST_CHILD_FLAGS,
  moduleChildEnvironment,
  rootFolder,
  SELF_CONTAINED_FLAGS,
} from "../protocol/host_environment.ts";
import {
  residentBoundBytes,
  watchResidentMemory,
} from "../sandbox/resident_memory.ts";
import { RESIDENT_POLL_MS } from "../protocol/run_result.ts";
import type { FrameHandler } from "./_line_codec.ts";
import {
  type RealmIsolation,
  realmProgram,
  type RealmWatch,
  workerHostProgram,
} from "./_realm_main.ts";

export type { RealmIsolation } from "./_realm_main.ts";

/**
 * How a realm ended without the host ending it. `refused` is a realm
 * process the system would not start (no descriptors, processes or memory
 * left): no realm ran, and its `detail` is the system's reason.
 */
export interface RealmExit {
  kind: "out-of-memory" | "timeout" | "crashed" | "refused";
  /** A short description, without host paths. */
  detail: string;
  /**
   * The message of a `ReferenceError` that ended the realm, which as the
   * realm starts means an app's bundler changed cordon's realm code.
   */
  referenceError?: string;
  /** The call whose deadline a realm process held and ended itself for. */
  callId?: number;
}

/** The message of the last `ReferenceError` a realm printed, if any. */
export function referenceErrorIn(stderr: string): string | undefined {
  return stderr.match(/ReferenceError: ([^\n]*)\n?(?![^]*ReferenceError: )/)
    ?.[1];
}

/** Where a realm runs and the heap it gets. */
export interface RealmChannelOptions {
  isolation: RealmIsolation;
  memoryLimitBytes: number;
}

export const IS_DENO: boolean = typeof process.versions.deno === "string";

const STDERR_KEEP = 8192;

/** What a worker realm's process writes as it ends a call past its deadline. */
const PAST_DEADLINE = /^realm call (\d+) ran past its deadline$/m;

function heapMb(bytes: number): number {
  return Math.max(8, Math.ceil(bytes / (1024 * 1024)));
}

/**
 * The host's end of a text channel to a realm. Text the realm wrote before
 * `kill()` still arrives until `ended` settles (a killed process's pipe is
 * read to its end, a worker thread's port is drained), so the host decides
 * what it takes from a realm it ended.
 */
export interface RealmChannel {
  /** The child's process id (`process` isolation), or `null`. */
  readonly pid: number | null;
  /**
   * Sends text; a realm that is gone drops it. A realm process that leaves
   * more unread than the host may hold for it is ended as out of memory.
   */
  write(text: string): void;
  /**
   * Stops taking the realm's output until `resume()`: a process's pipe
   * fills and its writes wait; a thread waits once it has posted
   * MAX_UNREAD_MESSAGES that the host has not taken.
   */
  pause(): void;
  resume(): void;
  /** Ends the realm and waits until it is gone. */
  kill(): Promise<void>;
  /** Settles once the realm has ended, however it ended. */
  readonly ended: Promise<RealmExit>;
}

/**
 * The most messages a thread realm may have posted that the host has not
 * read. A realm posts each console line at once, so a plugin that logs in
 * a loop would otherwise queue messages in the host's process faster than
 * the host reads them, and Node reads all of them, synchronously, when the
 * worker ends: measured 200 ms of a blocked host after a 1 s flood.
 */
const MAX_UNREAD_MESSAGES = 256;

/**
 * The realm thread's Node options when the host has vm modules: the flag
 * that gives them. A worker given its own `env` does not take it from the
 * host's `NODE_OPTIONS`, nor, before Node 20.18, from the host's command
 * line, and its realm then asked for the flag the host had been started
 * with. A host without vm modules keeps Node's default, so the realm says
 * which flag the host needs.
 */
function vmModulesArgv(): { execArgv?: string[] } {
  return typeof vm.SourceTextModule === "function"
    ? { execArgv: ["--experimental-vm-modules"] }
    : {};
}

/** Starts a realm on a worker thread; the caller must kill it. */
export function threadChannel(
  options: RealmChannelOptions,
  onText: (text: string) => void,
): RealmChannel {
  // Counts the messages the host has read; the realm waits on it (see
  // threadWriter in _realm_main.ts).
  const read = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(realmProgram("thread"), {
    eval: true,
    env: {},
    argv: [],
    ...vmModulesArgv(),
    stdin: false,
    workerData: { read, maxUnread: MAX_UNREAD_MESSAGES },
    resourceLimits: {
      maxOldGenerationSizeMb: heapMb(options.memoryLimitBytes),
      stackSizeMb: 4,
    },
  });
  const acknowledge = (messages: number) => {
    Atomics.add(read, 0, messages);
    Atomics.notify(read, 0);
  };
  let paused = false;
  let unacknowledged = 0;
  let failure: { code?: unknown } | null = null;
  worker.on("message", (text: unknown) => {
    if (paused) unacknowledged++;
    else acknowledge(1);
    if (typeof text === "string") onText(text);
  });
  worker.on("error", (error: { code?: unknown }) => {
    failure = error;
  });
  const ended = new Promise<RealmExit>((resolve) => {
    worker.once("exit", (code: number) => {
      if (failure?.code === "ERR_WORKER_OUT_OF_MEMORY") {
        resolve({ kind: "out-of-memory", detail: "heap limit reached" });
      } else {
        const { name, message } = (failure ?? {}) as Record<string, unknown>;
        resolve({
          kind: "crashed",
          detail: `worker exited with code ${code}`,
          referenceError:
            name === "ReferenceError" && typeof message === "string"
              ? message
              : undefined,
        });
      }
    });
  });
  return {
    pid: null,
    write: (text) => worker.postMessage(text),
    pause: () => paused = true,
    resume: () => {
      paused = false;
      if (unacknowledged > 0) acknowledge(unacknowledged);
      unacknowledged = 0;
    },
    kill: () => worker.terminate().then(() => {}),
    ended,
  };
}

/**
 * Deno's flags for a realm process, those of every child that runs guest
 * code among them. Deno's child_process may add --allow-all when it spawns
 * Deno itself; explicit denials win over grants.
 */
const DENO_RUN: readonly string[] = [
  "run",
  "--quiet",
  ...GUEST_CHILD_FLAGS,
  ...["read", "write", "net", "env", "run", "ffi", "sys", "import"].map(
    (name) => `--deny-${name}`,
  ),
];

/**
 * The QuickJS realm's module. It imports npm packages, so Deno runs it
 * from its checkout's folder, where it finds the import map, or, from the
 * published package, by its `jsr:` export, whose imports JSR resolves.
 */
const QUICKJS_REALM_URL = new URL("./_quickjs_realm.ts", import.meta.url);

/**
 * What `deno run` is given for the QuickJS realm module at `url`: the URL,
 * or the package's `./vm/quickjs-realm` export when it was loaded from JSR.
 */
export function quickjsRealmSpecifier(url: URL): string {
  const published =
    /^https:\/\/jsr\.io\/(@[^/]+\/[^/]+)\/([^/]+)\/vm\/_quickjs_realm\.ts$/
      .exec(url.href);
  return published === null
    ? url.href
    : `jsr:${published[1]}@${published[2]}/vm/quickjs-realm`;
}

/** The V8 heap of a QuickJS realm's process; QuickJS bounds its own memory. */
const QUICKJS_HOST_HEAP_MB = 64;
/**
 * What a worker realm's process holds itself to, beside the host: its
 * main thread is idle while the plugin runs on its worker's, so it reads
 * its own resident memory and holds each call's deadline even while the
 * host's event loop is blocked (see `workerHostEntry` in `_realm_main.ts`).
 */
function realmWatch(memoryLimitBytes: number): RealmWatch {
  return {
    residentBytes: residentBoundBytes(
      residentLimitBytes({ isolation: "worker", memoryLimitBytes }),
    ),
    pollMs: RESIDENT_POLL_MS,
  };
}

/**
 * The native stack of that process, in KiB (V8's default is under 1 MiB).
 * QuickJS's C code recurses on it (JSON.stringify of a deeply nested
 * value); with the default, V8's limit came before QuickJS's own check and
 * the process died, where the other tiers answer `STACK_OVERFLOW`.
 */
const QUICKJS_HOST_STACK_KIB = 4000;

function processArgs(
  isolation: RealmIsolation,
  memoryLimitBytes: number,
): string[] {
  if (isolation === "quickjs") {
    return [
      ...DENO_RUN,
      `--v8-flags=--max-old-space-size=${QUICKJS_HOST_HEAP_MB},--stack-size=${QUICKJS_HOST_STACK_KIB}`,
      quickjsRealmSpecifier(QUICKJS_REALM_URL),
      String(memoryLimitBytes),
    ];
  }
  const program = isolation === "worker"
    ? workerHostProgram()
    : realmProgram("process");
  const mb = heapMb(memoryLimitBytes);
  const chunks = programChunks(program);
  const importChunks = (args: string) =>
    `import(${JSON.stringify(DATA_URL_PREFIX)} + ${args}.join(""));`;
  if (IS_DENO) {
    // A worker realm's process reads its watch from its first argument.
    const worker = isolation === "worker";
    const entry = `await ${importChunks(`Deno.args.slice(${worker ? 1 : 0})`)}`;
    return [
      ...DENO_RUN,
      ...SELF_CONTAINED_FLAGS,
      `--v8-flags=--max-old-space-size=${mb}`,
      ...(worker ? ["--unstable-worker-options"] : []),
      DATA_URL_PREFIX + Buffer.from(entry, "utf8").toString("base64"),
      ...(worker ? [JSON.stringify(realmWatch(memoryLimitBytes))] : []),
      ...chunks,
    ];
  }
  return [
    nodePermissionFlag(),
    "--experimental-vm-modules",
    "--no-warnings",
    `--max-old-space-size=${mb}`,
    "-e",
    importChunks("process.argv.slice(1)"),
    ...chunks,
  ];
}

/**
 * Node's permission model with nothing granted (no file system, child
 * processes, workers or addons), as Deno's realm process runs with every
 * permission denied: a realm process reads and starts nothing, so a plugin
 * that escaped `node:vm` would reach a process that cannot either. Node 22.13
 * and later name the flag `--permission`.
 */
function nodePermissionFlag(): string {
  return process.allowedNodeEnvironmentFlags.has("--permission")
    ? "--permission"
    : "--experimental-permission";
}

const DATA_URL_PREFIX = "data:text/javascript;base64,";

/**
 * Linux refuses an argument over 128 KiB (MAX_ARG_STRLEN), about the size of
 * a realm program: it goes as base64 in arguments of at most 64 KiB, which
 * a small entry joins and imports as a `data:` module.
 */
function programChunks(program: string): string[] {
  const text = Buffer.from(program, "utf8").toString("base64");
  return text.match(/.{1,65536}/g) ?? [];
}

/**
 * The most bytes the host keeps queued for a realm process that does not
 * read them. Past it the host stops reading the realm until it does: its
 * writes then wait on a full pipe, and its deadline ends it if it never
 * reads again. A few of the largest answers the default limits allow.
 */
const MAX_UNREAD_INPUT_BYTES = 16 * 1024 * 1024;

/**
 * The most bytes the host holds for a realm process that does not read
 * them, past which the realm is ended as out of memory. Once the host
 * stops reading a realm's calls, the calls already in flight (up to
 * `maxConcurrentProxyCalls`, each answering up to a few MiB) still answer:
 * a plugin that sent them and then never read made the host hold every
 * answer (measured: 250 fetches of 4 MiB took a host to 2.9 GiB, or ended
 * it when one turn's answers passed V8's longest string). What a realm
 * leaves unread is charged to it, as if it had read it: at most what it
 * may hold itself, over the queue it may always leave.
 */
function maxHeldInputBytes(options: RealmChannelOptions): number {
  return MAX_UNREAD_INPUT_BYTES + residentLimitBytes(options);
}

/**
 * Why this Deno host cannot start a realm process, or `null` when it can
 * (or runs on Node). What would prompt is asked now, once, so a host under
 * `--no-prompt` is refused here instead of by a realm that never starts.
 *
 * @returns The reason and the flags to grant, or `null`.
 */
export function realmProcessRefusal(): string | null {
  const deno = (globalThis as { Deno?: typeof Deno }).Deno;
  if (!IS_DENO || deno === undefined) return null;
  // Run for the Deno executable, and env for the one variable Deno's
  // node:child_process reads whatever environment it is given.
  const needed: Deno.PermissionDescriptor[] = [
    { name: "run", command: deno.execPath() },
    { name: "env", variable: "NODE_V8_COVERAGE" },
  ];
  const missing = needed.filter((descriptor) => {
    let { state } = deno.permissions.querySync(descriptor);
    if (state === "prompt") {
      state = deno.permissions.requestSync(descriptor).state;
    }
    return state !== "granted";
  });
  if (missing.length === 0) return null;
  const setpriv = process.platform === "linux" ? `,${SETPRIV}` : "";
  return `the realm is a Deno child process, which this host may not start: grant --allow-run=${deno.execPath()}${setpriv} (on Linux, setpriv ends realms when the host dies) and --allow-env=NODE_V8_COVERAGE (Deno's node:child_process reads it for every child), or run with -A`;
}

/**
 * Where a realm process starts. A QuickJS realm starts in its module's
 * folder (QUICKJS_REALM_URL), so Deno finds the configuration of the
 * checkout it belongs to. The others read no path (their program is a data
 * URL): they start in the root folder, which exists even when the host's
 * working folder was deleted under it (on Windows, where it cannot be, in
 * the host's).
 */
function realmFolder(isolation: RealmIsolation): string | undefined {
  if (isolation === "quickjs") {
    return QUICKJS_REALM_URL.protocol === "file:"
      ? fileURLToPath(new URL(".", QUICKJS_REALM_URL))
      : undefined;
  }
  return rootFolder();
}

/**
 * What a realm process may hold besides the watch's margin. A QuickJS realm
 * holds the plugin's memory in its WebAssembly memory and, beside it, a V8
 * heap of its own for the realm's code and the lines on their way out (up
 * to `QUICKJS_HOST_HEAP_MB`): a plugin that logged 48 MiB under a 32 MiB
 * limit took the process to 130 to 138 MiB, near the 160 the watch allowed,
 * and a loaded machine, whose garbage collection lags, ended it as out of
 * memory. The other realms' V8 heap is the plugin's memory itself.
 */
export function residentLimitBytes(
  options: Pick<RealmChannelOptions, "isolation" | "memoryLimitBytes">,
): number {
  return options.isolation === "quickjs"
    ? options.memoryLimitBytes + QUICKJS_HOST_HEAP_MB * 1024 * 1024
    : options.memoryLimitBytes;
}

/**
 * Starts a realm in a child process; the caller must kill it. On Linux the
 * kernel kills it too when the host thread that started it ends, which
 * includes the host dying of SIGKILL.
 */
export function processChannel(
  options: RealmChannelOptions,
  onText: (text: string) => void,
): RealmChannel {
  const [command, args] = dyingWithParent(
    process.execPath,
    processArgs(options.isolation, options.memoryLimitBytes),
  );
  let child: ChildProcessWithoutNullStreams;
  try {
    child = spawn(
      command,
      args,
      {
        stdio: ["pipe", "pipe", "pipe"],
        windowsHide: true,
        // Node 20's permission model does not cover the environment, so a
        // realm gets none of the host's secrets; and a Deno host needs no
        // permission to read them all only to hand them on.
        env: moduleChildEnvironment(),
        cwd: realmFolder(options.isolation),
      },
    );
  } catch (error) {
    // Node throws, rather than emits, the errors it does not expect of a
    // spawn, ENOMEM among them.
    return unstartedChannel(Promise.resolve(spawnFailure(error)));
  }
  // A child the system refused its pipes (too many open descriptors) has
  // no stdio, and tells why only by an error event.
  if (!child.stdin || !child.stdout || !child.stderr) {
    return unstartedChannel(spawnError(child));
  }
  let stderr = "";
  child.stdout.setEncoding("utf8");
  child.stderr.setEncoding("utf8");
  child.stdout.on("data", onText);
  child.stderr.on("data", (chunk: string) => {
    stderr = (stderr + chunk).slice(-STDERR_KEEP);
  });
  // Writing to a child that died raises EPIPE on the stream: ignore it,
  // the close event reports the end.
  child.stdin.on("error", () => {});
  // V8's heap limit does not count ArrayBuffers (typed arrays' bytes live
  // outside the heap): the process's resident memory is what holds them.
  let overMemory = false;
  const endOverMemory = () => {
    overMemory = true;
    child.kill("SIGKILL");
  };
  const stopWatch = child.pid === undefined ? () => {} : watchResidentMemory(
    child.pid,
    residentLimitBytes(options),
    endOverMemory,
  );
  const maxHeldBytes = maxHeldInputBytes(options);
  const ended = new Promise<RealmExit>((resolve) => {
    // A child that cannot be spawned reports an error and may never close.
    spawnError(child).then((exit) => {
      stopWatch();
      resolve(exit);
    });
    child.once("close", (code: number | null, signal: string | null) => {
      stopWatch();
      const pastDeadline = PAST_DEADLINE.exec(stderr);
      if (overMemory || /heap limit|out of memory/i.test(stderr)) {
        resolve({ kind: "out-of-memory", detail: "heap limit reached" });
      } else if (pastDeadline !== null) {
        resolve({
          kind: "timeout",
          detail: "past a call's deadline",
          callId: Number(pastDeadline[1]),
        });
      } else {
        resolve({
          kind: "crashed",
          detail: signal === null
            ? `process exited with code ${code}`
            : `process ended by ${signal}`,
          referenceError: referenceErrorIn(stderr),
        });
      }
    });
  });
  // Two reasons to stop reading the realm: the host's frame queue is full,
  // or the realm has left MAX_UNREAD_INPUT_BYTES of what the host sent it
  // unread. A QuickJS realm reads only between stretches of plugin code, so
  // one that calls the host in a loop it never leaves would otherwise have
  // the host queue every answer in its own memory.
  let framesWait = false;
  let inputWaits = false;
  const readIfFree = () => {
    if (!framesWait && !inputWaits) child.stdout.resume();
  };
  const inputRead = () => {
    inputWaits = false;
    readIfFree();
  };
  // A realm that is gone reads nothing more, and no drain comes: what it
  // wrote is still read to its end.
  child.stdin.once("close", inputRead);
  return {
    pid: child.pid ?? null,
    write: (text) => {
      if (child.stdin.destroyed || overMemory) return;
      child.stdin.write(text);
      if (child.stdin.writableLength > maxHeldBytes) {
        endOverMemory();
        return;
      }
      if (inputWaits || child.stdin.writableLength <= MAX_UNREAD_INPUT_BYTES) {
        return;
      }
      inputWaits = true;
      child.stdout.pause();
      child.stdin.once("drain", inputRead);
    },
    pause: () => {
      framesWait = true;
      child.stdout.pause();
    },
    resume: () => {
      framesWait = false;
      readIfFree();
    },
    kill: async () => {
      child.kill("SIGKILL");
      await ended;
      for (const stream of child.stdio) stream?.destroy();
    },
    ended,
  };
}

/** How a child the system would not start ends, once it says so. */
function spawnError(child: ChildProcess): Promise<RealmExit> {
  return new Promise((resolve) => {
    child.once("error", (error: unknown) => resolve(spawnFailure(error)));
  });
}

/**
 * Why a realm process did not start, named by the error's code and the
 * system's description of it, never by the error's message, which names
 * host paths.
 */
function spawnFailure(error: unknown): RealmExit {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== "string" || !/^E[A-Z0-9]+$/.test(code)) {
    return { kind: "crashed", detail: "the realm process did not start" };
  }
  if (!isSystemRefusal(error)) {
    return {
      kind: "crashed",
      detail: `the realm process did not start (${code})`,
    };
  }
  return { kind: "refused", detail: `${systemErrorText(code)} (${code})` };
}

/** The system's description of an error code: `Too many open files`. */
function systemErrorText(code: string): string {
  for (const [name, text] of getSystemErrorMap().values()) {
    if (name === code) return text.charAt(0).toUpperCase() + text.slice(1);
  }
  return "No room for another process";
}

/** The channel of a realm process that never started. */
function unstartedChannel(ended: Promise<RealmExit>): RealmChannel {
  return {
    pid: null,
    write: () => {},
    pause: () => {},
    resume: () => {},
    kill: async () => {
      await ended;
    },
    ended,
  };
}

/** The longest the host hands a realm's frames on in one turn of its loop. */
const HAND_ON_SLICE_MS = 10;

/**
 * The frames read from a realm and not yet handed on. They are handed on
 * in turns of at most HAND_ON_SLICE_MS, with the host's timers and other
 * work between turns, and the realm's output is paused while any wait: a
 * plugin that floods the console with a slow `onLog` then stalls neither
 * the host nor its own deadline, and what is read stays bounded.
 */
export class FrameQueue {
  readonly #handler: FrameHandler;
  readonly #source: { pause(): void; resume(): void };
  #waiting: Parameters<FrameHandler>[] = [];
  #next = 0;
  /** When the current turn stops handing frames on. */
  #turnEnds: number | undefined;
  #scheduled = false;
  #markEmpty: (() => void) | null = null;
  /** Settles once no frame waits. */
  empty: Promise<void> = Promise.resolve();

  constructor(
    handler: FrameHandler,
    source: { pause(): void; resume(): void },
  ) {
    this.#handler = handler;
    this.#source = source;
  }

  add = (...frame: Parameters<FrameHandler>): void => {
    if (this.#markEmpty === null) {
      this.empty = new Promise((resolve) => this.#markEmpty = resolve);
    }
    this.#waiting.push(frame);
  };

  /** Hands the waiting frames on, as far as this turn allows. */
  handOn = (): void => {
    if (this.#scheduled) return;
    const turnEnds = this.#turnEnds ??= this.#startTurn();
    try {
      while (
        this.#next < this.#waiting.length && performance.now() < turnEnds
      ) {
        this.#handler(...this.#waiting[this.#next++]!);
      }
    } finally {
      // A frame whose handler threw is not handed on again; the rest are.
      this.#endTurn();
    }
  };

  /** Schedules the next turn while frames wait, or reads on. */
  #endTurn(): void {
    if (this.#next < this.#waiting.length) {
      this.#source.pause();
      this.#scheduled = true;
      setImmediate(() => {
        this.#scheduled = false;
        this.handOn();
      });
      return;
    }
    this.#waiting = [];
    this.#next = 0;
    this.#source.resume();
    this.#markEmpty?.();
    this.#markEmpty = null;
  }

  /**
   * Reads that come one after another without the loop moving on (a
   * thread's port messages come in batches) share one turn: it ends when
   * the loop reaches its immediates.
   */
  #startTurn(): number {
    setImmediate(() => this.#turnEnds = undefined);
    return performance.now() + HAND_ON_SLICE_MS;
  }
}
