/**
 * The code that runs inside a plugin's vm context before plugin code: the
 * `cordon:host` proxies, the console, the invoke entry and the lockdown.
 * The realm evaluates its source text inside the context, so every object
 * and function it makes belongs to the context's own intrinsics.
 *
 * It reaches the realm's thread only through {@linkcode RealmHooks}, which
 * take and return primitives (but for one `ArrayBuffer` of the context's
 * own); nothing they throw reaches plugin code.
 *
 * Each console line crosses to the realm's thread as it is logged, before
 * anything that follows it (a proxy call, an answer, a load's outcome), so
 * the host sees lines in the order they were logged, and a plugin that
 * loops or runs out of memory next cannot keep a line it already logged.
 *
 * @module
 */

import { LOCKDOWN_STEPS, OVERRIDE_RULE } from "../realm/lockdown.ts";
import { realmSource } from "../realm/realm_source.ts";
import { createMarshallers } from "../realm/marshal.ts";
import { ES_BUILTINS_STEPS } from "../realm/es_builtins.ts";
import { coarsenTemporalNow } from "../realm/coarse_clocks.ts";
import { removeLegacyRegExpStatics } from "../realm/legacy_regexp_statics.ts";
import { WEB_GLOBALS_STEPS } from "../realm/web_globals.ts";
import type { OverrideRule } from "../realm/tame_overrides.ts";

/** Functions the realm's thread lends to the context (primitives only). */
export interface RealmHooks {
  /** Sends a proxy call to the host; `true` when it was sent. */
  call(callId: number, op: string, argsJson: string): boolean;
  /** Reports an invocation's outcome to the host. */
  report(invocationId: number, ok: boolean, json: string): boolean;
  /**
   * Forwards one console line to the host, already cut to what the host
   * keeps, as JSON text: a QuickJS realm reads a string of its context as
   * UTF-8 up to its first NUL. The level `out-of-memory`, which the host
   * never keeps, tells the realm's thread that QuickJS ran out of memory
   * formatting a line.
   */
  log(level: string, lineJson: string): boolean;
  /**
   * Lent by a realm whose engine decodes slowly (QuickJS interprets the
   * context's base64 decoder at some 3 µs a byte): the bytes of base64
   * text, read as `atob` reads it, in an `ArrayBuffer` the realm made in
   * the context, or `false` for text `atob` refuses. The one hook that
   * returns an object: the context takes it only when its prototype is
   * the context's own `ArrayBuffer.prototype`.
   */
  bytesOfBase64?(text: string): ArrayBuffer | false;
  /**
   * Lent with {@linkcode RealmHooks.bytesOfBase64}: the text of base64
   * UTF-8 bytes, as WHATWG's decoder reads them, or `false` for text that
   * is not base64.
   */
  textOfBase64?(text: string): string | false;
  /**
   * Lent by a realm whose engine throws its out-of-memory error, or `null`
   * when it cannot even make that error (QuickJS): whether the engine saw
   * the memory refuse a growth during the plugin code running now. V8 ends
   * the realm there instead.
   */
  memoryRefused?(): boolean;
}

/** What the bootstrap hands back to the realm's thread. */
export type ContextControl = ReturnType<typeof buildContext>;

/** The names `cordon:host` exports, in order. */
export const HOST_EXPORT_NAMES: readonly string[] = Object.freeze([
  "fetch",
  "fs",
  "capabilities",
  "console",
  "base64",
  "utf8",
  "bodyText",
  "pluginId",
]);

/** The realm functions the context calls, by name. */
const LIBRARY = {
  ...LOCKDOWN_STEPS,
  ...ES_BUILTINS_STEPS,
  ...WEB_GLOBALS_STEPS,
  createMarshallers,
  removeLegacyRegExpStatics,
  coarsenTemporalNow,
};

/**
 * The source the realm evaluates inside the context: a function
 * `(hooks, initJson)` that calls {@linkcode buildContext} with the
 * context's own copies of the realm functions and the override rule.
 */
export const CONTEXT_BOOTSTRAP_SOURCE: string = realmSource(
  buildContext,
  LIBRARY,
  { overrides: OVERRIDE_RULE },
);

/**
 * Builds the context side of a plugin realm, inside the context.
 *
 * @param initJson `{ pluginId, capabilities, randomKey, maxPayloadBytes }`
 *   as JSON.
 */
