/**
 * The code that runs next to guest code, inside the guest's realm (the
 * worker, or the subprocess's main thread). {@linkcode prepareGuestRealm}
 * is self-contained: tiers inject its source text with `toString()` and
 * call it before guest code exists, so it captures the built-ins it uses
 * while they are still the originals.
 *
 * @module
 */

import type { Marshallers } from "../protocol/marshal.ts";
import type { JsonValue, LogEntry } from "../protocol/sandbox_result.ts";

/** The failure codes a guest realm can report by itself. */
export type RealmFailureCode =
  | "GUEST_ERROR"
  | "GUEST_SYNTAX_ERROR"
  | "RESULT_NOT_SERIALIZABLE"
  | "SANDBOX_CRASHED";

/** How a run ended, as the guest realm saw it. */
export type RealmOutcome =
  | { ok: true; value: JsonValue }
  | { ok: false; code: RealmFailureCode; name: string; message: string };

/** Receives one console line of guest code. */
export type RealmLog = (level: LogEntry["level"], message: string) => void;

/** A hardened realm, ready to run one guest module. */
export interface GuestRealm {
  /**
   * Evaluates guest source as an ES module and settles its default export:
   * a function is called with `context` and awaited, any other value is
   * awaited. Console lines go to `log` until `maxLogBytes` is used up; the
   * first line that does not fit is still passed on, so the receiver's own
   * collector sees the overflow, and nothing after it.
   */
  run(
    source: string,
    context: JsonValue,
    maxLogBytes: number,
    log: RealmLog,
    parseOnly?: boolean,
  ): Promise<RealmOutcome>;
  /**
   * Loads a throwaway module, so the first run of a realm prepared ahead of
   * time does not pay for warming up the module loader.
   */
  warmUp(): Promise<void>;
}

/** Imports a module by URL: `(url) => import(url)`, injected as source. */
export type ModuleImporter = (url: string) => Promise<unknown>;

/** What {@linkcode prepareGuestRealm} removes from the realm. */
export interface GuestRealmSettings {
  /** Global names deleted before guest code runs. */
  removeGlobals: readonly string[];
}

/**
 * Hardens the current realm and returns its runner. Self-contained: it
 * refers to nothing outside its body.
 *
 * What it does, in order: captures the built-ins it needs; makes uncaught
 * errors and unhandled rejections of guest callbacks non-fatal (the run's
 * answer is the default export alone); deletes `settings.removeGlobals`;
 * replaces `console` with one that forwards formatted lines, and `close`
 * with one that ends the run as `SANDBOX_CRASHED` (a guest that closes its
 * realm gives no answer, on every tier).
 *
 * Syntax errors are told apart from errors thrown while the module runs by
 * a marker call put before the guest's first statement: a module is parsed
 * and linked before any of it runs, so when the import fails before the
 * marker ran, the source did not parse or link. With `parseOnly` the marker
 * throws, so the guest module is parsed and linked but never evaluated; the
 * outcome is then `{ ok: true, value: null }` when it parsed, or the
 * engine's `GUEST_SYNTAX_ERROR`.
 *
 * @param marshallers The realm's marshallers, from `createMarshallers()`.
 * @param settings What to remove.
 * @param importer Imports a module of this realm by URL. It is injected as
 * source text, so the only `import()` next to guest code is one that reads
 * blob URLs this function made.
 * @returns The runner.
 * @throws {Error} When a global cannot be removed.
 */
