// This module is browser compatible.

/**
 * A declaration read once into plain data before it is checked. A
 * declaration is the workflow author's data, so it may be anything: an
 * object whose getter throws, a Proxy that counts or changes its answers, a
 * cycle, a Map, a sparse array a billion long. The snapshot reads each
 * property once, through its descriptor, never calls a Proxy's `get` trap,
 * stops at the depth a declaration has and at one item past the most packs
 * a declaration may name, and turns a failed read into a problem with the
 * path of what could not be read. An object that is not plain data (a
 * typed array, a Map, a String object, a class instance) is refused with
 * what its field wants, read from the schema, and what kind of object it
 * is, named without running its code. The schema's check then runs on data
 * that cannot change under it.
 *
 * @module
 */

import schema from "../schemas/declaration.json" with { type: "json" };
import { MAX_DECLARED_PACKS } from "./_id_rules.ts";
import { messageOf } from "./options.ts";
import { kindOf } from "./_object_kind.ts";

const { apply, getOwnPropertyDescriptor, getPrototypeOf, ownKeys } = Reflect;
const { create, defineProperty, hasOwn } = Object;
const { isArray } = Array;

/**
 * The deepest a declaration nests: the declaration, its `packages`, a
 * pinned pack, and the pinned pack's fields. An object or array deeper than
 * that is copied empty, which the check refuses as it would the original
 * (the schema wants a string there), and which ends any cycle.
 */
const MAX_DEPTH = 3;

/**
 * The most keys an object of a declaration is read with. The widest has
 * three (a pinned pack); an object with more is refused by its count, so
 * an object of a million keys is not copied, nor listed in the message.
 */
const MAX_KEYS = 16;

/** The longest part of a thrown message a problem repeats. */
const MAX_THROWN_CHARS = 200;

/** Why the snapshot could not be taken, and where. */
export interface SnapshotProblem {
  /** Where in the declaration, as the check's issues name it. */
  path: (string | number)[];
  /** What is wrong, in the words of the check's issues. */
  message: string;
}

/** The declaration as plain data, or why it could not be read. */
export type Snapshot =
  | { ok: true; value: unknown }
  | { ok: false; problem: SnapshotProblem };

class Unreadable {
  constructor(readonly problem: SnapshotProblem) {}
}

/**
 * Reads a declaration once into plain data: strings and other primitives
 * as they are, arrays and plain objects copied (objects without a
 * prototype, so a key `__proto__` stays a key), up to the depth and sizes
 * a declaration has.
 *
 * @param value The declaration as the caller gave it.
 * @returns The copy, or the problem that stopped it.
 */
export function snapshotDeclaration(value: unknown): Snapshot {
  try {
    return { ok: true, value: copyOf(value, [], 0) };
  } catch (error) {
    if (error instanceof Unreadable) {
      return { ok: false, problem: error.problem };
    }
    throw error;
  }
}

function copyOf(
  value: unknown,
  path: (string | number)[],
  depth: number,
): unknown {
  if (typeof value !== "object" || value === null) return value;
  const array = read(path, () => isArray(value));
  if (array) return copyArray(value as unknown[], path, depth);
  const prototype = read(path, () => getPrototypeOf(value));
  if (!read(path, () => isPlainPrototype(prototype))) {
    throw new Unreadable({
      path,
      message: `Invalid input: expected ${wantedAt(path)}, received ${
        read(path, () => kindOf(value, prototype))
      }`,
    });
  }
  return copyObject(value, path, depth);
}

/** A part of the declaration's JSON Schema, as `wantedAt` walks it. */
interface SchemaNode {
  type?: string;
  anyOf?: SchemaNode[];
  items?: SchemaNode;
  properties?: Record<string, SchemaNode>;
}

/**
 * What the declaration's schema wants at a path, in the words of its type
 * issues ("object", "array", "string or object"), read from the schema
 * itself so the wording follows it. A key the schema does not know wants
 * plain data, which the check then refuses as a key it does not know.
 */
function wantedAt(path: (string | number)[]): string {
  let node: SchemaNode | undefined = schema as SchemaNode;
  for (const step of path) {
    node = typeof step === "number" ? node?.items : propertyOf(node, step);
  }
  const types = node?.type !== undefined
    ? [node.type]
    : node?.anyOf?.map((option) => option.type ?? "value") ?? ["plain data"];
  return types.join(" or ");
}

