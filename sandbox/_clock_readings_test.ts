/**
 * A guest that reads every clock of its realm, shared by the tests of the
 * worker, process and vm tiers: no clock a guest reads may be finer than
 * `Date.now()`'s millisecond, which every tier has.
 */

/**
 * A function body that reads each clock a few times and returns, for
 * each, whether some reading had a part finer than a millisecond (a clock
 * of a microsecond or finer shows one in nearly every reading), and what
 * `performance` and `Temporal` are. Where there is a `performance`, it
 * also returns (else each is `null`) its own keys, whether it has `mark`, whether it is frozen,
 * whether its `timeOrigin` and 1,000 readings of its `now()` are all whole
 * milliseconds, and whether those readings never go back.
 */
export const CLOCK_READINGS = `
const finer = (read) => {
  for (let i = 0; i < 5; i++) if (read() !== 0) return true;
  return false;
};
const now = typeof Temporal === "object" ? Temporal.Now : undefined;
const subMs = (t) => t.microsecond + t.nanosecond;
const perf = typeof performance === "object" ? performance : undefined;
const perfReadings = [];
for (let i = 0; perf !== undefined && i < 1000; i++) perfReadings.push(perf.now());
const ofPerf = (read) => perf === undefined ? null : read();
return {
  performance: [typeof performance, typeof Performance, typeof PerformanceEntry, typeof PerformanceMark, typeof PerformanceMeasure, typeof PerformanceObserver, typeof PerformanceObserverEntryList],
  performanceKeys: ofPerf(() => Reflect.ownKeys(perf)),
  performanceMark: ofPerf(() => "mark" in perf),
  performanceFrozen: ofPerf(() => Object.isFrozen(perf)),
  performanceWhole: ofPerf(() => Number.isInteger(perf.timeOrigin) && perfReadings.every(Number.isInteger)),
  performanceMonotonic: ofPerf(() => perfReadings.every((reading, i) => i === 0 || reading >= perfReadings[i - 1])),
  temporal: typeof Temporal,
  instant: finer(() => Number(now.instant().epochNanoseconds % 1000000n)),
  zoned: finer(() => subMs(now.zonedDateTimeISO())),
  zonedUtc: finer(() => subMs(now.zonedDateTimeISO("UTC"))),
  plainDateTime: finer(() => subMs(now.plainDateTimeISO())),
  plainTime: finer(() => subMs(now.plainTimeISO())),
  plainDate: now.plainDateISO().equals(now.zonedDateTimeISO().toPlainDate()),
  timeZoneId: now.timeZoneId() === new Intl.DateTimeFormat().resolvedOptions().timeZone,
};`;

/**
 * What {@linkcode CLOCK_READINGS} answers in a V8 realm whose clocks tick
 * in milliseconds and that has no `performance` (the vm tier).
 */
export const MILLISECOND_CLOCKS = {
  performance: Array(7).fill("undefined"),
  performanceKeys: null,
  performanceMark: null,
  performanceFrozen: null,
  performanceWhole: null,
  performanceMonotonic: null,
  temporal: "object",
  instant: false,
  zoned: false,
  zonedUtc: false,
  plainDateTime: false,
  plainTime: false,
  plainDate: true,
  timeZoneId: true,
};

/**
 * What {@linkcode CLOCK_READINGS} answers in a worker or process realm:
 * as {@linkcode MILLISECOND_CLOCKS}, with a frozen `performance` that has
 * `now()` and `timeOrigin` alone, in whole milliseconds.
 */
export const MILLISECOND_PERFORMANCE_CLOCKS = {
  ...MILLISECOND_CLOCKS,
  performance: ["object", ...Array(6).fill("undefined")],
  performanceKeys: ["now", "timeOrigin"],
  performanceMark: false,
  performanceFrozen: true,
  performanceWhole: true,
  performanceMonotonic: true,
};
