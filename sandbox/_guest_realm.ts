/**
 * The code that runs next to guest code, inside the guest's realm (the
 * worker, or the subprocess's main thread). {@linkcode prepareGuestRealm}
 * is self-contained: tiers inject its source text with `toString()` and
 * call it before guest code exists, so it captures the built-ins it uses
 * while they are still the originals.
 *
 * @module
 */

import type { Marshallers } from "../realm/marshal.ts";
import type { JsonValue, LogEntry } from "../protocol/sandbox_result.ts";

/** The failure codes a guest realm can report by itself. */
export type RealmFailureCode =
  | "GUEST_ERROR"
  | "GUEST_SYNTAX_ERROR"
  | "RESULT_NOT_SERIALIZABLE"
  | "SANDBOX_CRASHED"
  | "STACK_OVERFLOW"
  | "OUT_OF_MEMORY";

/** How a run ended, as the guest realm saw it. */
export type RealmOutcome =
  | { ok: true; value: JsonValue }
  | { ok: false; code: RealmFailureCode; name: string; message: string };

/** Receives one console line of guest code. */
export type RealmLog = (level: LogEntry["level"], message: string) => void;

/**
 * Guest source with a marker call put before its first statement, from
 * {@linkcode markGuestSource}.
 */
export interface MarkedSource {
  /** The module text to load. */
  text: string;
  /** The global name of the marker the text calls. */
  marker: string;
  /** The line the marker call sits on: 1, or 2 after a hashbang line. */
  line: number;
  /** How many characters the marker call adds to that line. */
  shift: number;
}

/** A marked guest module, loadable by URL, for {@linkcode GuestRealm.run}. */
export interface GuestModule {
  /** Where the realm imports the marked source from. */
  url: string;
  /** The marker's global name. */
  marker: string;
  /** The marker's line. */
  line: number;
  /** The marker's length on its line. */
  shift: number;
  /**
   * Whether the marker throws before anything is evaluated, so the module
   * and what it imports are parsed and linked but never run.
   */
  parseOnly: boolean;
}

/** A hardened realm, ready to run one guest module. */
export interface GuestRealm {
  /**
   * Imports a marked guest module and settles its default export: a
   * function is called with `context` and awaited, any other value is
   * awaited. Console lines go to `log` until `maxLogBytes` is used up; the
   * first line that does not fit is still passed on, so the receiver's own
   * collector sees the overflow, and nothing after it. A value whose JSON
   * text would pass `result.maxChars` is refused while it is copied, with
   * `result.refusal`.
   */
  run(
    module: GuestModule,
    context: JsonValue,
    maxLogBytes: number,
    log: RealmLog,
    result: ResultLimit,
  ): Promise<RealmAnswer>;
}

/**
 * A realm's outcome in a box without a prototype: resolving a promise with
 * an object reads its `then`, which a guest may have put on
 * `Object.prototype` to stall or forge the answer. Read it with a `then`
 * captured before guest code runs.
 */
export interface RealmAnswer {
  /** How the run ended. */
  outcome: RealmOutcome;
}

/** Imports a module by URL: `(url) => import(url)`, injected as source. */
export type ModuleImporter = (url: string) => Promise<unknown>;

/**
 * A run's bound on its result, which the tiers' hosts send with each run
 * (`ResultBound` of `_result_bound.ts`, which imports this module's types).
 */
export interface ResultLimit {
  /** The longest JSON text of the value, in UTF-16 code units. */
  maxChars: number;
  /** The outcome that answers a longer one. */
  refusal: Extract<RealmOutcome, { ok: false }>;
}

/** What {@linkcode prepareGuestRealm} removes from the realm. */
export interface GuestRealmSettings {
  /** Global names deleted before guest code runs. */
  removeGlobals: readonly string[];
}

/**
 * Puts a marker call before the guest's first statement, on its first
 * line (after a hashbang line), so line numbers stay, nothing of the guest
 * runs before it, and syntax positions on that line can be shifted back.
 * With `parseOnly` the marker is thrown by a module the guest imports
 * first: modules are evaluated in the order they are imported, so the
 * throw comes before any module the guest imports runs, not only before
 * its own body (the source is parsed for a message only because the scan
 * could not read it, so its imports were not checked). Self-contained:
 * tiers inject its source text where the module URL is made (the worker
 * host, the process child).
 *
 * @param source The guest ES module source.
 * @param parseOnly Whether the module must only be parsed.
 * @returns The marked source and where the marker sits.
 */
