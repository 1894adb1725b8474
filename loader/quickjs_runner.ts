// This module is browser compatible.

/**
 * The runner of a QuickJS pool: the module a pool starts as a Web Worker
 * (browsers) or as a Deno subprocess, which runs one prepared declaration
 * at a time in its own QuickJS engine and answers with the result. It never
 * sees a catalog: the host prefetched, verified and resolved every module
 * it sends.
 *
 * Loaded as a worker or run as a Deno main module, it serves its host at
 * once. In browsers, bundle it as its own file and give its URL to the
 * pool:
 *
 * ```sh
 * deno bundle --platform browser --format esm --output dist/cordon-runner.js jsr:@cordon/cordon/loader/runner
 * ```
 *
 * ```ts ignore
 * import { createQuickJSPool } from "@cordon/cordon/loader";
 * import { createRemoteCatalog } from "@cordon/cordon/catalog/remote";
 *
 * const pool = await createQuickJSPool({
 *   catalog: createRemoteCatalog({ baseUrl: location.origin }),
 *   runnerUrl: new URL("/dist/cordon-runner.js", location.href),
 * });
 * ```
 *
 * @module
 */

import { hasOwnKey } from "../protocol/host_fields.ts";
import singlefileVariant from "@jitl/quickjs-singlefile-browser-release-sync";
import type { QuickJSSyncVariant } from "quickjs-emscripten-core";
import {
  createLogCollector,
  failureResult,
  type LogCollector,
  successResult,
} from "../protocol/run_result.ts";
import type { SandboxResult } from "../protocol/sandbox_result.ts";
import { deferred } from "./_deferred.ts";
import type { Executor } from "./_executor.ts";
import { startExecutor } from "./_start_executor.ts";
import { CordonError } from "../protocol/cordon_error.ts";
import type { HostMessage, RunnerMessage } from "./_runner_protocol.ts";
import { denoRuntime, nodeWorkerThreads, readLines } from "./_runner_port.ts";

/**
 * Where a runner reads its host's messages and writes its answers. The
 * messages are plain data that only a pool writes and reads.
 */
export interface RunnerChannel {
  /** Calls `receive` with every message of the host, in order. */
  listen(receive: (message: unknown) => void): void;
  /** Sends one message to the host. */
  send(message: unknown): void;
  /**
   * Whether the host is gone, asked while guest code runs, so a runner
   * whose host died does not compute on for nobody.
   */
  hostGone?: () => boolean;
}

/**
 * A run's log collector that also sends the host each line it keeps, and
 * the moment it drops one, as the guest logs: a run the pool kills keeps
 * the lines that reached the host. A line that cannot be sent (the host is
 * gone, or it is too long for one message) is still in the result.
 */
function streamingLogs(
  maxLogBytes: number,
  id: number,
  send: (message: RunnerMessage) => void,
): LogCollector {
  const collector = createLogCollector(maxLogBytes);
  const trySend = (message: RunnerMessage) => {
    try {
      send(message);
    } catch {
      // The result carries every kept line.
    }
  };
  return {
    push(level, message) {
      if (collector.truncated) return;
      collector.push(level, message);
      trySend(
        collector.truncated
          ? { kind: "truncated", id }
          : { kind: "log", id, level, message },
      );
    },
    logs: collector.logs,
    get truncated() {
      return collector.truncated;
    },
  };
}

async function runOne(
  executor: Executor,
  message: Extract<HostMessage, { kind: "run" }>,
  abandoned: (() => boolean) | undefined,
  logs: LogCollector,
): Promise<SandboxResult> {
  const { limits, contextJson, maxResultBytes, prepared } = message;
  const started = performance.now();
  const metrics = () => ({
    tier: "quickjs" as const,
    durationMs: performance.now() - started,
  });
  const answer = await executor.execute(prepared, {
    limits,
    contextJson,
    maxResultBytes,
    signal: undefined,
    abandoned,
    requester: undefined,
  }, logs);
  if (answer === null) throw new Error("The runner's executor was disposed");
  return hasOwnKey(answer, "value")
    ? successResult(answer.value, logs, metrics())
    : failureResult(answer, logs, metrics());
}

/**
 * Sends a run's result; one that cannot be sent whole goes without its
 * logs, marked truncated, rather than end the runner without an answer.
 * Over a process's pipe a message is one line of JSON, and a string holds
 * at most 2**29 - 24 characters in V8: a value near its bound with 64 MiB
 * of logs of control characters, six characters each in JSON, passes it.
 */
function sendResult(
  send: (message: RunnerMessage) => void,
  id: number,
  result: SandboxResult,
  recycle: boolean,
): void {
  try {
    send({ kind: "result", id, result, recycle });
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    const withoutLogs = { ...result, logs: [], logsTruncated: true };
    send({ kind: "result", id, result: withoutLogs, recycle });
  }
}

