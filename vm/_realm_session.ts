/**
 * One life of a plugin realm, seen from the host: it loads the plugin,
 * forwards invocations with a host-side deadline, serves proxy calls, and
 * fails every pending call with a code when the realm ends. A deadline that
 * passes ends the realm for real (worker terminated or process killed).
 * Frames sent in one pass of the event loop leave in one write.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import { performance } from "node:perf_hooks";
import { setImmediate } from "node:timers";
import type { SandboxError } from "../protocol/sandbox_result.ts";
import { alteredRealmCode } from "../realm/realm_source.ts";
import { isLogLevel, type LogLevel } from "../protocol/log_levels.ts";
import { isErrorCode } from "../protocol/error_codes.ts";
import { operatorText } from "../protocol/operator_text.ts";
import { whenAborted } from "../protocol/deadline.ts";
import { systemRefusedMessage } from "../sandbox/system_helper.ts";
import {
  classifySpecifier,
  IMPORT_DENIED_ERROR_NAME,
  importAttributesDenial,
  quoteSpecifier,
} from "../policy/import_specifier.ts";
import {
  FrameQueue,
  IS_DENO,
  processChannel,
  type RealmChannel,
  type RealmExit,
  type RealmIsolation,
  threadChannel,
} from "./_realm_transport.ts";
import type { HostCalls } from "./_host_calls.ts";
import {
  encodeFrame,
  failureJson,
  frameDecoder,
  parseObject,
} from "./_line_codec.ts";

/** The outcome of one invocation or load. */
export type RealmOutcome =
  | { ok: true; json: string }
  | { ok: false; error: SandboxError };

/** How a session ended. */
/**
 * How a session ended: `refused` is a realm process the system would not
 * start, where no realm ran.
 */
export type SessionEnd =
  | "stopped"
  | "timeout"
  | "out-of-memory"
  | "crashed"
  | "refused";

/** Options of a session. */
interface RealmSessionOptions {
  isolation: RealmIsolation;
  /** The sandbox's limits that bound the realm, its load and its calls. */
  limits: {
    timeoutMs: number;
    startupTimeoutMs: number;
    memoryLimitBytes: number;
    maxPayloadBytes: number;
    maxConcurrentProxyCalls: number;
  };
  hostCalls: HostCalls;
  onLog(level: LogLevel, message: string): void;
  onProxyCall(): void;
  onEnd(end: SessionEnd): void;
}

/** The load's id among the calls in flight: invocations count from 1. */
const LOAD_ID = 0;

/** What a frame may hold over `maxPayloadBytes` of JSON. */
const FRAME_SLACK_CHARS = 1024 * 1024;

/**
 * The frames the host joins for one write to a realm: past this they leave
 * at once, as batching helps small frames only.
 */
const MAX_OUTBOX_CHARS = 1024 * 1024;

/** The realm's description of a failure, checked: it is not trusted. */
function readError(detail: Record<string, unknown> | null): SandboxError {
  const { code, name, message } = detail ?? {};
  return {
    code: typeof code === "string" && isErrorCode(code) ? code : "GUEST_ERROR",
    name: typeof name === "string" ? operatorText(name) : "Error",
    message: typeof message === "string"
      ? operatorText(message)
      : "The plugin failed without a message",
  };
}

/** The realm's report of its permissions, checked: it is not trusted. */
function readPermissions(json: string): Record<string, string> | null {
  const report = parseObject(json);
  return report && Object.fromEntries(
    Object.entries(report).filter(([, state]) => typeof state === "string"),
  ) as Record<string, string>;
}

/** A `SANDBOX_CRASHED` failure; `message` says what ended and what to do. */
export function crashed(message: string): SandboxError {
  return { code: "SANDBOX_CRASHED", name: "Error", message };
}

/**
 * The failure of a realm process the system would not start, as the
 * worker and process sandboxes answer theirs: `SANDBOX_UNAVAILABLE`, which
 * a retry may clear once the system has room again.
 *
 * @param reason The system's reason, without host paths.
 */
function refusedError(reason: string): SandboxError {
  return {
    code: "SANDBOX_UNAVAILABLE",
    name: "NotSupportedError",
    message: systemRefusedMessage(
      "plugin's realm",
      IS_DENO ? "Deno" : "Node",
      reason,
      "call again",
    ),
  };
}

