import { Buffer } from "node:buffer";
import { performance } from "node:perf_hooks";
import { CordonError } from "../protocol/cordon_error.ts";
import {
  DEFAULT_MAX_QUEUED,
  type IntegerRange,
  MAX_QUEUED_RANGE,
  MAX_TIMER_MS,
  MAX_V8_HEAP_BYTES,
  type OptionKeys,
  readIntegerOption,
  readOptions,
  TIMEOUT_MS_RANGE,
} from "../protocol/options.ts";
import {
  sourceTextFlaw,
  withoutBundlerCommentNuls,
} from "../policy/source_text.ts";
import { createMarshallers, type Marshallers } from "../realm/marshal.ts";
import { settleUnlessAborted, settleWithin } from "../protocol/deadline.ts";
import { callSink } from "../protocol/hook_calls.ts";
import { runFailures } from "../protocol/run_result.ts";
import { startRunTelemetry } from "../protocol/run_telemetry.ts";
import type {
  JsonValue,
  LogEntry,
  SandboxError,
  SandboxResult,
  Tier,
} from "../protocol/sandbox_result.ts";
import {
  HostCalls,
  openFilesRefusal,
  type VmHostProxies,
} from "./_host_calls.ts";
import { countJson } from "../protocol/plain_json.ts";
import { abortedError, crashed, RealmSession } from "./_realm_session.ts";
import type { SessionEnd } from "./_realm_session.ts";
import { IS_DENO, realmProcessRefusal } from "./_realm_transport.ts";
import type { PermissionChecker, VmPluginPolicy } from "./vm_policy.ts";
import { readPolicy } from "./_read_policy.ts";

export type {
  CapabilityContext,
  CapabilityHandler,
  VmDirEntry,
  VmFsProxy,
  VmHostProxies,
} from "./_host_calls.ts";

/** A plugin module given as source text. */
export interface VmPluginSource {
  /** Always `"source"`. */
  kind: "source";
  /** The ES module source. It may import `cordon:host` and nothing else. */
  source: string;
  /** A name for stack traces and messages, such as `echo_plugin.js`. */
  identifier: string;
}

/**
 * Budgets of a vm sandbox, each a whole number: time limits from 1 to
 * 2147483647 ms, `memoryLimitBytes` from 8 MiB to 64 GiB (a QuickJS
 * realm's memory stops at the 2 GiB its build declares).
 */
export interface VmSandboxLimits {
  /**
   * Wall time of one call, of the module's evaluation (its top-level
   * code), and in all of the plugin code that runs with no call waiting
   * (jobs a call left behind, the host's answers to its fetch, file and
   * capability calls) between one call and the next: past it the realm is
   * replaced. @default {5000}
   */
  timeoutMs?: number | undefined;
  /**
   * Time to bring a realm up (a thread or process ready to load), before
   * evaluation starts; the plugin's code does not run during it.
   * @default {10000}
   */
  startupTimeoutMs?: number | undefined;
  /** Time the plugin's `stop()` hook gets. @default {1000} */
  stopTimeoutMs?: number | undefined;
  /** Heap limit of the realm, in bytes. @default {134217728} */
  memoryLimitBytes?: number | undefined;
  /**
   * Largest payload or answer of one call, and the largest arguments of one
   * `fetch`, file or capability call, as JSON text in UTF-8 bytes. A realm
   * that sends one message over it + 1 MiB is ended (`SANDBOX_CRASHED`).
   * @default {4194304}
   */
  maxPayloadBytes?: number | undefined;
  /** Largest body a plugin's `fetch` reads. @default {4194304} */
  maxFetchResponseBytes?: number | undefined;
  /** Largest file a plugin's `fs.readTextFile` reads. @default {4194304} */
  maxFileReadBytes?: number | undefined;
  /** Most entries a plugin's `fs.readDir` lists. @default {10000} */
  maxDirEntries?: number | undefined;
  /**
   * The most the files a plugin writes with `fs.writeTextFile` may hold on
   * disk: for each path it wrote, the UTF-8 bytes of its last write, at
   * least 4096 (a block, so empty files count too). A rewrite replaces its
   * file's share; a write that would pass the limit is refused before
   * anything is written (`PROXY_LIMIT_EXCEEDED`). Writes in flight count
   * too, so writes at once cannot race past it, and writes of one path at
   * once count it at the longest of them. While a write runs, the file's
   * old text stays on disk beside the new one until the new one is whole,
   * so the disk may hold up to twice the limit for that moment. The count
   * belongs to the sandbox: a new realm (a restart) keeps it, a new sandbox
   * (a new install) starts at zero, as what files of an earlier one still
   * hold is the host's to keep or remove. `0` refuses every write.
   * @default {67108864}
   */
  maxWriteBytes?: number | undefined;
  /**
   * Largest capability result, as JSON text in UTF-8 bytes.
   * @default {1048576}
   */
  maxCapabilityResultBytes?: number | undefined;
  /** Wall time of one `fetch`, file or capability call. @default {5000} */
  proxyTimeoutMs?: number | undefined;
  /**
   * `fetch`, file and capability calls of one realm the host performs at
   * once; a call beyond them fails at once with `PROXY_LIMIT_EXCEEDED`.
   * @default {256}
   */
  maxConcurrentProxyCalls?: number | undefined;
  /**
   * The most the host holds at once of the answers to the plugin's
   * `fetch`, file and capability calls in flight: the bytes of a fetch's
   * body and of a file as the host reads them, and the JSON of a
   * capability's result or a folder listing once the host has it, each
   * held until the answer is handed to the realm or its call fails. A call
   * whose answer would pass it fails (`PROXY_LIMIT_EXCEEDED`) and gives
   * back what it held, so calls at once cannot make the host hold up to
   * `maxConcurrentProxyCalls` answers of `maxFetchResponseBytes` each; one
   * at a time are not bounded by it. Left unset, it is the largest of
   * 16 MiB, `maxFetchResponseBytes`, `maxFileReadBytes` and
   * `maxCapabilityResultBytes`; set it at least as large, or a single
   * answer that large fails. The count belongs to the sandbox, across its
   * realms. @default {16777216}
   */
  maxProxyAnswerBytesInFlight?: number | undefined;
  /**
   * Realms started again after a failure within `restartWindowMs`. Past
   * them, a realm that could not load or start, or that ended before any
   * call was sent to it (plugin code its module or start() left running),
   * is not started again: a call fails at once with
   * `SANDBOX_RESTART_LIMITED` until the oldest restart leaves the window,
   * so a plugin that cannot start costs a bounded number of realm starts,
   * not one per request. A realm ended by a call it served
   * (a timeout, out of memory, a crash) is always started again: that call
   * paid for its failure, and the next one must get its own answer. `0`
   * never restarts a realm that could not start. @default {10}
   */
  maxRestarts?: number | undefined;
  /** The window of `maxRestarts`, in milliseconds. @default {60000} */
  restartWindowMs?: number | undefined;
}

