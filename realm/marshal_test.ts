import assert from "node:assert/strict";
import { createMarshallers } from "./marshal.ts";
import { LOG_LEVELS } from "../protocol/log_levels.ts";
import { MAX_NESTING_DEPTH } from "../protocol/nesting.ts";
import {
  stringObjectJsonChars,
  typedArrayJsonChars,
} from "../protocol/plain_json.ts";

const { toWireValue, toWireJson, describeThrown, formatLogArgs } =
  createMarshallers();

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return (error as { code?: string }).code;
  }
  return undefined;
}

/** The engine's own error for an exhausted stack. */
function engineStackOverflow(): unknown {
  try {
    (function deeper(): number {
      return deeper() + 1;
    })();
  } catch (error) {
    return error;
  }
  throw new Error("the stack never ran out");
}

Deno.test("toWireValue() keeps JSON data as it is", () => {
  const data = { a: [1, "two", true, null, { b: -1.5 }], c: "" };
  assert.deepEqual(toWireValue(data), data);
});

Deno.test("toWireValue() follows JSON.stringify for undefined, NaN and toJSON", () => {
  assert.equal(toWireValue(undefined), null);
  assert.deepEqual(toWireValue([undefined, NaN, Infinity]), [null, null, null]);
  assert.deepEqual(toWireValue({ a: undefined, b: 1 }), { b: 1 });
  assert.equal(toWireValue(new Date(0)), "1970-01-01T00:00:00.000Z");
  assert.ok(Object.is(toWireValue(-0), 0));
  // toJSON is given its value's key, as JSON.stringify gives it.
  const keyed = { toJSON: (key: unknown) => [key, typeof key] };
  const value = { a: keyed, list: [keyed] };
  assert.deepEqual(toWireValue(keyed), ["", "string"]);
  assert.deepEqual(toWireValue(value), JSON.parse(JSON.stringify(value)));
});

Deno.test("toWireValue() refuses functions, symbols, BigInts and cycles with a path", () => {
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  for (const value of [() => 1, Symbol("s"), 1n, cyclic]) {
    assert.equal(
      codeOf(() => toWireValue({ x: [value] })),
      "RESULT_NOT_SERIALIZABLE",
    );
  }
  assert.throws(
    () => toWireValue({ x: [1n] }),
    /at result\.x\[0\]: results must be JSON-safe data/,
  );
});

Deno.test("toWireValue() accepts the same object twice when it is not a cycle", () => {
  const shared = { n: 1 };
  assert.deepEqual(toWireValue([shared, shared]), [{ n: 1 }, { n: 1 }]);
  // An object whose toJSON answered is out of the walk's way once copied.
  const date = new Date(0);
  const answer = { toJSON: () => [1] };
  assert.deepEqual(toWireValue([date, date, { a: answer, b: answer }]), [
    date.toJSON(),
    date.toJSON(),
    { a: [1], b: [1] },
  ]);
});

Deno.test("toWireJson() counts nothing against maxJsonChars for an entry it leaves out", () => {
  const { toWireJson } = createMarshallers({ maxJsonChars: 12 });
  assert.equal(
    toWireJson({ a: 1, ["k".repeat(40)]: undefined, f: undefined }),
    '{"a":1}',
  );
});

Deno.test("createMarshallers() works from its source text in another realm", () => {
  const fromText = new Function(`return (${createMarshallers.toString()})()`)();
  assert.deepEqual(fromText.toWireValue({ a: [1, undefined] }), {
    a: [1, null],
  });
});

// The realm copy cannot import the list: it runs from its source text.
Deno.test("levels are the protocol's LOG_LEVELS", () => {
  assert.deepEqual(createMarshallers().levels, LOG_LEVELS);
});

Deno.test("describeThrown() names Errors and non-Errors", () => {
  assert.deepEqual(describeThrown(new TypeError("bad")), {
    code: "GUEST_ERROR",
    name: "TypeError",
    message: "bad",
  });
  assert.deepEqual(describeThrown(42), {
    code: "GUEST_ERROR",
    name: "NonErrorThrown",
    message: "Guest code threw a non-Error value: 42",
  });
});

