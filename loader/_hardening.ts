// This module is browser compatible.

/**
 * The code the loader evaluates once per WebAssembly module, in the QuickJS
 * context every run then starts from: it installs the shared marshalling and
 * the console, makes code generation from strings unusable, removes timers,
 * installs the Web APIs that are pure computation (text, base64, URLs,
 * blobs, events and abort signals, random values, structured clone), gives
 * `Math.random` and `crypto` a state the host reseeds per run, freezes every
 * reachable intrinsic and locks the global object's own properties. It returns the run, describe and
 * reseed functions the host calls; none is reachable from guest code.
 *
 * @module
 */

import {
  createMarshallers,
  type Marshallers,
  type MarshalOptions,
} from "../realm/marshal.ts";
import { denyCodeGeneration } from "../realm/deny_code_generation.ts";
import {
  ES_BUILTINS_STEPS,
  type EsBuiltinsSteps,
} from "../realm/es_builtins.ts";
import {
  WEB_GLOBALS_STEPS,
  type WebGlobalsSteps,
} from "../realm/web_globals.ts";
import {
  LOCKDOWN_STEPS,
  type LockdownSteps,
  OVERRIDE_RULE,
} from "../realm/lockdown.ts";
import { type RealmScripts, realmScripts } from "../realm/realm_source.ts";
import type { OverrideRule } from "../realm/tame_overrides.ts";
import type { QuickJSContext, QuickJSHandle } from "quickjs-emscripten-core";

/**
 * The level at which the console tells the host's log sink that memory ran
 * out while it formatted a line: no console method has this name, so no
 * guest line arrives with it.
 */
export const OUT_OF_MEMORY_LEVEL = "out-of-memory";

/** The steps of hardening, in the order they run in every context. */
export const HARDENING_STEPS: readonly string[] = Object.freeze([
  "capture the intrinsics cordon's own in-context code uses",
  "install the shared marshalling (createMarshallers)",
  "install console (log, info, warn, error, debug), captured by the host",
  "make eval and the Function, AsyncFunction, GeneratorFunction and AsyncGeneratorFunction constructors throw",
  "remove timers (setTimeout, setInterval, setImmediate and their clear functions)",
  "install the language built-ins QuickJS lacks: Uint8Array's base64 and hex methods, Array.fromAsync, Symbol.dispose, Symbol.asyncDispose, SuppressedError, DisposableStack, AsyncDisposableStack, the iterators' dispose methods and Error.captureStackTrace, written in the context",
  "install DOMException, TextEncoder, TextDecoder (UTF-8), atob, btoa, URL, URLSearchParams, Blob, File, Event, EventTarget, AbortController, AbortSignal (no timeout: there are no timers), queueMicrotask, crypto (getRandomValues, randomUUID) and structuredClone, written in the context",
  "replace Math.random by a generator whose state the host reseeds before every run, and key crypto's generator the same way",
  "alias globalThis as self and global, so libraries find the global object without the Function constructor",
  "turn the intrinsic properties ordinary code overrides by assignment (and every intrinsic prototype's constructor) into accessors that define the property on the object assigned to",
  "guard Object.defineProperty, Object.defineProperties and Reflect.defineProperty, so no definition changes a read-only global (QuickJS would let one through)",
  "freeze every intrinsic reachable from globalThis, and make globalThis's own properties read-only and non-configurable (it takes new globals, which no later run sees)",
]);

/** The realm functions the setup calls (`realm/`), by name. */
interface SetupLibrary extends LockdownSteps, EsBuiltinsSteps, WebGlobalsSteps {
  createMarshallers: (options?: MarshalOptions) => Marshallers;
  denyCodeGeneration: typeof denyCodeGeneration;
}

/** The plain data the setup reads. */
interface SetupData {
  overrides: OverrideRule;
  /** The names of the library functions the lockdown calls. */
  lockdownSteps: readonly string[];
  /** The level the console reports a formatting's out-of-memory error at. */
  outOfMemoryLevel: string;
}

/** What the setup hands back to the host. */
interface SetupControl {
  /**
   * Settles the guest's default export: the JSON text of its value, at
   * most `maxResultChars` UTF-16 units, or its failure's JSON text as
   * `{ error }`, or `{ tooLarge: true }` for a text past that bound, which
   * the host answers with the run's `maxResultBytes`.
   */
  run(
    namespace: { default?: unknown },
    contextJson: string | undefined,
    maxResultChars: number,
  ): Promise<string | { error: string } | { tooLarge: true }>;
  describe(thrown: unknown): string;
  reseed(a: number, b: number, c: number, d: number, ...key: number[]): void;
}