export function markGuestSource(
  source: string,
  parseOnly: boolean,
): MarkedSource {
  const marker = "__cordonGuestEvaluationStarts";
  const call = `globalThis[${JSON.stringify(marker)}]()`;
  const prefix = parseOnly
    ? `import "data:text/javascript,${encodeURIComponent(`throw ${call};`)}";`
    : `${call};`;
  const hashbang = /^#![^\n\r\u2028\u2029]*(\r\n|[\n\r\u2028\u2029])?/.exec(
    source,
  );
  const text = hashbang === null
    ? prefix + source
    : hashbang[0] + (hashbang[1] === undefined ? "\n" : "") + prefix +
      source.slice(hashbang[0].length);
  return {
    text,
    marker,
    line: hashbang === null ? 1 : 2,
    shift: prefix.length,
  };
}

/**
 * Hardens the current realm and returns its runner. Self-contained: it
 * refers to nothing outside its body.
 *
 * What it does, in order: captures the built-ins it needs; makes uncaught
 * errors and unhandled rejections of guest callbacks non-fatal (the run's
 * answer is the default export alone); keeps Deno from running guest
 * `unload` listeners when the process exits after the answer; deletes
 * `settings.removeGlobals`, the legacy RegExp statics,
 * `URL.createObjectURL` and `URL.revokeObjectURL`, and WebAssembly's
 * JavaScript promise integration (`WebAssembly.Suspending`, `promising`,
 * `SuspendError`); replaces
 * `console` with one that forwards formatted lines, and `close` with one
 * that ends the run as `SANDBOX_CRASHED` (a guest that closes its realm
 * gives no answer, on every tier).
 *
 * Syntax errors are told apart from errors thrown while the module runs by
 * the marker call {@linkcode markGuestSource} puts before the guest's first
 * statement: a module is parsed and linked before any of it runs, so when
 * the import fails before the marker ran, the source did not parse or link.
 * A parse-only module's marker throws, so it is parsed and linked but never
 * evaluated; the outcome is then `{ ok: true, value: null }` when it
 * parsed, or the engine's `GUEST_SYNTAX_ERROR`.
 *
 * @param marshallers The realm's marshallers, from `createMarshallers()`.
 * @param settings What to remove.
 * @param importer Imports a module of this realm by URL. It is injected as
 * source text, so the only `import()` next to guest code is one that reads
 * the guest module URLs its tier made.
 * @returns The runner.
 * @throws {Error} When a global cannot be removed.
 */