/** The failure of a call its caller aborted. */
export function abortedError(name: string): SandboxError {
  return {
    code: "ABORTED",
    name: "AbortError",
    message: `The call to ${name}() was aborted by its caller`,
  };
}

/** A `TIMEOUT` failure; `message` says what ran too long and what to do. */
function timedOut(message: string): SandboxError {
  return { code: "TIMEOUT", name: "TimeoutError", message };
}

function timeoutError(what: string, timeoutMs: number): SandboxError {
  return timedOut(
    `The plugin's ${what} exceeded its time limit of ${timeoutMs} ms: make it finish sooner or raise limits.timeoutMs`,
  );
}

/**
 * What a plugin's author does about an import the policy denies. The
 * policy's own words tell a guest to declare a pack, which a plugin cannot:
 * its author bundles what it imports into the plugin module, picking a
 * build of the package that needs no Node built-in.
 */
function pluginImportRemedy(code: string): string {
  return code === "IMPORT_NODE_BUILTIN" || code === "IMPORT_COMPAT"
    ? "Node built-ins are denied; bundle a build of the package that does not use them (its browser or core entry) or ask the host for a capability"
    : 'a vm plugin may import "cordon:host" only; bundle the code it needs into the plugin module';
}

/**
 * Why a plugin's import was refused at link time. A vm plugin is one module
 * that may import `cordon:host` only: the import policy's classifier gives
 * the code of the forms it denies, and bare or relative specifiers, which
 * other tiers may allow, are refused here.
 */
function deniedImport(specifier: string, attributes: boolean): SandboxError {
  const name = IMPORT_DENIED_ERROR_NAME;
  if (attributes) {
    const { code, message } = importAttributesDenial(specifier);
    return { code, name, message };
  }
  const found = classifySpecifier(specifier);
  const quoted = quoteSpecifier(specifier);
  if (found.kind === "denied") {
    return {
      code: found.code,
      name,
      message: `Cannot import ${quoted} in a vm plugin: ${
        pluginImportRemedy(found.code)
      }`,
    };
  }
  if (found.kind === "relative") {
    return {
      code: "IMPORT_PATH_ESCAPE",
      name,
      message:
        `Cannot import ${quoted} in a vm plugin: a vm plugin is one module without relative imports; bundle the modules it imports into the plugin module (deno bundle --platform=browser --external=cordon:host)`,
    };
  }
  return {
    code: "IMPORT_UNDECLARED",
    name,
    message:
      `Cannot import ${quoted} in a vm plugin: a vm plugin may import "cordon:host" only; bundle the package into the plugin module (deno bundle --platform=browser --external=cordon:host) or ask the host for a capability`,
  };
}

/** How one call of an exported function runs. */
export interface RealmCall {
  /** Past it the realm is ended, in milliseconds. */
  timeoutMs: number;
  /** Answers the call `ABORTED` at once; the realm's work goes on. */
  signal?: AbortSignal;
  /**
   * Called once the realm is done with the call (answered, past its
   * deadline, or ended), which for an aborted call is after its answer.
   */
  onSettled?: () => void;
}