/**
 * Hardens a fresh QuickJS context in the order of
 * {@linkcode HARDENING_STEPS}. Runs inside the context: it refers to
 * nothing outside its body but its arguments, and captures the intrinsics
 * it uses when it is called.
 *
 * @param library The realm functions it calls.
 * @param data The override rule.
 * @param hostLog The host's console sink, `(level, lineJson)`, given each
 * line as JSON text; it answers `false` once the run keeps no more lines.
 * @returns The run, describe and reseed functions the host calls.
 */
function setupContext(
  library: SetupLibrary,
  data: SetupData,
  hostLog: (level: string, lineJson: string) => boolean,
): SetupControl {
  const G = globalThis as unknown as Record<string, unknown>;
  const { freeze, getOwnPropertyDescriptor, keys } = Object;
  const defineProperty = Object.defineProperty;
  const imul = Math.imul;
  const parseJson = JSON.parse;
  const stringifyJson = JSON.stringify;

  // Each run gives its result's bound.
  const marshal = library.createMarshallers();
  const OUT_OF_MEMORY_LEVEL = data.outOfMemoryLevel;

  // Once the host keeps no more lines, a call neither formats its
  // arguments nor crosses to the host: a guest logging in a loop past
  // maxLogBytes would otherwise spend its run on lines that are dropped.
  // Every run starts from the hardened memory, so with this still false.
  let full = false;
  const consoleObject = {};
  for (const level of marshal.levels) {
    const method = {
      [level](...args: unknown[]) {
        if (full) return;
        let lineJson: string;
        try {
          // As JSON text: the host reads a string of the context as UTF-8
          // up to its first NUL, so a NUL would hide the rest of the line
          // and a lone surrogate would come out as three U+FFFD.
          lineJson = stringifyJson(marshal.formatLogArgs(args));
        } catch (thrown) {
          // Memory ran out while an argument was formatted: the run ends
          // with OUT_OF_MEMORY, as on V8, even if the guest catches this.
          if (marshal.isOutOfMemory(thrown)) hostLog(OUT_OF_MEMORY_LEVEL, "");
          throw thrown;
        }
        // Formatting runs guest code (a toJSON, a getter) that may log in
        // turn until the host keeps no more lines.
        if (full) return;
        full = hostLog(level, lineJson) === false;
      },
    }[level];
    defineProperty(consoleObject, level, {
      value: method,
      writable: true,
      enumerable: true,
      configurable: true,
    });
  }
  defineProperty(G, "console", {
    value: consoleObject,
    writable: true,
    enumerable: false,
    configurable: true,
  });

  library.denyCodeGeneration();

  for (
    const name of [
      "setTimeout",
      "setInterval",
      "setImmediate",
      "clearTimeout",
      "clearInterval",
      "clearImmediate",
    ]
  ) {
    delete G[name];
  }

  library.installEsBuiltins(library, G);
  const web = library.installWebGlobals(library, G);

  // xoshiro128**. Every run starts from the same memory, so QuickJS's own
  // generator would repeat one sequence; the host reseeds this one per run.
  let s0 = 1, s1 = 0, s2 = 0, s3 = 0;
  const rotl = (x: number, k: number) => (x << k) | (x >>> (32 - k));
  const next = () => {
    const result = imul(rotl(imul(s1, 5), 7), 9) >>> 0;
    const t = s1 << 9;
    s2 ^= s0;
    s3 ^= s1;
    s1 ^= s2;
    s0 ^= s3;
    s2 ^= t;
    s3 = rotl(s3, 11);
    return result;
  };
  const random = {
    random(): number {
      return ((next() >>> 5) * 67108864 + (next() >>> 6)) / 9007199254740992;
    },
  }.random;
  defineProperty(G.Math, "random", {
    value: random,
    writable: true,
    enumerable: false,
    configurable: true,
  });
  function reseed(
    a: number,
    b: number,
    c: number,
    d: number,
    ...key: number[]
  ): void {
    web.rekey(key);
    s0 = a | 0;
    s1 = b | 0;
    s2 = c | 0;
    s3 = d | 0;
    if ((s0 | s1 | s2 | s3) === 0) s0 = 1;
  }

  // Only the lockdown's steps are called from here on: the others' code is
  // freed now, before the lockdown allocates (see evaluateSetup).
  for (const name of keys(library)) {
    if (!data.lockdownSteps.includes(name)) {
      delete (library as unknown as Record<string, unknown>)[name];
    }
  }

  // The global object's properties are locked, and it stays extensible,
  // as on every tier, since what a run adds to it is gone when the next
  // run starts from the hardened memory.
  library.lockdownRealm(library, data.overrides, G, []);

  async function run(
    namespace: { default?: unknown },
    contextJson: string | undefined,
    maxResultChars: number,
  ): Promise<string | { error: string } | { tooLarge: true }> {
    let value: unknown;
    try {
      value = namespace.default;
      if (typeof value === "function") {
        value = await value(
          contextJson === undefined ? undefined : parseJson(contextJson),
        );
      } else {
        value = await value;
      }
    } catch (thrown) {
      return { error: stringifyJson(marshal.describeThrown(thrown)) };
    }
    try {
      // The value's text alone, refused once it passes maxResultChars: put
      // in an envelope here, it would be copied whole once more. toWireJson
      // reads the value once, in the copy it writes, so the guest's getters
      // and toJSON run once, and a result too large is refused while it is
      // copied, as on every tier.
      return marshal.toWireJson(value, maxResultChars);
    } catch (thrown) {
      if (marshal.isTooLarge(thrown)) return { tooLarge: true };
      const error: { code: string } = marshal.describeThrown(thrown);
      if (marshal.isRefusal(thrown)) error.code = "RESULT_NOT_SERIALIZABLE";
      return { error: stringifyJson(error) };
    }
  }
  function ownText(object: object, key: string): string | null {
    // A proxy's trap is guest code and may throw (a revoked proxy always
    // does): then the thrown value has no text of its own to add.
    try {
      const descriptor = getOwnPropertyDescriptor(object, key);
      return descriptor !== undefined && typeof descriptor.value === "string"
        ? descriptor.value
        : null;
    } catch {
      return null;
    }
  }
  function describe(thrown: unknown): string {
    const detail: Record<string, unknown> = {
      ...marshal.describeThrown(thrown),
    };
    if (typeof thrown === "object" && thrown !== null) {
      // Own data properties only: reading them runs no getter.
      detail.stack = ownText(thrown, "stack");
      detail.fileName = ownText(thrown, "fileName");
    }
    return stringifyJson(detail);
  }
  return freeze({ run, describe, reseed });
}