Deno.test("isStackOverflow() tells the engine's error for an exhausted stack by what it is, not by its name and message", () => {
  const { isStackOverflow } = createMarshallers();
  const exhausted = engineStackOverflow();
  assert.equal(isStackOverflow(exhausted), true);
  assert.equal(
    isStackOverflow(new RangeError("Maximum call stack size exceeded")),
    true,
  );
  // QuickJS's JSON.parse reports its stack limit as a SyntaxError.
  assert.equal(isStackOverflow(new SyntaxError("stack overflow")), true);
  for (
    const lookAlike of [
      { name: "RangeError", message: "Maximum call stack size exceeded" },
      { name: "InternalError", message: "stack overflow" },
      { name: "SyntaxError", message: "stack overflow" },
      new SyntaxError("Unexpected token"),
      new Error("Maximum call stack size exceeded"),
      new RangeError("Invalid array length"),
      Object.defineProperty(new RangeError(), "message", {
        get: () => "Maximum call stack size exceeded",
      }),
      new Proxy({}, {
        getPrototypeOf() {
          throw new Error("trap");
        },
      }),
      "Maximum call stack size exceeded",
      null,
    ]
  ) {
    assert.equal(isStackOverflow(lookAlike), false, String(lookAlike));
  }
});

Deno.test("isStackOverflow() reads an error's own message only, not a value a guest put on Object.prototype", () => {
  const { isStackOverflow, isOutOfMemory } = createMarshallers();
  // A getter of its own: its descriptor has no value of its own.
  const lookAlike = Object.defineProperty(new RangeError(), "message", {
    get: () => "mine",
  });
  Object.defineProperty(Object.prototype, "value", {
    value: "Maximum call stack size exceeded",
    configurable: true,
  });
  try {
    assert.equal(isStackOverflow(lookAlike), false);
    assert.equal(isOutOfMemory(lookAlike), false);
  } finally {
    delete (Object.prototype as { value?: unknown }).value;
  }
});

Deno.test("describeThrown() keeps the engine's stack overflow code, and a look-alike stays a GUEST_ERROR", () => {
  const exhausted = engineStackOverflow();
  assert.equal(describeThrown(exhausted).code, "STACK_OVERFLOW");
  const lookAlike = {
    name: "RangeError",
    message: "Maximum call stack size exceeded",
  };
  assert.deepEqual(describeThrown(lookAlike), {
    code: "GUEST_ERROR",
    ...lookAlike,
  });
});

Deno.test("formatLogArgs() and describeThrown() read an error's name and message once each", () => {
  const reads: string[] = [];
  const counted = {
    get name() {
      reads.push("name");
      return "CustomError";
    },
    get message() {
      reads.push("message");
      return "boom";
    },
  };
  assert.equal(formatLogArgs([counted]), "CustomError: boom");
  assert.deepEqual(reads.sort(), ["message", "name"]);
  reads.length = 0;
  assert.deepEqual(describeThrown(counted), {
    code: "GUEST_ERROR",
    name: "CustomError",
    message: "boom",
  });
  assert.deepEqual(reads.sort(), ["message", "name"]);
});

Deno.test("describeThrown() clips huge messages", () => {
  const { message } = describeThrown(new Error("x".repeat(1_000_000)));
  assert.ok(message.length <= 8193);
});

Deno.test("formatLogArgs() formats every kind of argument", () => {
  assert.equal(
    formatLogArgs(["s", 1, 2n, null, undefined, { a: 1 }, [1], new Error("e")]),
    's 1 2n null undefined {"a":1} [1] Error: e',
  );
  assert.equal(formatLogArgs([function named() {}]), "[Function named]");
});

