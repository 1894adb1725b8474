// This module is browser compatible.

/**
 * The entry of the browser bundle (`deno task bundle` writes it to
 * `dist/cordon.js`, one ESM file): the QuickJS loader, the remote catalog,
 * the fixture table and its comparison helper, and, for the Playwright
 * leg, {@linkcode runFixtureCase} (the in-thread loader),
 * {@linkcode runFixtureCaseInPool} and {@linkcode runInPool} (the pool,
 * whose Web Workers start from `dist/cordon-runner.js`, the bundle of
 * `loader/quickjs_runner.ts`), and {@linkcode runHostileGuest}, the hostile
 * guest table on either, {@linkcode runSnippetCase} and
 * {@linkcode runSnippetCaseInPool}, the shared snippet set on either, and
 * {@linkcode runMalformedDeclarationOnPage}, the malformed declaration
 * table on either. A
 * browser app bundles its own entry the same
 * way, importing `@cordon/cordon/loader` and
 * `@cordon/cordon/catalog/remote`, and serves a bundle of
 * `@cordon/cordon/loader/runner` for its pool.
 *
 * @module
 */

import { EMPTY_CATALOG } from "../catalog/empty_catalog.ts";
import { createRemoteCatalog } from "../catalog/remote_catalog.ts";
import { createStagedCatalog } from "../catalog/staged_catalog.ts";
import {
  createQuickJSLoader,
  createQuickJSPool,
  type QuickJSLoader,
  type QuickJSPool,
  type QuickJSRunOptions,
} from "../loader/mod.ts";
import {
  type CaseReport,
  checkCase,
  checkHostileGuest,
  checkSnippet,
  FIXTURE_CASES,
  HOSTILE_GUESTS,
  HOSTILE_LIMITS,
  type HostileHost,
  type HostileReport,
  type MalformedDeclarationReport,
  malformedDeclarations,
  runMalformedDeclaration,
  type SnippetReport,
  SNIPPETS,
} from "../fixtures/mod.ts";
import type { SandboxResult } from "../protocol/mod.ts";

export * from "../catalog/remote_catalog.ts";
export * from "../catalog/staged_catalog.ts";
export * from "../loader/mod.ts";
export * from "../fixtures/mod.ts";
export { CordonError, ERROR_CODES } from "../protocol/mod.ts";
// Not part of cordon's API: how many engines of the page restored the
// hardened image, which tells the browser leg that `deno task bundle`
// stamped the bundle's image with the digest of its own hardening scripts.
export { restoredEngineCount } from "../loader/_restored_engines.ts";

const loaders = new Map<string, Promise<QuickJSLoader>>();
const pools = new Map<string, Promise<QuickJSPool>>();

/** Where the page server serves the bundle of `loader/quickjs_runner.ts`. */
const RUNNER_PATH = "/dist/cordon-runner.js";

/** The period of {@linkcode runInPool}'s interval, in milliseconds. */
const TICK_MS = 10;

/**
 * The entry of a bundled table named `name`. None means the page's bundle
 * is older than the spec's JSON, so the error says to rebuild it.
 */
function findNamed<T extends { name: string }>(
  table: readonly T[],
  what: string,
  name: string,
): T {
  const entry = table.find((candidate) => candidate.name === name);
  if (entry === undefined) {
    throw new RangeError(
      `No ${what} is named ${
        JSON.stringify(name)
      }: rebuild the bundle with "deno task bundle"`,
    );
  }
  return entry;
}

/** Where a runner without packs runs: the page's own thread, or a pool's Web Worker. */
type PlainRunnerKind = "loader" | "pool";

/** The page's runners without packs, by kind and page server. */
type PlainRunners = Map<string, Promise<QuickJSLoader | QuickJSPool>>;

/**
 * The page's one runner of `kind` in `runners`, without packs and with the
 * default limits, as the Deno parity tests make their QuickJS tiers. The
 * pool has one runner, so a run that follows another on the same table
 * follows it on the same runner.
 */
