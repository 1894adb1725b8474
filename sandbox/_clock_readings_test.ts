/**
 * A guest that reads every clock of its realm, shared by the tests of the
 * worker, process and vm tiers: no clock a guest reads may be finer than
 * `Date.now()`'s millisecond, which every tier has.
 */

/**
 * A function body that reads each clock a few times and returns, for
 * each, whether some reading had a part finer than a millisecond (a clock
 * of a microsecond or finer shows one in nearly every reading), and what
 * `performance` and `Temporal` are.
 */
export const CLOCK_READINGS = `
const finer = (read) => {
  for (let i = 0; i < 5; i++) if (read() !== 0) return true;
  return false;
};
const now = typeof Temporal === "object" ? Temporal.Now : undefined;
const subMs = (t) => t.microsecond + t.nanosecond;
return {
  performance: [typeof performance, typeof Performance, typeof PerformanceEntry, typeof PerformanceMark, typeof PerformanceMeasure, typeof PerformanceObserver, typeof PerformanceObserverEntryList],
  temporal: typeof Temporal,
  instant: finer(() => Number(now.instant().epochNanoseconds % 1000000n)),
  zoned: finer(() => subMs(now.zonedDateTimeISO())),
  zonedUtc: finer(() => subMs(now.zonedDateTimeISO("UTC"))),
  plainDateTime: finer(() => subMs(now.plainDateTimeISO())),
  plainTime: finer(() => subMs(now.plainTimeISO())),
  plainDate: now.plainDateISO().equals(now.zonedDateTimeISO().toPlainDate()),
  timeZoneId: now.timeZoneId() === new Intl.DateTimeFormat().resolvedOptions().timeZone,
};`;

/** What {@linkcode CLOCK_READINGS} answers in a V8 realm whose clocks tick in milliseconds. */
export const MILLISECOND_CLOCKS = {
  performance: Array(7).fill("undefined"),
  temporal: "object",
  instant: false,
  zoned: false,
  zonedUtc: false,
  plainDateTime: false,
  plainTime: false,
  plainDate: true,
  timeZoneId: true,
};