Deno.test("toWireJson() writes what JSON.stringify(toWireValue()) writes, and throws what toWireValue() throws", () => {
  const { toWireJson } = createMarshallers();
  class Point {
    x = 1;
  }
  const shared = { n: 1 };
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  const values: unknown[] = [
    undefined,
    null,
    -0,
    NaN,
    "text",
    [1, undefined, () => 1].slice(0, 2),
    { a: undefined, b: [Infinity, -0], c: { d: "e" } },
    { when: new Date(0), both: [shared, shared] },
    // Boxed primitives, instances and null-prototype objects: convert's answer.
    new Number(3),
    new String("ab"),
    new Point(),
    Object.assign(Object.create(null), { k: 1 }),
    new Map([[1, 2]]),
    { toJSON: () => ({ nested: new Point() }) },
  ];
  for (const value of values) {
    assert.equal(toWireJson(value), JSON.stringify(toWireValue(value)));
  }
  for (const refused of [() => 1, Symbol("s"), 1n, cyclic]) {
    const value = { x: [refused] };
    const expected = (() => {
      try {
        toWireValue(value);
        return null;
      } catch (error) {
        return error as Error & { code: string };
      }
    })();
    assert.ok(expected !== null);
    assert.throws(() => toWireJson(value), (error: unknown) => {
      const thrown = error as Error & { code: string };
      assert.equal(thrown.code, expected.code);
      assert.equal(thrown.message, expected.message);
      return true;
    });
  }
});

/**
 * Values whose every read counts itself, each beside something only a
 * copy can write (a Map, a null-prototype object, a function, a cycle), and
 * what the marshalling answers or throws for them.
 */
function countedValues(): {
  value: unknown;
  reads: Map<string, number>;
  answer: string | { code?: string; message: string };
}[] {
  const cases: {
    value: unknown;
    reads: Map<string, number>;
    answer: string | { code?: string; message: string };
  }[] = [];
  const add = (
    build: (read: (what: string) => void) => unknown,
    answer: string | { code?: string; message: string },
  ) => {
    const reads = new Map<string, number>();
    const read = (what: string) => reads.set(what, (reads.get(what) ?? 0) + 1);
    cases.push({ value: build(read), reads, answer });
  };
  add((read) => ({
    get g() {
      read("g");
      return 1;
    },
    d: new Map(),
  }), '{"g":1,"d":{}}');
  add((read) => ({
    a: {
      toJSON() {
        read("toJSON");
        return "a";
      },
    },
    get toJSON() {
      read("get toJSON");
      return undefined;
    },
    n: Object.create(null),
  }), '{"a":"a","n":{}}');
  const counting = (name: string, target: object) =>
    new Proxy(target, {
      get(target, key, receiver) {
        read(`${name} get ${String(key)}`);
        return Reflect.get(target, key, receiver);
      },
      ownKeys(target) {
        read(`${name} ownKeys`);
        return Reflect.ownKeys(target);
      },
      getOwnPropertyDescriptor(target, key) {
        read(`${name} getOwnPropertyDescriptor ${String(key)}`);
        return Reflect.getOwnPropertyDescriptor(target, key);
      },
      getPrototypeOf(target) {
        read(`${name} getPrototypeOf`);
        return Reflect.getPrototypeOf(target);
      },
      has(target, key) {
        read(`${name} has ${String(key)}`);
        return Reflect.has(target, key);
      },
    });
  let read = (_what: string): void => {};
  add((counter) => {
    read = counter;
    return {
      record: counting("record", Object.assign(Object.create(null), { k: 1 })),
      list: counting("list", [1, 2]),
    };
  }, '{"record":{"k":1},"list":[1,2]}');
  add((read) => ({
    get g() {
      read("g");
      return 1;
    },
    f: () => 1,
  }), {
    code: "RESULT_NOT_SERIALIZABLE",
    message:
      "Cannot return a function from a sandbox at result.f: results must be JSON-safe data; return its result instead",
  });
  add((read) => {
    const cyclic: Record<string, unknown> = {
      get g() {
        read("g");
        return 1;
      },
    };
    cyclic.self = cyclic;
    return cyclic;
  }, {
    code: "RESULT_NOT_SERIALIZABLE",
    message:
      "Cannot return a cyclic value from a sandbox at result.self: results must be JSON-safe data; remove the cycle",
  });
  add((read) => ({
    get g() {
      read("g");
      return 1;
    },
    get bad() {
      read("bad");
      throw new RangeError("mine");
    },
  }), { message: "mine" });
  return cases;
}

