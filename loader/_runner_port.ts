// This module is browser compatible.

/**
 * The ways a QuickJS pool starts a runner it can kill: a Deno subprocess
 * (Deno's `worker.terminate()` does not stop a worker inside a long
 * WebAssembly call, so only a process is killable there) and a Web Worker
 * (browsers, where `terminate()` does stop it) and a `worker_threads`
 * worker (Node, where `terminate()` stops it too). Deno and Node's
 * built-ins are reached through `globalThis`, so this module still
 * type-checks and bundles for browsers.
 *
 * @module
 */

import { CordonError } from "../protocol/cordon_error.ts";
import {
  GUEST_CHILD_FLAGS,
  moduleChildEnvironment,
} from "../protocol/host_environment.ts";
import { thrownSummary } from "../protocol/error_name.ts";
import { withOfflineNote } from "../protocol/network_status.ts";
import type { HostMessage } from "./_runner_protocol.ts";

/** One started runner, as the pool sees it. */
export interface RunnerPort {
  /** Sends a message; a runner that is gone ignores it. */
  send(message: HostMessage): void;
  /** Ends the runner at once, whatever it is doing; resolves once it is gone. */
  kill(): Promise<void>;
  /**
   * Whether the runner keeps its host's process alive (Deno and Node; a
   * browser's worker has no such hold). It starts held.
   */
  hold(held: boolean): void;
}

/** What a runner tells the pool that started it. */
export interface RunnerEvents {
  /** A message, not yet read: see `readRunnerMessage`. */
  message(data: unknown): void;
  /** The runner ended or failed; `detail` says how. */
  exit(detail: string): void;
}

/** Starts one runner that reports to `events`. */
export type SpawnRunner = (events: RunnerEvents) => RunnerPort;

/** The parts of the Deno namespace a process runner needs. */
interface DenoLike {
  execPath(): string;
  exit(code: number): never;
  readonly ppid: number;
  stdin: { readable: ReadableStream<Uint8Array> };
  stdout: { writeSync(bytes: Uint8Array): number };
  Command: new (command: string, options: {
    args: string[];
    cwd?: URL;
    clearEnv: true;
    env: Record<string, string>;
    stdin: "piped";
    stdout: "piped";
    stderr: "piped";
  }) => {
    spawn(): {
      stdin: WritableStream<Uint8Array>;
      stdout: ReadableStream<Uint8Array>;
      stderr: ReadableStream<Uint8Array>;
      status: Promise<{ code: number; signal: string | null }>;
      kill(signal: "SIGKILL"): void;
      ref(): void;
      unref(): void;
    };
  };
}

/** The Deno namespace, when this runs in Deno. */
export function denoRuntime(): DenoLike | undefined {
  return (globalThis as { Deno?: DenoLike }).Deno;
}

/**
 * The flags of a runner process: no permission at all, and those of every
 * child that runs guest code (no prompt, no V8 code cache, a file of Deno's
 * cache folder every child would share and hold open). The runner reads
 * only its own modules, which loading does not need a permission for, and
 * speaks over its standard input and output. Not the self-contained flags:
 * it loads its npm packages through its checkout's configuration.
 */
const RUNNER_FLAGS: readonly string[] = Object.freeze([
  "run",
  ...GUEST_CHILD_FLAGS,
  "--quiet",
]);

/**
 * Splits a byte stream into lines of text and passes each on. A stream
 * that fails (a killed runner's pipe can end abruptly) ends the read with
 * what was read. A throw of `onLine` is a fault of the code that handles
 * the line, not of the stream: the stream is cancelled and the promise
 * rejects with what was thrown, so the caller ends what it was doing and
 * says why.
 *
 * @param stream The stream.
 * @param onLine Receives each whole line, without its end.
 * @returns When the stream ended or failed.
 * @throws What `onLine` threw.
 */
export async function readLines(
  stream: ReadableStream<Uint8Array>,
  onLine: (line: string) => void,
): Promise<void> {
  const decoder = new TextDecoder();
  const reader = stream.getReader();
  // The pieces of the line under way: a long line arrives in many chunks,
  // and only each new chunk is searched for its end.
  let pieces: string[] = [];
  try {
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch {
        // A killed runner ends its pipe abruptly; what was read counts.
        return;
      }
      if (chunk.done) return;
      const text = decoder.decode(chunk.value, { stream: true });
      let start = 0;
      let end = text.indexOf("\n");
      while (end !== -1) {
        pieces.push(text.slice(start, end));
        onLine(pieces.join(""));
        pieces = [];
        start = end + 1;
        end = text.indexOf("\n", start);
      }
      if (start < text.length) pieces.push(text.slice(start));
    }
  } catch (error) {
    reader.cancel().catch(() => {});
    throw error;
  }
}

