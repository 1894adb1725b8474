/**
 * The load check of the pack command: imports a staged pack's entries in
 * the hardened QuickJS realm and says, in the report's words, why one
 * fails there (a frozen built-in, a require call, a global the sandbox
 * lacks, a module QuickJS cannot parse) and whether a build of the entry
 * alone may work; and reads there the keys of the default exports that
 * CommonJS entries get named exports for.
 *
 * @module
 */

import { createDiskCatalog } from "../catalog/disk_catalog.ts";
import {
  createQuickJSLoader,
  type QuickJSLoader,
} from "../loader/quickjs_loader.ts";
import { isNodeCompatSpecifier } from "../policy/import_specifier.ts";
import type { SandboxResult } from "../protocol/sandbox_result.ts";
import { LEFT_OUT_PACKAGE, namesLeftOutPackage } from "./_pack_checks.ts";

/** Why an entry failed the load check. */
export interface LoadFailure {
  /** The problem, for the report. */
  problem: string;
  /** Whether it threw at import for a reason a build of its own may lack. */
  mayWorkAlone: boolean;
  /**
   * Whether the check's time ran out before the entry had its own: it
   * was not found wanting, so no other build of it is worth trying.
   */
  unchecked?: boolean;
}

/** The load check's time limits, in milliseconds. */
export interface LoadCheckLimits {
  /** One import of every entry together (and the read of their exports). */
  batchTimeoutMs: number;
  /** One import of one entry alone. */
  entryTimeoutMs: number;
  /**
   * All the imports of single entries of one package together, across
   * the rounds of the pack command: entries whose top level never ends
   * cost this at most, however many there are.
   */
  aloneBudgetMs: number;
}

/**
 * The limits of the pack command. The slowest entries measured load in
 * under 1 s (mathjs 15.2.0's main entry alone in 0.7 s, its three entries
 * together in 0.95 s, date-fns 4.4.0's 740 together in 0.23 s), so limits
 * over ten times that are far from refusing one that works.
 */
const LOAD_CHECK_LIMITS: LoadCheckLimits = Object.freeze({
  batchTimeoutMs: 20_000,
  entryTimeoutMs: 10_000,
  aloneBudgetMs: 60_000,
});

/** Generous memory: the checks ask whether an entry can load at all. */
const CHECK_MEMORY_LIMIT_BYTES = 512 * 1024 * 1024;

/**
 * What one package's load checks may still spend on importing entries one
 * by one. One budget serves every round of the pack command.
 */
export class LoadCheckBudget {
  /** The limits it was made with. */
  readonly limits: LoadCheckLimits;
  #spentMs = 0;

  constructor(limits: LoadCheckLimits = LOAD_CHECK_LIMITS) {
    this.limits = limits;
  }

