import { createWebBlob } from "./web_blob.ts";
import { createStructuredClone } from "./web_clone.ts";
import { createWebText } from "./web_text.ts";
import {
  assertSameAnswers,
  outcome,
  type Random,
  seeded,
} from "./_fuzz_test.ts";

const text = createWebText();
const blobs = createWebBlob(text.TextEncoder, text.TextDecoder);
const realmClone = createStructuredClone(text.DOMException, blobs);

/** The constructors a side builds its values with, and its clone. */
interface Side {
  clone: (value: unknown, options?: { transfer: ArrayBuffer[] }) => unknown;
  Blob: typeof Blob;
  File: typeof File;
}
const REALM: Side = { clone: realmClone, Blob: blobs.Blob, File: blobs.File };
const DENO: Side = { clone: structuredClone, Blob, File };

// ---- A plan of a value graph ------------------------------------------

/** One node of a graph; numbers in `refs` are other nodes' indexes. */
type Node =
  | { kind: "primitive"; value: unknown }
  | { kind: "object"; keys: string[]; refs: number[]; getter: boolean }
  | {
    kind: "array";
    length: number;
    at: number[];
    refs: number[];
    extra: boolean;
  }
  | { kind: "map" | "set"; refs: number[] }
  | { kind: "date"; time: number }
  | { kind: "regexp"; source: string; flags: string; lastIndex: number }
  | { kind: "boxed"; value: unknown }
  | {
    kind: "error";
    type: string;
    message: string | null;
    cause: number | null;
    name: string | null;
  }
  | { kind: "buffer"; bytes: number[]; max: number | null }
  | {
    kind: "view";
    type: string;
    buffer: number;
    offset: number;
    length: number | null;
  }
  | { kind: "blob"; parts: string[]; type: string; name: string | null }
  | { kind: "uncloneable"; what: string }
  | { kind: "exotic"; what: string; ref: number };

interface Plan {
  nodes: Node[];
  /** Indexes of buffers to transfer, when the clone is given a list. */
  transfer: number[] | null;
}

const PRIMITIVES: unknown[] = [
  0,
  -0,
  1.5,
  NaN,
  Infinity,
  -Infinity,
  2 ** 53,
  "",
  "text",
  "\ud800",
  "\ud83d\ude00",
  true,
  false,
  null,
  undefined,
  0n,
  -(2n ** 70n),
];
const VIEW_TYPES = [
  ["Uint8Array", 1],
  ["Int8Array", 1],
  ["Uint8ClampedArray", 1],
  ["Int16Array", 2],
  ["Uint16Array", 2],
  ["Int32Array", 4],
  ["Uint32Array", 4],
  ["Float32Array", 4],
  ["Float64Array", 8],
  ["BigInt64Array", 8],
  ["BigUint64Array", 8],
  ["DataView", 1],
] as const;
const ERROR_TYPES = [
  "Error",
  "TypeError",
  "RangeError",
  "SyntaxError",
  "ReferenceError",
  "EvalError",
  "URIError",
  "AggregateError",
];
/** Objects whose clone depends on more than their contents. */
const EXOTIC = [
  "null prototype",
  "class instance",
  "hidden keys",
  "sparse array",
  "error with a number message",
  "error with an object message",
  "error with a symbol message",
  "error with an accessor message",
  "error with a name getter",
  "error with a symbol name",
  "error with a stack that is not a string",
  "error without a stack",
  "error subclass",
  "boxed symbol",
  "date subclass",
  "map subclass",
  "throwing getter",
];
const UNCLONEABLE = [
  "function",
  "symbol",
  "WeakMap",
  "WeakSet",
  "WeakRef",
  "Promise",
  "generator",
];