export function prepareGuestRealm(
  marshallers: Marshallers,
  settings: GuestRealmSettings,
  importer: ModuleImporter,
): GuestRealm {
  const global = globalThis as unknown as Record<PropertyKey, unknown>;
  const {
    defineProperty,
    getOwnPropertyDescriptor,
    getPrototypeOf,
    hasOwn,
  } = Object;
  const { apply } = Reflect;
  const { max } = Math;
  const promiseThen = Promise.prototype.then;
  const {
    charCodeAt: charCodeAtOf,
    lastIndexOf: lastIndexOfIn,
    slice: sliceOf,
  } = String.prototype;
  const box = (outcome: RealmOutcome): RealmAnswer =>
    ({ __proto__: null, outcome }) as unknown as RealmAnswer;
  const encoder = new TextEncoder();
  const encode = encoder.encode.bind(encoder);
  // Read through the getter captured now: a guest may replace it later.
  const byteLengthOf = getOwnPropertyDescriptor(
    getPrototypeOf(Uint8Array.prototype),
    "byteLength",
  )!.get!;
  const listen = globalThis.addEventListener.bind(globalThis);
  const importModule = importer as (
    url: string,
  ) => Promise<Record<string, unknown>>;
  const {
    toWireValue,
    isRefusal,
    isTooLarge,
    describeThrown,
    formatLogArgs,
    levels,
  } = marshallers;
  const MODULE_LABEL = "guest";
  const LEADING_POSITION = /^:(\d+):(\d+)/;
  // The code Deno gives the error it makes of one a module's evaluation threw.
  const REMADE_ERROR_CODE = "ERR_MODULE_NOT_FOUND";

  listen("error", (event: Event) => event.preventDefault());
  listen("unhandledrejection", (event: Event) => event.preventDefault());
  // Deno runs `unload` listeners when its process exits, after the answer;
  // it skips them once this flag is set. This one stays set, and ignores
  // the assignment Deno makes when it dispatches `unload` itself.
  defineProperty(global, Symbol.for("Deno.isUnloadDispatched"), {
    get: () => true,
    set: () => {},
    configurable: false,
    enumerable: false,
  });

  for (const name of settings.removeGlobals) {
    if (!(name in global)) continue;
    delete global[name];
    if (name in global) {
      throw new Error(`Cannot remove the global ${name} from a sandbox realm`);
    }
  }

  // Deno keeps a blob URL's bytes in its process, outside the realm, until
  // the URL is revoked: on the worker tier a URL a guest registered outlived
  // its worker, so a later guest on the same host could fetch it and its
  // bytes took that guest's memory. QuickJS has no createObjectURL either.
  for (const name of ["createObjectURL", "revokeObjectURL"]) {
    delete (URL as unknown as Record<string, unknown>)[name];
    if (name in URL) {
      throw new Error(`Cannot remove URL.${name} from a sandbox realm`);
    }
  }

  // V8 gives every suspended JSPI call (WebAssembly.promising over an
  // import wrapped in WebAssembly.Suspending) a stack of its own, mapped
  // outside the heap, and ends the whole process when it cannot map one
  // more ("Fatal process out of memory: StackMemory::StackSegment"): 50,000
  // calls left suspended ended the worker host, and every run on it, with
  // SIGTRAP. QuickJS has no WebAssembly and the vm tier compiles none.
  const wasm = global.WebAssembly as Record<string, unknown> | undefined;
  for (const name of ["Suspending", "promising", "SuspendError"]) {
    if (wasm === undefined) break;
    delete wasm[name];
    if (name in wasm) {
      throw new Error(`Cannot remove WebAssembly.${name} from a sandbox realm`);
    }
  }

  // Deno formats the stack of an error a guest module's evaluation threw,
  // which would run a guest's Error.prepareStackTrace on the way to the
  // answer (an endless one stalled it to TIMEOUT): the hook stays V8's own.
  defineProperty(Error, "prepareStackTrace", {
    value: undefined,
    writable: false,
    configurable: false,
    enumerable: false,
  });

  let sink: RealmLog | undefined;
  let budget = 0;
  let used = 0;
  let capped = false;

  function emit(level: LogEntry["level"], args: unknown[]): void {
    if (capped || sink === undefined) return;
    const message = formatLogArgs(args);
    // Formatting runs guest code (a toJSON, a getter) that may log in turn
    // and use the budget up: the line that met it then was the last.
    if (capped) return;
    // At least one byte, as the host's collector counts it: empty lines
    // would otherwise cross to the host without end.
    const size = message.length > budget
      ? message.length
      : max(1, apply(byteLengthOf, encode(message), []) as number);
    if (used + size > budget) capped = true;
    else used += size;
    sink(level, message);
  }

  const guestConsole: Record<string, (...args: unknown[]) => void> = {};
  for (const level of levels) {
    guestConsole[level] = {
      [level](...args: unknown[]): void {
        emit(level, args);
      },
    }[level]!;
  }
  defineProperty(global, "console", {
    value: guestConsole,
    writable: true,
    configurable: true,
    enumerable: false,
  });

  let endEarly: ((outcome: RealmOutcome) => void) | undefined;
  defineProperty(global, "close", {
    value: function close(): void {
      endEarly?.({
        ok: false,
        code: "SANDBOX_CRASHED",
        name: "SandboxCrashedError",
        message:
          "Guest code called close(), so the sandbox ended without an answer: return a value from the default export instead",
      });
    },
    writable: true,
    configurable: true,
    enumerable: true,
  });

  // The engine's own error for an exhausted stack keeps its code, told by
  // identity, so a guest's object with the same name and message stays a
  // GUEST_ERROR; `code`, where given, says what else failed.
  function failure(thrown: unknown, code?: RealmFailureCode): RealmOutcome {
    const described = describeThrown(thrown);
    return {
      ok: false,
      code: code ?? described.code,
      name: described.name,
      message: described.message,
    };
  }

  function run(
    module: GuestModule,
    context: JsonValue,
    maxLogBytes: number,
    log: RealmLog,
    result: ResultLimit,
  ): Promise<RealmAnswer> {
    sink = log;
    budget = maxLogBytes;
    // Read before guest code runs, which may put getters on prototypes.
    const bound = { maxChars: result.maxChars, refusal: result.refusal };
    return new Promise((resolve) => {
      endEarly = (outcome) => resolve(box(outcome));
      apply(promiseThen, settle(module, context, bound), [resolve]);
    });
  }

  // Deno adds " at <module URL>:<line>:<column>" to the message of an error
  // a module's evaluation threw when its stack names no frame (a guest's
  // error without a stack, the engine's own error from a promise job). The
  // URL is this tier's and the position counts the marker; QuickJS adds
  // nothing, so the message is the guest's own again. Only an error Deno
  // made loses that tail: a guest's own message may end with the same text
  // (one built from another error's stack) and is passed on whole. Guest
  // code has run: the string methods are the ones captured above.
  function withoutModuleLocation(
    outcome: RealmOutcome,
    thrown: unknown,
    module: GuestModule,
  ): RealmOutcome {
    if (outcome.ok) return outcome;
    const { message } = outcome;
    const tail = " at " + module.url + ":";
    const at = apply(lastIndexOfIn, message, [tail]) as number;
    if (at < 0 || !isRemadeByDeno(thrown)) return outcome;
    let colons = 0;
    let digits = 0;
    for (let i = at + tail.length; i < message.length; i++) {
      const unit = apply(charCodeAtOf, message, [i]) as number;
      if (unit === 0x3a && digits > 0 && colons === 0) {
        colons++;
        digits = 0;
      } else if (unit >= 0x30 && unit <= 0x39) {
        digits++;
      } else {
        return outcome;
      }
    }
    if (colons !== 1 || digits === 0) return outcome;
    return { ...outcome, message: apply(sliceOf, message, [0, at]) as string };
  }

  // Deno makes that error anew, as the failed import it reports, with an
  // own `code` of ERR_MODULE_NOT_FOUND; the error a guest threw reaches
  // here as it was thrown. Read as a descriptor, so no getter of the guest's
  // runs; a proxy's trap that throws makes it the guest's own.
  function isRemadeByDeno(thrown: unknown): boolean {
    if (typeof thrown !== "object" || thrown === null) return false;
    let own: PropertyDescriptor | undefined;
    try {
      own = getOwnPropertyDescriptor(thrown, "code");
    } catch {
      return false;
    }
    // An accessor's descriptor has no own `value`: reading one would reach
    // a getter the guest may have put on Object.prototype.
    return own !== undefined && hasOwn(own, "value") &&
      own.value === REMADE_ERROR_CODE;
  }

  // The engine's message about a module that did not parse or link, with
  // the module's URL (long, for a data: URL) replaced by a short label and
  // positions on the marker's line shifted back to the guest's own.
  function syntaxFailure(thrown: unknown, module: GuestModule): RealmOutcome {
    // V8 may run out of stack parsing source nested too deep (3,000 try
    // statements) and throw its RangeError, where Deno's module loader
    // more often ends the process: either is the source's depth.
    const described = describeThrown(thrown);
    if (described.code === "STACK_OVERFLOW") return failure(thrown);
    let raw: unknown;
    try {
      // Only the engine threw: no guest code ran before the marker.
      raw = (thrown as { message?: unknown }).message;
    } catch {
      raw = undefined;
    }
    let message = describeThrown(thrown).message;
    if (typeof raw === "string") {
      const pieces = raw.split(module.url);
      message = pieces[0]!;
      for (let i = 1; i < pieces.length; i++) {
        message += MODULE_LABEL + pieces[i]!.replace(
          LEADING_POSITION,
          (all, line: string, column: string) =>
            Number(line) === module.line && Number(column) > module.shift
              ? `:${line}:${Number(column) - module.shift}`
              : all,
        );
      }
      message = describeThrown({ name: "SyntaxError", message }).message;
    }
    return {
      ok: false,
      code: "GUEST_SYNTAX_ERROR",
      name: "SyntaxError",
      message,
    };
  }

  async function settle(
    module: GuestModule,
    context: JsonValue,
    result: ResultLimit,
  ): Promise<RealmAnswer> {
    let started = false;
    const parsed = {};
    defineProperty(global, module.marker, {
      configurable: true,
      value: () => {
        started = true;
        delete global[module.marker];
        return parsed;
      },
    });
    let namespace: Record<string, unknown>;
    try {
      namespace = await importModule(module.url);
    } catch (thrown) {
      if (thrown === parsed) return box({ ok: true, value: null });
      if (!started) return box(syntaxFailure(thrown, module));
      return box(withoutModuleLocation(failure(thrown), thrown, module));
    } finally {
      delete global[module.marker];
    }
    if (module.parseOnly) return box({ ok: true, value: null });
    let value: unknown;
    try {
      value = namespace.default;
      if (typeof value === "function") value = value(context);
      value = await value;
    } catch (thrown) {
      return box(failure(thrown));
    }
    try {
      // Counted while it is copied, each string as often as it appears,
      // so a text past the bound is neither copied whole nor posted.
      return box({ ok: true, value: toWireValue(value, result.maxChars) });
    } catch (thrown) {
      if (isTooLarge(thrown)) return box(result.refusal);
      return box(failure(
        thrown,
        isRefusal(thrown) ? "RESULT_NOT_SERIALIZABLE" : undefined,
      ));
    }
  }

  return { run };
}
