/**
 * Starts a plugin realm off the host's thread and carries its messages: on
 * a `node:worker_threads` worker (`thread`) or in a child process of the
 * same runtime (`process`). Either can be ended for real: Node's
 * `worker.terminate()` stops a worker stuck in a loop; Deno's does not
 * (the thread keeps a core busy), so on Deno the realm lives in a child
 * process with no permissions that is killed instead.
 *
 * @module
 */

import {
  MessageChannel,
  receiveMessageOnPort,
  Worker,
} from "node:worker_threads";
import { spawn } from "node:child_process";
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import process from "node:process";
import { Buffer } from "node:buffer";
import { encodeFrame, frameDecoder, type FrameHandler } from "./_line_codec.ts";
import { processRealmProgram, threadRealmProgram } from "./_realm_main.ts";
import { MAILBOX_BYTES, sharedMailbox, spinWait } from "./_shared_mailbox.ts";

/** Where a realm runs. */
export type RealmIsolation = "thread" | "process";

/** How a realm ended. */
export interface RealmExit {
  /** `terminated` when the host ended it; the others are failures. */
  kind: "terminated" | "out-of-memory" | "crashed";
  /** A short description, without host paths. */
  detail: string;
}

/** A running realm, seen from the host. */
export interface RealmTransport {
  /** Where it runs. */
  readonly isolation: RealmIsolation;
  /** The child's process id (`process` isolation), or `null`. */
  readonly pid: number | null;
  /**
   * Sends one message (see `_line_codec.ts`). Messages sent in one turn of
   * the event loop leave together; messages after the end are dropped.
   */
  send(kind: string, id: number, name: string, json: string): void;
  /** Ends the realm and waits until it is gone. */
  terminate(): Promise<void>;
  /** Settles once the realm has ended, however it ended. */
  readonly exited: Promise<RealmExit>;
}

/** Options of {@linkcode openRealmTransport}. */
export interface RealmTransportOptions {
  /** Where to run the realm. */
  isolation: RealmIsolation;
  /** The realm's heap limit in bytes. */
  memoryLimitBytes: number;
  /**
   * Receives each message of the realm, as text fields. The realm is not
   * trusted: check them.
   */
  onMessage: FrameHandler;
}

/** Whether this process runs on Deno. */
export const IS_DENO: boolean = typeof process.versions.deno === "string";

/** The isolation `auto` picks on this runtime. */
export const DEFAULT_ISOLATION: RealmIsolation = IS_DENO ? "process" : "thread";

const STDERR_KEEP = 8192;

/**
 * How long the host's thread waits, without yielding, for the answer to a
 * call it waits for alone on a worker thread. The realm's thread spins for
 * such calls, so the answer usually comes within tens of microseconds; a
 * wait this short spares the host's thread parking and being woken from
 * another core, and bounds what a slow plugin costs the event loop.
 */
const HOST_SPIN_MS = 0.1;

/** The most lone calls a slow realm makes the host skip the wait for. */
const HOST_SPIN_MAX_SKIP = 1024;

function heapMb(bytes: number): number {
  return Math.max(8, Math.ceil(bytes / (1024 * 1024)));
}

/**
 * Waits up to `HOST_SPIN_MS` for `cells[index]` to change from what it was
 * when a lone call left. After a wait that runs out, the next lone calls
 * are not waited for: one, then twice as many after each further miss,
 * until an answer comes in time. A plugin that is slow to answer so costs
 * the host almost nothing.
 *
 * @param cells The mailbox's cells.
 * @param index The cell the realm bumps when it sends.
 * @returns A wait, given the cell's value before the call left, that tells
 * whether the cell changed.
 */
export function boundedAnswerWait(
  cells: Int32Array,
  index: number,
): (seen: number) => boolean {
  let skip = 0;
  let penalty = 0;
  return (seen) => {
    if (skip > 0) {
      skip--;
      return false;
    }
    if (spinWait(cells, index, seen, HOST_SPIN_MS, 0)) {
      penalty = 0;
      return true;
    }
    penalty = Math.min(HOST_SPIN_MAX_SKIP, Math.max(1, penalty * 2));
    skip = penalty;
    return false;
  };
}