/** A node; containers refer to any node, so cycles and sharing happen. */
function planNode(random: Random, count: number, buffers: number[]): Node {
  const ref = () => random.below(count);
  const refs = (max: number) =>
    Array.from({ length: random.below(max + 1) }, ref);
  const kind = random.below(20);
  if (kind < 4) return { kind: "primitive", value: random.pick(PRIMITIVES) };
  if (kind < 7) {
    const keys = Array.from(
      { length: random.below(4) },
      () => random.pick(["a", "b", "1", "0", "__proto__", "length", "\u00e9"]),
    );
    return {
      kind: "object",
      keys,
      refs: keys.map(ref),
      getter: random.chance(0.2),
    };
  }
  if (kind < 9) {
    const length = random.below(6);
    const at = Array.from({ length }, (_, i) => i)
      .filter(() => random.chance(0.7));
    return {
      kind: "array",
      length,
      at,
      refs: at.map(ref),
      extra: random.chance(0.2),
    };
  }
  if (kind < 11) return { kind: random.pick(["map", "set"]), refs: refs(3) };
  if (kind === 11) {
    return { kind: "date", time: random.pick([0, -1, 8.64e15, NaN, 1e12]) };
  }
  if (kind === 12) {
    return {
      kind: "regexp",
      source: random.pick(["a+", "", "[\\/]", "\\d", "(?<n>x)"]),
      flags: random.pick(["", "g", "gimsuy", "d", "v"]),
      lastIndex: random.below(3),
    };
  }
  if (kind === 13) {
    return { kind: "boxed", value: random.pick([1, -0, "s", true, 5n]) };
  }
  if (kind === 14) {
    return {
      kind: "error",
      type: random.pick(ERROR_TYPES),
      message: random.chance(0.8) ? random.pick(["", "m", "\u00e9"]) : null,
      cause: random.chance(0.4) ? ref() : null,
      name: random.chance(0.2) ? random.pick(["TypeError", "Foo", ""]) : null,
    };
  }
  if (kind === 15) {
    return {
      kind: "buffer",
      bytes: Array.from({ length: random.below(17) }, () => random.below(256)),
      max: random.chance(0.2) ? 24 : null,
    };
  }
  if (kind === 16 && buffers.length > 0) {
    const [type, size] = random.pick(VIEW_TYPES);
    return {
      kind: "view",
      type,
      buffer: random.pick(buffers),
      offset: size * random.below(3),
      length: random.chance(0.3) ? null : random.below(3),
    };
  }
  if (kind === 17) {
    return {
      kind: "blob",
      parts: Array.from(
        { length: random.below(3) },
        () => random.pick(["ab", "\u00e9", "\ud800"]),
      ),
      type: random.pick(["", "Text/Plain", "a\u00e9"]),
      name: random.chance(0.5) ? random.pick(["f.txt", ""]) : null,
    };
  }
  if (kind === 18 && random.chance(0.5)) {
    return { kind: "uncloneable", what: random.pick(UNCLONEABLE) };
  }
  if (kind === 19) {
    return { kind: "exotic", what: random.pick(EXOTIC), ref: ref() };
  }
  return { kind: "primitive", value: random.pick(PRIMITIVES) };
}

function plan(random: Random): Plan {
  const count = 1 + random.below(8);
  const nodes: Node[] = [];
  const buffers: number[] = [];
  for (let i = 0; i < count; i++) {
    const node = planNode(random, count, buffers);
    if (node.kind === "buffer") buffers.push(i);
    nodes.push(node);
  }
  // The root is a container more often than not.
  if (nodes[0]!.kind === "primitive" && random.chance(0.7)) {
    nodes[0] = { kind: "array", length: count, at: [], refs: [], extra: false };
    const root = nodes[0] as { at: number[]; refs: number[] };
    for (let i = 1; i < count; i++) {
      root.at.push(i - 1);
      root.refs.push(i);
    }
  }
  const transfer = buffers.length > 0 && random.chance(0.3)
    ? buffers.filter(() => random.chance(0.7))
    : null;
  // A buffer listed twice is a DataCloneError.
  if (transfer !== null && random.chance(0.1)) {
    transfer.push(random.pick(buffers));
  }
  return { nodes, transfer };
}

// ---- Building a plan's values on one side -------------------------------

const GLOBALS = globalThis as unknown as Record<
  string,
  new (...args: unknown[]) => object
>;