function plainRunner(
  runners: PlainRunners,
  kind: PlainRunnerKind,
  baseUrl: string,
): Promise<QuickJSLoader | QuickJSPool> {
  const key = `${kind}:${baseUrl}`;
  let runner = runners.get(key);
  if (runner === undefined) {
    runner = kind === "loader"
      ? createQuickJSLoader({ catalog: EMPTY_CATALOG })
      : createQuickJSPool({
        catalog: EMPTY_CATALOG,
        size: 1,
        isolation: "worker",
        runnerUrl: new URL(RUNNER_PATH, baseUrl),
      });
    runners.set(key, runner);
  }
  return runner;
}

/** The page's one pool for `baseUrl`, started on first use and kept for the page's life. */
function sharedPool(baseUrl: string): Promise<QuickJSPool> {
  let pool = pools.get(baseUrl);
  if (pool === undefined) {
    pool = createQuickJSPool({
      catalog: createRemoteCatalog({ baseUrl }),
      size: 2,
      isolation: "worker",
      runnerUrl: new URL(RUNNER_PATH, baseUrl),
    });
    pools.set(baseUrl, pool);
  }
  return pool;
}

/**
 * Runs one case of the fixture table through the QuickJS loader and a
 * remote catalog over the delivery server at `baseUrl`, and compares it
 * with the case's expectation. One loader and catalog per `baseUrl` serve
 * every case of the page, as one loader serves every case of the Deno legs.
 *
 * @param name The case's name.
 * @param baseUrl The delivery server, usually `location.origin`.
 * @returns The report: pass, expected and actual.
 * @throws {RangeError} When no case has this name.
 */
export async function runFixtureCase(
  name: string,
  baseUrl: string,
): Promise<CaseReport> {
  const fixtureCase = findNamed(FIXTURE_CASES, "fixture case", name);
  let loader = loaders.get(baseUrl);
  if (loader === undefined) {
    loader = createQuickJSLoader({
      catalog: createRemoteCatalog({ baseUrl }),
    });
    loaders.set(baseUrl, loader);
  }
  return checkCase(await loader, fixtureCase);
}

/**
 * Runs one case of the fixture table through the QuickJS loader and a
 * staged catalog over the staged tree whose `index.json` is at the root of
 * `origin` (a static host such as nginx; no cordon code serves it), and
 * compares it with the case's expectation. One loader per `origin`.
 *
 * @param name The case's name.
 * @param origin The static host, usually `location.origin`.
 * @returns The report: pass, expected and actual.
 * @throws {RangeError} When no case has this name.
 */
export async function runFixtureCaseStaged(
  name: string,
  origin: string,
): Promise<CaseReport> {
  const fixtureCase = findNamed(FIXTURE_CASES, "fixture case", name);
  const key = `staged:${origin}`;
  let loader = loaders.get(key);
  if (loader === undefined) {
    loader = createQuickJSLoader({
      catalog: createStagedCatalog({
        indexUrl: new URL("/index.json", origin),
      }),
    });
    loaders.set(key, loader);
  }
  return checkCase(await loader, fixtureCase);
}

/**
 * Runs one case of the fixture table through a QuickJS pool of two Web
 * Workers (started from the runner bundle at `/dist/cordon-runner.js` of
 * `baseUrl`) and a remote catalog over the delivery server at `baseUrl`,
 * and compares it with the case's expectation, which is the loader's. One
 * pool per `baseUrl` serves every case of the page and lives as long as it.
 *
 * @param name The case's name.
 * @param baseUrl The delivery server, usually `location.origin`.
 * @returns The report: pass, expected and actual.
 * @throws {RangeError} When no case has this name.
 * @throws {CordonError} `SANDBOX_UNAVAILABLE` when the pool's workers cannot start.
 *
 * @example
 * ```ts ignore
 * const report = await runFixtureCaseInPool(
 *   "an endless loop ends at the time limit",
 *   location.origin,
 * );
 * console.log(report.pass, report.actual);
 * ```
 */
