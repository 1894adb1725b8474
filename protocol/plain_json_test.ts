import assert from "node:assert/strict";
import { contextJson, readContextJson } from "./context_json.ts";
import type { ReadContext } from "./context_json.ts";
import { countNesting, MAX_NESTING_DEPTH } from "./nesting.ts";
import { contextOverBound, utf8BytesUpTo } from "./run_inputs.ts";
import {
  countJson,
  countPlainJson,
  leastJsonChars,
  stringObjectJsonChars,
  typedArrayJsonChars,
} from "./plain_json.ts";
import { createMarshallers } from "../realm/marshal.ts";

// The checking writer as it is without the plain walk, kept here only to
// hold the fast way to its answers: the same text, the same refusal, and
// the same code of the context's run, in the same order.
class Refused extends TypeError {}
class Past extends Error {
  constructor(readonly counted: number) {
    super("past");
  }
}

function checkingReplacer(maxChars: number) {
  const within = countNesting();
  let counted = 0;
  let root = true;
  return function (this: unknown, key: string, value: unknown): unknown {
    const type = typeof value;
    if (type === "function" || type === "symbol" || type === "bigint") {
      throw new Refused(`it holds a ${type === "bigint" ? "BigInt" : type}`);
    }
    if (!within(this, value)) {
      throw new Refused(
        `it is nested deeper than ${MAX_NESTING_DEPTH} levels; pass flatter data`,
      );
    }
    if (maxChars !== Infinity) {
      counted += leastJsonChars(this, key, value, root);
      root = false;
      counted += stringObjectJsonChars(value);
      const ahead = counted + typedArrayJsonChars(value);
      if (ahead > maxChars) throw new Past(ahead);
    }
    return value;
  };
}

function reason(error: unknown): string {
  if (error instanceof Refused) return error.message;
  const message = error instanceof Error ? error.message : String(error);
  return `writing it failed: ${message.split("\n", 1)[0]}`;
}

function referenceRead(context: unknown, max: number): ReadContext {
  if (context === undefined) return { ok: true, json: "null" };
  let json: string;
  try {
    json = JSON.stringify(context, checkingReplacer(max));
  } catch (error) {
    if (error instanceof Past) {
      return { ok: false, error: contextOverBound(error.counted, max) };
    }
    throw new TypeError(
      `Cannot run: context must be JSON data, but ${reason(error)}`,
    );
  }
  const bytes = utf8BytesUpTo(json, max);
  return bytes <= max
    ? { ok: true, json }
    : { ok: false, error: contextOverBound(bytes, max) };
}

function referenceJson(context: unknown): string | undefined {
  if (context === undefined) return undefined;
  try {
    return JSON.stringify(context, checkingReplacer(Infinity));
  } catch (error) {
    throw new TypeError(
      `Cannot run: context must be JSON data, but ${reason(error)}`,
    );
  }
}

/** A small seeded generator, so a failure names the seed that made it. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const STRINGS = [
  "",
  "a",
  'quote " and \\ back',
  "line\nbreak\ttab\u0000",
  "é",
  "😀",
  "\ud800 lone",
  "\udc00",
  "__proto__",
  "toJSON",
  "0",
  "01",
  "x".repeat(40),
];
const NUMBERS = [0, -0, 1, -1.5, 1e21, 1e-7, NaN, Infinity, -Infinity, 2 ** 53];

/**
 * A value from the seed, plain data most of the time and sometimes one of
 * what the checking writer refuses or runs code for; every code it runs
 * writes to `log`, so two runs can be held to the same calls.
 */