function exotic(what: string, item: () => unknown): unknown {
  const error = (fields: PropertyDescriptorMap) =>
    Object.defineProperties(new RangeError("m"), fields);
  switch (what) {
    case "null prototype":
      return Object.assign(Object.create(null), { a: item() });
    case "class instance":
      return new (class Point {
        x = item();
      })();
    case "hidden keys":
      return Object.defineProperties({ [Symbol("s")]: 1, shown: 2 }, {
        hidden: { value: 3, enumerable: false },
      });
    case "sparse array": {
      const array: unknown[] = [];
      array[70000] = item();
      return array;
    }
    case "error with a number message":
      return error({ message: { value: 5 } });
    case "error with an object message":
      return error({ message: { value: { toString: () => "t" } } });
    case "error with a symbol message":
      return error({ message: { value: Symbol("m") } });
    case "error with an accessor message":
      return error({ message: { get: () => "g" } });
    case "error with a name getter":
      return error({ name: { get: () => "TypeError" } });
    case "error with a symbol name":
      return error({ name: { value: Symbol("n") } });
    case "error with a stack that is not a string":
      return error({ stack: { value: 5 } });
    case "error without a stack": {
      const made = new TypeError("s");
      delete made.stack;
      return made;
    }
    case "error subclass":
      return new (class MyError extends SyntaxError {})("e");
    case "boxed symbol":
      return Object(Symbol("b"));
    case "date subclass":
      return new (class Day extends Date {})(5);
    case "map subclass":
      return new (class Table extends Map<unknown, unknown> {})([[1, item()]]);
    default:
      return {
        get a() {
          throw new TypeError("getter");
        },
      };
  }
}

function uncloneable(what: string): unknown {
  switch (what) {
    case "function":
      return () => 1;
    case "symbol":
      return Symbol("s");
    case "Promise":
      return Promise.resolve();
    case "generator":
      return (function* () {})();
    case "WeakRef":
      return new WeakRef({});
    default:
      return new GLOBALS[what]!();
  }
}

/** Makes every node, then fills the containers, so refs can form cycles. */
function build(side: Side, { nodes }: Plan): unknown[] {
  const values: unknown[] = nodes.map((node) => {
    switch (node.kind) {
      case "primitive":
        return node.value;
      case "object":
        return {};
      case "array":
        return new Array(node.length);
      case "map":
        return new Map();
      case "set":
        return new Set();
      case "date":
        return new Date(node.time);
      case "regexp": {
        const regexp = new RegExp(node.source, node.flags);
        regexp.lastIndex = node.lastIndex;
        return regexp;
      }
      case "boxed":
        return Object(node.value);
      case "error": {
        const Ctor = GLOBALS[node.type]!;
        const args: unknown[] = node.type === "AggregateError" ? [[]] : [];
        if (node.message !== null) args.push(node.message);
        return new Ctor(...args);
      }
      case "buffer": {
        const buffer = node.max === null
          ? new ArrayBuffer(node.bytes.length)
          : new ArrayBuffer(node.bytes.length, { maxByteLength: node.max });
        new Uint8Array(buffer).set(node.bytes);
        return buffer;
      }
      case "view":
        return null;
      case "blob":
        return node.name === null
          ? new side.Blob(node.parts, { type: node.type })
          : new side.File(node.parts, node.name, {
            type: node.type,
            lastModified: 7,
          });
      case "uncloneable":
        return uncloneable(node.what);
      case "exotic":
        return null;
    }
  });
  // Views and exotic objects next, so every container can hold them.
  nodes.forEach((node, i) => {
    if (node.kind === "view") {
      values[i] = makeView(node, values[node.buffer] as ArrayBuffer);
    }
  });
  nodes.forEach((node, i) => {
    if (node.kind === "exotic") {
      values[i] = exotic(node.what, () => values[node.ref]);
    }
  });
  nodes.forEach((node, i) => {
    const value = values[i] as Record<string, unknown>;
    if (node.kind === "object") {
      node.keys.forEach((key, k) => {
        const item = () => values[node.refs[k]!];
        if (node.getter && k === 0) {
          Object.defineProperty(value, key, {
            get: item,
            enumerable: true,
            configurable: true,
          });
        } else {
          Object.defineProperty(value, key, {
            value: item(),
            enumerable: true,
            writable: true,
            configurable: true,
          });
        }
      });
    } else if (node.kind === "array") {
      node.at.forEach((index, k) => value[index] = values[node.refs[k]!]);
      if (node.extra) value.extra = values[0];
    } else if (node.kind === "map") {
      for (let k = 0; k + 1 < node.refs.length; k += 2) {
        (value as unknown as Map<unknown, unknown>)
          .set(values[node.refs[k]!], values[node.refs[k + 1]!]);
      }
    } else if (node.kind === "set") {
      for (const r of node.refs) {
        (value as unknown as Set<unknown>).add(values[r]);
      }
    } else if (node.kind === "error") {
      if (node.cause !== null) value.cause = values[node.cause];
      if (node.name !== null) value.name = node.name;
    }
  });
  return values;
}

