// This module is browser compatible.

/**
 * `Date.now()` ticks in whole milliseconds on every tier, and it is the
 * only clock a QuickJS realm has. V8 realms also have `Temporal.Now`,
 * whose readings carry the microseconds of the host's clock: a finer
 * clock than the other tiers give, and the kind a timing attack needs. So
 * every V8 realm that guest code reaches reads `Temporal.Now` from
 * `Date.now()` before that code exists: the same clock, in milliseconds,
 * with the same time zone. QuickJS has no `Temporal`. The worker and
 * process tiers also give guest code a `performance` whose `now()` and
 * `timeOrigin` are whole milliseconds, and nothing else: packages time
 * their work with it, and Deno's reads the host's clock to the microsecond.
 *
 * @module
 */

import { realmSource } from "./realm_source.ts";

/**
 * Replaces the readings of `Temporal.Now` (`instant`, `zonedDateTimeISO`,
 * `plainDateTimeISO`, `plainDateISO`, `plainTimeISO`) with ones taken from
 * `Date.now()`, so none is finer than a millisecond; `timeZoneId` stays.
 * Self-contained, so a realm runs its own copy; harmless where there is
 * no `Temporal`.
 *
 * @throws {Error} When a reading cannot be replaced.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import vm from "node:vm";
 * import { coarsenTemporalNow } from "./coarse_clocks.ts";
 *
 * const context = vm.createContext({});
 * vm.runInContext(`(${coarsenTemporalNow})()`, context);
 * const nanoseconds = vm.runInContext(
 *   "typeof Temporal === 'object' ? Temporal.Now.instant().epochNanoseconds % 1000000n : 0n",
 *   context,
 * );
 * assert.equal(nanoseconds, 0n);
 * ```
 */
export function coarsenTemporalNow(): void {
  const temporal = (globalThis as unknown as {
    Temporal?: Record<string, { prototype: object } & Record<string, unknown>>;
  }).Temporal;
  if (temporal === undefined) return;
  const { defineProperty, getOwnPropertyDescriptor } = Object;
  const { apply } = Reflect;
  const now = temporal.Now as unknown as Record<string, unknown>;
  const Instant = temporal.Instant!;
  const ZonedDateTime = temporal.ZonedDateTime!.prototype as Record<
    string,
    unknown
  >;
  const dateNow = Date.now;
  const fromEpochMilliseconds = Instant.fromEpochMilliseconds;
  const toZonedDateTimeISO =
    (Instant.prototype as Record<string, unknown>).toZonedDateTimeISO;
  const timeZoneId = now.timeZoneId;
  const { toPlainDateTime, toPlainDate, toPlainTime } = ZonedDateTime;

  function instant(): unknown {
    return apply(fromEpochMilliseconds as () => unknown, Instant, [
      apply(dateNow, Date, []),
    ]);
  }
  function zoned(timeZone: unknown): unknown {
    const zone = timeZone === undefined
      ? apply(timeZoneId as () => unknown, now, [])
      : timeZone;
    return apply(toZonedDateTimeISO as () => unknown, instant(), [zone]);
  }
  function plain(convert: unknown, timeZone: unknown): unknown {
    return apply(convert as () => unknown, zoned(timeZone), []);
  }

  // Object literal methods: named as the originals, no prototype, and
  // `length` 0 as the originals' optional time zone gives.
  const readings: Record<string, unknown> = {
    instant() {
      return instant();
    },
    zonedDateTimeISO(timeZone?: unknown) {
      return zoned(timeZone);
    },
    plainDateTimeISO(timeZone?: unknown) {
      return plain(toPlainDateTime, timeZone);
    },
    plainDateISO(timeZone?: unknown) {
      return plain(toPlainDate, timeZone);
    },
    plainTimeISO(timeZone?: unknown) {
      return plain(toPlainTime, timeZone);
    },
  };
  for (
    const name of [
      "instant",
      "zonedDateTimeISO",
      "plainDateTimeISO",
      "plainDateISO",
      "plainTimeISO",
    ]
  ) {
    const original = getOwnPropertyDescriptor(now, name);
    if (original === undefined) continue;
    defineProperty(now, name, { ...original, value: readings[name] });
    if (now[name] !== readings[name]) {
      throw new Error(
        `Cannot replace Temporal.Now.${name} in a sandbox realm`,
      );
    }
  }
}

/**
 * Replaces the realm's `performance` with a frozen object that has only
 * `now()`, the floor of the host's reading (so it stays monotonic), and
 * `timeOrigin`, a whole millisecond: code that times its work with
 * `performance.now()` keeps working, and no reading is finer than a
 * millisecond. It has no marks, measures or entries, which hold readings
 * of their own. Self-contained, so a realm runs its own copy before guest
 * code exists; harmless where there is no `performance`.
 *
 * @throws {Error} When `performance` cannot be replaced.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import vm from "node:vm";
 * import { coarsenPerformance } from "./coarse_clocks.ts";
 *
 * const context = vm.createContext({ performance });
 * vm.runInContext(`(${coarsenPerformance})()`, context);
 * const readings = vm.runInContext(
 *   "[performance.now(), performance.timeOrigin, Object.keys(performance)]",
 *   context,
 * );
 * assert.ok(Number.isInteger(readings[0]) && Number.isInteger(readings[1]));
 * assert.deepEqual([...readings[2]], ["now", "timeOrigin"]);
 * ```
 */
export function coarsenPerformance(): void {
  const global = globalThis as unknown as Record<string, unknown>;
  const host = global.performance as
    | { now: () => number; timeOrigin: number }
    | undefined;
  if (host === undefined) return;
  const { defineProperty, freeze, getOwnPropertyDescriptor } = Object;
  const { apply } = Reflect;
  const { floor } = Math;
  const hostNow = host.now;
  const timeOrigin = floor(host.timeOrigin);

  // An object literal method: named `now`, no prototype, not a constructor.
  const coarse = freeze({
    now(): number {
      return floor(apply(hostNow, host, []));
    },
    timeOrigin,
  });
  freeze(coarse.now);
  const original = getOwnPropertyDescriptor(global, "performance");
  delete global.performance;
  defineProperty(global, "performance", {
    value: coarse,
    writable: true,
    configurable: true,
    enumerable: original?.enumerable ?? true,
  });
  if (global.performance !== coarse) {
    throw new Error("Cannot replace performance in a sandbox realm");
  }
}

function coarseningEntry(library: { coarsenTemporalNow: () => void }): void {
  library.coarsenTemporalNow();
}

/**
 * The source text of an expression whose value is a function that runs
 * {@linkcode coarsenTemporalNow} in the realm that evaluates it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { COARSEN_TEMPORAL_NOW_SOURCE } from "./coarse_clocks.ts";
 *
 * assert.match(COARSEN_TEMPORAL_NOW_SOURCE, /coarsenTemporalNow/);
 * ```
 */
export const COARSEN_TEMPORAL_NOW_SOURCE: string = realmSource(
  coarseningEntry,
  { coarsenTemporalNow },
  null,
);

function performanceEntry(library: { coarsenPerformance: () => void }): void {
  library.coarsenPerformance();
}

/**
 * The source text of an expression whose value is a function that runs
 * {@linkcode coarsenPerformance} in the realm that evaluates it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { COARSEN_PERFORMANCE_SOURCE } from "./coarse_clocks.ts";
 *
 * assert.match(COARSEN_PERFORMANCE_SOURCE, /coarsenPerformance/);
 * ```
 */
export const COARSEN_PERFORMANCE_SOURCE: string = realmSource(
  performanceEntry,
  { coarsenPerformance },
  null,
);