/**
 * Deno's colour codes (ESC [ … m), which it writes to a runner's standard
 * error because a runner's environment has no NO_COLOR.
 */
const TERMINAL_STYLES = new RegExp(
  `${String.fromCharCode(27)}\\[[0-9;]*m`,
  "g",
);

/** The most of a runner's first complaint kept for the pool's error. */
const MAX_COMPLAINT_CHARS = 500;

/**
 * The first line that is not blank of what a runner wrote to its standard
 * error, cut to {@linkcode MAX_COMPLAINT_CHARS}. Only that much is kept
 * and the rest is read and dropped, so the runner never waits on a full
 * pipe and a runner that writes without end costs no memory.
 */
async function firstLineOf(
  stream: ReadableStream<Uint8Array>,
): Promise<string> {
  const decoder = new TextDecoder();
  let text = "";
  try {
    for await (const chunk of stream) {
      if (text.length < MAX_COMPLAINT_CHARS * 2) {
        text += decoder.decode(chunk, { stream: true });
      }
    }
  } catch {
    // A killed runner ends its pipe abruptly; what was read counts.
  }
  const line = text.replace(TERMINAL_STYLES, "").split("\n")
    .find((part) => part.trim() !== "") ?? "";
  return line.trim().slice(0, MAX_COMPLAINT_CHARS);
}

/** How a runner that never spoke ended, with what it complained of. */
function notLoaded(runnerUrl: URL, ended: string, said: string): string {
  return said === ""
    ? `the module ${runnerUrl.href} ended (${ended}) without saying it was ready: it is not the runner`
    : `the runner ${runnerUrl.href} did not load (${ended}): ${said}`;
}

/**
 * How a runner ended whose output the pool's own code threw on: the pool
 * killed it, and the fault, of cordon and not of the guest, is named.
 *
 * @param error What the pool's code threw.
 * @returns The detail of the run's `SANDBOX_CRASHED`.
 */
export function unreadOutput(error: unknown): string {
  return `reading its output failed in this process (${
    thrownSummary(error)
  }), which killed it; this is a fault of cordon, not of the guest: report it with this message`;
}

function parseLine(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return null;
  }
}

/**
 * What `deno run` is given for a runner module. A module of the published
 * package (`https://jsr.io/@scope/name/version/…`) is run by its `jsr:`
 * export, so Deno resolves its imports with the package's own import map;
 * any other URL is run as it is.
 */
export function runnerSpecifier(runnerUrl: URL): string {
  const published =
    /^https:\/\/jsr\.io\/(@[^/]+\/[^/]+)\/([^/]+)\/loader\/quickjs_runner\.ts$/
      .exec(runnerUrl.href);
  return published === null
    ? runnerUrl.href
    : `jsr:${published[1]}@${published[2]}/loader/runner`;
}

/**
 * Starts runners as Deno subprocesses of `runnerUrl`. A file URL runs
 * from its own folder, so Deno finds the configuration (import map, npm
 * folder) of the checkout it belongs to. The folder stays a URL: Deno
 * turns it into a path, so this browser-safe module needs no path code.
 */
