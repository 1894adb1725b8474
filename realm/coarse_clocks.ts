// This module is browser compatible.

/**
 * `Date.now()` ticks in whole milliseconds on every tier, and it is the
 * only clock a QuickJS realm has. V8 realms also have `Temporal.Now`,
 * whose readings carry the microseconds of the host's clock: a finer
 * clock than the other tiers give, and the kind a timing attack needs. So
 * every V8 realm that guest code reaches reads `Temporal.Now` from
 * `Date.now()` before that code exists: the same clock, in milliseconds,
 * with the same time zone. QuickJS has no `Temporal`.
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