/** A property's schema, of the node or of the one option that has it. */
function propertyOf(
  node: SchemaNode | undefined,
  key: string,
): SchemaNode | undefined {
  const owner = [node, ...(node?.anyOf ?? [])].find((option) =>
    option?.properties !== undefined && hasOwn(option.properties, key)
  );
  return owner?.properties?.[key];
}

/**
 * Whether an object with this prototype is plain data: no prototype, or an
 * `Object.prototype` (of any realm: a JSON value parsed in another frame
 * is plain data too), which is the only object whose prototype is null and
 * which holds `hasOwnProperty`.
 */
function isPlainPrototype(prototype: object | null): boolean {
  return prototype === null || prototype === Object.prototype ||
    (getPrototypeOf(prototype) === null &&
      getOwnPropertyDescriptor(prototype, "hasOwnProperty") !== undefined);
}

function copyArray(
  array: unknown[],
  path: (string | number)[],
  depth: number,
): unknown[] {
  if (depth >= MAX_DEPTH) return [];
  const length = read(path, () => lengthOf(array));
  // One item past the bound is enough for the check to refuse the list by
  // its length; the rest of a long or sparse list is never read.
  const count = Math.min(length, MAX_DECLARED_PACKS + 1);
  const copy: unknown[] = [];
  for (let index = 0; index < count; index++) {
    copy.push(ownValue(array, index, [...path, index], depth));
  }
  return copy;
}

function lengthOf(array: unknown[]): number {
  const length = getOwnPropertyDescriptor(array, "length")?.value;
  return typeof length === "number" ? length : 0;
}

function copyObject(
  object: object,
  path: (string | number)[],
  depth: number,
): Record<string, unknown> {
  const copy: Record<string, unknown> = create(null);
  if (depth >= MAX_DEPTH) return copy;
  const keys = read(path, () => ownKeys(object));
  const names = keys.filter((key): key is string => typeof key === "string");
  if (names.length > MAX_KEYS) {
    throw new Unreadable({
      path,
      message:
        `Invalid input: expected an object of at most ${MAX_KEYS} keys, received ${names.length}`,
    });
  }
  for (const name of names) {
    const descriptor = read(
      [...path, name],
      () => getOwnPropertyDescriptor(object, name),
    );
    // Left out as JSON.stringify leaves them out: a key that is not
    // enumerable is not part of the data.
    if (descriptor === undefined || !descriptor.enumerable) continue;
    // No prototype: a get or set on Object.prototype would make this a
    // descriptor that defineProperty refuses.
    defineProperty(copy, name, {
      __proto__: null,
      value: copyOf(
        valueOf(object, descriptor, [...path, name]),
        [...path, name],
        depth + 1,
      ),
      enumerable: true,
      writable: true,
      configurable: true,
    } as PropertyDescriptor);
  }
  return copy;
}

function ownValue(
  array: unknown[],
  index: number,
  path: (string | number)[],
  depth: number,
): unknown {
  const descriptor = read(
    path,
    () => getOwnPropertyDescriptor(array, String(index)),
  );
  if (descriptor === undefined) return undefined;
  return copyOf(valueOf(array, descriptor, path), path, depth + 1);
}

/** A property's value: a getter is called once, and only here. */
function valueOf(
  owner: object,
  descriptor: PropertyDescriptor,
  path: (string | number)[],
): unknown {
  // Its own get: a data descriptor inherits one that a dependency of the
  // host put on Object.prototype.
  if (!hasOwn(descriptor, "get")) return descriptor.value;
  const getter = descriptor.get;
  return getter === undefined ? undefined : read(
    path,
    () => apply(getter, owner, []),
  );
}

/** Runs one read of the caller's value; what it throws names the path. */
function read<T>(path: (string | number)[], step: () => T): T {
  try {
    return step();
  } catch (error) {
    const thrown = messageOf(error);
    throw new Unreadable({
      path,
      message: `Cannot be read: it threw ${
        thrown.length > MAX_THROWN_CHARS
          ? `${thrown.slice(0, MAX_THROWN_CHARS)}…`
          : thrown
      }`,
    });
  }
}