/** One realm and the calls in flight on it. */
export class RealmSession {
  readonly #options: RealmSessionOptions;
  readonly #channel: RealmChannel;
  /** Each call in flight, and the load: what settles it, by id. */
  readonly #pending = new Map<number, (outcome: RealmOutcome) => void>();
  readonly #abort = new AbortController();
  readonly ready: Promise<Record<string, string> | null>;
  /** The realm's process id (process isolation), or `null`. */
  readonly pid: number | null;
  /** Settles when the realm is gone and its last frames were handed on. */
  readonly exited: Promise<RealmExit>;
  /** The frames to write once this pass of the event loop is done. */
  #outbox = "";
  /** The kill of the realm, once the host ended it. */
  #gone: Promise<unknown> | null = null;
  #nextId = 1;
  #proxyCallsInFlight = 0;
  #ended: SessionEnd | null = null;
  /** The last ping sent while no call was in flight, and its timer. */
  #ping = 0;
  #pingTimer: ReturnType<typeof setTimeout> | undefined;
  /**
   * What ends each call in flight past its deadline, for a worker realm's
   * process that ended itself at a call's deadline before the host's timer
   * fired (its event loop was busy).
   */
  #deadlines = new Map<number, () => void>();
  /** When the ping timer was armed, in `performance.now()` ms. */
  #pingArmedAt = 0;
  /**
   * The time the realm held pings unanswered since the last call was sent:
   * the plugin code it ran with no call waiting. Its total is bounded by
   * timeoutMs, not each stretch alone, or a plugin could renew its
   * deadline for ever through host calls whose answers each bring a ping.
   */
  #idleSpentMs = 0;
  /** A QuickJS realm said it ran plugin code no call waited for (`T`). */
  #ranOver = false;
  #readyResolve!: (permissions: Record<string, string> | null) => void;
  /** The realm said it is ready (`Y`): its own code started. */
  #started = false;
  /** The load's deadline: the realm's start, then its module's evaluation. */
  #loadTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(options: RealmSessionOptions) {
    this.#options = options;
    this.ready = new Promise((resolve) => {
      this.#readyResolve = resolve;
    });
    const { isolation, limits: { memoryLimitBytes, maxPayloadBytes } } =
      options;
    // An answer a little over maxPayloadBytes is refused as such; one far
    // over it ends the realm before the host holds it all.
    const maxLineChars = maxPayloadBytes + FRAME_SLACK_CHARS;
    let overflowed = false;
    const frames = new FrameQueue(
      (kind, id, name, json) => this.#onMessage(kind, id, name, json),
      { pause: () => channel.pause(), resume: () => channel.resume() },
    );
    const decode = frameDecoder(frames.add, {
      maxLineChars,
      onOverflow() {
        overflowed = true;
        channel.kill().catch(() => {});
      },
    });
    const open = isolation === "thread" ? threadChannel : processChannel;
    const channel = open({ isolation, memoryLimitBytes }, (text) => {
      decode(text);
      frames.handOn();
    });
    this.#channel = channel;
    this.pid = channel.pid;
    // The realm's last frames are handed on before its end is told.
    this.exited = channel.ended.then(async (exit): Promise<RealmExit> => {
      await frames.empty;
      const detail = `it sent a message over ${maxLineChars} characters`;
      return overflowed ? { kind: "crashed", detail } : exit;
    });
    this.exited.then((exit) => this.#onExit(exit));
  }

  get ended(): boolean {
    return this.#ended !== null;
  }

  /** How the session ended, or `null` while it runs. */
  get endedAs(): SessionEnd | null {
    return this.#ended;
  }

  /**
   * Queues one frame for the realm. They leave once the event loop has run
   * every callback that was ready (setImmediate runs before it waits
   * again): under load each HTTP request arrives in a callback of its own,
   * and a write per request cost the host and the realm more CPU than the
   * call. A realm that ended gets none.
   */
  #send(kind: string, id: number, name: string, json: string): void {
    if (this.#ended !== null) return;
    if (this.#outbox === "") setImmediate(() => this.#writeOutbox());
    this.#outbox += encodeFrame(kind, id, name, json);
    // One turn may settle many large answers (a plugin's fetches of big
    // bodies, all read at once): joined, they passed V8's longest string,
    // and the host ended with a RangeError.
    if (this.#outbox.length >= MAX_OUTBOX_CHARS) this.#writeOutbox();
  }

  #writeOutbox(): void {
    const text = this.#outbox;
    this.#outbox = "";
    if (text !== "" && this.#ended === null) this.#channel.write(text);
  }

  /** Kills the realm, once; settles when it is gone. */
  #terminate(): Promise<unknown> {
    this.#gone ??= this.#channel.kill().then(() => this.exited);
    return this.#gone;
  }

  #onMessage(kind: string, id: number, name: string, json: string): void {
    if (this.#ended !== null) {
      // The realm's last lines, written before it was ended, still reach
      // onLog before its calls fail (#finish); nothing else it sent does.
      if (kind === "L") this.#onLog(name, json);
      return;
    }
    if (kind === "R" || kind === "E") this.#onResult(id, kind === "R", json);
    else if (kind === "C") this.#onCall(id, name, json);
    else if (kind === "L") this.#onLog(name, json);
    else if (kind === "Y") {
      this.#started = true;
      this.#readyResolve(readPermissions(json));
    } else if (kind === "V") this.#onEvaluating();
    else if (kind === "P") this.#onPong(id);
    else if (kind === "T") this.#onRanOver();
    else if (kind === "O" || kind === "X") this.#onLoaded(kind === "O", json);
  }