function openThread(options: RealmTransportOptions): RealmTransport {
  // Batches of frames cross in shared memory (see _shared_mailbox.ts), with
  // a port each way for those that do not fit.
  const buffer = new SharedArrayBuffer(MAILBOX_BYTES);
  const toRealm = new MessageChannel();
  const fromRealm = new MessageChannel();
  const worker = new Worker(threadRealmProgram(), {
    eval: true,
    env: {},
    argv: [],
    workerData: {
      buffer,
      inbox: toRealm.port2,
      outbox: fromRealm.port1,
    },
    transferList: [toRealm.port2, fromRealm.port1],
    // The realm program is CommonJS: drop flags that would make it ESM.
    execArgv: process.execArgv.filter((arg) =>
      !arg.startsWith("--input-type") &&
      !arg.startsWith("--experimental-default-type")
    ),
    stdin: false,
    resourceLimits: {
      maxOldGenerationSizeMb: heapMb(options.memoryLimitBytes),
      stackSizeMb: 4,
    },
  });
  const mailbox = sharedMailbox(
    buffer,
    0,
    (text) => toRealm.port1.postMessage(text),
    () => receiveMessageOnPort(fromRealm.port2),
  );
  let terminated = false;
  let closed = false;
  let failure: { code?: unknown } | null = null;
  // Frames sent in one turn of the event loop wake the realm once.
  let outbox = "";
  let lone = false;
  const decode = frameDecoder((kind, id, name, json) => {
    if (!terminated) options.onMessage(kind, id, name, json);
  });
  const { cells, inboundBell } = mailbox;
  const answerWait = boundedAnswerWait(cells, inboundBell);
  const flush = () => {
    const text = outbox;
    const waitForAnswer = lone;
    outbox = "";
    lone = false;
    if (closed) return;
    const seen = Atomics.load(cells, inboundBell);
    mailbox.send(text);
    if (waitForAnswer && answerWait(seen)) mailbox.take(decode);
  };
  // Waiting with Atomics.waitAsync does not keep the event loop alive; a
  // call in flight does (its deadline timer).
  const listen = (): void => {
    if (closed) return;
    const seen = Atomics.load(cells, inboundBell);
    try {
      mailbox.take(decode);
    } finally {
      const waiting = Atomics.waitAsync(cells, inboundBell, seen);
      if (waiting.async) waiting.value.then(listen);
      else queueMicrotask(listen);
    }
  };
  listen();
  worker.on("error", (error: { code?: unknown }) => {
    failure = error;
  });
  const exited = new Promise<RealmExit>((resolve) => {
    worker.once("exit", (code: number) => {
      closed = true;
      mailbox.wakeReader();
      toRealm.port1.close();
      fromRealm.port2.close();
      if (terminated) resolve({ kind: "terminated", detail: "terminated" });
      else if (
        (failure as { code?: unknown } | null)?.code ===
          "ERR_WORKER_OUT_OF_MEMORY"
      ) {
        resolve({ kind: "out-of-memory", detail: "heap limit reached" });
      } else {
        resolve({ kind: "crashed", detail: `worker exited with code ${code}` });
      }
    });
  });
  return {
    isolation: "thread",
    pid: null,
    send(kind, id, name, json) {
      if (terminated) return;
      if (outbox === "") queueMicrotask(flush);
      if (kind === "J") lone = true;
      outbox += encodeFrame(kind, id, name, json);
    },
    async terminate() {
      if (!terminated) {
        terminated = true;
        await worker.terminate();
      }
      await exited;
    },
    exited,
  };
}

function processArgs(memoryLimitBytes: number): string[] {
  const program = processRealmProgram();
  const mb = heapMb(memoryLimitBytes);
  if (IS_DENO) {
    const url = "data:text/javascript;base64," +
      Buffer.from(program, "utf8").toString("base64");
    return [
      "run",
      "--quiet",
      "--no-prompt",
      "--no-config",
      "--no-lock",
      "--no-remote",
      "--no-npm",
      // Deno's child_process may add --allow-all when it spawns Deno
      // itself; explicit denials win over grants.
      "--deny-read",
      "--deny-write",
      "--deny-net",
      "--deny-env",
      "--deny-run",
      "--deny-ffi",
      "--deny-sys",
      "--deny-import",
      `--v8-flags=--max-old-space-size=${mb}`,
      url,
    ];
  }
  return [
    "--experimental-vm-modules",
    "--no-warnings",
    `--max-old-space-size=${mb}`,
    "--input-type=module",
    "-e",
    program,
  ];
}

function openProcess(options: RealmTransportOptions): RealmTransport {
  const child: ChildProcessWithoutNullStreams = spawn(
    process.execPath,
    processArgs(options.memoryLimitBytes),
    { stdio: ["pipe", "pipe", "pipe"], windowsHide: true },
  );
  let terminated = false;
  let stderr = "";
  // Lines sent in one turn of the event loop leave in one write.
  let outbox = "";
  const flush = () => {
    const text = outbox;
    outbox = "";
    if (!terminated && !child.stdin.destroyed) child.stdin.write(text);
  };
  child.stdout.setEncoding("utf8");
  child.stderr.setEncoding("utf8");
  child.stdout.on(
    "data",
    frameDecoder((kind, id, name, json) => {
      if (!terminated) options.onMessage(kind, id, name, json);
    }),
  );
  child.stderr.on("data", (chunk: string) => {
    stderr = (stderr + chunk).slice(-STDERR_KEEP);
  });
  // Writing to a child that died raises EPIPE on the stream: ignore it,
  // the exit event reports the end.
  child.stdin.on("error", () => {});
  const exited = new Promise<RealmExit>((resolve) => {
    // A child that cannot be spawned reports an error and may never close.
    child.once("error", () => {
      resolve({ kind: "crashed", detail: "the realm process did not start" });
    });
    child.once("close", (code: number | null, signal: string | null) => {
      if (terminated) {
        resolve({ kind: "terminated", detail: "terminated" });
      } else if (/heap limit|out of memory/i.test(stderr)) {
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
    isolation: "process",
    pid: child.pid ?? null,
    send(kind, id, name, json) {
      if (terminated || child.stdin.destroyed) return;
      if (outbox === "") queueMicrotask(flush);
      outbox += encodeFrame(kind, id, name, json);
    },
    async terminate() {
      if (!terminated) {
        terminated = true;
        child.kill("SIGKILL");
      }
      await exited;
      child.stdin.destroy();
      child.stdout.destroy();
      child.stderr.destroy();
    },
    exited,
  };
}

/**
 * Starts a realm.
 *
 * @param options Where and how.
 * @returns The running realm; the caller must terminate it.
 */
export function openRealmTransport(
  options: RealmTransportOptions,
): RealmTransport {
  return options.isolation === "thread"
    ? openThread(options)
    : openProcess(options);
}
