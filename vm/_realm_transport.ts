/**
 * Starts a plugin realm off the host's thread and carries its frames (see
 * `_line_codec.ts`) over one text channel: port messages to a
 * `node:worker_threads` worker (`thread`), or the stdin and stdout of a
 * child process, which a Deno realm runs with no permissions. Frames sent
 * in one pass of the event loop leave in one write. Either realm can be
 * ended for real: the worker terminated (on Node) or the process killed.
 *
 * @module
 */

import { Worker } from "node:worker_threads";
import { spawn } from "node:child_process";
import process from "node:process";
import { setImmediate } from "node:timers";
import { Buffer } from "node:buffer";
import { readFileSync } from "node:fs";
import {
  RESIDENT_MARGIN_BYTES,
  RESIDENT_POLL_MS,
} from "../protocol/run_result.ts";
import { encodeFrame, frameDecoder, type FrameHandler } from "./_line_codec.ts";
import {
  type RealmIsolation,
  realmProgram,
  workerHostProgram,
} from "./_realm_main.ts";

export type { RealmIsolation } from "./_realm_main.ts";

/** How a realm ended. */
export interface RealmExit {
  /** `terminated` when the host ended it; the others are failures. */
  kind: "terminated" | "out-of-memory" | "crashed";
  /** A short description, without host paths. */
  detail: string;
}

/** A running realm, seen from the host. */
export interface RealmTransport {
  /** The child's process id (`process` isolation), or `null`. */
  readonly pid: number | null;
  /** Sends one message; messages after the end are dropped. */
  send(kind: string, id: number, name: string, json: string): void;
  /** Ends the realm and waits until it is gone. */
  terminate(): Promise<void>;
  /** Settles once the realm has ended, however it ended. */
  readonly exited: Promise<RealmExit>;
}

/** Options of {@linkcode openRealmTransport}. */
export interface RealmTransportOptions {
  isolation: RealmIsolation;
  memoryLimitBytes: number;
  /** The longest frame the host takes; a realm that sends one longer ends. */
  maxFrameChars: number;
  /**
   * Receives each frame of the realm, which is not trusted: check them.
   * Frames the realm wrote before {@linkcode RealmTransport.terminate}
   * still arrive until it settles (a killed process's pipe is read to its
   * end, a worker thread's port is drained), so the host decides what it
   * takes from a realm it ended.
   */
  onMessage: FrameHandler;
}

export const IS_DENO: boolean = typeof process.versions.deno === "string";

const STDERR_KEEP = 8192;

function heapMb(bytes: number): number {
  return Math.max(8, Math.ceil(bytes / (1024 * 1024)));
}

/** The host's end of a text channel to a realm. */
interface HostEnd {
  readonly pid: number | null;
  write(text: string): void;
  kill(): Promise<void>;
  /** Settles with how the realm ended, `terminated` aside. */
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

function threadEnd(
  options: RealmTransportOptions,
  onText: (text: string) => void,
): HostEnd {
  // Counts the messages the host has read; the realm waits on it (see
  // threadWriter in _realm_main.ts).
  const read = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(realmProgram("thread"), {
    eval: true,
    env: {},
    argv: [],
    stdin: false,
    workerData: { read, maxUnread: MAX_UNREAD_MESSAGES },
    resourceLimits: {
      maxOldGenerationSizeMb: heapMb(options.memoryLimitBytes),
      stackSizeMb: 4,
    },
  });
  let failure: { code?: unknown } | null = null;
  worker.on("message", (text: unknown) => {
    Atomics.add(read, 0, 1);
    Atomics.notify(read, 0);
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
        resolve({ kind: "crashed", detail: `worker exited with code ${code}` });
      }
    });
  });
  return {
    pid: null,
    write: (text) => worker.postMessage(text),
    kill: () => worker.terminate().then(() => {}),
    ended,
  };
}

/**
 * Deno's flags for a realm process. Deno's child_process may add
 * --allow-all when it spawns Deno itself; explicit denials win over grants.
 */