/**
 * Where a realm runs: `auto` is `process`, a child process a timeout kills.
 * `thread` (a worker thread of the host's process, which starts faster but
 * shares the host's memory and can end it) is Node only: Deno's
 * `worker.terminate()` cannot stop a looping plugin, so Deno refuses it.
 * `worker` (Deno only) is a Web Worker with no permissions inside a child
 * process that a timeout kills. `quickjs` (Deno only) runs the plugin in a
 * hardened QuickJS context instead of a `node:vm` one, inside a child
 * process with no permissions that a timeout kills. Results report
 * `metrics.tier` `"vm"` for `auto` and `thread`, and the isolation's own
 * name (`"process"`, `"worker"`, `"quickjs"`) for the others.
 */
export type VmIsolation = "auto" | "thread" | "process" | "worker" | "quickjs";

/** One console line of plugin code. */
export interface VmLogEntry extends LogEntry {
  /** The plugin that logged it. */
  pluginId: string;
}

/** Options of {@linkcode createVmSandbox}. */
export interface VmSandboxOptions {
  /** The plugin's id, used in messages and passed to checks. */
  pluginId: string;
  /** What the plugin may reach. @default {{}} (nothing) */
  policy?: VmPluginPolicy | undefined;
  /** The plugin module. */
  pluginModule: VmPluginSource;
  /** Host implementations of fetch, fs and capabilities. */
  proxies?: VmHostProxies | undefined;
  /**
   * An extra check after the policy; it can only narrow it. Only `true` or
   * `{ allowed: true }` allows a call.
   */
  checker?: PermissionChecker | undefined;
  /** Budgets. */
  limits?: VmSandboxLimits | undefined;
  /** Where the realm runs (see {@linkcode VmIsolation}). @default {"auto"} */
  isolation?: VmIsolation | undefined;
  /**
   * The most calls of `invoke()` that may wait for the realm. The realm is
   * one runner: of the calls sent and not yet answered, one counts as
   * running and every other one as waiting (for the realm to start, or in
   * its job queue), whatever the plugin's code does with its turns. A call
   * past it resolves at once with `SANDBOX_BUSY` (nothing ran: send it
   * again once calls finish), so a caller that sends faster than the
   * plugin answers cannot grow the host's memory without end; `0` lets one
   * call in at a time. A call gives its place up once the realm is done
   * with it (answered, past its deadline, or ended); a call whose signal
   * aborts answers `ABORTED` at once but keeps its place while the realm
   * still runs it, so aborting each call does not get past the bound. The
   * `start()` and `stop()` hooks do not count. The default leaves ordinary
   * bursts alone (a thousand calls at once all wait and run).
   *
   * @default {100000}
   */
  maxQueued?: number | undefined;
  /**
   * Receives console lines of plugin code, one call a line on the host's
   * event loop, in turns of at most 10 ms with the host's other work
   * between them. Keep it quick (queue the line): a call's answer waits
   * for the lines logged before it, but not for a promise it returns.
   * What it throws, and what such a promise rejects with, are dropped.
   * @default {undefined} (dropped)
   */
  onLog?: ((entry: VmLogEntry) => void) | undefined;
}

/** What a vm sandbox has done so far. */
export interface VmSandboxInstruments {
  /** `idle` (no realm), `running`, `stopped` or `disposed`. */
  state: "idle" | "running" | "stopped" | "disposed";
  /** Where realms run. */
  isolation: "thread" | "process" | "worker" | "quickjs";
  /** The current realm's process id (`process` isolation), or `null`. */
  realmPid: number | null;
  /**
   * The permissions of the realm's process on Deno (`process` isolation),
   * such as `{ read: "denied" }`, or `null`.
   */
  realmPermissions: Record<string, string> | null;
  /** Realms started, the first included. */
  realmsStarted: number;
  /** Realms started again after one ended by a failure. */
  restarts: number;
  /**
   * Calls refused with `SANDBOX_RESTART_LIMITED`: they needed a restart
   * over `limits.maxRestarts`.
   */
  restartsRefused: number;
  /**
   * Milliseconds until a failed realm may be started again: `0` unless
   * `limits.maxRestarts` are used up in the current window; `Infinity`
   * once a realm could not start under `limits.maxRestarts` 0, which never
   * starts it again before `stop()`.
   */
  restartAvailableInMs: number;
  /**
   * Calls of `invoke()` answered, lifecycle hooks included: one refused
   * (`SANDBOX_BUSY`, `SANDBOX_RESTART_LIMITED`) or aborted before the realm
   * ran it too, as `cordon.sandbox.runs` counts them. A call that threw
   * (a host-side fault) is not counted.
   */
  invocations: number;
  /** Calls counted in `invocations` that failed, for any reason. */
  failures: number;
  /** Calls that exceeded `timeoutMs`. */
  timeouts: number;
  /** Realms that exceeded `memoryLimitBytes`. */
  outOfMemory: number;
  /** Realms that ended without an answer. */
  crashes: number;
  /** Proxy calls refused by the policy or checker. */
  denials: number;
  /** Proxy calls received. */
  proxyCalls: number;
  /**
   * Bytes of the answers to proxy calls in flight the host holds now,
   * counted against `limits.maxProxyAnswerBytesInFlight`.
   */
  proxyAnswerBytes: number;
  /** The most bytes of proxy calls' answers the host held at once. */
  proxyAnswerBytesPeak: number;
  /** Total wall time of calls, in milliseconds. */
  totalDurationMs: number;
  /** The longest call, in milliseconds. */
  maxDurationMs: number;
}

