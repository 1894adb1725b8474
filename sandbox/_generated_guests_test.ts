/**
 * A seeded generator of guest programs for the differential parity test:
 * each one returns, throws or logs what crosses a tier's boundary (nested
 * data, -0, NaN, sparse arrays, long strings, lone surrogates, BigInts,
 * dates, maps, typed arrays, `__proto__` and `toJSON` keys, cycles, getters,
 * class instances, errors of each type with a cause, thrown primitives and
 * hostile objects, console lines of each level near `maxLogBytes`, promises
 * that settle many jobs late). The same seed gives the same programs.
 *
 * @module
 */

import { type Random, seeded } from "../realm/_fuzz_test.ts";

/** One generated guest. */
export interface GeneratedGuest {
  /** The program's index, for the failure message. */
  readonly id: number;
  /**
   * The body of an async function of the context `c`: the default export
   * of a run, or an exported function of a vm plugin.
   */
  readonly body: string;
  /** A whole module, for the run tiers only, when it has top-level code. */
  readonly module?: string;
  /** The run's `maxLogBytes`, when it sets one. */
  readonly maxLogBytes?: number;
}

// Characters that each tier must carry alike: multi-byte UTF-8, a pair, lone
// surrogates, NUL and controls, U+2028, bidi marks and format directives.
const CHARACTERS = [
  "a",
  "Z",
  "é",
  "✓",
  "🎉",
  "\u2028",
  "\u0000",
  '"',
  "\\",
  "\n",
  "\t",
  "\uD800",
  "\uDC00",
  "\uDBFF",
  "%s",
  "%d",
  "%o",
  "%%",
  "\u001b",
  "\u200f",
];

const KEYS = [
  "a",
  "b",
  "10",
  "2",
  "",
  "__proto__",
  "constructor",
  "toJSON",
  "then",
  "valueOf",
  "toString",
  "hasOwnProperty",
  "𝟘",
  "\u2028",
  "-1",
  "1e3",
];

const SCALARS = [
  "-0",
  "NaN",
  "Infinity",
  "-Infinity",
  "0.1 + 0.2",
  "1e21",
  "-1e-7",
  "2 ** 53 + 2",
  "Number.MIN_VALUE",
  "undefined",
  "null",
  "true",
  "false",
  "42",
  "-7.5",
  "Number.MAX_VALUE",
  "c",
];

const ERROR_TYPES = [
  "Error",
  "TypeError",
  "RangeError",
  "SyntaxError",
  "ReferenceError",
  "EvalError",
  "URIError",
];

const LEVELS = ["log", "info", "warn", "error", "debug"];

// A string literal; JSON.stringify escapes lone surrogates and NUL, so the
// source itself holds neither (a vm plugin module may hold neither).
function text(random: Random, most = 8): string {
  let out = "";
  for (let i = random.below(most); i > 0; i--) out += random.pick(CHARACTERS);
  return JSON.stringify(out);
}

function key(random: Random): string {
  return JSON.stringify(random.pick(KEYS));
}

type Builder = (random: Random, depth: number) => string;

const list = (random: Random, depth: number, most: number) =>
  Array.from({ length: random.below(most) }, () => value(random, depth));