Deno.test("toWireValue() and toWireJson() read every getter, toJSON and proxy trap once, beside values only a copy writes", () => {
  const writers: [string, (value: unknown) => unknown][] = [
    ["toWireValue", (value) => JSON.stringify(toWireValue(value))],
    ["toWireJson", toWireJson],
    [
      "toWireJson with maxJsonChars",
      createMarshallers({ maxJsonChars: 1000 }).toWireJson,
    ],
  ];
  for (const [name, write] of writers) {
    for (const { value, reads, answer } of countedValues()) {
      let outcome: unknown;
      try {
        outcome = write(value);
      } catch (thrown) {
        const error = thrown as { code?: string; message: string };
        outcome = error.code === undefined
          ? { message: error.message }
          : { code: error.code, message: error.message };
      }
      assert.deepEqual(outcome, answer, name);
      const twice = [...reads].filter(([, count]) => count !== 1);
      assert.deepEqual(twice, [], `${name}: ${JSON.stringify(answer)}`);
      assert.ok(reads.size > 0, name);
    }
  }
});

Deno.test("toWireValue() refuses a toJSON() that answers its own object as a cycle", () => {
  const selfish = {
    toJSON() {
      return this;
    },
  };
  assert.equal(
    codeOf(() => toWireValue({ body: selfish })),
    "RESULT_NOT_SERIALIZABLE",
  );
  assert.equal(
    codeOf(() => toWireJson({ body: selfish })),
    "RESULT_NOT_SERIALIZABLE",
  );
});

Deno.test("toWireJson() refuses text past maxJsonChars while it writes it, nested writes keeping their own count", () => {
  const { toWireJson, isTooLarge, isRefusal } = createMarshallers({
    maxJsonChars: 1000,
  });
  const refusal = (fn: () => unknown): unknown => {
    try {
      fn();
    } catch (thrown) {
      return thrown;
    }
    return undefined;
  };
  assert.equal(toWireJson({ a: "x".repeat(900) }).length, 908);
  for (
    const value of [
      "x".repeat(2 ** 26),
      { toJSON: () => "x".repeat(2 ** 26) },
      [["y".repeat(600)], "y".repeat(600)],
      { ["k".repeat(1200)]: 1 },
      new Map([["a", "x".repeat(2000)]]).entries().next(),
    ]
  ) {
    const thrown = refusal(() => toWireJson(value));
    assert.ok(isTooLarge(thrown) && isRefusal(thrown), String(thrown));
  }
  // A toJSON that writes another text meanwhile does not refill this one.
  const nested = {
    a: "x".repeat(600),
    b: { toJSON: () => toWireJson("z".repeat(900)) },
  };
  assert.ok(isTooLarge(refusal(() => toWireJson(nested))));
  assert.equal(isTooLarge(new Error("x")), false);
});

// Longer than any engine lists as keys (V8 throws a RangeError past
// 2**27), so a walk that lists one before it counts fails otherwise; its
// buffer is never written, and takes no memory.
const UNLISTABLE = 2 ** 28;

function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (thrown) {
    return thrown;
  }
  return undefined;
}

Deno.test("toWireJson() refuses at maxJsonChars a typed array or String object held by a Proxy, a class instance or an Array subclass, before it lists their entries", () => {
  const { toWireJson, isTooLarge, formatLogArgs } = createMarshallers({
    maxJsonChars: 1024,
  });
  class Holder {
    a = new Float64Array(UNLISTABLE);
  }
  class Items extends Array {}
  const text = new String("x".repeat(2 ** 27 + 64));
  const values = [
    new Proxy({ a: new Uint8Array(UNLISTABLE) }, {}),
    new Holder(),
    Items.from([1, new Int32Array(UNLISTABLE)]),
    new Proxy({ a: text }, {}),
    Items.from([text]),
  ];
  for (const value of values) {
    const thrown = thrownBy(() => toWireJson(value));
    assert.ok(isTooLarge(thrown), String(thrown));
    assert.match(
      String(thrown),
      /^RangeError: Cannot write JSON text longer than 1024 characters: write less data$/,
    );
    assert.equal(
      formatLogArgs([value]),
      `[value longer than ${128 * 8192} characters as JSON]`,
    );
  }
  assert.equal(
    toWireJson(new Proxy({ a: new Uint8Array(2) }, {})),
    '{"a":{"0":0,"1":0}}',
  );
  assert.equal(toWireJson([new DataView(new ArrayBuffer(8))]), "[{}]");
});