/** Options of {@linkcode VmSandbox.invoke}. */
export interface VmInvokeOptions {
  /** Overrides `limits.timeoutMs` for this call. */
  timeoutMs?: number | undefined;
  /**
   * Ends the wait: the call resolves to `ABORTED` at once. Work the plugin
   * already runs goes on in its realm, within the call's deadline.
   */
  signal?: AbortSignal | undefined;
}

/**
 * A running vm-tier plugin. The caller owns it and must dispose it.
 */
export interface VmSandbox extends AsyncDisposable {
  /** The plugin's id. */
  readonly pluginId: string;
  /** A snapshot of the counters. */
  readonly instruments: VmSandboxInstruments;
  /**
   * Brings the realm up, evaluates the module and runs its exported
   * `start()` hook, once; later calls return the same answer until the
   * realm ends. Resolves to `{ exports }` (name to `typeof`) or a failure.
   */
  start(): Promise<SandboxResult>;
  /**
   * Runs an exported function with a JSON payload, starting the realm if
   * needed. Resolves to its JSON result or a failure with a code; rejects
   * with a `TypeError` for an unknown option or one of the wrong type, and
   * a `RangeError` for a `timeoutMs` out of range.
   */
  invoke(
    name: string,
    payload?: JsonValue,
    options?: VmInvokeOptions,
  ): Promise<SandboxResult>;
  /** Runs the plugin's `stop()` hook and ends the realm; `start()` works again. */
  stop(): Promise<void>;
  /** Stops the plugin for good. Disposing twice is harmless. */
  dispose(): Promise<void>;
}

const MIB = 1024 * 1024;

/**
 * Each limit's default and its range. A time limit becomes a timer's delay:
 * past MAX_TIMER_MS, or not whole, Node would end the call at once (or
 * refuse the delay in the realm).
 */
const LIMITS: Record<keyof VmSandboxLimits, [number, IntegerRange]> = {
  timeoutMs: [5000, TIMEOUT_MS_RANGE],
  startupTimeoutMs: [10_000, TIMEOUT_MS_RANGE],
  stopTimeoutMs: [1000, TIMEOUT_MS_RANGE],
  memoryLimitBytes: [128 * MIB, byteRange(8 * MIB, MAX_V8_HEAP_BYTES)],
  maxPayloadBytes: [4 * MIB, byteRange(1024)],
  maxFetchResponseBytes: [4 * MIB, byteRange(0)],
  maxFileReadBytes: [4 * MIB, byteRange(0)],
  maxDirEntries: [10_000, { min: 0, max: Number.MAX_SAFE_INTEGER }],
  maxWriteBytes: [64 * MIB, byteRange(0)],
  maxCapabilityResultBytes: [MIB, byteRange(0)],
  proxyTimeoutMs: [5000, TIMEOUT_MS_RANGE],
  maxConcurrentProxyCalls: [256, { min: 1, max: Number.MAX_SAFE_INTEGER }],
  maxProxyAnswerBytesInFlight: [16 * MIB, byteRange(0)],
  maxRestarts: [10, { min: 0, max: Number.MAX_SAFE_INTEGER }],
  restartWindowMs: [60_000, TIMEOUT_MS_RANGE],
};

/**
 * The in-flight bound left unset follows the single answers the limits
 * allow, so raising `maxFetchResponseBytes` alone does not make a fetch of
 * that size fail for want of room.
 */
function answersInFlightDefault(limits: VmSandboxLimits): number {
  const singleAnswers = [
    limits.maxFetchResponseBytes,
    limits.maxFileReadBytes,
    limits.maxCapabilityResultBytes,
  ].filter((bytes): bytes is number => Number.isSafeInteger(bytes));
  return Math.max(LIMITS.maxProxyAnswerBytesInFlight[0], ...singleAnswers);
}

function byteRange(min: number, max = Number.MAX_SAFE_INTEGER): IntegerRange {
  return { min, max, unit: "bytes" };
}

const VM_OPTION_KEYS: OptionKeys<VmSandboxOptions> = {
  pluginId: true,
  policy: true,
  pluginModule: true,
  proxies: true,
  checker: true,
  limits: true,
  isolation: true,
  onLog: true,
  maxQueued: true,
};

// The names readOptions knows, which are those of LIMITS.
const LIMIT_KEYS = Object.fromEntries(
  Object.keys(LIMITS).map((key) => [key, true]),
) as OptionKeys<VmSandboxLimits>;

/**
 * Reads the options, the policy and the proxies once: what is checked here
 * is what the sandbox uses later. The copy has a `null` prototype, so an
 * option left out (the policy, the limits, the isolation) stays out when
 * the host's `Object.prototype` has gained a key of that name.
 */
