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
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Buffer } from "node:buffer";
import { encodeFrame, frameDecoder, type FrameHandler } from "./_line_codec.ts";
import { processRealmProgram, threadRealmProgram } from "./_realm_main.ts";
import { MAILBOX_BYTES, sharedMailbox, spinWait } from "./_shared_mailbox.ts";
import {
  FILE_CHANNEL_BYTES,
  FILE_SLOT_BYTES,
  type FileCells,
  fileCells,
  LOOK_FRAME,
} from "./_file_channel.ts";

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
 * call it waits for alone. The realm's thread spins for such calls, so the
 * answer usually comes within tens of microseconds; a wait this short
 * spares the host's thread a turn of its event loop, parking and being
 * woken from another core, and bounds what a slow plugin costs the event
 * loop.
 */
const HOST_SPIN_MS = 0.1;

/** The most lone calls a slow realm makes the host skip the wait for. */
const HOST_SPIN_MAX_SKIP = 1024;

function heapMb(bytes: number): number {
  return Math.max(8, Math.ceil(bytes / (1024 * 1024)));
}

/** Whether the host waits for a lone call's answer, and what it learns. */
export interface AnswerWaitPolicy {
  /** Whether to wait for this lone call's answer. */
  wanted(): boolean;
  /** Records whether the answer came within the wait. */
  record(arrived: boolean): void;
}

/**
 * Decides which lone calls the host waits for, up to `HOST_SPIN_MS`. One
 * wait that runs out is forgiven; after a second in a row the next lone
 * calls are not waited for: one, then twice as many after each further
 * miss, until an answer comes in time. A plugin that is slow to answer so
 * costs the host almost nothing.
 *
 * @returns The policy of one realm.
 */