  /** The time left for single entries, in milliseconds. */
  get leftMs(): number {
    return Math.max(0, this.limits.aloneBudgetMs - this.#spentMs);
  }

  /** Counts the time a single entry's import took. */
  spend(ms: number): void {
    this.#spentMs += ms;
  }
}

/**
 * Lets the event loop turn before a run. A run in the realm holds the
 * thread until it ends, and one can follow another without a turn between
 * them, so a signal's abort (dispatched on a turn) would wait for every
 * run left instead of one.
 */
function turn(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/**
 * Runs `source`, which imports pack `name`, in the hardened realm after a
 * turn of the event loop; rejects with the signal's reason once it has
 * aborted, before the run or during it, so an abort is never taken for
 * the entry's failure.
 */
async function runInRealm(
  loader: QuickJSLoader,
  name: string,
  source: string,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<SandboxResult> {
  await turn();
  signal?.throwIfAborted();
  const result = await loader.run({ source, packages: [name] }, {
    timeoutMs,
    memoryLimitBytes: CHECK_MEMORY_LIMIT_BYTES,
    ...(signal === undefined ? {} : { signal }),
  });
  signal?.throwIfAborted();
  return result;
}

/** The import specifier of a pack's entry, quoted for source text. */
function entrySpecifier(name: string, subpath: string): string {
  return JSON.stringify(subpath === "." ? name : `${name}${subpath.slice(1)}`);
}

/** What ends a load check early. */
export interface LoadCheckOptions {
  /**
   * Ends the load check before its next run and rejects with the signal's
   * reason, so an abort is not taken for the entry's failure. A run already
   * computing in the realm holds the thread until it ends (at its time limit
   * at most), so the abort is seen then.
   */
  signal?: AbortSignal;
  /**
   * The peer and optional dependencies the package tree declares and lacks,
   * so a `require` of one is named as such, also where a Node built-in has
   * its name.
   *
   * @default {[]}
   */
  leftOut?: readonly string[];
  /**
   * What to do about an entry that needs Node, by its subpath: one clause
   * a failure for a Node built-in or global ends with.
   *
   * @default {() => "it needs Node"}
   */
  nodeRemedy?: (subpath: string) => string;
}

/**
 * Imports every entry in the hardened realm, together and then, when that
 * fails, one by one within what `budget` has left; returns why each one
 * failed (or was not checked).
 */
export async function loadCheck(
  packsDir: string,
  name: string,
  subpaths: readonly string[],
  budget: LoadCheckBudget,
  options: LoadCheckOptions = {},
): Promise<Map<string, LoadFailure>> {
  const { signal, leftOut = [], nodeRemedy = () => "it needs Node" } = options;
  signal?.throwIfAborted();
  const failures = new Map<string, LoadFailure>();
  const catalog = await createDiskCatalog(packsDir);
  for (const diagnostic of catalog.diagnostics()) {
    for (const subpath of subpaths) {
      failures.set(subpath, {
        problem: `pack discovery refuses it: ${diagnostic.message}`,
        mayWorkAlone: false,
      });
    }
  }
  if (failures.size > 0 || subpaths.length === 0) return failures;
  using loader = await createQuickJSLoader({ catalog });
  const { limits } = budget;
  const importAll = async (batch: readonly string[], timeoutMs: number) => {
    const source =
      batch.map((subpath, i) =>
        `import * as m${i} from ${entrySpecifier(name, subpath)};\n`
      ).join("") + "export default true;\n";
    return await runInRealm(loader, name, source, timeoutMs, signal);
  };
  if ((await importAll(subpaths, limits.batchTimeoutMs)).ok) return failures;
  for (const subpath of subpaths) {
    const timeoutMs = Math.floor(
      Math.min(limits.entryTimeoutMs, budget.leftMs),
    );
    if (timeoutMs === 0) {
      failures.set(subpath, notChecked(limits));
      continue;
    }
    const started = performance.now();
    const result = await importAll([subpath], timeoutMs);
    budget.spend(performance.now() - started);
    if (result.ok) continue;
    failures.set(
      subpath,
      result.error.code === "TIMEOUT" && timeoutMs < limits.entryTimeoutMs
        ? notChecked(limits)
        : {
          problem: explainLoadFailure(result.error, limits, {
            leftOut,
            nodeRemedy: nodeRemedy(subpath),
          }),
          mayWorkAlone: mayWorkAlone(result.error),
        },
    );
  }
  return failures;
}

/** An entry the budget left no time for, or not its full limit. */
function notChecked(limits: LoadCheckLimits): LoadFailure {
  return {
    problem:
      `not checked: the load check's ${limits.aloneBudgetMs} ms for importing this package's entries one by one ran out on the entries before it; pack it by itself with --subpaths`,
    mayWorkAlone: false,
    unchecked: true,
  };
}

/**
 * The own enumerable property names of each entry's default export, read
 * in the hardened realm: for entries made from CommonJS modules, whose
 * `module.exports` it is. With `exportName`, of that export instead (a
 * probe's namespace object, for the names an entry re-exports).
 */
export async function defaultExportKeys(
  packsDir: string,
  name: string,
  subpaths: readonly string[],
  limits: LoadCheckLimits,
  options: LoadCheckOptions = {},
  exportName = "default",
): Promise<Map<string, unknown[]>> {
  const { signal } = options;
  signal?.throwIfAborted();
  const keys = new Map<string, unknown[]>();
  if (subpaths.length === 0) return keys;
  using loader = await createQuickJSLoader({
    catalog: await createDiskCatalog(packsDir),
  });
  const source =
    subpaths.map((subpath, i) =>
      `import { ${exportName} as m${i} } from ${
        entrySpecifier(name, subpath)
      };\n`
    ).join("") +
    `export default [${
      subpaths.map((_, i) =>
        `Object(m${i}) === m${i} ? Object.keys(m${i}) : []`
      )
        .join(", ")
    }];\n`;
  const result = await runInRealm(
    loader,
    name,
    source,
    limits.batchTimeoutMs,
    signal,
  );
  if (result.ok && Array.isArray(result.value)) {
    for (const [i, subpath] of subpaths.entries()) {
      const value = result.value[i];
      keys.set(subpath, Array.isArray(value) ? value : []);
    }
  }
  return keys;
}

// QuickJS's words for writing to a frozen object, and the sandbox's own.
const FROZEN =
  /not extensible|read-only|read only|non-writable|cannot define property|could not delete property|not configurable|intrinsics are frozen/i;

// QuickJS's words for a global that does not exist, and the bundler's for
// a `require` call at import.
const UNDEFINED_GLOBAL = /^'([\w$]+)' is not defined$/;
const BUNDLER_REQUIRE = /^Dynamic require of "([^"]+)" is not supported$/;
/** QuickJS's own check of the bytecode it compiled, which some code fails. */
const ENGINE_STACK = /^stack (?:underflow|overflow) \(op=\d+, pc=\d+\)$/;

const NODE_GLOBALS: ReadonlySet<string> = new Set([
  "Buffer",
  "process",
  "global",
  "require",
  "module",
  "exports",
  "__dirname",
  "__filename",
]);
// Language built-ins Deno has and QuickJS realms lack on purpose (see
// docs/loader.md, "Language built-ins").
const LEFT_OUT: ReadonlySet<string> = new Set([
  "Intl",
  "Temporal",
  "Atomics",
  "WebAssembly",
]);
const TIMERS: ReadonlySet<string> = new Set([
  "setTimeout",
  "setInterval",
  "setImmediate",
  "clearTimeout",
  "clearInterval",
  "clearImmediate",
]);

/** What a load failure is explained with besides itself. */
interface FailureContext {
  /** The peer and optional dependencies the tree lacks. */
  leftOut: readonly string[];
  /** What to do about the entry if it needs Node. */
  nodeRemedy: string;
}

/** What the sandbox lacks, for a load failure that names it. */
function lacking(
  message: string,
  { leftOut, nodeRemedy }: FailureContext,
): string {
  if (FROZEN.test(message)) {
    return ": the sandbox freezes every built-in and keeps the realm's globals read-only, so a module cannot patch a built-in or replace a global (it may add globals of its own)";
  }
  const required = BUNDLER_REQUIRE.exec(message)?.[1];
  if (required !== undefined) {
    const call = `: it calls require(${
      JSON.stringify(required)
    }) when imported`;
    const builtin = (isNodeCompatSpecifier(required) &&
      !namesLeftOutPackage(required, leftOut)) ||
      required.startsWith("node:");
    return builtin
      ? `${call}, and the sandbox has no require or Node built-ins; ${nodeRemedy}`
      : `${call}, ${LEFT_OUT_PACKAGE}`;
  }
  if (ENGINE_STACK.test(message)) {
    return ": QuickJS cannot compile a function of the module, a limit of the engine, not of the sandbox (`for (x of yield y)` in a generator is one cause); use another build of the package, or another package";
  }
  if (message === "not a function") {
    // QuickJS names no callee, so this lists the causes known; a note
    // gives the line of a read of require.resolve (_pack_checks.ts).
    return ": QuickJS does not name the function it called: a property of require the bundler left (require.resolve, see the notes), which the sandbox lacks, or a built-in QuickJS lacks (JSON.rawJSON, JSON.isRawJSON, Date.prototype.toTemporalInstant and RegExp's legacy statics, RegExp.$1 and the like), which the sandbox leaves out";
  }
  const name = UNDEFINED_GLOBAL.exec(message)?.[1];
  if (name === undefined) return "";
  if (NODE_GLOBALS.has(name)) {
    return `: ${name} is a Node global, which the sandbox lacks; ${nodeRemedy}`;
  }
  if (LEFT_OUT.has(name)) {
    return `: the sandbox has no global ${name}: QuickJS lacks it, and it is left out because it cannot be pure computation here (Intl, Temporal, Atomics without shared memory, WebAssembly); use a package that does not need it`;
  }
  if (TIMERS.has(name)) {
    return `: the sandbox has no timers (${name}); a run is one synchronous evaluation and its promise jobs`;
  }
  return `: the sandbox has no global ${name} (QuickJS has only the Web APIs that are pure computation: TextEncoder, TextDecoder, atob, btoa, URL, URLSearchParams, Blob and File without stream(), structuredClone, crypto.getRandomValues, crypto.randomUUID, queueMicrotask, DOMException, Event, CustomEvent, EventTarget, AbortController, AbortSignal without timeout())`;
}

// The realm's words for eval and the Function constructors.
const CODE_GENERATION = /code generation from strings is denied/;

/** What the sandbox withholds, by the words of a throw at import. */
const WITHHELD: readonly RegExp[] = [
  FROZEN,
  BUNDLER_REQUIRE,
  ENGINE_STACK,
  UNDEFINED_GLOBAL,
  CODE_GENERATION,
];

/**
 * Whether an entry that threw at import may work bundled alone. The
 * bundler can run the modules entries share in another order than the
 * package imports them (evanw/esbuild#399), which a build of the entry
 * alone does not do; but a build of its own changes nothing the sandbox
 * withholds (a global, code generation, a built-in to patch, require) or
 * QuickJS cannot compile, and a denied import is no throw.
 */
function mayWorkAlone(error: { code: string; message: string }): boolean {
  if (error.code !== "GUEST_ERROR") return false;
  return !WITHHELD.some((withheld) => withheld.test(error.message));
}

// The loader's advice for a pack module QuickJS cannot parse, which fits
// an installed pack, not one being made.
const REINSTALL = /; reinstall a vetted version of the pack$/;

function explainLoadFailure(
  error: { code: string; message: string },
  limits: LoadCheckLimits,
  context: FailureContext,
): string {
  if (error.code === "PACK_MODULE_SYNTAX") {
    // The bundler parsed and wrote this module, so QuickJS's parser is
    // what refuses it.
    const message = error.message.replace(REINSTALL, "").slice(0, 300);
    return `importing it in the sandbox fails with ${error.code} (${message}): QuickJS cannot parse a module the bundler wrote, a limit of the engine, not of the sandbox (it refuses a \`-\` outside a class in a regular expression with the \`v\` flag); use another build of the package, or another package`;
  }
  const message = error.message.slice(0, 300);
  if (error.code === "TIMEOUT") {
    // The loader's advice to raise timeoutMs is not the operator's to take.
    return `importing it in the sandbox fails with TIMEOUT: its top level does not finish within ${limits.entryTimeoutMs} ms, the load check's limit for one entry (the slowest entries measured load in under a second); use another build or version of the package`;
  }
  return `importing it in the sandbox fails with ${error.code} (${message})${
    lacking(message, context)
  }`;
}