Deno.test("toWireValue(), toWireJson() and formatLogArgs() refuse a Proxy of a typed array and an object made from a typed array's prototype, before listing entries they cannot count, where a Proxy of a million was refused at the bound after 6.4 s", () => {
  const { toWireValue, toWireJson, formatLogArgs, isRefusal } =
    createMarshallers({ maxJsonChars: 1024 });
  const values = [
    new Proxy(new Uint8Array(3), {}),
    new Proxy(new Float64Array(1e5), {}),
    new Proxy(new Proxy(new Int8Array(2), {}), {}),
    Object.create(Uint16Array.prototype),
  ];
  for (const value of values) {
    for (const write of [toWireValue, toWireJson]) {
      const thrown = thrownBy(() => write({ bytes: value }));
      assert.ok(isRefusal(thrown), String(thrown));
      assert.equal(
        (thrown as { code?: string }).code,
        "RESULT_NOT_SERIALIZABLE",
      );
      assert.equal(
        String(thrown),
        "Error: Cannot return an object that inherits from a typed array but is none (a Proxy of one) from a sandbox at result.bytes: results must be JSON-safe data; return the typed array itself, or Array.from() of it",
      );
    }
    assert.equal(formatLogArgs([value]), "[unserializable object]");
  }
  class Bytes extends Uint8Array {}
  assert.equal(toWireJson(new Bytes(2)), '{"0":0,"1":0}');
  assert.equal(
    toWireJson(
      Object.setPrototypeOf(new Uint8Array(1), Float32Array.prototype),
    ),
    '{"0":0}',
  );
});

Deno.test("toWireJson() counts a typed array's and a String object's least text as protocol/plain_json.ts does", () => {
  // A typed array is refused by the count at one character less than its
  // least text, and at that bound listed, which no engine can.
  const typed = new Uint16Array(UNLISTABLE);
  const least = typedArrayJsonChars(typed);
  const below = createMarshallers({ maxJsonChars: least - 1 });
  assert.ok(below.isTooLarge(thrownBy(() => below.toWireJson(typed))));
  const at = createMarshallers({ maxJsonChars: least });
  const listed = thrownBy(() => at.toWireJson(typed));
  assert.ok(listed instanceof RangeError, String(listed));
  assert.equal(at.isTooLarge(listed), false);
  // An object's least character, past which plain_json.ts counts a String
  // object's text and quotes.
  const text = new String("x".repeat(2 ** 27 + 64));
  const short = createMarshallers({
    maxJsonChars: stringObjectJsonChars(text),
  });
  assert.ok(short.isTooLarge(thrownBy(() => short.toWireJson(text))));
});

Deno.test("toWireValue() and toWireJson() refuse at once an array whose shortest text passes maxJsonChars", () => {
  const { toWireValue, toWireJson, isTooLarge } = createMarshallers();
  // 2 * length + 1 characters at least: one more than the limit.
  const sparse: unknown[] = [];
  sparse.length = 2 ** 26;
  for (const write of [toWireValue, toWireJson]) {
    let thrown: unknown;
    try {
      write({ list: [sparse] }, 2 ** 27);
    } catch (error) {
      thrown = error;
    }
    assert.ok(isTooLarge(thrown), String(thrown));
    assert.match(
      (thrown as Error).message,
      /^Cannot write JSON text longer than 134217728 characters/,
    );
  }
  // The floor is exact: "[1,2,3]" fits 7 characters and not 6.
  assert.equal(
    createMarshallers({ maxJsonChars: 7 }).toWireJson([1, 2, 3]),
    "[1,2,3]",
  );
  assert.deepEqual(toWireValue([1, 2], 6), [1, 2]);
  assert.throws(() => toWireValue([1, 2, 3], 6), (error) => isTooLarge(error));
});