export function prepareGuestRealm(
  marshallers: Marshallers,
  settings: GuestRealmSettings,
  importer: ModuleImporter,
): GuestRealm {
  const global = globalThis as unknown as Record<string, unknown>;
  const { defineProperty } = Object;
  const stringify = JSON.stringify;
  const BlobConstructor = Blob;
  const createObjectUrl = URL.createObjectURL;
  const revokeObjectUrl = URL.revokeObjectURL;
  const encoder = new TextEncoder();
  const encode = encoder.encode.bind(encoder);
  const listen = globalThis.addEventListener.bind(globalThis);
  const importModule = importer as (
    url: string,
  ) => Promise<Record<string, unknown>>;
  const { toWireValue, describeThrown, formatLogArgs, levels } = marshallers;
  const MARK = "__cordonGuestEvaluationStarts";
  const HASHBANG = /^#![^\n\r\u2028\u2029]*(\r\n|[\n\r\u2028\u2029])?/;
  const POSITION = /(blob:[^\s]*?):(\d+):(\d+)/g;

  listen("error", (event: Event) => event.preventDefault());
  listen("unhandledrejection", (event: Event) => event.preventDefault());

  for (const name of settings.removeGlobals) {
    if (!(name in global)) continue;
    delete global[name];
    if (name in global) {
      throw new Error(`Cannot remove the global ${name} from a sandbox realm`);
    }
  }

  let sink: RealmLog | undefined;
  let budget = 0;
  let used = 0;
  let capped = false;

  function emit(level: LogEntry["level"], args: unknown[]): void {
    if (capped || sink === undefined) return;
    const message = formatLogArgs(args);
    const size = message.length > budget
      ? message.length
      : encode(message).length;
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

  function failure(code: RealmFailureCode, thrown: unknown): RealmOutcome {
    const described = describeThrown(thrown);
    return {
      ok: false,
      code,
      name: described.name,
      message: described.message,
    };
  }

  function isSerializationError(thrown: unknown): boolean {
    try {
      return typeof thrown === "object" && thrown !== null &&
        (thrown as { code?: unknown }).code === "RESULT_NOT_SERIALIZABLE";
    } catch {
      return false;
    }
  }

  function run(
    source: string,
    context: JsonValue,
    maxLogBytes: number,
    log: RealmLog,
    parseOnly = false,
  ): Promise<RealmOutcome> {
    sink = log;
    budget = maxLogBytes;
    return new Promise((resolve) => {
      endEarly = resolve;
      settle(source, context, parseOnly).then(resolve);
    });
  }

  async function settle(
    source: string,
    context: JsonValue,
    parseOnly: boolean,
  ): Promise<RealmOutcome> {
    let started = false;
    const parsed = {};
    defineProperty(global, MARK, {
      configurable: true,
      value: () => {
        started = true;
        delete global[MARK];
        return parsed;
      },
    });
    // The marker is the guest module's first statement, on its first line
    // (after a hashbang line), so line numbers stay and nothing of the guest
    // runs before it; syntax positions on that line are shifted back.
    const prefix = `${parseOnly ? "throw " : ""}globalThis[${
      stringify(MARK)
    }]();`;
    const hashbang = HASHBANG.exec(source);
    const markedLine = hashbang === null ? 1 : 2;
    const marked = hashbang === null
      ? prefix + source
      : hashbang[0] + (hashbang[1] === undefined ? "\n" : "") + prefix +
        source.slice(hashbang[0].length);
    const guestUrl = createObjectUrl(
      new BlobConstructor([marked], { type: "text/javascript" }),
    );
    let namespace: Record<string, unknown>;
    try {
      namespace = await importModule(guestUrl);
    } catch (thrown) {
      if (thrown === parsed) return { ok: true, value: null };
      if (!started) {
        const described = describeThrown(thrown);
        return {
          ok: false,
          code: "GUEST_SYNTAX_ERROR",
          name: "SyntaxError",
          message: described.message.replace(
            POSITION,
            (all, url: string, line: string, column: string) =>
              Number(line) === markedLine && Number(column) > prefix.length
                ? `${url}:${line}:${Number(column) - prefix.length}`
                : all,
          ),
        };
      }
      return failure("GUEST_ERROR", thrown);
    } finally {
      revokeObjectUrl(guestUrl);
      delete global[MARK];
    }
    if (parseOnly) return { ok: true, value: null };
    let value: unknown;
    try {
      value = namespace.default;
      if (typeof value === "function") value = value(context);
      value = await value;
    } catch (thrown) {
      return failure("GUEST_ERROR", thrown);
    }
    try {
      return { ok: true, value: toWireValue(value) };
    } catch (thrown) {
      return failure(
        isSerializationError(thrown)
          ? "RESULT_NOT_SERIALIZABLE"
          : "GUEST_ERROR",
        thrown,
      );
    }
  }

  async function warmUp(): Promise<void> {
    const url = createObjectUrl(
      new BlobConstructor(["export default 0;"], { type: "text/javascript" }),
    );
    try {
      await importModule(url);
    } finally {
      revokeObjectUrl(url);
    }
  }

  return { run, warmUp };
}