export async function runFixtureCaseInPool(
  name: string,
  baseUrl: string,
): Promise<CaseReport> {
  const fixtureCase = findNamed(FIXTURE_CASES, "fixture case", name);
  return checkCase(await sharedPool(baseUrl), fixtureCase);
}

/** What {@linkcode runInPool} observed during one run. */
export interface PoolRunReport {
  /** The run's result. */
  result: SandboxResult;
  /** How often a 10 ms interval of the page fired while the run went on. */
  ticks: number;
  /** How long the run took as the page saw it, in milliseconds. */
  elapsedMs: number;
  /** The interval's period, in milliseconds. */
  tickMs: number;
}

/**
 * Runs a guest module without packs on the page's pool for `baseUrl` (the
 * one {@linkcode runFixtureCaseInPool} uses) while a 10 ms interval counts
 * how often the page's own event loop gets to run. The clock and the
 * count start once the pool is ready, so they measure the run alone.
 *
 * @param source The guest module's source.
 * @param options The run's options: limits, context, signal.
 * @param baseUrl The delivery server, usually `location.origin`.
 * @returns The result, the interval's count and the elapsed time.
 * @throws {TypeError} When an option has the wrong type.
 * @throws {RangeError} When a limit is out of range.
 * @throws {CordonError} `SANDBOX_UNAVAILABLE` when the pool's workers cannot start.
 *
 * @example A guest that never ends, while the page keeps running
 * ```ts ignore
 * const { result, ticks, elapsedMs } = await runInPool(
 *   "for (;;) {}",
 *   { timeoutMs: 300 },
 *   location.origin,
 * );
 * console.log(!result.ok && result.error.code, ticks, elapsedMs); // "TIMEOUT", about 30, about 300
 * ```
 */
export async function runInPool(
  source: string,
  options: QuickJSRunOptions,
  baseUrl: string,
): Promise<PoolRunReport> {
  const pool = await sharedPool(baseUrl);
  let ticks = 0;
  const interval = setInterval(() => ticks++, TICK_MS);
  const started = performance.now();
  try {
    const result = await pool.run({ source, packages: [] }, options);
    const elapsedMs = performance.now() - started;
    return { result, ticks, elapsedMs, tickMs: TICK_MS };
  } finally {
    clearInterval(interval);
  }
}

/** Where the page runs a hostile guest: its own thread, or the pool's Web Workers. */
export type HostileRunnerKind = "loader" | "pool";

/** What {@linkcode runHostileGuest} observed during one case. */
export interface HostileGuestReport extends HostileReport {
  /** How often a 10 ms interval of the page fired while the case ran. */
  ticks: number;
  /** How many of the pool's runners were replaced while the case ran (0 in-thread). */
  replaced: number;
}

const hostileRunners = new Map<
  string,
  Promise<{ run: QuickJSPool["run"]; replacements: () => number }>
>();

/**
 * Never on the page's answers: no guest can reach the page's globals. Made
 * with `getRandomValues`, which an insecure page has too (`randomUUID` it
 * lacks), so the bundle loads on one.
 */
const PAGE_SECRET = `page-secret-${
  Array.from(crypto.getRandomValues(new Uint32Array(4)), (word) =>
    word.toString(36)).join("")
}`;
(globalThis as { cordonPageSecret?: string }).cordonPageSecret = PAGE_SECRET;

const hostileHosts = new Map<string, HostileHost>();