function generate(seed: number, log: string[]): unknown {
  const next = random(seed);
  const pick = <T>(items: readonly T[]): T =>
    items[Math.floor(next() * items.length)]!;
  const shared: object[] = [];
  const tracing = (name: string): ProxyHandler<object> => ({
    get(target, key, receiver) {
      log.push(`${name} get ${String(key)}`);
      return Reflect.get(target, key, receiver);
    },
    ownKeys(target) {
      log.push(`${name} ownKeys`);
      return Reflect.ownKeys(target);
    },
    getOwnPropertyDescriptor(target, key) {
      log.push(`${name} descriptor ${String(key)}`);
      return Reflect.getOwnPropertyDescriptor(target, key);
    },
    getPrototypeOf(target) {
      log.push(`${name} prototype`);
      return Reflect.getPrototypeOf(target);
    },
    has(target, key) {
      log.push(`${name} has ${String(key)}`);
      return Reflect.has(target, key);
    },
  });
  let made = 0;
  const value = (depth: number): unknown => {
    const id = `v${made++}`;
    const roll = next();
    if (depth > 4 || roll < 0.35) return leaf(id);
    if (roll < 0.6) return array(depth, id);
    if (roll < 0.85) return record(depth, id);
    return hostile(depth, id);
  };
  const leaf = (id: string): unknown => {
    switch (Math.floor(next() * 6)) {
      case 0:
        return pick(STRINGS);
      case 1:
        return pick(NUMBERS);
      case 2:
        return next() < 0.5;
      case 3:
        return null;
      case 4:
        return next() < 0.9 ? next() * 1000 : undefined;
      default:
        return `${id}:${pick(STRINGS)}`;
    }
  };
  const array = (depth: number, id: string): unknown[] => {
    const items = Array.from(
      { length: Math.floor(next() * 5) },
      () => value(depth + 1),
    );
    if (next() < 0.05) delete items[0];
    if (next() < 0.05) items.length += 2;
    if (next() < 0.1) shared.push(items);
    if (next() < 0.05) {
      Object.defineProperty(items, 0, {
        get() {
          log.push(`${id} item getter`);
          return 7;
        },
        enumerable: true,
        configurable: true,
      });
    }
    return items;
  };
  const record = (depth: number, _id: string): object => {
    const object: Record<string, unknown> = next() < 0.1
      ? Object.create(null)
      : {};
    const count = Math.floor(next() * 5);
    for (let i = 0; i < count; i++) {
      const key = next() < 0.3 ? pick(STRINGS) : `k${i}`;
      if (key === "toJSON" && next() < 0.5) continue;
      Object.defineProperty(object, key, {
        value: value(depth + 1),
        enumerable: next() < 0.95,
        configurable: true,
        writable: true,
      });
    }
    if (next() < 0.05) object[Symbol.for("s") as unknown as string] = 1;
    if (next() < 0.1) shared.push(object);
    return object;
  };
  const hostile = (depth: number, id: string): unknown => {
    switch (Math.floor(next() * 17)) {
      case 0:
        return () => 1;
      case 1:
        return Symbol(id);
      case 2:
        return 5n;
      case 3:
        return new Date(0);
      case 4:
        return {
          toJSON(key: string) {
            log.push(`${id} toJSON ${key}`);
            return next() < 0.5 ? `from ${key}` : [1, () => 2];
          },
        };
      case 5:
        return {
          get g() {
            log.push(`${id} getter`);
            return value(depth + 1);
          },
          after: 1,
        };
      case 6:
        return new Proxy(record(depth, id), tracing(id));
      case 7:
        return new Proxy(array(depth, id), tracing(id));
      case 8:
        return pick([Object(1), Object("ab"), Object(false), Object(3n)]);
      case 9: {
        const boxed = Object.assign(Object(2), { extra: 1 });
        return Object.setPrototypeOf(
          boxed,
          next() < 0.5 ? null : Object.prototype,
        );
      }
      case 10:
        return (JSON as unknown as { rawJSON(text: string): unknown })
          .rawJSON("12345678901234567890");
      case 11:
        return new (class Point {
          x = 1;
        })();
      case 12:
        return new Map([[1, 2]]);
      case 13:
        return new Uint8Array([1, 2]);
      case 14: {
        let deep: unknown = leaf(id);
        const levels = MAX_NESTING_DEPTH - 3 + Math.floor(next() * 6) - depth;
        for (let i = 0; i < levels; i++) {
          deep = next() < 0.5 ? [deep] : { d: deep };
        }
        return deep;
      }
      case 15: {
        const cyclic: Record<string, unknown> = { a: 1 };
        cyclic.self = next() < 0.5 ? cyclic : [cyclic];
        return cyclic;
      }
      default:
        return shared.length > 0 ? pick(shared) : [];
    }
  };
  return value(0);
}