/**
 * The scripts of the setup function, called as `setup(hostLog)` in a fresh
 * context (see {@linkcode evaluateSetup}). It hardens the context in the
 * order of {@linkcode HARDENING_STEPS} and returns `{ run, describe,
 * reseed }`.
 *
 * The freeze walks every object reachable from the roots (`globalThis`,
 * then the intrinsics only code reaches, such as the iterator prototypes)
 * through prototypes, data properties and accessors. It runs once per
 * WebAssembly module: every run starts from a copy of the hardened memory.
 */
export const SETUP_SCRIPTS: RealmScripts = realmScripts(
  setupContext,
  {
    createMarshallers,
    denyCodeGeneration,
    ...ES_BUILTINS_STEPS,
    ...WEB_GLOBALS_STEPS,
    ...LOCKDOWN_STEPS,
  },
  {
    overrides: OVERRIDE_RULE,
    lockdownSteps: Object.keys(LOCKDOWN_STEPS),
    outOfMemoryLevel: OUT_OF_MEMORY_LEVEL,
  },
);

/**
 * Evaluates {@linkcode SETUP_SCRIPTS} in `context` and returns the setup
 * function, `setup(hostLog)`. The caller owns the returned handle and must
 * dispose it.
 *
 * Every run writes back the heap from its start to its highest block in
 * use, free chunks included, so the hardening must not leave free chunks
 * below what it keeps. As one script it left 0.57 MB of them in 1.29 MB:
 * the copy of the script QuickJS parses from and the text of the outer
 * function it keeps (170 KB each, freed once the script ran), and the
 * library's functions, text included (230 KB, freed when the setup
 * returned). One script per function keeps each copy small enough for
 * the next function's code to fill, and the setup lets go of the
 * functions that installed the Web APIs before the lockdown, whose
 * allocations then fill their memory: the heap is 0.72 MB, 6% of it free.
 *
 * @param context A fresh context.
 * @returns The setup function.
 * @throws {Error} When a script fails to evaluate.
 */
export function evaluateSetup(context: QuickJSContext): QuickJSHandle {
  const library = context.newObject();
  try {
    for (const [name, script] of SETUP_SCRIPTS.library) {
      const member = context.unwrapResult(
        context.evalCode(script, "cordon:setup"),
      );
      context.setProp(library, name, member);
      member.dispose();
    }
    const bind = context.unwrapResult(
      context.evalCode(SETUP_SCRIPTS.bind, "cordon:setup"),
    );
    try {
      return context.unwrapResult(
        context.callFunction(bind, context.undefined, library),
      );
    } finally {
      bind.dispose();
    }
  } finally {
    library.dispose();
  }
}