/**
 * Serves a pool over `channel`: waits for `init`, creates its engine,
 * answers `ready`, then runs each `run` in turn. The pool sends one run at
 * a time and kills the runner to stop it.
 *
 * @param channel The host's messages in, the runner's answers out.
 * @returns When the runner is ready.
 *
 * @example
 * ```ts ignore
 * import { serveQuickJSRunner } from "@cordon/cordon/loader/runner";
 *
 * // What the module does by itself in a worker: serve the pool that started it.
 * serveQuickJSRunner({
 *   listen: (receive) => self.onmessage = (event) => receive(event.data),
 *   send: (message) => self.postMessage(message),
 * });
 * ```
 */
export function serveQuickJSRunner(channel: RunnerChannel): Promise<void> {
  let executor: Promise<Executor> | undefined;
  let queue = Promise.resolve();
  const { promise: ready, resolve } = deferred<void>();
  const send = (message: RunnerMessage) => channel.send(message);
  channel.listen((data) => {
    const message = data as HostMessage;
    if (message.kind === "init" && executor === undefined) {
      executor = startExecutor(
        singlefileVariant as unknown as QuickJSSyncVariant,
        message.memoryLimitBytes,
      );
      executor.then(() => {
        send({ kind: "ready" });
        resolve();
      }, (error) => {
        // The host cannot see this runtime's refusal, or the realm code its
        // bundle changed: say it, so the pool refuses to start with the
        // reason instead of waiting it out.
        if (
          error instanceof CordonError && error.code === "SANDBOX_UNAVAILABLE"
        ) {
          send({ kind: "unavailable", message: error.message });
          return;
        }
        if (
          error instanceof CordonError && error.code === "REALM_CODE_ALTERED"
        ) {
          send({
            kind: "unavailable",
            message: error.message,
            code: error.code,
          });
          return;
        }
        throw error;
      });
      return;
    }
    if (message.kind !== "run" || executor === undefined) return;
    const started = executor;
    queue = queue.then(async () => {
      const running = await started;
      const before = running.retired;
      const logs = streamingLogs(message.limits.maxLogBytes, message.id, send);
      let result: SandboxResult;
      try {
        result = await runOne(running, message, channel.hostGone, logs);
      } catch (error) {
        // A fault of the runner itself: answer, and ask to be replaced.
        result = failureResult(
          {
            code: "SANDBOX_CRASHED",
            name: "SandboxCrashedError",
            message: `The QuickJS runner failed: ${
              error instanceof Error ? error.message : String(error)
            }; run again`,
          },
          logs,
          { tier: "quickjs", durationMs: 0 },
        );
        sendResult(send, message.id, result, true);
        return;
      }
      sendResult(send, message.id, result, running.retired !== before);
    });
  });
  return ready;
}

/** The channel of a module loaded as a Web Worker, when it is one. */
function workerChannel(): RunnerChannel | null {
  const scope = globalThis as unknown as {
    WorkerGlobalScope?: unknown;
    postMessage(message: unknown): void;
    onmessage: ((event: MessageEvent) => void) | null;
  };
  if (typeof scope.WorkerGlobalScope !== "function") return null;
  return {
    listen: (receive) => {
      scope.onmessage = (event) => receive(event.data);
    },
    send: (message) => scope.postMessage(message),
  };
}

/** The channel of a module loaded as a Node `worker_threads` worker, when it is one. */
function nodeWorkerChannel(): RunnerChannel | null {
  const port = nodeWorkerThreads()?.parentPort;
  if (port === null || port === undefined) return null;
  return {
    listen: (receive) => port.on("message", receive),
    send: (message) => port.postMessage(message),
  };
}

/** The channel of a Deno main module: lines of JSON on stdin and stdout. */
function stdioChannel(): RunnerChannel | null {
  const deno = denoRuntime();
  if (deno === undefined) return null;
  // A process whose parent died is adopted by another: its parent id changes.
  const host = deno.ppid;
  const encoder = new TextEncoder();
  return {
    listen: (receive) => {
      // A throw of the runner's own handling of a line is not caught: it
      // ends the runner as an uncaught error, reported on its standard
      // error, and the pool answers the run SANDBOX_CRASHED.
      void readLines(
        deno.stdin.readable,
        (line) => receive(JSON.parse(line)),
      ).then(() => {
        // The host closed the pipe or is gone, and with it the runner's purpose.
        deno.exit(0);
      });
    },
    // Written at once, not queued on a stream: a guest's lines are sent
    // while it computes, and a stream writes its queue only when the event
    // loop turns, which a guest inside one long call never lets it do.
    send: (message) => {
      const bytes = encoder.encode(`${JSON.stringify(message)}\n`);
      try {
        writeAll(deno.stdout, bytes);
      } catch {
        // The host is gone; the closed stdin ends the runner.
      }
    },
    hostGone: () => deno.ppid !== host,
  };
}

/** Writes all of `bytes`: a pipe may take fewer at once. */
function writeAll(
  stdout: { writeSync(bytes: Uint8Array): number },
  bytes: Uint8Array,
): void {
  for (let offset = 0; offset < bytes.length;) {
    offset += stdout.writeSync(bytes.subarray(offset));
  }
}

const hostChannel = workerChannel() ?? nodeWorkerChannel() ??
  (import.meta.main ? stdioChannel() : null);
if (hostChannel !== null) void serveQuickJSRunner(hostChannel);