function readVmOptions(given: VmSandboxOptions): VmSandboxOptions {
  const where = "create a vm sandbox";
  const options = readOptions(where, given, VM_OPTION_KEYS);
  const { policy, proxies } = options;
  return {
    __proto__: null,
    ...options,
    ...(policy === undefined ? {} : { policy: readPolicy(where, policy) }),
    ...(typeof proxies !== "object" || proxies === null ? {} : {
      proxies: readOptions(where, proxies, {
        fetch: true,
        fs: true,
        capabilities: true,
      }, "proxies"),
    }),
  } as VmSandboxOptions;
}

/** The policy of a sandbox given none: nothing granted, nothing inherited. */
const NO_POLICY: VmPluginPolicy = Object.freeze(Object.create(null));

/** The proxies of a sandbox given none: the defaults, nothing inherited. */
const NO_PROXIES: VmHostProxies = Object.freeze(Object.create(null));

/** Throws unless `value` is absent or of `type` (an object, not `null`). */
function optional(value: unknown, type: "function" | "object", rule: string) {
  if (value !== undefined && (typeof value !== type || value === null)) {
    throw new TypeError(`Cannot create a vm sandbox: ${rule}`);
  }
}

/**
 * The host's hooks must be what they say: a checker or a fetch proxy of
 * the wrong kind would otherwise be skipped or fail on every call, and the
 * operator learn of it from denied plugins.
 */
function checkHooks({ checker, onLog, proxies }: VmSandboxOptions): void {
  optional(checker, "function", "checker must be a PermissionChecker function");
  optional(onLog, "function", "onLog must be a function");
  optional(proxies, "object", "proxies must be { fetch?, fs?, capabilities? }");
  const { fetch, fs, capabilities } = proxies ?? {};
  optional(fetch, "function", "proxies.fetch must be a function like fetch");
  optional(fs, "object", "proxies.fs must be an object of file functions");
  optional(
    capabilities,
    "object",
    "proxies.capabilities must be an object of functions by name",
  );
  for (const [name, handler] of Object.entries(capabilities ?? {})) {
    optional(
      handler,
      "function",
      `proxies.capabilities["${name}"] must be a function`,
    );
  }
}

/**
 * A call's place among those `maxQueued` bounds, given back once: by the
 * call itself when it never reached a realm, else by the realm's session
 * when the realm is done with it.
 */
class QueuePlace {
  #giveBack: (() => void) | null;
  /** Whether a realm's session holds the place. */
  handed = false;

  constructor(giveBack: () => void) {
    this.#giveBack = giveBack;
  }

  /** Gives the place back; later calls do nothing. */
  release(): void {
    const giveBack = this.#giveBack;
    this.#giveBack = null;
    giveBack?.();
  }
}