/** The page's one runner of `kind` for the table, made with its limits. */
function hostileRunner(
  kind: HostileRunnerKind,
  baseUrl: string,
): Promise<{ run: QuickJSPool["run"]; replacements: () => number }> {
  const key = `${kind}:${baseUrl}`;
  let runner = hostileRunners.get(key);
  if (runner === undefined) {
    const quickjs = {
      catalog: EMPTY_CATALOG,
      memoryLimitBytes: HOSTILE_LIMITS.quickjsMemoryBytes,
    };
    runner = kind === "loader"
      ? createQuickJSLoader(quickjs).then((loader) => ({
        run: (...args: Parameters<QuickJSPool["run"]>) => loader.run(...args),
        replacements: () => 0,
      }))
      // Two runners, as in Deno: the probe after a killed run need not
      // wait for its replacement.
      : createQuickJSPool({
        ...quickjs,
        size: 2,
        isolation: "worker",
        runnerUrl: new URL(RUNNER_PATH, baseUrl),
      }).then((pool) => ({
        run: (...args: Parameters<QuickJSPool["run"]>) => pool.run(...args),
        replacements: () => pool.replacements,
      }));
    hostileRunners.set(key, runner);
  }
  return runner;
}

function hostileHost(baseUrl: string): HostileHost {
  let host = hostileHosts.get(baseUrl);
  if (host === undefined) {
    host = {
      root: new URL("/", baseUrl).href,
      forbidden: [PAGE_SECRET],
      randoms: new Set(),
    };
    hostileHosts.set(baseUrl, host);
  }
  return host;
}

/**
 * Runs one case of the hostile guest table (`HOSTILE_GUESTS`), and the
 * probe after it, on the page's in-thread loader or on its pool of two Web
 * Workers (started from `/dist/cordon-runner.js` of `baseUrl`), made with
 * `HOSTILE_LIMITS` and no packs, one of each per page, while a 10 ms
 * interval counts how often the page's own event loop turns.
 *
 * @param name The case's name.
 * @param kind `"loader"` (the page's thread) or `"pool"` (Web Workers).
 * @param baseUrl The page server, usually `location.origin`.
 * @returns The report (the tier is `browser:loader` or `browser:pool`),
 * the interval's count and how many runners the pool replaced meanwhile.
 * @throws {RangeError} When no case has this name.
 * @throws {CordonError} `SANDBOX_UNAVAILABLE` when the pool's workers cannot start.
 *
 * @example
 * ```ts ignore
 * const report = await runHostileGuest("a plain endless loop", "pool", location.origin);
 * console.log(report.problem, report.actual, report.ticks > 0);
 * ```
 */
export async function runHostileGuest(
  name: string,
  kind: HostileRunnerKind,
  baseUrl: string,
): Promise<HostileGuestReport> {
  const guest = findNamed(HOSTILE_GUESTS, "hostile guest", name);
  const runner = await hostileRunner(kind, baseUrl);
  const before = runner.replacements();
  let ticks = 0;
  const interval = setInterval(() => ticks++, TICK_MS);
  try {
    const report = await checkHostileGuest(
      runner,
      kind === "loader" ? "browser:loader" : "browser:pool",
      guest,
      hostileHost(baseUrl),
    );
    return { ...report, ticks, replaced: runner.replacements() - before };
  } finally {
    clearInterval(interval);
  }
}

const snippetRunners: PlainRunners = new Map();

/**
 * Runs one snippet of the shared set (`SNIPPETS`) on the page's in-thread
 * QuickJS loader, with its context, time limit and abort timing, and
 * compares it with its expected answer as the Deno parity test does. One
 * loader per `baseUrl` serves every snippet of the page.
 *
 * @param name The snippet's name.
 * @param baseUrl The page server, usually `location.origin`.
 * @returns The report: pass, expected and actual.
 * @throws {RangeError} When no snippet has this name.
 *
 * @example
 * ```ts ignore
 * const report = await runSnippetCase("returns null", location.origin);
 * console.log(report.pass, report.actual);
 * ```
 */