/** A view, or the RangeError a misfit gives, which clones as an error. */
function makeView(
  node: Extract<Node, { kind: "view" }>,
  buffer: ArrayBuffer,
): unknown {
  try {
    const Ctor = GLOBALS[node.type] as unknown as new (
      buffer: ArrayBuffer,
      offset: number,
      length?: number,
    ) => object;
    return node.length === null
      ? new Ctor(buffer, node.offset)
      : new Ctor(buffer, node.offset, node.length);
  } catch (error) {
    return error;
  }
}

// ---- What a clone shows -----------------------------------------------

/**
 * A clone as data: each object once, by the order it is first reached, its
 * class, prototype, own keys and contents; a shared or cyclic reference is
 * its number. Buffers show their bytes and whether they are detached.
 */
function describe(root: unknown, side: Side): unknown {
  const seen = new Map<object, number>();
  const walk = (value: unknown): unknown => {
    if (typeof value === "bigint") return ["bigint", String(value)];
    if (typeof value === "number") {
      return Object.is(value, -0) || !Number.isFinite(value)
        ? ["number", String(Object.is(value, -0) ? "-0" : value)]
        : value;
    }
    if (value === undefined) return ["undefined"];
    if (typeof value !== "object" || value === null) return value;
    const known = seen.get(value);
    if (known !== undefined) return ["ref", known];
    seen.set(value, seen.size);
    const tag = Object.prototype.toString.call(value);
    const proto = Object.getPrototypeOf(value);
    const out: unknown[] = [
      tag,
      proto === Object.prototype
        ? "Object.prototype"
        : proto?.constructor?.name,
    ];
    if (value instanceof side.Blob) {
      out.push(value.size, value.type, value instanceof side.File);
      if (value instanceof side.File) out.push(value.name, value.lastModified);
      // Deno's keep their state in own symbol-keyed properties.
      return out;
    } else if (value instanceof ArrayBuffer) {
      out.push(value.detached, value.resizable, value.maxByteLength);
      out.push(value.detached ? [] : Array.from(new Uint8Array(value)));
    } else if (ArrayBuffer.isView(value)) {
      out.push(value.byteOffset, value.byteLength, walk(value.buffer));
    } else if (value instanceof Map) {
      for (const [k, v] of value) out.push([walk(k), walk(v)]);
    } else if (value instanceof Set) {
      for (const v of value) out.push(walk(v));
    } else if (value instanceof Date) {
      out.push(walk(value.getTime()));
    } else if (value instanceof RegExp) {
      out.push(value.source, value.flags, value.lastIndex);
    } else if (value instanceof Error) {
      out.push(value.name, "stack" in value);
    } else if (tag !== "[object Object]" && tag !== "[object Array]") {
      out.push(walk((value as { valueOf(): unknown }).valueOf()));
    }
    for (const key of Reflect.ownKeys(value)) {
      if (key === "stack") continue;
      const descriptor = Object.getOwnPropertyDescriptor(value, key)!;
      out.push([
        String(key),
        descriptor.enumerable,
        "value" in descriptor ? walk(descriptor.value) : "accessor",
      ]);
    }
    return out;
  };
  return walk(root);
}

/**
 * Builds the plan on one side, clones its root (with the transfer list
 * when there is one), and shows the clone or the error, then the
 * originals' buffers (transferred ones are detached, even on failure).
 */
function cloneCase(side: Side, item: Plan): unknown {
  const values = build(side, item);
  const transfer = item.transfer?.map((i) => values[i] as ArrayBuffer);
  const result = outcome(() =>
    describe(
      side.clone(values[0], transfer && { transfer }),
      side,
    )
  );
  const buffers = item.nodes.flatMap((node, i) =>
    node.kind === "buffer" ? [(values[i] as ArrayBuffer).detached] : []
  );
  return [result, buffers];
}

function fuzzClone(seed: number, count: number): Record<string, number> {
  const random = seeded(seed);
  const cases = Array.from({ length: count }, () => plan(random));
  return assertSameAnswers(
    seed,
    cases,
    (item) => cloneCase(REALM, item),
    (item) => cloneCase(DENO, item),
  );
}

Deno.test("structuredClone clones 2,000 random graphs as Deno's does: cycles, shared buffers, maps, sets, errors with causes, blobs, transfer and what it refuses", () => {
  fuzzClone(20260708, 2000);
});