// Each builder writes an expression; `depth` bounds how deep it nests.
const VALUE_BUILDERS: readonly Builder[] = [
  (r) => r.pick(SCALARS),
  (r) => text(r),
  (r) =>
    `${JSON.stringify(r.pick(["ab", "é", "🎉", "\uD800x"]))}.repeat(${
      r.pick([1000, 4097, 65536])
    })`,
  (r, d) => `[${list(r, d, 4).join(", ")}]`,
  (r, d) => `[${value(r, d)}, , ${value(r, d)}, ]`,
  (r) => `Array(${r.below(5)})`,
  (r, d) =>
    `{ ${
      Array.from({ length: r.below(4) }, () => `[${key(r)}]: ${value(r, d)}`)
        .join(", ")
    } }`,
  (r, d) => `{ __proto__: ${value(r, d)}, own: ${value(r, d)} }`,
  (r, d) => `{ toJSON() { return ${value(r, d)}; } }`,
  () => `{ inner: { toJSON(k) { return [k, typeof this]; } } }`,
  (r, d) => `{ [${key(r)}]: { toJSON: ${value(r, d)} } }`,
  (r) =>
    r.pick([
      "new Date(0)",
      "new Date(NaN)",
      "new Date(8.64e15)",
      "new Date(-1)",
      "new Date(Date.UTC(-271821, 3, 20))",
    ]),
  (r) =>
    r.pick([
      "new Map([[1, 2]])",
      "new Set([1, 2])",
      "new WeakMap()",
      "Object.assign(new Map(), { x: 1 })",
    ]),
  (r) =>
    r.pick([
      "new Uint8Array([1, 2, 255])",
      "new Float64Array([-0, NaN, 1.5])",
      "new BigInt64Array(2)",
      "new ArrayBuffer(4)",
      "new DataView(new ArrayBuffer(2))",
    ]),
  (r) =>
    r.pick([
      "10n",
      "[1, { n: -0n }]",
      "Object(1n)",
      "{ a: [BigInt(2 ** 60)] }",
    ]),
  (r) =>
    r.pick([
      "new Number(-0)",
      'new String("ab")',
      "new Boolean(false)",
      "Object(Symbol())",
    ]),
  (r) =>
    r.pick([
      'Symbol("s")',
      '{ [Symbol("k")]: 1, v: 2 }',
      "{ f() {} }",
      "[() => 1]",
      "{ s: Symbol.iterator }",
    ]),
  (r, d) =>
    `new (class Point { #p = 1; constructor() { this.x = ${
      value(r, d)
    }; } get y() { return 2; } static z = 3; })()`,
  (r, d) => `{ get g() { return ${value(r, d)}; }, set s(v) {} }`,
  (r) => `{ get boom() { throw new RangeError(${text(r)}); } }`,
  (r, d) =>
    `(() => { const o = { a: ${value(r, d)} }; o.self = ${
      r.pick(["o", "[o]", "{ o }"])
    }; return o; })()`,
  (r, d) =>
    `(() => { const shared = ${value(r, d)}; return [shared, { shared }]; })()`,
  (r, d) => `Object.assign(Object.create(null), { a: ${value(r, d)} })`,
  () =>
    'Object.defineProperty({ v: 1 }, "hidden", { value: 2, enumerable: false })',
  (r, d) => `new Proxy({ a: ${value(r, d)} }, {})`,
  () =>
    'new Proxy({}, { ownKeys() { return ["k"]; }, getOwnPropertyDescriptor() { return { value: 1, enumerable: true, configurable: true }; }, get(_, k) { return k === "k" ? 5 : undefined; } })',
  (r) =>
    r.pick([
      "/re/g",
      'new Error("as value", { cause: 1 })',
      'Object.assign(new TypeError("t"), { code: 7 })',
      "Promise.resolve(1)",
      "new AggregateError([1])",
    ]),
  (r, d) => `Object.assign([1, 2], { extra: ${value(r, d)} })`,
  (r, d) => `Object.freeze({ a: ${value(r, d)} })`,
  (r, d) =>
    `(function () { return arguments; })(${value(r, d)}, ${value(r, d)})`,
  (r, d) =>
    `Object.assign(Object.create({ inherited: 1 }), { own: ${value(r, d)} })`,
  // Either side of MAX_NESTING_DEPTH.
  (r) =>
    `(() => { let v = []; for (let i = 0; i < ${
      r.pick([255, 256, 257])
    }; i++) v = [v]; return v; })()`,
  (r) =>
    `Object.fromEntries(Array.from({ length: ${
      r.pick([3, 300])
    } }, (_, i) => [String(i * 7 % 13) + "k" + i, i]))`,
];

function value(random: Random, depth: number): string {
  if (depth <= 0) {
    return random.below(2) ? random.pick(SCALARS) : text(random);
  }
  return random.pick(VALUE_BUILDERS)(random, depth - 1);
}

const THROWN_BUILDERS: readonly ((random: Random) => string)[] = [
  (r) => `new ${r.pick(ERROR_TYPES)}(${text(r)}, { cause: ${value(r, 1)} })`,
  (r) => `new ${r.pick(ERROR_TYPES)}(${text(r)})`,
  (r) =>
    `new AggregateError([new Error("inner"), 1], ${text(r)}, { cause: 2 })`,
  (r) =>
    r.pick([
      '"str"',
      "42",
      "null",
      "undefined",
      "10n",
      'Symbol("thrown")',
      "-0",
      "NaN",
      "[1, 2]",
    ]),
  (r) => `{ name: ${text(r)}, message: ${text(r)} }`,
  () => '{ toString() { throw new Error("hostile toString"); } }',
  () => '{ get message() { throw new Error("hostile message"); }, name: "N" }',
  () => '{ message: "m", get name() { throw 1; } }',
  () => "Object.create(null)",
  () => 'new Proxy({}, { get() { throw new Error("trap"); } })',
  (r) => `Object.assign(new Error("x"), { message: ${value(r, 0)} })`,
  (r) => `Object.assign(new Error("x"), { name: ${value(r, 0)} })`,
  (r) => `new (class MyError extends ${r.pick(ERROR_TYPES)} {})(${text(r)})`,
  (r) => `new (class Named extends Error { name = "Named"; })(${text(r)})`,
  (r) => `new Error("long ".repeat(${r.pick([100, 2000])}))`,
  (r) => `{ message: ${value(r, 1)} }`,
  () =>
    '(() => { const e = new TypeError("no stack"); delete e.stack; return e; })()',
  () => '{ toString() { return "custom text"; } }',
  (r) => `new DOMException(${text(r)}, "DataCloneError")`,
  (r) => `Object.assign(new Error(${text(r)}), { name: "InternalError" })`,
];

function thrown(random: Random): string {
  return random.pick(THROWN_BUILDERS)(random);
}