function buildContext(
  library: typeof LIBRARY,
  data: { overrides: OverrideRule },
  hooks: RealmHooks,
  initJson: string,
) {
  "use strict";
  const { create, defineProperty, freeze, getPrototypeOf } = Object;
  const objectValues = Object.values;
  const { apply, construct, deleteProperty, ownKeys } = Reflect;
  const { parse, stringify } = JSON;
  const toText = String;
  const PromiseCtor = Promise;
  const promiseThen = Promise.prototype.then;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const RangeErrorCtor = RangeError;
  const MapCtor = Map;
  const WeakSetCtor = WeakSet;
  const Uint8ArrayCtor = Uint8Array;
  const isArray = Array.isArray;
  const sliceText = String.prototype.slice;
  const MathCeil = Math.ceil;
  const hookCall = hooks.call;
  const hookReport = hooks.report;
  const hookLog = hooks.log;
  const hookBytes = hooks.bytesOfBase64;
  const hookText = hooks.textOfBase64;
  const hookMemoryRefused = hooks.memoryRefused;
  const ArrayBufferPrototype = ArrayBuffer.prototype;
  const init = parse(initJson) as {
    pluginId: string;
    capabilities: string[];
    randomKey: number[];
    maxPayloadBytes: number;
  };
  // Text past the host's limit is refused while it is written: built whole,
  // one string can end a worker's whole process (see realm/marshal.ts).
  const maxPayloadBytes = init.maxPayloadBytes;
  const marshal = library.createMarshallers({ maxJsonChars: maxPayloadBytes });
  const ours = new WeakSetCtor<object>();
  interface PendingCall {
    op: string;
    resolve(value: unknown): void;
    reject(reason: unknown): void;
  }
  const pending = new MapCtor<number, PendingCall>();
  let nextCallId = 1;
  let namespace: Record<string, unknown> | null = null;

  // A property as a built-in's methods and the globals are: writable and
  // configurable, not enumerable.
  function defineWritable(target: object, key: string, value: unknown): void {
    defineProperty(target, key, { value, writable: true, configurable: true });
  }

  function makeError(
    code: string,
    name: string,
    message: string,
    kind: string = name,
  ): Error {
    const Ctor = kind === "TypeError"
      ? TypeErrorCtor
      : kind === "RangeError"
      ? RangeErrorCtor
      : ErrorCtor;
    const error = new Ctor(message);
    // Fixed: a property defineProperty creates is read-only by default.
    defineProperty(error, "name", { value: name });
    defineProperty(error, "code", { value: code, enumerable: true });
    // The stack would name the realm thread's frames: keep the text only.
    // V8's own is removed first: defining over it formats the trace,
    // which cost a Node realm process about 1 ms an error.
    deleteProperty(error, "stack");
    defineWritable(error, "stack", `${name}: ${message}`);
    ours.add(error);
    return error;
  }

  // Calls into the realm thread: `undefined` where a hook is not lent or
  // throws, as the realm is going away, logging never fails plugin code,
  // and the context decodes for itself what a decoding hook does not.
  function quietly(
    hook: ((...args: never[]) => unknown) | undefined,
    ...args: unknown[]
  ): unknown {
    if (hook === undefined) return undefined;
    try {
      return apply(hook, undefined, args);
    } catch {
      return undefined;
    }
  }

  function report(invocationId: number, ok: boolean, json: string): void {
    quietly(hookReport, invocationId, ok, json);
  }

  function reportFailure(
    invocationId: number,
    code: string,
    name: string,
    message: string,
  ): void {
    report(invocationId, false, stringify({ code, name, message }));
  }

  // ---- the built-ins the engine lacks, and the context's own Web APIs ----

  library.installEsBuiltins(library, globalThis);
  const web = library.installWebGlobals(library, globalThis);
  web.rekey(init.randomKey);
  const encoder = new web.text.TextEncoder();
  const decoder = new web.text.TextDecoder();

  function base64Encode(bytes: Uint8Array): string {
    if (!(bytes instanceof Uint8ArrayCtor)) {
      throw new TypeErrorCtor(
        "Cannot encode this value as base64: pass a Uint8Array",
      );
    }
    return web.text.encodeBase64(bytes);
  }

  function utf8Encode(text: string): Uint8Array {
    return encoder.encode(toText(text));
  }

  // As the host's `Response.text()` reads bytes (WHATWG's UTF-8 decoder).
  function utf8Decode(bytes: Uint8Array): string {
    if (!(bytes instanceof Uint8ArrayCtor)) {
      throw new TypeErrorCtor("Cannot decode UTF-8: pass a Uint8Array");
    }
    return decoder.decode(bytes);
  }

  function base64Decode(text: unknown): Uint8Array {
    const base64 = toText(text);
    const lent = quietly(hookBytes, base64);
    // Only a buffer of the context's own: never an object of the host.
    return typeof lent === "object" && lent !== null &&
        getPrototypeOf(lent) === ArrayBufferPrototype
      ? new Uint8ArrayCtor(lent as ArrayBuffer)
      : web.text.decodeBase64(base64);
  }

  function textOfBase64(base64: string): string {
    const lent = quietly(hookText, base64);
    return typeof lent === "string"
      ? lent
      : utf8Decode(web.text.decodeBase64(base64));
  }

  // ---- proxy calls to the host ----

  // The host's own answer to arguments over its limit.
  function argumentsTooLarge(op: string): Error {
    return makeError(
      "PROXY_LIMIT_EXCEEDED",
      "RangeError",
      `Cannot perform ${op}: its arguments are larger than ${maxPayloadBytes} bytes as JSON; pass less or raise limits.maxPayloadBytes`,
    );
  }

  // The stack ran out while the arguments were written: the marshalling
  // refuses them past its nesting cap first, so this is a call made with
  // most of the stack in use already, which gets the code a plugin's own
  // recursion gets.
  function argumentsTooDeep(op: string): Error {
    return makeError(
      "STACK_OVERFLOW",
      "StackOverflowError",
      `Cannot pass the arguments of ${op} to the host: the stack ran out while they were written; make the call with less of the stack in use`,
      "RangeError",
    );
  }

  /**
   * The JSON text of `op`'s arguments, or the error that rejects the call:
   * the plugin's own throw (a getter or a toJSON() of its arguments) as it
   * is, as a throwing toString() of a path or a URL rejects it.
   */
  function argsJson(op: string, args: unknown): string {
    try {
      return marshal.toWireJson(args);
    } catch (thrown) {
      // QuickJS ran out of memory (a toJSON that made a huge string): its
      // own error goes on, to end the call as OUT_OF_MEMORY at its edge.
      if (marshal.isOutOfMemory(thrown)) throw thrown;
      if (marshal.isStackOverflow(thrown)) throw argumentsTooDeep(op);
      if (!marshal.isRefusal(thrown)) throw thrown;
      if (marshal.isTooLarge(thrown)) throw argumentsTooLarge(op);
      throw marshal.isTooDeep(thrown)
        ? makeError(
          "RESULT_NOT_SERIALIZABLE",
          "RangeError",
          `Cannot pass the arguments of ${op} to the host: they are nested deeper than ${marshal.maxDepth} levels; pass flatter data, or pass the deeper part as JSON text`,
        )
        : makeError(
          "RESULT_NOT_SERIALIZABLE",
          "TypeError",
          `Cannot pass the arguments of ${op} to the host: use JSON-safe data (no functions, symbols or cycles)`,
        );
    }
  }

  /**
   * Asks the host for `op`, with the JSON text `makeJson` writes. The text
   * is made inside the promise, so arguments whose conversion throws reject
   * the call instead of throwing.
   */
  function request(op: string, makeJson: () => string): Promise<unknown> {
    return new PromiseCtor((resolve, reject) => {
      const json = makeJson();
      const callId = nextCallId++;
      pending.set(callId, { op, resolve, reject });
      if (quietly(hookCall, callId, op, json) !== true) {
        pending.delete(callId);
        throw makeError(
          "SANDBOX_CRASHED",
          "Error",
          `Cannot reach the host for ${op}: the plugin is shutting down; retry later`,
        );
      }
    });
  }

  interface FetchAnswer {
    status: number;
    statusText: string;
    url: string;
    headers: [string, string][];
    bodyBase64: string;
  }

  // Whether a value JSON.parse made nests within the cap every value
  // crossing into the realm is held to: its arrays and objects hold own
  // data properties only, so reading them runs no plugin code.
  function nestsWithinCap(value: unknown, level: number): boolean {
    if (typeof value !== "object" || value === null) return true;
    if (level === marshal.maxDepth) return false;
    const items = isArray(value) ? value : objectValues(value);
    for (let i = 0; i < items.length; i++) {
      if (!nestsWithinCap(items[i], level + 1)) return false;
    }
    return true;
  }

  // A response body read as JSON, held to the cap on nesting as a
  // capability's answer is: V8 parses any depth, QuickJS until its stack
  // gives out, so the cap, not the engine, decides on every tier.
  function bodyJson(url: string, body: string): unknown {
    const tooDeep = () =>
      makeError(
        "RESULT_NOT_SERIALIZABLE",
        "RangeError",
        `Cannot read the response of "${url}" as JSON: it is nested deeper than ${marshal.maxDepth} levels; read it with text() and parse the part you need`,
      );
    let value: unknown;
    try {
      value = parse(textOfBase64(body));
    } catch (thrown) {
      if (marshal.isStackOverflow(thrown)) throw tooDeep();
      throw thrown;
    }
    if (!nestsWithinCap(value, 0)) throw tooDeep();
    return value;
  }

  function makeFetchResponse(data: FetchAnswer): unknown {
    // Decoded when read, and as what it is read as.
    const body = data.bodyBase64;
    const headers = freeze(data.headers.map((pair) => freeze(pair)));
    return freeze({
      ok: data.status >= 200 && data.status < 300,
      status: data.status,
      statusText: data.statusText,
      url: data.url,
      headers,
      header(name: string): string | null {
        const wanted = toText(name).toLowerCase();
        for (const pair of headers) if (pair[0] === wanted) return pair[1];
        return null;
      },
      text: (): Promise<string> =>
        new PromiseCtor((resolve) => resolve(textOfBase64(body))),
      json: (): Promise<unknown> =>
        new PromiseCtor((resolve) => resolve(bodyJson(data.url, body))),
      bytes: (): Promise<Uint8Array> =>
        new PromiseCtor((resolve) => resolve(base64Decode(body))),
    });
  }

  function settle(callId: number, ok: boolean, json: string): void {
    const entry = pending.get(callId);
    if (entry === undefined) return;
    pending.delete(callId);
    let data: unknown;
    try {
      data = parse(json);
      if (ok) {
        const answer = data as FetchAnswer;
        entry.resolve(entry.op === "fetch" ? makeFetchResponse(answer) : data);
        return;
      }
    } catch {
      entry.reject(makeError(
        "PROXY_CALL_FAILED",
        "Error",
        `The host's answer to ${entry.op} was not readable: retry`,
      ));
      return;
    }
    const { code, name, message } = (data ?? {}) as Record<string, unknown>;
    entry.reject(makeError(
      typeof code === "string" ? code : "PROXY_CALL_FAILED",
      typeof name === "string" ? name : "Error",
      typeof message === "string" ? message : `The host refused ${entry.op}`,
    ));
  }

  const BAD_HEADERS =
    "Cannot read fetch headers: pass [name, value] pairs or an object";

  function headerPairs(headers: unknown): [string, string][] {
    if (headers === undefined || headers === null) return [];
    if (typeof headers !== "object") throw new TypeErrorCtor(BAD_HEADERS);
    const pairs: [string, string][] = [];
    if (!isArray(headers)) {
      const record = headers as Record<string, unknown>;
      for (const key of ownKeys(record)) {
        if (typeof key === "string") pairs.push([key, toText(record[key])]);
      }
      return pairs;
    }
    for (const pair of headers as unknown[]) {
      if (!isArray(pair) || pair.length !== 2) {
        throw new TypeErrorCtor(BAD_HEADERS);
      }
      pairs.push([toText(pair[0]), toText(pair[1])]);
    }
    return pairs;
  }

  /**
   * `value` as text for the arguments of `op`, refused when the text alone
   * is longer than maxPayloadBytes. A name or method is copied in one
   * builtin call (into JSON, or into upper case), which a worker's heap
   * limit cannot stop (see realm/marshal.ts); refused by its length first,
   * text far over the limit is never copied.
   */
  function argumentText(op: string, value: unknown): string {
    const text = toText(value);
    if (text.length > maxPayloadBytes) throw argumentsTooLarge(op);
    return text;
  }

  // Asks the host for `op` with the arguments `args` gives, as JSON text
  // (see request).
  function ask(op: string, args: () => unknown): Promise<unknown> {
    return request(op, () => argsJson(op, args()));
  }

  function hostFetch(input: unknown, options?: unknown): Promise<unknown> {
    return ask("fetch", () => fetchArgs(input, options));
  }

  function fetchArgs(input: unknown, options?: unknown): unknown {
    const init: { method?: unknown; headers?: unknown; body?: unknown } =
      typeof options === "object" && options !== null ? options : {};
    const url = typeof input === "object" && input !== null &&
        typeof (input as { url?: unknown }).url === "string"
      ? (input as { url: string }).url
      : toText(input);
    let bodyBase64: string | null = null;
    if (init.body !== undefined && init.body !== null) {
      const body = init.body instanceof Uint8ArrayCtor
        ? init.body
        : toText(init.body);
      // Refused before its bytes are made: encoding a body far over the
      // limit would fill the realm's heap in one builtin call, which a
      // worker's heap limit cannot stop (see realm/marshal.ts). A string
      // takes at least one UTF-8 byte per UTF-16 code unit.
      const leastBytes = typeof body === "string"
        ? body.length
        : body.byteLength;
      if (MathCeil(leastBytes / 3) * 4 > maxPayloadBytes) {
        throw argumentsTooLarge("fetch");
      }
      const bytes = typeof body === "string" ? utf8Encode(body) : body;
      bodyBase64 = base64Encode(bytes);
    }
    return {
      url,
      method: init.method === undefined
        ? "GET"
        : argumentText("fetch", init.method).toUpperCase(),
      headers: headerPairs(init.headers),
      bodyBase64,
    };
  }

  /**
   * A capability call's JSON text: its arguments are written on their
   * own, so they may nest as deeply as any value crossing to the host, the
   * call's envelope not counted, and the whole stays within
   * maxPayloadBytes.
   */
  function capabilityJson(name: unknown, args: unknown): string {
    const json = `{"name":${
      stringify(argumentText("capability", name))
    },"args":${argsJson("capability", args === undefined ? null : args)}}`;
    if (json.length > maxPayloadBytes) throw argumentsTooLarge("capability");
    return json;
  }

  const fs = {
    readTextFile: (path: unknown): Promise<unknown> =>
      ask("fs.readTextFile", () => ({ path: toText(path) })),
    writeTextFile: (path: unknown, text: unknown): Promise<unknown> =>
      ask(
        "fs.writeTextFile",
        () => ({ path: toText(path), text: toText(text) }),
      ),
    readDir: (path: unknown): Promise<unknown> =>
      ask("fs.readDir", () => ({ path: toText(path) })),
  };

  const granted: readonly string[] = freeze(init.capabilities.slice());
  const capabilities = {
    list: (): string[] => granted.slice(),
    has: (name: unknown): boolean => granted.includes(toText(name)),
    call: (name: unknown, args?: unknown): Promise<unknown> =>
      request("capability", () => capabilityJson(name, args)),
  };

  // The realm's thread ends the realm on a line of this level, which the
  // host never keeps.
  const OUT_OF_MEMORY_LEVEL = "out-of-memory";
  // The host keeps 8192 characters of a line: the rest never leaves.
  const MAX_LINE_CHARS = 8193;

  function logger(level: string): (...args: unknown[]) => void {
    // A method named by its level (console.log.name is "log"), as on every
    // other tier.
    const named: Record<string, (...args: unknown[]) => void> = {
      [level](...args: unknown[]): void {
        let line: string;
        try {
          line = marshal.formatLogArgs(args);
        } catch (thrown) {
          // QuickJS ran out of memory formatting the line: the realm tells
          // its host, which ends it, as V8 ends a realm whose heap is spent.
          if (marshal.isOutOfMemory(thrown)) {
            quietly(hookLog, OUT_OF_MEMORY_LEVEL, "");
          }
          // An argument's getter or Proxy trap threw: the plugin's own
          // error reaches its call, as a guest's does on every other tier.
          throw thrown;
        }
        // One crossing per line: a line that waited here for company would
        // be lost to a plugin that loops or runs out of memory right after.
        line = apply(sliceText, line, [0, MAX_LINE_CHARS]);
        quietly(hookLog, level, stringify(line));
      },
    };
    return named[level]!;
  }
  const console: Record<string, (...args: unknown[]) => void> = {};
  for (const level of marshal.levels) console[level] = logger(level);

  function bodyText(request: unknown): string {
    const body = typeof request === "object" && request !== null
      ? (request as { bodyBase64?: unknown }).bodyBase64
      : null;
    return typeof body === "string" ? textOfBase64(body) : "";
  }

  const exportsTable: Record<string, unknown> = {
    fetch: hostFetch,
    fs,
    capabilities,
    console,
    base64: { encode: base64Encode, decode: base64Decode },
    utf8: { encode: utf8Encode, decode: utf8Decode },
    bodyText,
    pluginId: init.pluginId,
  };

  // ---- describing failures ----

  type Detail = { code: string; name: string; message: string };

  // Named as every tier names it (the worker, process and QuickJS runs,
  // and this realm's own source too deep to parse), not after the
  // engine's RangeError or InternalError.
  const STACK_OVERFLOW: Detail = freeze({
    code: "STACK_OVERFLOW",
    name: "StackOverflowError",
    message: "The plugin exceeded its stack limit: reduce recursion depth",
  });
  const OUT_OF_MEMORY: Detail = freeze({
    code: "OUT_OF_MEMORY",
    name: "OutOfMemoryError",
    message:
      "The plugin ran out of memory: use less memory or raise limits.memoryLimitBytes",
  });

  function describeValue(thrown: unknown): Detail {
    const detail = marshal.describeThrown(thrown);
    if (typeof thrown === "object" && thrown !== null && ours.has(thrown)) {
      // Its code is fixed, but plugin code that caught it may have made
      // its message a getter or a string of megabytes: that is read and
      // clipped as any thrown value's is.
      const { code } = thrown as Detail;
      return { code, name: detail.name, message: detail.message };
    }
    // `null` right after the memory's cap refused to grow: the engine
    // could not even make its error.
    if (thrown === null && quietly(hookMemoryRefused) === true) {
      return OUT_OF_MEMORY;
    }
    // The engine's own errors keep their codes, told by identity (not by
    // a name and message any object can carry), in the plugin's words;
    // QuickJS's uninitialized marker (a normalize() or localeCompare()
    // whose allocation failed without making an error) is OUT_OF_MEMORY
    // there too (marshal.isOutOfMemory).
    if (detail.code === "STACK_OVERFLOW") return STACK_OVERFLOW;
    if (detail.code !== "OUT_OF_MEMORY") return detail;
    // Plugin code can make an error of QuickJS's class and message itself
    // (new InternalError("out of memory")): without the realm's record
    // that the memory refused to grow, it is the plugin's own throw.
    return quietly(hookMemoryRefused) === false
      ? { code: "GUEST_ERROR", name: detail.name, message: detail.message }
      : OUT_OF_MEMORY;
  }

  function describe(thrown: unknown): string {
    try {
      return stringify(describeValue(thrown));
    } catch {
      return stringify({
        code: "GUEST_ERROR",
        name: "Error",
        message: "The plugin threw a value that cannot be described",
      });
    }
  }

  // ---- finalization callbacks ----

  // The engine calls a registry's cleanup callback when it collects,
  // outside any call and so any deadline: a plugin could spin in one while
  // nobody calls. The callback runs as a promise job instead, which the
  // realm runs under a call's or a ping's deadline, as any plugin job.
  function deferCleanups(global: Record<string, unknown>): void {
    if (typeof global.FinalizationRegistry !== "function") return;
    const Native = global.FinalizationRegistry as new (
      cleanup: unknown,
    ) => object;
    const settled = PromiseCtor.resolve();
    function FinalizationRegistry(this: unknown, cleanup: unknown): object {
      if (new.target === undefined) {
        throw new TypeErrorCtor(
          "Constructor FinalizationRegistry requires 'new'",
        );
      }
      const deferred = typeof cleanup === "function"
        ? (held: unknown) => {
          apply(promiseThen, settled, [
            () => apply(cleanup, undefined, [held]),
          ]);
        }
        : cleanup;
      return construct(Native, [deferred], new.target);
    }
    FinalizationRegistry.prototype = Native.prototype;
    defineWritable(Native.prototype, "constructor", FinalizationRegistry);
    defineWritable(global, "FinalizationRegistry", FinalizationRegistry);
  }

  // ---- lockdown ----

  function lockdown(): void {
    const global = globalThis as unknown as Record<string, unknown>;
    deferCleanups(global);
    // V8 keeps a context's last match on RegExp for as long as the realm
    // serves calls: what a call matched (a token in one tenant's request)
    // would be there for the next call's code to read.
    library.removeLegacyRegExpStatics();
    // Temporal.Now reads the host's clock to the microsecond, a finer clock
    // than Date.now(), the only one QuickJS has: it reads Date.now() too.
    library.coarsenTemporalNow();
    // The engine's console logs nowhere useful: replace it with ours.
    delete global.console;
    defineWritable(global, "console", console);
    // Existing globals become read-only; new globals stay possible, as on
    // every tier (and the global object of a vm context cannot be frozen).
    library.lockdownRealm(library, data.overrides, global, [exportsTable]);
  }

  // ---- invocations ----

  // Runs an exported function: the JSON of its answer when it returned a
  // value at once; otherwise the outcome goes to report().
  function invoke(
    invocationId: number,
    name: string,
    payloadJson: string,
  ): string | undefined {
    let result: unknown;
    let then: unknown;
    try {
      const fn = namespace === null ? undefined : namespace[name];
      if (typeof fn !== "function") {
        reportFailure(
          invocationId,
          "BRIDGE_INVALID_PLUGIN_SURFACE",
          "TypeError",
          `The plugin does not export a function named "${name}": export it from the plugin module`,
        );
        return undefined;
      }
      result = apply(fn, undefined, [parse(payloadJson)]);
      // Read once, as resolving a promise would.
      then = (typeof result === "object" && result !== null) ||
          typeof result === "function"
        ? (result as { then?: unknown }).then
        : undefined;
    } catch (thrown) {
      report(invocationId, false, describe(thrown));
      return undefined;
    }
    // A plain answer (the common case) goes back as the call's result:
    // resolving it through a promise would add a job to the context's
    // queue, and reporting it a second call across the context's edge,
    // which costs a QuickJS context more than the rest of a small call.
    if (typeof then !== "function") return answerJson(invocationId, result);
    apply(promiseThen, PromiseCtor.resolve(result), [
      (value: unknown) => {
        const json = answerJson(invocationId, value);
        if (json !== undefined) report(invocationId, true, json);
      },
      (thrown: unknown) => report(invocationId, false, describe(thrown)),
    ]);
    return undefined;
  }

  // The JSON of an answer, or undefined once why it cannot be sent is
  // reported.
  function answerJson(
    invocationId: number,
    value: unknown,
  ): string | undefined {
    try {
      return marshal.toWireJson(value);
    } catch (thrown) {
      if (marshal.isTooLarge(thrown)) {
        // The host's own answer to an answer over its limit.
        reportFailure(
          invocationId,
          "RESULT_NOT_SERIALIZABLE",
          "RangeError",
          `The plugin's answer is larger than ${maxPayloadBytes} bytes: return less data or raise limits.maxPayloadBytes`,
        );
        return undefined;
      }
      const detail = parse(describe(thrown)) as { code: string };
      if (marshal.isRefusal(thrown)) detail.code = "RESULT_NOT_SERIALIZABLE";
      report(invocationId, false, stringify(detail));
      return undefined;
    }
  }

  // Keeps the plugin module's namespace; returns its exports as JSON.
  function setNamespace(value: unknown): string {
    namespace = value as Record<string, unknown>;
    const summary: Record<string, string> = create(null);
    for (const key of ownKeys(namespace)) {
      if (typeof key !== "string") continue;
      try {
        summary[key] = typeof namespace[key];
      } catch {
        summary[key] = "uninitialized";
      }
    }
    return stringify(summary);
  }

  return freeze({
    hostExports: (): Record<string, unknown> => exportsTable,
    lockdown,
    importError: (specifier: string): unknown =>
      makeError(
        "IMPORT_DYNAMIC",
        "ImportDeniedError",
        `Cannot import ${
          stringify(specifier)
        } with import() in a vm plugin: dynamic import is denied; use a static import of "cordon:host"`,
        "TypeError",
      ),
    describe,
    setNamespace,
    invoke,
    settle,
  });
}