class VmSandboxImpl implements VmSandbox {
  readonly pluginId: string;
  readonly #source: VmPluginSource;
  readonly #policy: VmPluginPolicy;
  readonly #limits: Required<VmSandboxLimits>;
  // Writes payloads no longer than maxPayloadBytes, read once: what the
  // count before it could not walk (a toJSON's answer, a getter's second
  // answer) is stopped at the bound instead of written whole.
  readonly #payloadMarshallers: Marshallers;
  readonly #isolation: "thread" | "process" | "worker" | "quickjs";
  readonly #tier: Tier;
  readonly #hostCalls: HostCalls;
  readonly #onLog: ((entry: VmLogEntry) => void) | undefined;
  readonly #maxQueued: number;
  /** Calls of `invoke()` sent that the realm is not done with. */
  #unanswered = 0;
  #session: RealmSession | null = null;
  readonly #live = new Set<RealmSession>();
  #exports: Record<string, string> | null = null;
  /**
   * The last start or stop asked for and not yet done. Each runs after the
   * one before it, so the last call decides the state; a call of the same
   * kind as the one pending shares its answer.
   */
  #pending: Step | null = null;
  /** Set by the first `dispose()`: from then on no call starts a realm. */
  #disposing: Promise<void> | null = null;
  #state: VmSandboxInstruments["state"] = "idle";
  #permissions: Record<string, string> | null = null;
  /**
   * How the last realm failed, if it did: `"serving"` (a timeout, out of
   * memory or a crash) or `"starting"` (it could not load or start); the
   * next start is a restart, refused past `maxRestarts` after `"starting"`.
   * A stop() clears it.
   */
  #realmFailed: "serving" | "starting" | null = null;
  /**
   * Whether a call was sent to the current realm: one that ends before any
   * was (plugin code its module or start() left running) failed starting.
   */
  #realmCalled = false;
  /** When each restart of the current window began (`performance.now()`). */
  #restartTimes: number[] = [];
  #counters = {
    realmsStarted: 0,
    restarts: 0,
    restartsRefused: 0,
    invocations: 0,
    failures: 0,
    timeouts: 0,
    outOfMemory: 0,
    crashes: 0,
    denials: 0,
    proxyCalls: 0,
    totalDurationMs: 0,
    maxDurationMs: 0,
  };

  constructor(given: VmSandboxOptions) {
    if (typeof given !== "object" || given === null) {
      throw new TypeError("Cannot create a vm sandbox: pass an options object");
    }
    const options = readVmOptions(given);
    const { pluginId, pluginModule: source } = options;
    if (typeof pluginId !== "string" || pluginId === "") {
      throw new TypeError(
        "Cannot create a vm sandbox: pluginId must be a non-empty string",
      );
    }
    if (
      typeof source !== "object" || source === null ||
      source.kind !== "source" || typeof source.source !== "string" ||
      typeof source.identifier !== "string"
    ) {
      throw new TypeError(
        'Cannot create a vm sandbox: pluginModule must be { kind: "source", source, identifier }',
      );
    }
    // A plugin bundled with `deno bundle` carries a NUL in a comment for
    // each module the bundler made up; it means nothing on any tier.
    const text = withoutBundlerCommentNuls(source.source);
    const flaw = sourceTextFlaw(text);
    if (flaw !== null) {
      throw new CordonError(
        "GUEST_SYNTAX_ERROR",
        `Cannot create a vm sandbox: the plugin module ${flaw.detail}`,
      );
    }
    const isolation = options.isolation ?? "auto";
    if (
      !["auto", "thread", "process", "worker", "quickjs"].includes(isolation)
    ) {
      throw new TypeError(
        `Cannot use isolation "${isolation}": use auto, thread, process, worker or quickjs`,
      );
    }
    if (isolation === "thread" && IS_DENO) {
      // Deno's worker.terminate() leaves a looping plugin running: its
      // thread would keep a core busy after every TIMEOUT.
      throw new CordonError(
        "SANDBOX_UNAVAILABLE",
        'Cannot use isolation "thread" on Deno, whose worker.terminate() cannot stop a looping plugin; use auto or process (a child process that is killed)',
      );
    }
    if ((isolation === "worker" || isolation === "quickjs") && !IS_DENO) {
      throw new CordonError(
        "SANDBOX_UNAVAILABLE",
        `Cannot use isolation "${isolation}": it needs Deno; on Node use isolation auto, process or thread (a plugin: tier vm or process)`,
      );
    }
    checkHooks(options);
    const limits = readOptions(
      "create a vm sandbox",
      options.limits,
      LIMIT_KEYS,
      "limits",
    );
    this.#maxQueued = readIntegerOption(
      "create a vm sandbox",
      "maxQueued",
      options.maxQueued,
      DEFAULT_MAX_QUEUED,
      MAX_QUEUED_RANGE,
    );
    const keys = Object.keys(LIMITS) as (keyof VmSandboxLimits)[];
    this.#limits = Object.fromEntries(keys.map((key) => [
      key,
      readIntegerOption(
        "create a vm sandbox",
        `limits.${key}`,
        limits[key],
        key === "maxProxyAnswerBytesInFlight"
          ? answersInFlightDefault(limits)
          : LIMITS[key][0],
        LIMITS[key][1],
      ),
    ])) as Required<VmSandboxLimits>;
    this.#payloadMarshallers = createMarshallers({
      maxJsonChars: this.#limits.maxPayloadBytes,
    });
    // Asked once the options are known good: where Deno would prompt, no
    // one is asked for a sandbox its options refuse.
    const refusal = isolation === "thread" ? null : realmProcessRefusal();
    if (refusal !== null) {
      throw new CordonError(
        "SANDBOX_UNAVAILABLE",
        `Cannot create a vm sandbox with isolation "${isolation}": ${refusal}`,
      );
    }
    this.pluginId = pluginId;
    this.#source = { ...source, source: text };
    this.#policy = options.policy ?? NO_POLICY;
    checkFileProxy(this.#policy, options.proxies);
    // auto is a child process on Node too: on a worker thread a plugin's
    // typed arrays would take the host's memory, and V8's fatal
    // out-of-memory in one copy (JSON.stringify of a huge string) would end
    // the host (nodejs/node#47224).
    this.#isolation = isolation === "auto" ? "process" : isolation;
    // metrics.tier names the boundary the operator chose: auto and thread
    // are the vm tier, the others their own.
    this.#tier = isolation === "auto" || isolation === "thread"
      ? "vm"
      : isolation;
    this.#onLog = options.onLog;
    this.#hostCalls = new HostCalls({
      pluginId,
      policy: this.#policy,
      checker: options.checker,
      proxies: options.proxies ?? NO_PROXIES,
      limits: this.#limits,
      onDenied: () => {
        this.#counters.denials++;
      },
    });
  }

  get instruments(): VmSandboxInstruments {
    return Object.freeze({
      state: this.#state,
      isolation: this.#isolation,
      realmPid: this.#session?.pid ?? null,
      realmPermissions: this.#permissions === null
        ? null
        : Object.freeze({ ...this.#permissions }),
      ...this.#counters,
      proxyAnswerBytes: this.#hostCalls.answerBytes.held,
      proxyAnswerBytesPeak: this.#hostCalls.answerBytes.peak,
      restartAvailableInMs: this.#realmFailed === "starting"
        ? this.#restartAvailableInMs(performance.now())
        : 0,
    });
  }

  /**
   * Counts a call's answer, as `cordon.sandbox.runs` counts it: every
   * answer of invoke(), one refused or aborted before the realm saw it
   * too, and each lifecycle hook's.
   */
  #counted(result: SandboxResult): SandboxResult {
    this.#counters.invocations++;
    if (!result.ok) this.#counters.failures++;
    return result;
  }

  // Results carry no logs: a vm plugin's console lines go to onLog.
  #failure(error: SandboxError, durationMs: number): SandboxResult {
    const metrics = { tier: this.#tier, durationMs };
    return { ok: false, error, logs: [], logsTruncated: false, metrics };
  }

  #success(value: JsonValue, durationMs: number): SandboxResult {
    const metrics = { tier: this.#tier, durationMs };
    return { ok: true, value, logs: [], logsTruncated: false, metrics };
  }

  #assertUsable(): void {
    if (this.#disposing !== null) {
      throw new CordonError(
        "SANDBOX_DISPOSED",
        `Cannot use the disposed vm sandbox of plugin "${this.pluginId}": create a new one`,
      );
    }
  }

  /** The failure of a call that disposal overtook. */
  #disposedError(): SandboxError {
    return {
      code: "SANDBOX_DISPOSED",
      name: "CordonError",
      message:
        `The vm sandbox of plugin "${this.pluginId}" was disposed while the call ran: create a new one`,
    };
  }

  #onSessionEnd(session: RealmSession, end: SessionEnd): void {
    if (end === "timeout") this.#counters.timeouts++;
    if (end === "out-of-memory") this.#counters.outOfMemory++;
    if (end === "crashed") this.#counters.crashes++;
    if (this.#session === session) {
      // A realm the system would not start is no fault of the plugin's,
      // and costs nothing to try again: it uses up no restart.
      if (end !== "stopped" && end !== "refused") {
        this.#realmFailed = this.#realmCalled ? "serving" : "starting";
      }
      this.#session = null;
      this.#exports = null;
      if (this.#state === "running") this.#state = "idle";
    }
  }

  async start(): Promise<SandboxResult> {
    this.#assertUsable();
    const running = this.#pending === null && this.#session !== null &&
      this.#exports !== null;
    if (running) return this.#success({ exports: { ...this.#exports! } }, 0);
    return await this.#step("start", () => this.#startRealm());
  }

  /** Runs `run` after the pending step, or joins a pending one of `kind`. */
  #step<T>(kind: Step["kind"], run: () => Promise<T>): Promise<T> {
    const before = this.#pending;
    if (before?.kind === kind) return before.done as Promise<T>;
    const done = (before?.done.catch(() => {}) ?? Promise.resolve()).then(run);
    const step: Step = { kind, done };
    this.#pending = step;
    const clear = () => {
      if (this.#pending === step) this.#pending = null;
    };
    done.then(clear, clear);
    return done;
  }

  async #startRealm(): Promise<SandboxResult> {
    // A start that waited for a stop must not outlive a disposal that
    // began meanwhile: its realm would run on with no owner.
    if (this.#disposing !== null) {
      return this.#failure(this.#disposedError(), 0);
    }
    const started = performance.now();
    const elapsed = () => performance.now() - started;
    if (this.#realmFailed !== null) {
      const refusal = this.#takeRestart(started);
      if (refusal !== null) return this.#failure(refusal, 0);
    }
    this.#realmFailed = null;
    this.#counters.realmsStarted++;
    const { pluginId } = this;
    const session: RealmSession = new RealmSession({
      isolation: this.#isolation,
      limits: this.#limits,
      hostCalls: this.#hostCalls,
      // A failing log sink does not fail the plugin.
      onLog: (level, message) =>
        callSink(this.#onLog, { pluginId, level, message }),
      onProxyCall: () => {
        this.#counters.proxyCalls++;
      },
      onEnd: (end) => this.#onSessionEnd(session, end),
    });
    this.#session = session;
    this.#realmCalled = false;
    this.#live.add(session);
    session.exited.then(() => this.#live.delete(session));
    const { source, identifier } = this.#source;
    const { timeoutMs } = this.#limits;
    const initJson = JSON.stringify({
      pluginId,
      capabilities: [...(this.#policy.capabilities ?? [])],
      // Keys the realm's crypto.getRandomValues (ChaCha20); a new realm
      // after a runaway gets a new key.
      randomKey: [...crypto.getRandomValues(new Uint32Array(8))],
      maxPayloadBytes: this.#limits.maxPayloadBytes,
    });
    const loaded = await session.load(
      JSON.stringify({ pluginId, source, identifier, initJson, timeoutMs }),
    );
    this.#permissions = await session.ready;
    if (!loaded.ok) {
      await session.end("stopped");
      if (session.endedAs !== "refused") this.#realmFailed = "starting";
      return this.#failure(loaded.error, elapsed());
    }
    const exports = JSON.parse(loaded.json) as Record<string, string>;
    this.#exports = exports;
    this.#state = "running";
    if (exports.start === "function") {
      const payload = this.#payloadJson("start", { pluginId });
      const hook = this.#counted(
        await this.#send(session, "start", payload, timeoutMs),
      );
      if (!hook.ok) {
        // Its end clears the exports and the state (#onSessionEnd).
        await session.end("stopped");
        this.#realmFailed = "starting";
        return hook;
      }
    }
    if (session.ended) {
      return this.#failure(
        crashed("The plugin's realm ended while starting: retry"),
        elapsed(),
      );
    }
    return this.#success({ exports: { ...exports } }, elapsed());
  }

  #restartAvailableInMs(now: number): number {
    const { maxRestarts, restartWindowMs } = this.#limits;
    // No window ever frees a restart of none.
    if (maxRestarts === 0) return Infinity;
    const times = this.#restartTimes;
    if (times.length < maxRestarts) return 0;
    const oldest = times[times.length - maxRestarts]!;
    return Math.max(0, Math.ceil(oldest + restartWindowMs - now));
  }

  /**
   * Counts a restart, or refuses the restart of a realm that could not
   * start when `maxRestarts` are used up within `restartWindowMs`: such a
   * plugin would otherwise cost a realm start (a process and an isolate)
   * per request for ever.
   */
  #takeRestart(now: number): SandboxError | null {
    const { maxRestarts } = this.#limits;
    const waitMs = this.#restartAvailableInMs(now);
    if (this.#realmFailed === "starting" && waitMs > 0) {
      this.#counters.restartsRefused++;
      return {
        code: "SANDBOX_RESTART_LIMITED",
        name: "Error",
        message: this.#restartRefusal(waitMs),
      };
    }
    // Only the oldest of the last maxRestarts restarts decides.
    this.#restartTimes = maxRestarts === 0
      ? []
      : [...this.#restartTimes, now].slice(-maxRestarts);
    this.#counters.restarts++;
    return null;
  }

  /** Why a restart is refused, and when (if ever) one comes. */
  #restartRefusal(waitMs: number): string {
    const { maxRestarts, restartWindowMs } = this.#limits;
    // No window ever frees a restart of none: waiting would not help.
    if (maxRestarts === 0) {
      return `The realm of plugin "${this.pluginId}" could not start, and limits.maxRestarts 0 never starts it again: fix the plugin, then stop() the sandbox so that the next call starts it afresh, or raise limits.maxRestarts`;
    }
    return `The realm of plugin "${this.pluginId}" could not start again after ${maxRestarts} restarts within ${restartWindowMs} ms and is not started for ${waitMs} ms: retry later, fix the plugin, or raise limits.maxRestarts`;
  }

  /**
   * The payload's JSON text. One walk, which runs none of its code, counts
   * its least length first: the writing of a large payload, or of a small
   * one that repeats an array at every level, would hold the caller's
   * thread for seconds before the byte count refused it. Plain data is
   * then written by `JSON.stringify` alone, the rest by the marshalling,
   * which reads each getter and Proxy trap once.
   */
  #payloadJson(name: string, payload: JsonValue): string {
    const max = this.#limits.maxPayloadBytes;
    const { plain, counted } = countJson(payload, max);
    if (counted > max) {
      throw new RangeError(
        `Cannot send at least ${counted} bytes to ${name}(): the limit is ${max}; raise limits.maxPayloadBytes`,
      );
    }
    if (plain) return JSON.stringify(payload) ?? "null";
    const marshallers = this.#payloadMarshallers;
    try {
      return marshallers.toWireJson(payload);
    } catch (thrown) {
      if (marshallers.isTooLarge(thrown)) {
        throw new RangeError(
          `Cannot send more than ${max} bytes to ${name}(): the limit is ${max}; raise limits.maxPayloadBytes`,
        );
      }
      throw new TypeError(
        marshallers.isTooDeep(thrown)
          ? `Cannot send the payload of ${name}() to the plugin: it is nested deeper than ${marshallers.maxDepth} levels; pass flatter data, or the deeper part as JSON text`
          : `Cannot send the payload of ${name}() to the plugin: pass JSON data`,
      );
    }
  }

  async #send(
    session: RealmSession,
    name: string,
    json: string,
    timeoutMs: number,
    signal?: AbortSignal,
    place?: QueuePlace,
  ): Promise<SandboxResult> {
    const bytes = Buffer.byteLength(json);
    if (bytes > this.#limits.maxPayloadBytes) {
      throw new RangeError(
        `Cannot send ${bytes} bytes to ${name}(): the limit is ${this.#limits.maxPayloadBytes}; raise limits.maxPayloadBytes`,
      );
    }
    const started = performance.now();
    const counters = this.#counters;
    // Handed over, the place is the session's to give back: an aborted
    // call answers at once, but the realm still runs it.
    if (place !== undefined) place.handed = true;
    const outcome = await session.invoke(name, json, {
      timeoutMs,
      signal,
      onSettled: () => place?.release(),
    });
    const durationMs = performance.now() - started;
    counters.totalDurationMs += durationMs;
    counters.maxDurationMs = Math.max(counters.maxDurationMs, durationMs);
    if (!outcome.ok) {
      return this.#failure(outcome.error, durationMs);
    }
    let value: JsonValue;
    try {
      value = JSON.parse(outcome.json) as JsonValue;
    } catch {
      // Only a broken realm sends this: end it, the next call starts anew.
      session.end("crashed").catch(() => {});
      return this.#failure(
        crashed(
          `The plugin's realm answered ${name}() with text that is not JSON: the realm was ended; retry the call`,
        ),
        durationMs,
      );
    }
    return this.#success(value, durationMs);
  }

  async invoke(
    name: string,
    payload: JsonValue = null,
    options: VmInvokeOptions = {},
  ): Promise<SandboxResult> {
    this.#assertUsable();
    if (typeof name !== "string" || name === "") {
      throw new TypeError("Cannot invoke: name must be a non-empty string");
    }
    const where = `invoke ${name}()`;
    const read = readOptions(where, options, { timeoutMs: true, signal: true });
    const timeoutMs = readIntegerOption(
      where,
      "timeoutMs",
      read.timeoutMs,
      this.#limits.timeoutMs,
      LIMITS.timeoutMs[1],
    );
    const { signal } = read;
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      throw new TypeError(`Cannot ${where}: signal must be an AbortSignal`);
    }
    const telemetry = startRunTelemetry(this.#tier);
    try {
      return telemetry.end(
        this.#counted(await this.#invoke(name, payload, timeoutMs, signal)),
      );
    } catch (error) {
      telemetry.endThrown(error);
      throw error;
    }
  }

  /** A checked call: refused when full, else sent, starting the realm first. */
  async #invoke(
    name: string,
    payload: JsonValue,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<SandboxResult> {
    if (signal?.aborted) return this.#failure(abortedError(name), 0);
    const json = this.#payloadJson(name, payload);
    // The realm is one runner: each call in flight past the first waits
    // for it and holds its payload, its answer's slot and a job of the
    // realm; unbounded, a caller sending faster than the plugin answers
    // would grow them without end.
    if (this.#unanswered > this.#maxQueued) {
      const what = `vm sandbox of plugin "${this.pluginId}"`;
      return this.#failure(runFailures.busy(what, this.#maxQueued), 0);
    }
    this.#unanswered++;
    const place = new QueuePlace(() => this.#unanswered--);
    try {
      return await this.#call(name, json, timeoutMs, signal, place);
    } finally {
      if (!place.handed) place.release();
    }
  }

  /** Sends a call, starting the realm first when none runs. */
  async #call(
    name: string,
    json: string,
    timeoutMs: number,
    signal: AbortSignal | undefined,
    place: QueuePlace,
  ): Promise<SandboxResult> {
    let session = this.#session;
    if (session === null || this.#exports === null || session.ended) {
      // An aborted call stops waiting for the start, which goes on for the
      // calls that did not abort; nothing of this one reached the realm.
      const started = await settleUnlessAborted(
        this.start(),
        signal,
        () => this.#failure(abortedError(name), 0),
      );
      if (!started.ok) return started;
      session = this.#session;
      if (session === null || session.ended) {
        const error = this.#disposing !== null
          ? this.#disposedError()
          : crashed("The plugin's realm ended before the call: retry");
        return this.#failure(error, 0);
      }
    }
    this.#realmCalled = true;
    return await this.#send(session, name, json, timeoutMs, signal, place);
  }

  stop(): Promise<void> {
    return this.#stop(
      crashed("The plugin was stopped while the call ran: retry the call"),
    );
  }

  /** Ends the realm; the calls it was running fail with `error`. */
  #stop(error: SandboxError): Promise<void> {
    return this.#step("stop", async () => {
      const session = this.#session;
      const { stopTimeoutMs } = this.#limits;
      if (session !== null) {
        if (this.#exports?.stop === "function" && !session.ended) {
          await this.#runStopHook(session, stopTimeoutMs);
        }
        await session.end("stopped", error);
      }
      // The stop hook may have timed out: this end is still a stop, and the
      // next start is not a restart.
      this.#realmFailed = null;
      // Realms replaced after a failure may still be on their way out.
      await Promise.all([...this.#live].map((old) => old.end("stopped")));
      if (this.#state !== "disposed") this.#state = "stopped";
    });
  }

  /**
   * Gives the plugin's stop() hook `stopTimeoutMs`. The stop ends the realm
   * when that runs out, so the hook's call has a deadline past it: had the
   * hook timed out as a call does, the calls in flight would fail as if
   * another call had overrun (`SANDBOX_CRASHED`, a timeout counted) rather
   * than with the stop's or the disposal's failure.
   */
  async #runStopHook(
    session: RealmSession,
    stopTimeoutMs: number,
  ): Promise<void> {
    const callMs = Math.min(stopTimeoutMs * 2, MAX_TIMER_MS);
    const hook = this.#send(session, "stop", "null", callMs)
      .then((result) => this.#counted(result), () => {});
    await settleWithin(hook, stopTimeoutMs, () => {});
  }

  dispose(): Promise<void> {
    if (this.#disposing === null && this.#pending?.kind === "start") {
      // A realm still starting is ended now, not left to run its module
      // and start() hook until their deadline.
      this.#session?.end("stopped", this.#disposedError()).catch(() => {});
    }
    this.#disposing ??= this.#stop(this.#disposedError()).then(() => {
      this.#state = "disposed";
    });
    return this.#disposing;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.dispose();
  }
}