function outcome(run: () => unknown): unknown {
  try {
    return { value: run() };
  } catch (error) {
    return {
      thrown: error instanceof Error
        ? `${error.name}: ${error.message}`
        : String(error),
    };
  }
}

function compare(
  seed: number,
  read: (context: unknown) => unknown,
  reference: (context: unknown) => unknown,
) {
  const fastLog: string[] = [];
  const referenceLog: string[] = [];
  const fast = outcome(() => read(generate(seed, fastLog)));
  const expected = outcome(() => reference(generate(seed, referenceLog)));
  assert.deepEqual(fast, expected, `seed ${seed}`);
  assert.deepEqual(fastLog, referenceLog, `seed ${seed}: the code run`);
}

Deno.test("readContextJson() answers as the checking writer does, running the same code of the context, over generated values", () => {
  const bounds = [0, 1, 8, 40, 200, 4096, 1024 * 1024];
  for (let seed = 1; seed <= 3000; seed++) {
    const max = bounds[seed % bounds.length]!;
    compare(
      seed,
      (context) => readContextJson("run", context, max),
      (context) => referenceRead(context, max),
    );
  }
});

Deno.test("contextJson() answers as the checking writer does over generated values", () => {
  for (let seed = 5001; seed <= 6500; seed++) {
    compare(seed, (context) => contextJson("run", context), referenceJson);
  }
});

Deno.test("countPlainJson() vouches for plain data and asks a Proxy nothing", () => {
  const asked: string[] = [];
  const proxy = new Proxy({ a: 1 }, {
    get(target, key) {
      asked.push(String(key));
      return Reflect.get(target, key);
    },
    getPrototypeOf(target) {
      asked.push("prototype");
      return Reflect.getPrototypeOf(target);
    },
    ownKeys(target) {
      asked.push("ownKeys");
      return Reflect.ownKeys(target);
    },
  });
  assert.equal(countPlainJson({ list: [proxy] }, 1000), undefined);
  assert.deepEqual(asked, []);
  const plain = { a: [1, "b", null, true], c: { d: 2 } };
  assert.deepEqual(countPlainJson(plain, 1000), {
    plain: true,
    counted: JSON.stringify(plain).length,
  });
});

Deno.test("contextJson() asks a Proxy only what JSON.stringify asks it, in the same order", () => {
  const asked = (log: string[]) =>
    new Proxy({ a: 1, b: [2] }, {
      get(target, key, receiver) {
        log.push(`get ${String(key)}`);
        return Reflect.get(target, key, receiver);
      },
      ownKeys(target) {
        log.push("ownKeys");
        return Reflect.ownKeys(target);
      },
      getOwnPropertyDescriptor(target, key) {
        log.push(`descriptor ${String(key)}`);
        return Reflect.getOwnPropertyDescriptor(target, key);
      },
      getPrototypeOf(target) {
        log.push("prototype");
        return Reflect.getPrototypeOf(target);
      },
    });
  const written: string[] = [];
  const plain: string[] = [];
  assert.equal(contextJson("run", [asked(written)]), '[{"a":1,"b":[2]}]');
  JSON.stringify([asked(plain)]);
  assert.deepEqual(written, plain);
  assert.deepEqual(plain, [
    "get toJSON",
    "ownKeys",
    "descriptor a",
    "descriptor b",
    "get a",
    "get b",
  ]);
});

Deno.test("countPlainJson() stops within about the bound for a value that doubles at each level", () => {
  let doubled: unknown = "x";
  for (let i = 0; i < 40; i++) doubled = [doubled, doubled];
  const found = countPlainJson(doubled, 10_000);
  assert.equal(found?.plain, false);
  assert.ok(found!.counted > 10_000 && found!.counted < 10_100);
});

Deno.test("the generated values are plain data often enough to hold the fast way to account", () => {
  let plain = 0;
  let past = 0;
  for (let seed = 1; seed <= 3000; seed++) {
    const found = countPlainJson(generate(seed, []), 40);
    if (found?.plain === true) plain++;
    if (found?.plain === false) past++;
  }
  assert.ok(plain > 1000, `${plain} of 3000 plain`);
  assert.ok(past > 200, `${past} of 3000 past the bound`);
});

