// This module is browser compatible.

/**
 * Local date and time as the standard maps them to instants, for a realm
 * whose engine gets it wrong (QuickJS): the `Date` constructor with two or
 * more arguments or a string, `Date.parse`, and the local setters of
 * `Date.prototype` (`setHours` ... `setFullYear`, Annex B's `setYear`).
 * QuickJS took the offset of the local reading read as UTC, so for as many
 * hours after a daylight-saving change as the zone is away from UTC a
 * local time came out an hour off. These compute the standard's
 * UTC(t) = t − LocalTZA(t, false) from the engine's offset of an instant,
 * which is right: a local time skipped by a change moves forward by the
 * change, and one that happens twice is the earlier instant, as in V8.
 * Runs inside a realm, before its lockdown: self-contained, turned into
 * source by `realm/realm_source.ts`.
 *
 * @module
 */

/** What {@linkcode createLocalTime} makes. */
export interface LocalTime {
  /** The `Date` constructor: a proxy of the engine's. */
  Date: DateConstructor;
  /** `Date.parse`. */
  parse: (text: unknown) => number;
  /** The local setters of `Date.prototype`, by name, `setYear` among them. */
  setters: Record<string, (this: Date, ...args: unknown[]) => number>;
}

/**
 * Makes the constructor, `Date.parse` and the local setters. The
 * constructor is a proxy of `original` (the same prototype, statics, name
 * and length; called as a function it still answers the date as text)
 * whose `new` works out the time value and hands it to the engine's.
 * Self-contained: it captures the intrinsics it uses when it is called.
 *
 * Each conversion asks the engine for the offset at two to four instants
 * (two a day before and after, more within a day of a change), each a
 * `Date` and its `getTimezoneOffset()`; a setter also reads the date's
 * local fields, and `Date.parse` of a string the engine read as local
 * parses it a second time.
 *
 * @param original The engine's `Date`.
 * @returns The constructor, `Date.parse` and the setters.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createLocalTime } from "./es_date.ts";
 *
 * const local = createLocalTime(Date);
 * const made = new local.Date(2024, 2, 10, 12, 30);
 * assert.equal(made.getHours(), 12);
 * assert.ok(made instanceof Date);
 * assert.equal(local.parse("2024-03-10T12:30"), made.getTime());
 * local.setters.setHours!.call(made, 8);
 * assert.equal(made.getHours(), 8);
 * ```
 */