export async function runSnippetCase(
  name: string,
  baseUrl: string,
): Promise<SnippetReport> {
  const snippet = findNamed(SNIPPETS, "snippet", name);
  return checkSnippet(
    await plainRunner(snippetRunners, "loader", baseUrl),
    snippet,
  );
}

/**
 * Runs one snippet of the shared set on the page's QuickJS pool of one Web
 * Worker (started from `/dist/cordon-runner.js` of `baseUrl`), and compares
 * it with its expected answer, as {@linkcode runSnippetCase} does. One pool
 * per `baseUrl` serves every snippet of the page and lives as long as it.
 *
 * @param name The snippet's name.
 * @param baseUrl The page server, usually `location.origin`.
 * @returns The report: pass, expected and actual.
 * @throws {RangeError} When no snippet has this name.
 * @throws {CordonError} `SANDBOX_UNAVAILABLE` when the pool's worker cannot start.
 *
 * @example
 * ```ts ignore
 * const report = await runSnippetCaseInPool("an aborted run ends as aborted", location.origin);
 * console.log(report.pass, report.actual);
 * ```
 */
export async function runSnippetCaseInPool(
  name: string,
  baseUrl: string,
): Promise<SnippetReport> {
  const snippet = findNamed(SNIPPETS, "snippet", name);
  return checkSnippet(
    await plainRunner(snippetRunners, "pool", baseUrl),
    snippet,
  );
}

/** Where the page runs a malformed declaration: its own thread, or a pool's Web Worker. */
export type DeclarationRunnerKind = PlainRunnerKind;

/** The names of the malformed declarations each runner kind ran, in order. */
const declarationsRun = new Map<DeclarationRunnerKind, string[]>();

const declarationRunners: PlainRunners = new Map();

/**
 * Makes one row of the malformed declaration table
 * (`malformedDeclarations()`) on the page, with the bundled table's own
 * `make()`, so getters, Proxies and a sparse list a billion long are the
 * page's own objects and no code crosses as text, and runs it, then a plain
 * module, on the page's own loader or pool of one Web Worker for the table
 * (no packs, default limits). The page keeps the row's name, for
 * {@linkcode malformedDeclarationsRun}.
 *
 * @param name The row's name.
 * @param kind `"loader"` (the page's thread) or `"pool"` (a Web Worker).
 * @param baseUrl The page server, usually `location.origin`.
 * @returns Both answers and how often the declaration was read; compared by the caller.
 * @throws {RangeError} When no row has this name.
 * @throws {CordonError} `SANDBOX_UNAVAILABLE` when the pool's worker cannot start.
 *
 * @example
 * ```ts ignore
 * const report = await runMalformedDeclarationOnPage("a revoked Proxy", "pool", location.origin);
 * console.log(report.actual, report.after);
 * ```
 */
export async function runMalformedDeclarationOnPage(
  name: string,
  kind: DeclarationRunnerKind,
  baseUrl: string,
): Promise<MalformedDeclarationReport> {
  const row = findNamed(malformedDeclarations(), "malformed declaration", name);
  const runner = await plainRunner(declarationRunners, kind, baseUrl);
  const report = await runMalformedDeclaration(runner, row);
  declarationsRun.set(kind, [...malformedDeclarationsRun(kind), name]);
  return report;
}

/**
 * The names of the malformed declarations
 * {@linkcode runMalformedDeclarationOnPage} ran on `kind` since the page
 * loaded, in order, so a leg can show it ran every row of the table.
 *
 * @param kind `"loader"` or `"pool"`.
 * @returns The names, a fresh list.
 *
 * @example
 * ```ts ignore
 * const missing = malformedDeclarations()
 *   .filter((row) => !malformedDeclarationsRun("loader").includes(row.name));
 * console.log(missing.length);
 * ```
 */
export function malformedDeclarationsRun(
  kind: DeclarationRunnerKind,
): string[] {
  return [...(declarationsRun.get(kind) ?? [])];
}
