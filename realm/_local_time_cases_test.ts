/**
 * The local-time cases `realm/es_date_test.ts` runs under several time
 * zones: {@linkcode localTimeAnswers} turns local dates and times into
 * instants (the `Date` constructor with 2 to 7 arguments, the local setters,
 * date-time strings without an offset) around each zone's daylight-saving
 * changes, and reads local fields back. Run as a program (with `TZ` set), it
 * prints what Deno's V8 and a QuickJS loader's guest answer, as JSON
 * `{ v8, quickjs }`.
 *
 * @module
 */

import { functionText, inQuickJS } from "./_differential_test.ts";

/**
 * Each case's label and answer: an instant as `t=<ms>`, a number or a
 * string as text, a thrown error by its class. Self-contained: it runs in
 * Deno and as a QuickJS guest.
 */
export function localTimeAnswers(): [string, string][] {
  const answers: [string, string][] = [];
  const show = (value: unknown): string => {
    if (value instanceof Date) return `t=${value.getTime()}`;
    if (typeof value === "number") {
      return Object.is(value, -0) ? "-0" : String(value);
    }
    return `${typeof value}:${String(value)}`;
  };
  const check = (label: string, make: () => unknown): void => {
    let answer: string;
    try {
      answer = show(make());
    } catch (error) {
      answer = `threw ${(error as Error).constructor.name}`;
    }
    answers.push([label, answer]);
  };
  const pad = (n: number): string => String(n).padStart(2, "0");
  const MONTHS = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split(" ");

  // The days of 2024 around which New York, Berlin, Lord Howe, Santiago
  // and Chatham change their clocks, and a day of each without a change.
  const days: [number, number, number][] = [
    [2024, 2, 9],
    [2024, 2, 10],
    [2024, 10, 3],
    [2024, 2, 31],
    [2024, 9, 27],
    [2024, 3, 6],
    [2024, 3, 7],
    [2024, 9, 6],
    [2024, 8, 7],
    [2024, 8, 8],
    [2024, 8, 29],
    [2024, 6, 1],
  ];
  for (const [y, m, d] of days) {
    for (let quarter = 0; quarter < 96; quarter++) {
      const h = quarter >> 2;
      const mi = (quarter & 3) * 15;
      const at = `${y}-${m + 1}-${d} ${h}:${mi}`;
      check(`new Date(${at})`, () => new Date(y, m, d, h, mi));
      check(`${at} getHours`, () => new Date(y, m, d, h, mi).getHours());
      check(`${at} setHours`, () => {
        const date = new Date(y, m, d, 12);
        date.setHours(h, mi);
        return date;
      });
      check(`${at} setMinutes`, () => {
        const date = new Date(y, m, d, h, 7);
        date.setMinutes(mi);
        return date;
      });
      check(`${at} setSeconds`, () => {
        const date = new Date(y, m, d, h, mi - 1, 7);
        date.setSeconds(60);
        return date;
      });
      check(`${at} setMilliseconds`, () => {
        const date = new Date(y, m, d, h, mi - 1, 59, 7);
        date.setMilliseconds(1000);
        return date;
      });
      check(`${at} setDate`, () => {
        const date = new Date(y, m, 15, h, mi);
        date.setDate(d);
        return date;
      });
      check(`${at} setMonth`, () => {
        const date = new Date(y, 5, d, h, mi);
        date.setMonth(m);
        return date;
      });
      check(`${at} setFullYear`, () => {
        const date = new Date(2001, 0, 1, h, mi);
        date.setFullYear(y, m, d);
        return date;
      });
      check(`${at} setYear`, () => {
        const date = new Date(2001, m, d, h, mi) as Date & {
          setYear(year: number): number;
        };
        date.setYear(y);
        return date;
      });
      const iso = `${y}-${pad(m + 1)}-${pad(d)}T${pad(h)}:${pad(mi)}`;
      check(iso, () => new Date(iso));
      check(`Date.parse ${iso}:00`, () => Date.parse(`${iso}:00`));
      check(`${iso}:00.250`, () => new Date(`${iso}:00.250`));
      for (
        const text of [
          `${MONTHS[m]} ${d} ${y} ${h}:${pad(mi)}`,
          `${MONTHS[m]} ${d}, ${y} ${h}:${pad(mi)}:00`,
          `${d} ${MONTHS[m]} ${y} ${pad(h)}:${pad(mi)}`,
          `${y}/${m + 1}/${d} ${h}:${pad(mi)}`,
          `${m + 1}/${d}/${y} ${h % 12 || 12}:${pad(mi)} ${
            h < 12 ? "AM" : "PM"
          }`,
          `${MONTHS[m]} ${d} ${y} ${h}:${pad(mi)} GMT`,
          `${MONTHS[m]} ${d} ${y} ${h}:${pad(mi)} -0500`,
          `${MONTHS[m]} ${d} ${y} ${h}:${pad(mi)} GMT+0100`,
          `${MONTHS[m]} ${d} ${y} ${h}:${pad(mi)} EST`,
          `${y}-${pad(m + 1)}-${pad(d)} ${pad(h)}:${pad(mi)}`,
          `${iso}:00.123456`,
          `${iso}:00Z`,
          `${iso}:00+01:00`,
        ]
      ) {
        check(text, () => Date.parse(text));
      }
    }
    check(
      `${y}-${m + 1}-${d} date only`,
      () => Date.parse(`${MONTHS[m]} ${d} ${y}`),
    );
    check(
      `${y}-${m + 1}-${d} iso date`,
      () => new Date(`${y}-${pad(m + 1)}-${pad(d)}`),
    );
  }

  // The constructor's fields: out of range, not finite, two-digit years,
  // the ends of the time range.
  const fields: number[][] = [
    [2024, 2],
    [2024, 13],
    [2024, -1, 31],
    [2024, 2, 10, -1],
    [2024, 2, 10, 2, 30, 0, 0, 99],
    [2024, 2, 10, 25, 61, 61, 1001],
    [2024, 2, 10, 1, 150],
    [2024, 2, 10.9, 2.5, 30.7],
    [2024, NaN],
    [2024, 2, Infinity],
    [-Infinity, 2],
    [2024, 2, 10, 2, 30, 0, NaN],
    [0, 0],
    [99, 11, 31, 23, 59],
    [50.7, 0],
    [-0.5, 0],
    [-1, 0],
    [100, 0],
    [1, 2, 10, 2, 30],
    [2024, 2, 10, 2, 30, 15],
    [275760, 8, 13],
    [275760, 8, 13, 1],
    [275760, 8, 13, 10],
    [275760, 8, 12, 12],
    [275760, 8, 13, 12],
    [275760, 8, 14],
    [275761, 0],
    [-271821, 3, 21],
    [-271821, 3, 19],
    [-271821, 3, 19, 12],
    [-271821, 3, 19, 23],
    [-271822, 11, 31],
    [1e9, 0],
    [2024, 1e12],
  ];
  // Before 1970 and far from today a zone keeps its local mean time, whose
  // offset V8 holds to the second and QuickJS to the minute: there a case
  // answers with the local fields the instant reads back as.
  const readBack = (date: Date): string =>
    [
      date.getFullYear(),
      date.getMonth(),
      date.getDate(),
      date.getHours(),
      date.getMinutes(),
      date.getSeconds(),
      date.getMilliseconds(),
    ].join();
  const modern = (date: Date): string =>
    date.getFullYear() >= 1970 && date.getFullYear() <= 2100
      ? `t=${date.getTime()}`
      : readBack(date);
  for (const list of fields) {
    check(`new Date(${list.join(", ")})`, () =>
      modern(
        new (Date as unknown as new (...a: number[]) => Date)(...list),
      ));
  }
  // The setters' other paths: an invalid date, no argument, the order in
  // which they convert their arguments.
  check("invalid setHours", () => new Date(NaN).setHours(1));
  check("invalid setFullYear", () => new Date(NaN).setFullYear(2024));
  check(
    "invalid setFullYear March",
    () => new Date(NaN).setFullYear(2024, 2, 10),
  );
  check(
    "setHours()",
    () => Reflect.apply(Date.prototype.setHours, new Date(2024, 2, 10), []),
  );
  check("setHours NaN", () => new Date(2024, 2, 10).setHours(NaN));
  check("setMonth 13", () => new Date(2024, 1, 10, 2, 30).setMonth(13));
  check("setDate 0", () => new Date(2024, 2, 10, 2, 30).setDate(0));
  check("setFullYear 50", () => {
    const date = new Date(2024, 2, 10, 2, 30);
    date.setFullYear(50);
    return readBack(date);
  });
  check("setYear 24", () => {
    const date = new Date(2001, 2, 10, 2, 30) as Date & {
      setYear(year: number): number;
    };
    date.setYear(24);
    return readBack(date);
  });
  check("setYear NaN", () => {
    const date = new Date(2001, 2, 10) as Date & {
      setYear(year: number): number;
    };
    return date.setYear(NaN);
  });
  check("setHours order", () => {
    const seen: string[] = [];
    const arg = (name: string, value: number) => ({
      valueOf() {
        seen.push(name);
        return value;
      },
    });
    const date = new Date(NaN);
    const result = date.setHours(
      arg("h", 2) as unknown as number,
      arg("m", 30) as unknown as number,
    );
    return `${seen.join()} ${result}`;
  });
  check("constructor order", () => {
    const seen: string[] = [];
    const arg = (name: string, value: number) => ({
      valueOf() {
        seen.push(name);
        return value;
      },
    });
    const date = new Date(
      arg("y", 2024) as unknown as number,
      arg("m", 2) as unknown as number,
      arg("d", 10) as unknown as number,
    );
    return `${seen.join()} ${date.getTime()}`;
  });
  check("setHours on a non-date", () => Date.prototype.setHours.call({}, 1));
  check("setHours a symbol", () => new Date(0).setHours(Symbol() as never));
  check("setHours a bigint", () => new Date(0).setHours(1n as never));
  check("new Date(symbol, 1)", () => new Date(Symbol() as never, 1));
  check(
    "Date.parse(date)",
    () => Date.parse(new Date(2024, 2, 10, 3) as never),
  );
  check("new Date(date)", () => new Date(new Date(2024, 2, 10, 3)));
  check("new Date(object)", () =>
    new Date({
      [Symbol.toPrimitive]: () => "2024-03-10T02:30",
    } as never));
  check("new Date(valueOf)", () => new Date({ valueOf: () => 5 } as never));
  check(
    "new Date(toString)",
    () =>
      new Date(
        { valueOf: () => ({}), toString: () => "Mar 10 2024 2:30" } as never,
      ),
  );
  check(
    "new Date(bad toPrimitive)",
    () => new Date({ [Symbol.toPrimitive]: () => ({}) } as never),
  );
  check("new Date(boolean)", () => new Date(true as never));
  check("new Date(null)", () => new Date(null as never));
  check("new Date(undefined)", () => new Date(undefined as never));
  check(
    "Date(2024, 2) is a string",
    () => typeof (Date as (...a: number[]) => unknown)(2024, 2),
  );
  check("subclass", () => {
    class Day extends Date {
      noon() {
        return this.getHours() === 12;
      }
    }
    const day = new Day(2024, 2, 10, 12);
    return `${day instanceof Day} ${
      day instanceof Date
    } ${day.noon()} ${day.getTime()}`;
  });
  check("Reflect.construct", () => {
    function Other() {}
    Other.prototype = Object.create(Date.prototype);
    const made = Reflect.construct(Date, [2024, 2, 10, 2, 30], Other);
    return `${
      Object.getPrototypeOf(made) === Other.prototype
    } ${made.getTime()}`;
  });
  check("Date's layout", () =>
    [
      Date.length,
      Date.name,
      Date.prototype.constructor === Date,
      Date.parse.length,
      Date.UTC.length,
      typeof Date.now(),
    ].join());
  return answers;
}

if (import.meta.main) {
  const v8 = localTimeAnswers();
  const quickjs = JSON.parse(
    await inQuickJS(`JSON.stringify((${functionText(localTimeAnswers)})())`),
  );
  console.log(JSON.stringify({ v8, quickjs }));
}