export function createLocalTime(original: DateConstructor): LocalTime {
  "use strict";
  const { apply, construct } = Reflect;
  const { floor, trunc } = Math;
  const ProxyCtor = Proxy;
  const TypeErrorCtor = TypeError;
  const toPrimitiveKey = Symbol.toPrimitive;
  const test = RegExp.prototype.test;
  const proto = original.prototype;
  const {
    getTime,
    setTime,
    getTimezoneOffset,
    getUTCFullYear,
    getUTCMonth,
    getUTCDate,
    getUTCHours,
    getUTCMinutes,
    getUTCSeconds,
    getUTCMilliseconds,
  } = proto;
  const dateUTC = original.UTC;
  const engineParse = original.parse;
  const MS_PER_DAY = 86400000;
  const MAX_TIME = 8.64e15;
  // 400 Gregorian years: the calendar repeats after them.
  const CYCLE_YEARS = 400;
  const CYCLE = 146097 * MS_PER_DAY;
  // QuickJS parses the first 127 characters of a string.
  const PARSED_LENGTH = 127;
  // A date-time the engine's ISO parser reads as local (no offset); its
  // "-" may be U+2212, which the engine reads as "-".
  const ISO_LOCAL =
    /^(?:[+\-\u2212]\d{6}|\d{4})(?:[\-\u2212]\d\d(?:[\-\u2212]\d\d)?)?T\d\d:\d\d(?::\d\d(?:[.,]\d{1,9})?)?$/;
  // Any date or date-time the engine's ISO parser reads: one with an offset
  // or no time, which is not local, is the engine's to answer.
  const ISO_ANY =
    /^(?:[+\-\u2212]\d{6}|\d{4})(?:[\-\u2212]\d\d(?:[\-\u2212]\d\d)?)?(?:T\d\d:\d\d(?::\d\d(?:[.,]\d{1,9})?)?)?(?:Z|[+\-\u2212]\d\d(?::?\d\d)?)?$/;
  // A zone the engine's other parser reads: a name it knows, or a signed
  // number after the time.
  const ZONE_NAME = /(?:^|[^a-z])(?:gmt|ut|z|[ecmp][sd]t|wes?t|ces?t|ees?t)/i;
  const ZONE_OFFSET = /\d:\d[^+\-\u2212]*[+\-\u2212]\d/;

  // The date offsetAt() asks; no caller's code ever sees it.
  const scratch = new original(0);

  const isFiniteNumber = (value: number): boolean =>
    value === value && value !== Infinity && value !== -Infinity;

  /** The zone's offset at `instant`, in milliseconds east of UTC. */
  function offsetAt(instant: number): number {
    const within = instant > MAX_TIME
      ? MAX_TIME
      : instant < -MAX_TIME
      ? -MAX_TIME
      : instant;
    apply(setTime, scratch, [within]);
    return -apply(getTimezoneOffset, scratch, []) * 60000;
  }

  /**
   * The instant a local time value names: the earlier of two, and for one
   * a change skipped, the offset before the change (it moves forward).
   */
  function instantOf(local: number): number {
    if (local !== local) return NaN;
    const before = offsetAt(local - MS_PER_DAY);
    const after = offsetAt(local + MS_PER_DAY);
    const early = local - before;
    if (before === after || offsetAt(early) === before) return early;
    const late = local - after;
    return offsetAt(late) === after ? late : early;
  }

  /**
   * The fields (finite integers; a year as it is, 0 to 99 too) read as
   * UTC, not clipped to the time range: a local time up to a day past it
   * can name an instant within it.
   */
  function asUtc(fields: number[]): number {
    const year = fields[0]!;
    const month = fields[1]!;
    const date = fields[2]!;
    const fullYear = year + floor(month / 12);
    let inYear = month % 12;
    if (inYear < 0) inYear += 12;
    // Date.UTC reads a year from 0 to 99 as 1900 to 1999.
    const shifted = fullYear >= 0 && fullYear < 100;
    const at = (day: number): number =>
      apply(dateUTC, original, [
        shifted ? fullYear + CYCLE_YEARS : fullYear,
        inYear,
        day,
        fields[3],
        fields[4],
        fields[5],
        fields[6],
      ]) - (shifted ? CYCLE : 0);
    let time = at(date);
    if (time === time) return time;
    time = at(date - 1);
    if (time === time) return time + MS_PER_DAY;
    time = at(date + 1);
    return time === time ? time - MS_PER_DAY : NaN;
  }

  /** The local fields of a time value, from the engine's offset for it. */
  function localFields(time: number): number[] {
    let local = time + offsetAt(time);
    let years = 0;
    if (local > MAX_TIME) {
      local -= CYCLE;
      years = CYCLE_YEARS;
    } else if (local < -MAX_TIME) {
      local += CYCLE;
      years = -CYCLE_YEARS;
    }
    const date = new original(local);
    return [
      apply(getUTCFullYear, date, []) + years,
      apply(getUTCMonth, date, []),
      apply(getUTCDate, date, []),
      apply(getUTCHours, date, []),
      apply(getUTCMinutes, date, []),
      apply(getUTCSeconds, date, []),
      apply(getUTCMilliseconds, date, []),
    ];
  }

  /** The constructor's time value for two to seven fields. */
  function fromFields(args: ArrayLike<unknown>): number {
    const count = args.length < 7 ? args.length : 7;
    const fields = [NaN, 0, 1, 0, 0, 0, 0];
    for (let i = 0; i < count; i++) fields[i] = +(args[i] as number);
    for (let i = 0; i < 7; i++) {
      if (!isFiniteNumber(fields[i]!)) return NaN;
      fields[i] = trunc(fields[i]!);
    }
    if (fields[0]! >= 0 && fields[0]! < 100) fields[0] = fields[0]! + 1900;
    return instantOf(asUtc(fields));
  }

  /** ToPrimitive(value) with no hint, as the standard orders it. */
  function toPrimitive(value: unknown): unknown {
    if (
      (typeof value !== "object" && typeof value !== "function") ||
      value === null
    ) {
      return value;
    }
    const object = value as Record<PropertyKey, unknown>;
    const exotic = object[toPrimitiveKey];
    if (exotic !== undefined && exotic !== null) {
      if (typeof exotic !== "function") {
        throw new TypeErrorCtor("Symbol.toPrimitive is not a function");
      }
      const result = apply(exotic, value, ["default"]);
      if (
        (typeof result !== "object" && typeof result !== "function") ||
        result === null
      ) {
        return result;
      }
    } else {
      const valueOf = object.valueOf;
      if (typeof valueOf === "function") {
        const result = apply(valueOf, value, []);
        if (
          (typeof result !== "object" && typeof result !== "function") ||
          result === null
        ) {
          return result;
        }
      }
      const toString = object.toString;
      if (typeof toString === "function") {
        const result = apply(toString, value, []);
        if (
          (typeof result !== "object" && typeof result !== "function") ||
          result === null
        ) {
          return result;
        }
      }
    }
    throw new TypeErrorCtor("Cannot convert object to primitive value");
  }

  /**
   * The time value of a string. The engine parses it; where it read it as
   * local (its answer is what it makes of the fields read as UTC, and the
   * text names no zone), the fields are mapped again.
   */
  function parseText(text: string): number {
    const engine = apply(engineParse, original, [text]);
    if (engine !== engine) return engine;
    const head = text.length > PARSED_LENGTH
      ? text.substring(0, PARSED_LENGTH)
      : text;
    const iso = apply(test, ISO_LOCAL, [head]);
    if (!iso && apply(test, ISO_ANY, [head])) return engine;
    // A suffix past the characters the engine reads would be lost.
    if (!iso && head.length > PARSED_LENGTH - 4) return engine;
    const fields = apply(engineParse, original, [
      iso ? head + "Z" : head + " GMT",
    ]);
    if (fields !== fields || engine !== fields - offsetAt(fields)) {
      return engine;
    }
    // The same answer for a zone the text names that has the offset the
    // engine took (in New York, "3:30 EST" on the day of the change).
    if (
      !iso &&
      (apply(test, ZONE_NAME, [head]) || apply(test, ZONE_OFFSET, [head]))
    ) {
      return engine;
    }
    return instantOf(fields);
  }

  /** The constructor's time value (or primitive) for one argument. */
  function fromValue(value: unknown): unknown {
    if (typeof value === "object" && value !== null) {
      try {
        return apply(getTime, value, []);
      } catch {
        // Not a Date: its primitive.
      }
    }
    const primitive = toPrimitive(value);
    return typeof primitive === "string" ? parseText(primitive) : primitive;
  }

  /**
   * A local setter's work: the date's local fields (for an invalid date,
   * those of the epoch read as UTC, where a setter may set the year),
   * the arguments' numbers in place of `first` onwards, up to `end`.
   */
  function setLocal(
    date: Date,
    time: number,
    first: number,
    end: number,
    args: ArrayLike<unknown>,
  ): number {
    const fields = time === time ? localFields(time) : [1970, 0, 1, 0, 0, 0, 0];
    const count = args.length < end - first ? args.length : end - first;
    let finite = true;
    for (let i = 0; i < count; i++) {
      const value = +(args[i] as number);
      if (!isFiniteNumber(value)) finite = false;
      fields[first + i] = trunc(value);
    }
    if (time !== time && first !== 0) return NaN;
    const local = finite && args.length > 0 ? asUtc(fields) : NaN;
    return apply(setTime, date, [instantOf(local)]);
  }

  const timeOf = (date: unknown): number => apply(getTime, date, []);
  const setters = {
    setMilliseconds(this: Date, _ms?: unknown): number {
      return setLocal(this, timeOf(this), 6, 7, arguments);
    },
    setSeconds(this: Date, _sec?: unknown, _ms?: unknown): number {
      return setLocal(this, timeOf(this), 5, 7, arguments);
    },
    setMinutes(
      this: Date,
      _min?: unknown,
      _sec?: unknown,
      _ms?: unknown,
    ): number {
      return setLocal(this, timeOf(this), 4, 7, arguments);
    },
    setHours(
      this: Date,
      _hour?: unknown,
      _min?: unknown,
      _sec?: unknown,
      _ms?: unknown,
    ): number {
      return setLocal(this, timeOf(this), 3, 7, arguments);
    },
    setDate(this: Date, _date?: unknown): number {
      return setLocal(this, timeOf(this), 2, 3, arguments);
    },
    setMonth(this: Date, _month?: unknown, _date?: unknown): number {
      return setLocal(this, timeOf(this), 1, 3, arguments);
    },
    setFullYear(
      this: Date,
      _year?: unknown,
      _month?: unknown,
      _date?: unknown,
    ): number {
      return setLocal(this, timeOf(this), 0, 3, arguments);
    },
    setYear(this: Date, year?: unknown): number {
      const time = timeOf(this);
      let full = +(year as number);
      if (isFiniteNumber(full)) {
        full = trunc(full);
        if (full >= 0 && full < 100) full += 1900;
      }
      return setLocal(this, time, 0, 1, [full]);
    },
  };

  const parse = {
    parse(text: unknown): number {
      return parseText(`${text as string}`);
    },
  }.parse;

  const proxy: DateConstructor = new ProxyCtor(original, {
    construct(
      target: DateConstructor,
      args: unknown[],
      newTarget: unknown,
    ): object {
      const made = newTarget === proxy ? target : newTarget;
      if (args.length === 0) return construct(target, [], made as never);
      const time = args.length === 1 ? fromValue(args[0]) : fromFields(args);
      return construct(target, [time], made as never);
    },
  });
  return { Date: proxy, parse, setters };
}