Deno.test("toWireJson()'s own maxJsonChars replaces the one the marshallers were made with, and toWireValue() counts a shared string each time it appears", () => {
  const { toWireValue, toWireJson, isTooLarge } = createMarshallers({
    maxJsonChars: 8,
  });
  const text = "x".repeat(100);
  assert.equal(toWireJson(text, 102), JSON.stringify(text));
  assert.throws(() => toWireJson(text, 101), (error) => isTooLarge(error));
  assert.throws(() => toWireJson(text), (error) => isTooLarge(error));
  const shared = Array(50).fill(text);
  // Unbounded unless the call names a bound, as before.
  assert.deepEqual(toWireValue(shared), shared);
  const bound = JSON.stringify(shared).length;
  assert.deepEqual(toWireValue(shared, bound), shared);
  assert.throws(
    () => toWireValue(shared, 49 * 102),
    (error) => isTooLarge(error),
  );
});

Deno.test("toWireJson() refuses text that escapes take past maxJsonChars, on both of its paths", () => {
  const { toWireJson, isTooLarge } = createMarshallers({ maxJsonChars: 10 });
  // Seven characters counted while written, fourteen once escaped.
  const quotes = '"'.repeat(6);
  assert.equal(toWireJson('"'.repeat(4)), JSON.stringify('"'.repeat(4)));
  // Plain data, then a value only the copy writes.
  for (const value of [quotes, new String(quotes)]) {
    let thrown: unknown;
    try {
      toWireJson(value);
    } catch (error) {
      thrown = error;
    }
    assert.ok(isTooLarge(thrown), String(thrown));
  }
});

Deno.test("formatLogArgs() counts a String object whose own toString or Symbol.toPrimitive gives its text by that text, as JSON.stringify writes it", () => {
  const { formatLogArgs } = createMarshallers();
  const held = "x".repeat(2 ** 21);
  const values = [
    Object.assign(new String(held), { toString: () => "a" }),
    Object.assign(new String(held), { [Symbol.toPrimitive]: () => "a" }),
  ];
  for (const value of values) {
    assert.equal(JSON.stringify([value]), '["a"]');
    assert.equal(formatLogArgs([[value]]), '["a"]');
  }
  // The string it holds, when that is what it writes.
  assert.equal(
    formatLogArgs([[new String(held)]]),
    "[value longer than 1048576 characters as JSON]",
  );
});

Deno.test("formatLogArgs() logs a placeholder for an argument whose JSON passes 1 MiB, before writing it", () => {
  const { formatLogArgs } = createMarshallers();
  const sparse: unknown[] = [];
  sparse.length = 2 ** 27;
  for (const value of [{ toJSON: () => "x".repeat(2 ** 26) }, sparse]) {
    assert.equal(
      formatLogArgs(["big", value]),
      "big [value longer than 1048576 characters as JSON]",
    );
  }
  const line = formatLogArgs([{ a: "x".repeat(20_000) }]);
  assert.equal(line, `{"a":"${"x".repeat(8192 - 6)}…`);
});