// Neither QuickJS nor the vm tier has timers, so "late" is counted in
// promise jobs: either side of the QuickJS tiers' steps of 16.
function laterChain(random: Random): string {
  return `Array.from({ length: ${
    random.pick([1, 15, 16, 17, 100])
  } }).reduce((p) => p.then(() => {}), Promise.resolve())`;
}

function consoleLines(random: Random): string[] {
  const lines: string[] = [];
  for (let i = random.below(3); i > 0; i--) {
    const level = random.pick(LEVELS);
    switch (random.below(5)) {
      case 0:
        lines.push(
          `for (let i = 0; i < ${
            random.pick([3, 100, 2000])
          }; i++) console.${level}("line", i, ${text(random)});`,
        );
        break;
      case 1:
        lines.push(
          `console.${level}("x".repeat(${
            random.pick([10, 8191, 8192, 8193, 70000])
          }));`,
        );
        break;
      case 2:
        lines.push(
          `for (let i = 0; i < ${random.pick([1, 17])}; i++) await null;`,
        );
        break;
      default: {
        const args = Array.from(
          { length: random.below(4) },
          () => random.below(3) ? value(random, 1) : text(random),
        );
        lines.push(`console.${level}(${args.join(", ")});`);
      }
    }
  }
  return lines;
}

/**
 * A guest that logs, then returns a value, throws, or settles a promise
 * many jobs later, as a function body.
 *
 * @param seed The seed of the set.
 * @param id The program's index.
 * @returns The program.
 */
export function generatedGuest(seed: number, id: number): GeneratedGuest {
  const random = seeded(seed * 7919 + id);
  const lines = consoleLines(random);
  const ending = random.below(10);
  if (ending < 2) lines.push(`throw ${thrown(random)};`);
  else if (ending === 2) {
    lines.push(
      `return ${laterChain(random)}.then(() => { throw ${thrown(random)}; });`,
    );
  } else if (ending === 3) {
    lines.push(
      `return ${laterChain(random)}.then(() => (${value(random, 3)}));`,
    );
  } else lines.push(`return ${value(random, 3)};`);
  const body = lines.join("\n");
  if (random.below(6) > 0) return { id, body };
  return { id, body, maxLogBytes: random.pick([0, 10, 100, 1000]) };
}

/**
 * A guest whose console output meets a small `maxLogBytes`: lines of one-
 * to four-byte characters (a lone surrogate counts as U+FFFD, three bytes),
 * empty lines, and arguments whose formatting logs or throws.
 *
 * @param seed The seed of the set.
 * @param id The program's index.
 * @returns The program.
 */
export function generatedLogBoundGuest(
  seed: number,
  id: number,
): GeneratedGuest {
  const random = seeded(seed * 104729 + id);
  const maxLogBytes = random.pick([0, 1, 2, 3, 4, 5, 7, 8, 16, 64, 100]);
  const pieces = ["a", "é", "🎉", "\uD800", "\u0000", "✓", "\n", "%s"];
  const lines: string[] = [];
  for (let i = 1 + random.below(6); i > 0; i--) {
    switch (random.below(6)) {
      case 0:
        lines.push(random.pick(["console.log();", 'console.log("");']));
        break;
      case 1:
        lines.push(
          `console.warn({ toJSON() { console.info(${
            JSON.stringify(random.pick(pieces))
          }); return 1; } });`,
        );
        break;
      case 2:
        lines.push(
          'try { console.error({ get x() { throw new Error("getter"); } }); } catch (e) { console.debug("caught", e.message); }',
        );
        break;
      default: {
        let line = "";
        for (let j = random.below(maxLogBytes + 3); j > 0; j--) {
          line += random.pick(pieces);
        }
        const extra = random.below(2)
          ? `, ${JSON.stringify(random.pick(pieces))}`
          : "";
        lines.push(
          `console.${random.pick(LEVELS)}(${JSON.stringify(line)}${extra});`,
        );
      }
    }
  }
  lines.push("return 1;");
  return { id, body: lines.join("\n"), maxLogBytes };
}

/**
 * A guest module with top-level code: it logs, then exports a value or a
 * rejected promise, or throws while it is evaluated (before or after an
 * `await`). Only the run tiers take such a module.
 *
 * @param seed The seed of the set.
 * @param id The program's index.
 * @returns The program.
 */
export function generatedModuleGuest(
  seed: number,
  id: number,
): GeneratedGuest {
  const random = seeded(seed * 15485863 + id);
  const lines = ["const c = null;", ...consoleLines(random)];
  const ending = random.below(6);
  if (ending === 0) lines.push(`throw ${thrown(random)};`);
  else if (ending === 1) {
    lines.push(`export default Promise.reject(${thrown(random)});`);
  } else if (ending === 2) {
    lines.push(`await null;\nthrow ${thrown(random)};`);
  } else lines.push(`export default ${value(random, 3)};`);
  const module = lines.join("\n");
  return { id, body: "", module };
}