const DENO_RUN: readonly string[] = [
  "run",
  "--quiet",
  "--no-prompt",
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
    const entry = `await ${importChunks("Deno.args")}`;
    return [
      ...DENO_RUN,
      "--no-config",
      "--no-lock",
      "--no-remote",
      "--no-npm",
      `--v8-flags=--max-old-space-size=${mb}`,
      ...(isolation === "worker" ? ["--unstable-worker-options"] : []),
      DATA_URL_PREFIX + Buffer.from(entry, "utf8").toString("base64"),
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
  const chunks: string[] = [];
  for (let at = 0; at < text.length; at += 65536) {
    chunks.push(text.slice(at, at + 65536));
  }
  return chunks;
}

/**
 * Whether this host may read `/proc` (Linux, and on Deno a granted read:
 * a query, so that reading never prompts).
 */
const CAN_READ_PROC: boolean = (() => {
  const deno = (globalThis as { Deno?: typeof Deno }).Deno;
  try {
    const query = deno?.permissions.querySync({ name: "read", path: "/proc" });
    if (query !== undefined && query.state !== "granted") return false;
    readFileSync("/proc/self/status");
    return true;
  } catch {
    return false;
  }
})();

/** A process's resident memory in bytes, or `null` when it cannot be read. */
function residentBytes(pid: number): number | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "latin1");
    const kib = /^VmRSS:\s*(\d+) kB$/m.exec(status)?.[1];
    return kib === undefined ? null : Number(kib) * 1024;
  } catch {
    return null;
  }
}

function processEnd(
  options: RealmTransportOptions,
  onText: (text: string) => void,
): HostEnd {
  const child = spawn(
    process.execPath,
    processArgs(options.isolation, options.memoryLimitBytes),
    {
      stdio: ["pipe", "pipe", "pipe"],
      windowsHide: true,
      // A QuickJS realm starts in its module's folder (QUICKJS_REALM_URL).
      cwd: options.isolation === "quickjs" &&
          QUICKJS_REALM_URL.protocol === "file:"
        ? decodeURIComponent(new URL(".", QUICKJS_REALM_URL).pathname)
        : undefined,
    },
  );
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
  const pid = child.pid;
  const watch = pid === undefined || !CAN_READ_PROC
    ? undefined
    : setInterval(() => {
      const resident = residentBytes(pid);
      if (
        resident !== null &&
        resident > options.memoryLimitBytes + RESIDENT_MARGIN_BYTES
      ) {
        overMemory = true;
        clearInterval(watch);
        child.kill("SIGKILL");
      }
    }, RESIDENT_POLL_MS);
  const ended = new Promise<RealmExit>((resolve) => {
    // A child that cannot be spawned reports an error and may never close.
    child.once("error", () => {
      clearInterval(watch);
      resolve({ kind: "crashed", detail: "the realm process did not start" });
    });
    child.once("close", (code: number | null, signal: string | null) => {
      clearInterval(watch);
      if (overMemory || /heap limit|out of memory/i.test(stderr)) {
        resolve({ kind: "out-of-memory", detail: "heap limit reached" });
      } else {
        resolve({
          kind: "crashed",
          detail: signal === null
            ? `process exited with code ${code}`
            : `process ended by ${signal}`,
        });
      }
    });
  });
  return {
    pid: child.pid ?? null,
    write: (text) => {
      if (!child.stdin.destroyed) child.stdin.write(text);
    },
    kill: async () => {
      child.kill("SIGKILL");
      await ended;
      for (const stream of child.stdio) stream?.destroy();
    },
    ended,
  };
}

/** Starts a realm; the caller must terminate it. */
export function openRealmTransport(
  options: RealmTransportOptions,
): RealmTransport {
  let terminated = false;
  let overflowed = false;
  let outbox = "";
  const decode = frameDecoder(options.onMessage, {
    maxLineChars: options.maxFrameChars,
    onOverflow() {
      overflowed = true;
      end.kill().catch(() => {});
    },
  });
  const open = options.isolation === "thread" ? threadEnd : processEnd;
  const end = open(options, decode);
  const flush = () => {
    const text = outbox;
    outbox = "";
    if (!terminated) end.write(text);
  };
  const exited = end.ended.then((exit): RealmExit =>
    terminated ? { kind: "terminated", detail: "terminated" } : overflowed
      ? {
        kind: "crashed",
        detail: `it sent a message over ${options.maxFrameChars} characters`,
      }
      : exit
  );
  return {
    pid: end.pid,
    send(kind, id, name, json) {
      if (terminated) return;
      // Flushed once the event loop has run every callback that was ready
      // (setImmediate runs before it waits again): under load each HTTP
      // request arrives in a callback of its own, and a write per request
      // cost the host and the realm more CPU than the call.
      if (outbox === "") setImmediate(flush);
      outbox += encodeFrame(kind, id, name, json);
    },
    async terminate() {
      if (!terminated) {
        terminated = true;
        await end.kill();
      }
      await exited;
    },
    exited,
  };
}