function nestedArrays(depth: number, leaf: unknown = 1): unknown {
  let value = leaf;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

function nestedObjects(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
}

Deno.test("the marshalling's nesting cap is the protocol's MAX_NESTING_DEPTH", () => {
  const { maxDepth } = createMarshallers();
  assert.equal(maxDepth, MAX_NESTING_DEPTH);
});

Deno.test("toWireValue() and toWireJson() take data nested MAX_NESTING_DEPTH deep and refuse one level more, naming the cap and where", () => {
  for (const write of [toWireValue, toWireJson]) {
    const written = write(nestedArrays(MAX_NESTING_DEPTH));
    assert.equal(
      typeof written === "string" ? written : JSON.stringify(written),
      JSON.stringify(nestedArrays(MAX_NESTING_DEPTH)),
    );
    for (
      const [value, path] of [
        [
          nestedArrays(MAX_NESTING_DEPTH + 1),
          "result" + "[0]".repeat(MAX_NESTING_DEPTH),
        ],
        [nestedObjects(100_000), "result" + ".a".repeat(MAX_NESTING_DEPTH)],
        [
          { x: [nestedArrays(MAX_NESTING_DEPTH - 1)] },
          "result.x[0]" + "[0]".repeat(MAX_NESTING_DEPTH - 2),
        ],
      ] as const
    ) {
      assert.throws(() => write(value), (error: Error & { code?: string }) => {
        assert.equal(error.code, "RESULT_NOT_SERIALIZABLE");
        assert.equal(
          error.message,
          `Cannot return data nested deeper than ${MAX_NESTING_DEPTH} levels from a sandbox at ${path}: results must be JSON-safe data; return flatter data, or pass the deeper part as JSON text`,
        );
        return true;
      });
    }
  }
});

Deno.test("isTooDeep() tells a refusal for nesting by identity", () => {
  const { toWireValue, isTooDeep, isRefusal } = createMarshallers();
  let thrown: unknown;
  try {
    toWireValue(nestedArrays(MAX_NESTING_DEPTH + 1));
  } catch (error) {
    thrown = error;
  }
  assert.ok(isTooDeep(thrown) && isRefusal(thrown));
  assert.ok(!createMarshallers().isTooDeep(thrown));
  const marshal = createMarshallers();
  try {
    marshal.toWireJson(nestedArrays(MAX_NESTING_DEPTH + 1));
  } catch (error) {
    thrown = error;
  }
  assert.ok(marshal.isTooDeep(thrown));
  try {
    marshal.toWireJson({ f() {} });
  } catch (error) {
    thrown = error;
  }
  assert.ok(!marshal.isTooDeep(thrown) && marshal.isRefusal(thrown));
});

Deno.test("describeThrown() shows a thrown array nested deeper than MAX_NESTING_DEPTH cut at the cap, and says so", () => {
  assert.deepEqual(describeThrown(nestedArrays(MAX_NESTING_DEPTH, "x")), {
    code: "GUEST_ERROR",
    name: "NonErrorThrown",
    message: "Guest code threw a non-Error value: x",
  });
  for (const depth of [MAX_NESTING_DEPTH + 1, 100_000]) {
    assert.deepEqual(describeThrown(nestedArrays(depth, "x")), {
      code: "GUEST_ERROR",
      name: "NonErrorThrown",
      message:
        `Guest code threw a non-Error value nested deeper than ${MAX_NESTING_DEPTH} levels, shown to that depth: `,
    });
  }
  assert.equal(
    describeThrown([1, [2, [3, null]], undefined, "s"]).message,
    "Guest code threw a non-Error value: 1,2,3,,,s",
  );
  const cyclic: unknown[] = [1];
  cyclic.push(cyclic, 2);
  assert.equal(
    describeThrown(cyclic).message,
    "Guest code threw a non-Error value: 1,,2",
  );
});

Deno.test("formatLogArgs() logs a placeholder for an argument nested deeper than MAX_NESTING_DEPTH", () => {
  assert.equal(
    formatLogArgs(["at cap", nestedArrays(MAX_NESTING_DEPTH)]),
    "at cap " + "[".repeat(MAX_NESTING_DEPTH) + "1" +
      "]".repeat(MAX_NESTING_DEPTH),
  );
  for (const depth of [MAX_NESTING_DEPTH + 1, 100_000]) {
    assert.equal(
      formatLogArgs(["deep", nestedObjects(depth)]),
      `deep [value nested deeper than ${MAX_NESTING_DEPTH} levels]`,
    );
  }
});

Deno.test("describeThrown() describes a thrown revoked proxy without throwing", () => {
  const { proxy, revoke } = Proxy.revocable([], {});
  revoke();
  assert.deepEqual(describeThrown(proxy), {
    code: "GUEST_ERROR",
    name: "NonErrorThrown",
    message: "Guest code threw a non-Error value: [unprintable value]",
  });
});

Deno.test("createMarshallers() clips a long log line before a surrogate pair it would split, never between its halves", () => {
  const { formatLogArgs } = createMarshallers();
  const split = "x".repeat(8191) + "😀".repeat(10);
  assert.equal(formatLogArgs([split]), `${"x".repeat(8191)}…`);
  const whole = "x".repeat(8190) + "😀".repeat(10);
  assert.equal(formatLogArgs([whole]), `${"x".repeat(8190)}😀…`);
});

Deno.test("toWireJson() writes arrays nested in arrays whose text is exactly at its bound", () => {
  const { toWireJson } = createMarshallers();
  for (
    const value of [[[1]], [[[[[[[[]]]]]]]], [[1, 2], [3]], [[[]], []], {
      a: [[1]],
    }]
  ) {
    const text = JSON.stringify(value);
    assert.equal(toWireJson(value, text.length), text);
  }
});