/**
 * Refuses, at creation, folders in `policy.fs` that the default file proxy
 * cannot serve safely on this host: each of its calls would fail.
 */
function checkFileProxy(
  policy: VmPluginPolicy,
  proxies: VmHostProxies | undefined,
): void {
  const read = policy.fs?.read ?? [];
  const write = policy.fs?.write ?? [];
  if (read.length + write.length === 0 || proxies?.fs !== undefined) return;
  const refusal = openFilesRefusal();
  if (refusal !== null) {
    throw new CordonError(
      "PROXY_FS_UNAVAILABLE",
      `Cannot create a vm sandbox with folders in policy.fs: ${refusal}`,
    );
  }
}

/** A start or stop of a sandbox's realm, asked for and not yet done. */
interface Step {
  kind: "start" | "stop";
  done: Promise<unknown>;
}

/**
 * Creates a vm-tier sandbox for one plugin module. Nothing runs until
 * `start()` or the first `invoke()`.
 *
 * The plugin runs as a `vm.SourceTextModule` in a fresh context with string
 * code generation and WebAssembly compilation disabled and its globals and
 * intrinsics frozen, in a child process (with no permissions on Deno) or
 * where `isolation` says. It can import `cordon:host` only; its `fetch`,
 * `fs` and `capabilities` calls travel to the host, which checks them
 * against `policy` (and `checker`) and performs them; answers come back as
 * JSON data rebuilt inside the context. A call that overruns `timeoutMs`
 * or `memoryLimitBytes` resolves to a `TIMEOUT` or `OUT_OF_MEMORY` result
 * and the realm is replaced on the next call. The caller owns the sandbox
 * and must dispose it: on Deno and Node alike, a started realm (a child
 * process, a worker) keeps the process alive until `dispose()`, so a script
 * that forgets to does not exit.
 *
 * @param options The plugin, its policy, proxies and limits.
 * @returns The sandbox.
 * @throws {TypeError} When an option has the wrong shape or an unknown key
 * (at any depth: limits, policy, policy.fs, proxies).
 * @throws {RangeError} When a limit is out of range.
 * @throws {CordonError} `SANDBOX_UNAVAILABLE` for `isolation: "worker"` or
 * `"quickjs"` off Deno, or `"thread"` on Deno, or on Deno when the host may
 * not start the realm's process (`--allow-run` for the Deno executable and
 * `--allow-env=NODE_V8_COVERAGE`; asked at once where Deno would prompt);
 * `PROXY_FS_UNAVAILABLE` for folders in `policy.fs` without `proxies.fs`
 * on a host that cannot check what the default file proxy opens (on
 * Linux, a Deno host without every permission);
 * `GUEST_SYNTAX_ERROR` for a plugin module holding a NUL character or a
 * lone surrogate, which engines read differently.
 *
 * @example
 * ```ts ignore
 * import { createVmSandbox } from "@cordon/cordon/vm";
 * import assert from "node:assert/strict";
 *
 * await using sandbox = createVmSandbox({
 *   pluginId: "adder",
 *   pluginModule: {
 *     kind: "source",
 *     identifier: "adder.js",
 *     source: "export function add({ a, b }) { return a + b; }",
 *   },
 *   limits: { timeoutMs: 1000 },
 * });
 * const result = await sandbox.invoke("add", { a: 2, b: 3 });
 * assert.deepEqual(result.ok && result.value, 5);
 * ```
 */
export function createVmSandbox(options: VmSandboxOptions): VmSandbox {
  return new VmSandboxImpl(options);
}