export function processRunners(deno: DenoLike, runnerUrl: URL): SpawnRunner {
  const cwd = runnerUrl.protocol === "file:"
    ? new URL(".", runnerUrl)
    : undefined;
  return (events) => {
    const child = new deno.Command(deno.execPath(), {
      args: [...RUNNER_FLAGS, runnerSpecifier(runnerUrl)],
      ...(cwd === undefined ? {} : { cwd }),
      // A runner holds no permission to read its environment, but a guest
      // that got out of QuickJS and Deno would find it in the process's
      // memory: it gets none of the host's variables it does not need.
      clearEnv: true,
      env: moduleChildEnvironment(),
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const writer = child.stdin.getWriter();
    const encoder = new TextEncoder();
    let alive = true;
    let heard = false;
    const killChild = () => {
      if (!alive) return;
      try {
        child.kill("SIGKILL");
      } catch {
        // Already gone.
      }
    };
    // A throw of the code that handles the runner's lines (the pool's) is
    // a fault of this process: the runner, no longer heard, is ended, and
    // its end says why instead of how it was killed.
    let readFault: { error: unknown } | undefined;
    const reading = readLines(child.stdout, (line) => {
      heard = true;
      events.message(parseLine(line));
    }).catch((error) => {
      readFault = { error };
      killChild();
    });
    const complaint = firstLineOf(child.stderr);
    const gone = Promise.all([child.status, reading, complaint]).then(
      ([status, _, said]) => {
        alive = false;
        writer.close().catch(() => {});
        const ended = status.signal === null
          ? `exit code ${status.code}`
          : `signal ${status.signal}`;
        // A runner that exited without a word did not load (a runnerUrl
        // with no file, or not the runner): Deno's first line says which,
        // where the exit code alone does not. A killed one was stopped.
        events.exit(
          readFault !== undefined
            ? unreadOutput(readFault.error)
            : heard || status.signal !== null
            ? ended
            : notLoaded(runnerUrl, ended, said),
        );
      },
    );
    return {
      send(message) {
        if (!alive) return;
        writer.write(encoder.encode(`${JSON.stringify(message)}\n`)).catch(
          () => {},
        );
      },
      kill() {
        killChild();
        return gone;
      },
      hold(held) {
        try {
          if (held) child.ref();
          else child.unref();
        } catch {
          // Deno closes the child's resource once it exits, a moment before
          // its status settles: a runner gone keeps nothing alive, and its
          // exit is reported as for any other.
        }
      },
    };
  };
}

/** The Trusted Types API of a browser's page or worker, as far as the pool needs it. */
interface TrustedTypesLike {
  isScriptURL(value: unknown): boolean;
}

function trustedTypesApi(): TrustedTypesLike | undefined {
  return (globalThis as { trustedTypes?: TrustedTypesLike }).trustedTypes;
}

/**
 * Whether `value` is a `TrustedScriptURL` that a Trusted Types policy of
 * this page or worker made.
 */
export function isTrustedScriptUrl(value: unknown): boolean {
  return trustedTypesApi()?.isScriptURL(value) === true;
}

/**
 * Why `new Worker(script)` threw: where Trusted Types are required, a
 * script that is not a `TrustedScriptURL` is refused with a `TypeError`
 * that names no remedy cordon's caller can apply; anything else as it is.
 */
function workerRefusal(error: unknown, script: unknown): unknown {
  if (
    !(error instanceof TypeError) || trustedTypesApi() === undefined ||
    isTrustedScriptUrl(script)
  ) {
    return error;
  }
  return new CordonError(
    "SANDBOX_UNAVAILABLE",
    "Cannot start the QuickJS pool's runners: this page requires Trusted Types for scripts (require-trusted-types-for 'script') and runnerUrl is not a TrustedScriptURL; pass as runnerUrl a TrustedScriptURL made by one of the page's Trusted Types policies, or have the page's default policy accept the runner's URL",
    { cause: error },
  );
}

/**
 * One more cause of a runner script that did not load, on a cross-origin
 * isolated page: such a page (its `Cross-Origin-Embedder-Policy`) starts a
 * Worker only from a script whose response sends one as strict, which a
 * runner bundle served as any other file does not; empty elsewhere.
 */
function isolatedNote(): string {
  return (globalThis as { crossOriginIsolated?: unknown })
      .crossOriginIsolated === true
    ? "was served without the Cross-Origin-Embedder-Policy this cross-origin isolated page requires of its workers (send Cross-Origin-Embedder-Policy: require-corp with the runner script), "
    : "";
}

/**
 * Starts runners as module Web Workers of `runnerUrl`, given to the Worker
 * constructor as `script` (the caller's `TrustedScriptURL` of the same URL,
 * where the page requires Trusted Types).
 */
export function workerRunners(
  runnerUrl: URL,
  script: unknown = runnerUrl,
): SpawnRunner {
  return (events) => {
    let worker: Worker;
    try {
      // A TrustedScriptURL is what the constructor asks for where Trusted
      // Types are required; Deno's types know only strings and URLs.
      worker = new Worker(script as URL, { type: "module" });
    } catch (error) {
      throw workerRefusal(error, script);
    }
    let alive = true;
    const end = (detail: string) => {
      if (!alive) return;
      alive = false;
      worker.terminate();
      events.exit(detail);
    };
    worker.onmessage = (event) => events.message(event.data);
    worker.onerror = (event) => {
      event.preventDefault();
      // A script that failed to load (an error status, a type other than
      // JavaScript, a network failure, a Content-Security-Policy that
      // refuses it) raises a bare Event, with no message: the page is not
      // told which, so every cause is named, an offline browser first.
      const message = (event as Partial<ErrorEvent>).message;
      end(
        typeof message === "string" && message !== ""
          ? `worker error: ${message}`
          : `the runner script ${runnerUrl.href} did not load: ${
            withOfflineNote(
              `it answered an error status, was not served as JavaScript (text/javascript), could not be fetched, ${isolatedNote()}or the page's Content-Security-Policy refused it (allow its origin in worker-src, or in script-src where worker-src is not set)`,
            )
          }`,
      );
    };
    worker.onmessageerror = () => end("a message could not be read");
    return {
      send(message) {
        if (alive) worker.postMessage(message);
      },
      kill: () => {
        end("killed");
        return Promise.resolve();
      },
      hold() {
        // A page or a worker lives on whether or not its workers run.
      },
    };
  };
}

/** The parts of Node's `worker_threads` a runner and its pool use. */
export interface NodeWorkerThreads {
  Worker: new (url: URL) => {
    postMessage(message: unknown): void;
    on(event: "message", listener: (data: unknown) => void): void;
    on(event: "error", listener: (error: Error) => void): void;
    on(event: "exit", listener: (code: number) => void): void;
    terminate(): Promise<number>;
    ref(): void;
    unref(): void;
  };
  parentPort: {
    postMessage(message: unknown): void;
    on(event: "message", listener: (data: unknown) => void): void;
  } | null;
}

/** The parts of Node's `process` that tell its version and built-ins. */
interface NodeProcessLike {
  versions?: { node?: string };
  getBuiltinModule?: (name: string) => unknown;
}

/** Node's `process`, when this runs in Node (and not Deno's emulation). */
function nodeProcess(): NodeProcessLike | undefined {
  const process = (globalThis as { process?: NodeProcessLike }).process;
  if (denoRuntime() !== undefined || process?.versions?.node === undefined) {
    return undefined;
  }
  return process;
}

/** Node's `worker_threads`, when this runs in Node (20.16 or later). */
export function nodeWorkerThreads(): NodeWorkerThreads | undefined {
  const process = nodeProcess();
  if (typeof process?.getBuiltinModule !== "function") return undefined;
  return process.getBuiltinModule("node:worker_threads") as NodeWorkerThreads;
}

/**
 * The version of the Node this runs in when that Node is older than 20.16,
 * which added the `process.getBuiltinModule` the runners are reached
 * through; `undefined` in a newer Node and outside Node.
 */
export function nodeTooOldForRunners(): string | undefined {
  const process = nodeProcess();
  if (process === undefined || typeof process.getBuiltinModule === "function") {
    return undefined;
  }
  return process.versions?.node;
}

/** Starts runners as Node `worker_threads` workers of `runnerUrl`. */
export function nodeWorkerRunners(
  threads: NodeWorkerThreads,
  runnerUrl: URL,
): SpawnRunner {
  return (events) => {
    const worker = new threads.Worker(runnerUrl);
    let alive = true;
    let heard = false;
    let loadFailure: string | undefined;
    const gone = new Promise<void>((resolve) => {
      worker.on("exit", (code) => {
        alive = false;
        events.exit(loadFailure ?? `exit code ${code}`);
        resolve();
      });
    });
    worker.on("message", (data) => {
      heard = true;
      events.message(data);
    });
    worker.on("error", (error) => {
      // The exit that follows reports the end. A runner that never spoke
      // did not load (a runnerUrl with no file, or not the runner): its
      // error says which, where the exit code alone does not.
      if (!heard) {
        loadFailure = `the runner ${runnerUrl.href} did not load: ${
          error instanceof Error ? error.message : String(error)
        }`;
      }
    });
    return {
      send(message) {
        if (alive) worker.postMessage(message);
      },
      kill() {
        if (alive) void worker.terminate();
        return gone;
      },
      hold(held) {
        if (held) worker.ref();
        else worker.unref();
      },
    };
  };
}