export function answerWaitPolicy(): AnswerWaitPolicy {
  let skip = 0;
  let penalty = 0;
  let missedLast = false;
  return {
    wanted() {
      if (skip === 0) return true;
      skip--;
      return false;
    },
    record(arrived) {
      if (arrived) {
        penalty = 0;
        missedLast = false;
        return;
      }
      // One late answer is noise (a preempted realm, a collection).
      if (!missedLast && penalty === 0) {
        missedLast = true;
        return;
      }
      penalty = Math.min(HOST_SPIN_MAX_SKIP, Math.max(1, penalty * 2));
      skip = penalty;
    },
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
  const answerWait = answerWaitPolicy();
  const flush = () => {
    const text = outbox;
    const waitForAnswer = lone && answerWait.wanted();
    outbox = "";
    lone = false;
    if (closed) return;
    const seen = Atomics.load(cells, inboundBell);
    mailbox.send(text);
    if (!waitForAnswer) return;
    const arrived = spinWait(cells, inboundBell, seen, HOST_SPIN_MS, 0);
    answerWait.record(arrived);
    if (arrived) mailbox.take(decode);
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

function processArgs(
  memoryLimitBytes: number,
  channelPath: string | null,
): string[] {
  const program = processRealmProgram();
  const mb = heapMb(memoryLimitBytes);
  const extra = channelPath === null ? [] : [channelPath];
  if (IS_DENO) {
    const url = "data:text/javascript;base64," +
      Buffer.from(program, "utf8").toString("base64");
    // The realm opens the channel file, then gives up reading and writing
    // altogether before it loads any plugin code.
    const fileAccess = channelPath === null
      ? ["--deny-read", "--deny-write"]
      : [`--allow-read=${channelPath}`, `--allow-write=${channelPath}`];
    return [
      "run",
      "--quiet",
      "--no-prompt",
      "--no-config",
      "--no-lock",
      "--no-remote",
      "--no-npm",
      ...fileAccess,
      // Deno's child_process may add --allow-all when it spawns Deno
      // itself; explicit denials win over grants.
      "--deny-net",
      "--deny-env",
      "--deny-run",
      "--deny-ffi",
      "--deny-sys",
      "--deny-import",
      `--v8-flags=--max-old-space-size=${mb}`,
      url,
      ...extra,
    ];
  }
  return [
    "--experimental-vm-modules",
    "--no-warnings",
    `--max-old-space-size=${mb}`,
    "--input-type=module",
    "-e",
    program,
    ...extra,
  ];
}

/** The shared file of a realm process, seen from the host. */
interface ChannelFile {
  /** Where it is, until it is removed. */
  path: string | null;
  /** Its directory, private to this host. */
  dir: string;
  fd: number;
  cells: FileCells;
}

/**
 * Makes the shared file of a realm process (see `_file_channel.ts`) in a
 * new private directory, or gives `null` when the host may not: the realm
 * then uses its pipes alone.
 */
function openChannelFile(): ChannelFile | null {
  let dir: string | null = null;
  try {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "cordon-realm-"));
    const file = path.join(dir, "channel");
    const fd = fs.openSync(file, "wx+", 0o600);
    fs.ftruncateSync(fd, FILE_CHANNEL_BYTES);
    return {
      path: file,
      dir,
      fd,
      cells: fileCells(fs, fd, FILE_SLOT_BYTES),
    };
  } catch {
    if (dir !== null) fs.rmSync(dir, { recursive: true, force: true });
    return null;
  }
}

/**
 * Removes the file and its directory once the realm holds it open, or at
 * the end. Where open files cannot be removed (Windows) it tries again at
 * the end.
 */
function unlinkChannelFile(file: ChannelFile): void {
  if (file.path === null) return;
  try {
    fs.rmSync(file.dir, { recursive: true, force: true });
    file.path = null;
  } catch {
    // Tried again once the file is closed; left behind, it is clutter.
  }
}

/** The host's side of a realm process's shared file. */
export interface HostFileSide {
  /** Counts text written to stdin, for a realm that polls the file. */
  wrotePipe(text: string): void;
  /**
   * Sends a lone call through the file if the realm polls it, and waits
   * briefly for its answer; `false` when the call must go through stdin.
   */
  sendLone(text: string): boolean;
  /** Takes a batch the realm put in the file for a host that did not wait. */
  look(): void;
}

/**
 * Builds the host's side of a realm process's shared file (see
 * `_file_channel.ts`).
 *
 * @param cells The file's cells and slots.
 * @param writePipe Writes text to the realm's stdin.
 * @param deliver Receives each frame of the realm's batches in the file.
 * @returns The host's side.
 */
export function hostFileSide(
  cells: FileCells,
  writePipe: (text: string) => void,
  deliver: FrameHandler,
): HostFileSide {
  // Bytes written to stdin (modulo 2^32), and batches through the file.
  let pipeSent = 0;
  let callsPut = 0;
  let batchesTaken = 0;
  const answerWait = answerWaitPolicy();
  const decode = frameDecoder(deliver);
  const take = (): boolean => {
    if (cells.realmCells()[0] === batchesTaken) return false;
    batchesTaken = (batchesTaken + 1) | 0;
    const text = cells.take(1);
    if (text !== null) decode(text);
    return true;
  };
  const waitForAnswer = (): void => {
    const until = performance.now() + HOST_SPIN_MS;
    let arrived = take();
    while (!arrived && performance.now() < until) arrived = take();
    answerWait.record(arrived);
    if (arrived) return;
    // Whichever side moved second sees the other: the realm writes a look
    // frame, or its batch is here now.
    cells.writeHostPolling(0);
    take();
  };
  return {
    wrotePipe(text) {
      pipeSent = (pipeSent + Buffer.byteLength(text)) | 0;
      cells.writePipeSent(pipeSent);
    },
    sendLone(text) {
      if (callsPut !== batchesTaken || cells.realmCells()[1] !== 1) {
        return false;
      }
      if (!cells.put(0, text)) return false;
      const wait = answerWait.wanted();
      callsPut = (callsPut + 1) | 0;
      cells.writeHostCalls(callsPut, wait ? 1 : 0);
      // The realm may have stopped polling before it saw the call.
      if (cells.realmCells()[1] !== 1) writePipe(LOOK_FRAME);
      if (wait) waitForAnswer();
      return true;
    },
    look: () => void take(),
  };
}

function openProcess(options: RealmTransportOptions): RealmTransport {
  let file = openChannelFile();
  const child: ChildProcessWithoutNullStreams = spawn(
    process.execPath,
    processArgs(options.memoryLimitBytes, file?.path ?? null),
    { stdio: ["pipe", "pipe", "pipe"], windowsHide: true },
  );
  let terminated = false;
  let stderr = "";
  // Lines sent in one turn of the event loop leave in one write.
  let outbox = "";
  let lone = false;
  const deliver = (kind: string, id: number, name: string, json: string) => {
    if (terminated) return;
    if (kind === "Y" && file !== null) unlinkChannelFile(file);
    options.onMessage(kind, id, name, json);
  };
  const writePipe = (text: string) => {
    if (terminated || child.stdin.destroyed) return;
    child.stdin.write(text);
    fileSide?.wrotePipe(text);
  };
  let fileSide = file === null
    ? null
    : hostFileSide(file.cells, writePipe, deliver);
  const flush = () => {
    const text = outbox;
    const wasLone = lone;
    outbox = "";
    lone = false;
    if (terminated) return;
    if (wasLone && fileSide?.sendLone(text)) return;
    writePipe(text);
  };
  child.stdout.setEncoding("utf8");
  child.stderr.setEncoding("utf8");
  const pipeDecode = frameDecoder((kind, id, name, json) => {
    if (kind !== "W") deliver(kind, id, name, json);
    else if (!terminated) fileSide?.look();
  });
  child.stdout.on("data", pipeDecode);
  child.stderr.on("data", (chunk: string) => {
    stderr = (stderr + chunk).slice(-STDERR_KEEP);
  });
  // Writing to a child that died raises EPIPE on the stream: ignore it,
  // the exit event reports the end.
  child.stdin.on("error", () => {});
  const exited = new Promise<RealmExit>((resolve) => {
    // Nothing may touch the descriptor once closed: its number may be
    // reused by another file of the host.
    const closeFile = () => {
      if (file === null) return;
      const closing = file;
      file = null;
      fileSide = null;
      fs.closeSync(closing.fd);
      unlinkChannelFile(closing);
    };
    // A child that cannot be spawned reports an error and may never close.
    child.once("error", () => {
      closeFile();
      resolve({ kind: "crashed", detail: "the realm process did not start" });
    });
    child.once("close", (code: number | null, signal: string | null) => {
      closeFile();
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
      if (kind === "J") lone = true;
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