Deno.test("countJson() never counts past the JSON text's length, and counts plain data exactly", () => {
  const cycle: unknown[] = [1];
  cycle.push(cycle);
  const values: unknown[] = [
    { a: [1, "xé"], b: { c: true, d: null } },
    [undefined, null, NaN, -Infinity, 1e21, -0.5],
    { f() {}, s: Symbol(), u: undefined, a: [() => 0] },
    { date: new Date(0), toJSON: () => "x".repeat(40) },
    [new Uint8Array(3), new String("ab"), Object(1), new Map()],
  ];
  for (const value of values) {
    const { counted } = countJson(value, Infinity);
    assert.ok(counted <= JSON.stringify(value).length, JSON.stringify(value));
  }
  assert.deepEqual(countJson(values[0], Infinity), {
    plain: true,
    counted: JSON.stringify(values[0]).length,
  });
  assert.ok(countJson(cycle, 1000).counted <= 1000);
  assert.equal(countJson(cycle, 1000).plain, false);
});

Deno.test("countJson() counts a typed array's entries and a String object's text without walking them", () => {
  assert.ok(countJson(new Uint8Array(1e9), 1024).counted > 1024);
  assert.ok(
    countJson({ a: new String("x".repeat(2000)) }, 1024).counted > 1024,
  );
  let doubled: unknown = 0;
  for (let i = 0; i < 40; i++) doubled = [doubled, doubled];
  const found = countJson(doubled, 1000);
  assert.ok(found.counted > 1000 && found.counted < 1100);
});

Deno.test("countJson() runs no getter and asks a Proxy nothing, and counts on past them", () => {
  const asked: string[] = [];
  const proxy = new Proxy([1, 2], {
    get(target, key, receiver) {
      asked.push(String(key));
      return Reflect.get(target, key, receiver);
    },
  });
  const items = Array.from({ length: 100 }, () => ({
    get value(): number {
      asked.push("getter");
      return 1;
    },
  }));
  const found = countJson([proxy, ...items], 150);
  assert.deepEqual(asked, []);
  assert.equal(found.plain, false);
  // Each {} writes two characters at least, its comma one of them.
  assert.ok(found.counted > 150 && found.counted < 160);
});

// The marshalling writes a vm payload that is no plain data: the walk must
// vouch only for values JSON.stringify writes as the marshalling would.
Deno.test("countJson() vouches only for values JSON.stringify writes as the marshalling does", () => {
  const marshal = createMarshallers();
  const outcome = (write: () => string) => {
    try {
      return { json: write() };
    } catch (error) {
      return { code: (error as { code?: unknown }).code };
    }
  };
  const cyclic: Record<string, unknown> = { a: 1 };
  cyclic.self = cyclic;
  const nested = (levels: number) => {
    let deep: unknown = "leaf";
    for (let i = 0; i < levels; i++) deep = { next: deep };
    return deep;
  };
  const values: unknown[] = [
    undefined,
    null,
    -0,
    NaN,
    "text",
    [1, undefined, "a", null, [2]],
    { a: 1, b: undefined, c: [{ d: "e" }] },
    new Date(0),
    { when: new Date(0) },
    { toJSON: () => "mine" },
    Object.assign(Object.create(null), { a: 1, ["__proto__"]: 2 }),
    JSON.parse('{"__proto__": 1}'),
    { boxed: new String("s") },
    [function f() {}],
    { s: Symbol("s") },
    { n: 1n },
    cyclic,
    nested(MAX_NESTING_DEPTH),
    nested(MAX_NESTING_DEPTH + 1),
  ];
  let vouched = 0;
  for (const [index, value] of values.entries()) {
    const { plain } = countJson(value, Infinity);
    if (!plain) continue;
    vouched++;
    assert.deepEqual(
      outcome(() => JSON.stringify(value) ?? "null"),
      outcome(() => marshal.toWireJson(value)),
      `for value ${index}`,
    );
  }
  assert.ok(vouched >= 10, `${vouched} vouched for`);
});