  #onResult(id: number, ok: boolean, json: string): void {
    // The load is answered by O or X only.
    const resolve = id === LOAD_ID ? undefined : this.#pending.get(id);
    if (resolve === undefined) return;
    this.#pending.delete(id);
    const { maxPayloadBytes } = this.#options.limits;
    if (Buffer.byteLength(json) > maxPayloadBytes) {
      const error: SandboxError = {
        code: "RESULT_NOT_SERIALIZABLE",
        name: "RangeError",
        message:
          `The plugin's answer is larger than ${maxPayloadBytes} bytes: return less data or raise limits.maxPayloadBytes`,
      };
      resolve({ ok: false, error });
    } else {
      resolve(ok ? { ok, json } : { ok, error: readError(parseObject(json)) });
    }
    // An answer leaves ahead of the promise jobs its call left behind when
    // one of them logs (a console line takes the frames before it along),
    // and ahead of a rejected import()'s jobs: they are bounded as a
    // settled host call's jobs are.
    this.#pingWhenIdle();
  }

  #onCall(callId: number, op: string, args: string): void {
    this.#options.onProxyCall();
    const { maxConcurrentProxyCalls: max, maxPayloadBytes: maxBytes } =
      this.#options.limits;
    // Refused before anything runs on the host: a plugin could otherwise
    // have the host run as many fetches or capability calls at once as it
    // can send, or parse and pass on arguments as large as its heap.
    const refusal = this.#proxyCallsInFlight >= max
      ? `the plugin already has ${max} host calls in flight; wait for some to finish or raise limits.maxConcurrentProxyCalls`
      : Buffer.byteLength(args) > maxBytes
      ? `its arguments are larger than ${maxBytes} bytes as JSON; pass less or raise limits.maxPayloadBytes`
      : null;
    if (refusal !== null) {
      const message = `Cannot perform ${op}: ${refusal}`;
      const json = failureJson("PROXY_LIMIT_EXCEEDED", "RangeError", message);
      this.#settle(false, callId, json);
      return;
    }
    this.#proxyCallsInFlight++;
    this.#options.hostCalls.perform(op, args, this.#abort.signal).then(
      (outcome) => {
        this.#proxyCallsInFlight--;
        if (this.#ended !== null) return;
        this.#settle(outcome.ok, callId, outcome.json);
      },
    );
  }

  /**
   * Settles a proxy call of the realm. Its promise jobs run plugin code; a
   * call in flight (or the load) bounds it with its deadline, and with none
   * a ping does: the realm answers it once its jobs are done, and a realm
   * that held the pings since the last call was sent for longer than
   * limits.timeoutMs in all is ended, so a plugin cannot spin on after its
   * answer, burning a core and failing the next call.
   */
  #settle(ok: boolean, callId: number, json: string): void {
    this.#send(ok ? "S" : "F", callId, "", json);
    this.#pingWhenIdle();
  }

  /**
   * Pings the realm when no call or load bounds the plugin code it may run
   * next, as `#settle` says. A QuickJS realm needs none: it ends every
   * stretch of plugin code at timeoutMs itself and says so when no call
   * waited (`T`), and a ping sent while it runs one would race that end for
   * the same deadline. A realm that said so is ended here instead.
   */
  #pingWhenIdle(): void {
    if (this.#pending.size > 0) return;
    if (this.#ranOver) {
      this.#ranOverAfterAnswer();
      return;
    }
    if (this.#options.isolation === "quickjs") return;
    this.#ping++;
    this.#send("P", this.#ping, "", "");
    if (this.#pingTimer === undefined) this.#armPing();
  }

  // The session ends when the timer fires: nothing reads it again.
  #armPing(): void {
    this.#pingArmedAt = performance.now();
    const left = this.#options.limits.timeoutMs - this.#idleSpentMs;
    this.#pingTimer = setTimeout(
      () => this.#ranOverAfterAnswer(),
      Math.max(0, left),
    );
  }

  /**
   * A QuickJS realm interrupted plugin code that no call it had read waited
   * for. Calls sent meanwhile are answered first (the realm answers between
   * stretches); then the realm is ended, as a realm of the other tiers that
   * missed a ping is.
   */
  #onRanOver(): void {
    this.#ranOver = true;
    this.#pingWhenIdle();
  }

  /** Ends a realm whose plugin code ran past timeoutMs after its answer. */
  #ranOverAfterAnswer(): void {
    this.#timeout(() =>
      crashed(
        "The plugin's realm was replaced because code it ran after answering exceeded its time limit: retry the call",
      )
    );
  }

  /** The realm is done with the jobs before ping `id`. */
  #onPong(id: number): void {
    if (this.#pingTimer === undefined) return;
    clearTimeout(this.#pingTimer);
    this.#pingTimer = undefined;
    this.#idleSpentMs += performance.now() - this.#pingArmedAt;
    // Jobs settled after that ping get what is left of the deadline.
    if (id < this.#ping) this.#armPing();
  }

  #onLog(level: string, json: string): void {
    if (!isLogLevel(level)) return;
    let message: unknown;
    try {
      message = JSON.parse(json);
    } catch {
      return;
    }
    if (typeof message === "string") {
      this.#options.onLog(level, operatorText(message));
    }
  }

  /** Ends the realm for running out of time; calls fail with `errorFor`. */
  #timeout(errorFor: (id: number) => SandboxError): void {
    this.#finish("timeout", errorFor, this.#terminate());
  }

  #evaluationTimedOut(): void {
    const { timeoutMs } = this.#options.limits;
    const error = timeoutError("module evaluation", timeoutMs);
    this.#timeout(() => error);
  }

  #onEvaluating(): void {
    if (!this.#pending.has(LOAD_ID)) return;
    clearTimeout(this.#loadTimer);
    this.#loadTimer = setTimeout(
      () => this.#evaluationTimedOut(),
      this.#options.limits.timeoutMs,
    );
  }

  #onLoaded(ok: boolean, json: string): void {
    const resolve = this.#pending.get(LOAD_ID);
    if (resolve === undefined) return;
    const detail = parseObject(json);
    const denied = detail?.deniedImport as
      | { specifier?: unknown; attributes?: unknown }
      | undefined;
    // Only a string is taken: String() of an object the frame made up
    // could throw out of the frame handler, into the host's event loop.
    const refused = typeof denied === "object" && denied !== null &&
      typeof denied.specifier === "string";
    if (!ok && !refused && detail?.code === "TIMEOUT") {
      // The load stays pending: #finish answers it once the realm is gone.
      this.#evaluationTimedOut();
      return;
    }
    this.#pending.delete(LOAD_ID);
    if (ok && detail !== null) {
      resolve({ ok: true, json });
      // The module may have left plugin code to run after its load answered
      // (the jobs of an import() it refused, which the realm runs on a turn
      // of its own): with no call sent yet, a ping bounds it.
      this.#pingWhenIdle();
      return;
    }
    const error = ok
      ? crashed(
        "The plugin's realm answered its load with text that is not a JSON object: start it again",
      )
      : refused
      ? deniedImport(denied.specifier as string, denied.attributes === true)
      : readError(detail);
    resolve({ ok: false, error });
  }

  // A realm the host ended has already ended its session.
  #onExit(exit: RealmExit): void {
    const onDeadline = exit.kind === "timeout"
      ? this.#deadlines.get(exit.callId!)
      : undefined;
    if (onDeadline !== undefined) {
      onDeadline();
    } else if (exit.kind === "refused") {
      const error = refusedError(exit.detail);
      this.#finish("refused", () => error);
    } else if (exit.kind === "out-of-memory") {
      this.#finish("out-of-memory", () => ({
        code: "OUT_OF_MEMORY",
        name: "OutOfMemoryError",
        message:
          "The plugin exceeded its memory limit: use less memory or raise limits.memoryLimitBytes",
      }));
    } else {
      const error = this.#alteredRealmCode(exit) ?? crashed(
        `The plugin's realm ended without an answer (${exit.detail}): it is restarted on the next call`,
      );
      this.#finish("crashed", () => error);
    }
  }

  /**
   * A realm that ends on a `ReferenceError` before it is ready ran none of
   * the plugin's code: cordon's own realm code refers to a name it lacks.
   */
  #alteredRealmCode(exit: RealmExit): SandboxError | null {
    if (this.#started || exit.referenceError === undefined) return null;
    const error = alteredRealmCode(
      { name: "ReferenceError", message: exit.referenceError },
      "start the plugin's realm",
    );
    return error &&
      { code: error.code, name: error.name, message: error.message };
  }

  /**
   * Marks the session ended at once (new calls go to a new realm) and
   * fails the calls in flight once `gone` settles, so a caller that sees
   * the failure knows the realm no longer runs.
   */
  #finish(
    end: SessionEnd,
    errorFor: (id: number) => SandboxError,
    gone: Promise<unknown> = Promise.resolve(),
  ): void {
    if (this.#ended !== null) return;
    this.#ended = end;
    this.#abort.abort();
    clearTimeout(this.#pingTimer);
    this.#readyResolve(null);
    clearTimeout(this.#loadTimer);
    const pending = [...this.#pending];
    this.#pending.clear();
    this.#options.onEnd(end);
    gone.catch(() => {}).then(() => {
      for (const [id, resolve] of pending) {
        resolve({ ok: false, error: errorFor(id) });
      }
    });
  }

  /**
   * Loads the plugin module, given the realm's `D` frame `{ pluginId,
   * source, identifier, initJson, timeoutMs }`: the outcome holds the
   * exports summary as JSON. Called once, as the session is made: only a
   * turn of the event loop can end a session.
   */
  load(loadJson: string): Promise<RealmOutcome> {
    return new Promise((resolve) => {
      // Bringing the realm up and preparing the context have their own
      // bound; the module's evaluation, the first plugin code to run, gets
      // timeoutMs from the moment the realm says it begins (#onEvaluating).
      const { startupTimeoutMs } = this.#options.limits;
      const error = timedOut(
        `The plugin's realm did not start within its time limit of ${startupTimeoutMs} ms, before any plugin code ran: raise limits.startupTimeoutMs`,
      );
      this.#loadTimer = setTimeout(
        () => this.#timeout(() => error),
        startupTimeoutMs,
      );
      this.#pending.set(LOAD_ID, (outcome) => {
        clearTimeout(this.#loadTimer);
        resolve(outcome);
      });
      this.ready.then(() => {
        if (this.#pending.has(LOAD_ID)) this.#send("D", 0, "", loadJson);
      });
    });
  }

  /** Runs an exported function; past its deadline the realm is ended. */
  invoke(
    name: string,
    payloadJson: string,
    call: RealmCall,
  ): Promise<RealmOutcome> {
    const { timeoutMs, signal, onSettled } = call;
    if (this.#ended !== null) {
      onSettled?.();
      return Promise.resolve({
        ok: false,
        error: crashed("The plugin's realm has ended: retry the call"),
      });
    }
    if (signal?.aborted) {
      onSettled?.();
      return Promise.resolve({ ok: false, error: abortedError(name) });
    }
    const id = this.#nextId++;
    return new Promise((resolve) => {
      // An aborted call answers at once but stays pending: its deadline
      // still holds the work it left running in the realm. One listener
      // however many calls share the signal: each listener of their own
      // made every call's removal scan them all.
      const stopWaiting = signal === undefined ? () => {} : whenAborted(
        signal,
        () => resolve({ ok: false, error: abortedError(name) }),
      );
      const onDeadline = () => this.#timedOut(id, name, timeoutMs);
      const timer = setTimeout(onDeadline, timeoutMs);
      this.#deadlines.set(id, onDeadline);
      const settle = (outcome: RealmOutcome) => {
        clearTimeout(timer);
        this.#deadlines.delete(id);
        stopWaiting();
        resolve(outcome);
        onSettled?.();
      };
      this.#pending.set(id, settle);
      // From here the call's deadline bounds the realm, and so the jobs a
      // ping waits for: a call that spins right after an answer times out
      // as its own, not as a ping answered late.
      clearTimeout(this.#pingTimer);
      this.#pingTimer = undefined;
      this.#idleSpentMs = 0;
      // A worker realm's process holds the deadline too (_realm_main.ts).
      if (this.#options.isolation === "worker") {
        this.#send("W", id, "", String(timeoutMs));
      }
      this.#send("I", id, name, payloadJson);
    });
  }

  /** Ends the realm for a call past its deadline; the others fail too. */
  #timedOut(id: number, name: string, timeoutMs: number): void {
    if (!this.#pending.has(id)) return;
    this.#timeout((other) =>
      other === id ? timeoutError(`call to ${name}()`, timeoutMs) : crashed(
        "The plugin's realm was replaced because another call exceeded its time limit: retry the call",
      )
    );
  }

  /** Terminates the realm for real; pending calls fail with `error`. */
  async end(end: SessionEnd, error?: SandboxError): Promise<void> {
    const gone = this.#terminate();
    this.#finish(
      end,
      () =>
        error ?? crashed("The plugin's realm was stopped while the call ran"),
      gone,
    );
    await gone;
  }
}
