import assert from "node:assert/strict";
import { RecentMap } from "./recent.ts";

/** Which of `keys` are kept; `get` marks use, so call it last. */
function kept<K, V>(map: RecentMap<K, V>, keys: readonly K[]): K[] {
  return keys.filter((key) => map.get(key) !== undefined);
}

/** A map of strings counted by their length, in bytes. */
function bySize(maxEntries: number, maxBytes: number) {
  return new RecentMap<string, string>({
    maxEntries,
    maxBytes,
    sizeOf: (value) => value.length,
  });
}

Deno.test("RecentMap drops the least recently used entry past maxEntries", () => {
  const map = new RecentMap<string, number>({ maxEntries: 3 });
  map.set("a", 1);
  map.set("b", 2);
  map.set("c", 3);
  assert.equal(map.get("a"), 1);
  map.set("d", 4);
  assert.equal(map.size, 3);
  assert.deepEqual(kept(map, ["a", "b", "c", "d"]), ["a", "c", "d"]);
});

Deno.test("RecentMap counts setting a kept key again as a use and keeps its new value", () => {
  const map = new RecentMap<string, number>({ maxEntries: 2 });
  map.set("a", 1);
  map.set("b", 2);
  map.set("a", 10);
  map.set("c", 3);
  assert.deepEqual(kept(map, ["a", "b", "c"]), ["a", "c"]);
  assert.equal(map.get("a"), 10);
});

Deno.test("RecentMap keeps the order right when the newest entry is used again", () => {
  const map = new RecentMap<string, number>({ maxEntries: 3 });
  map.set("a", 1);
  map.set("b", 2);
  map.set("c", 3);
  // c is the newest: using it again leaves the order a, b, c.
  assert.equal(map.get("c"), 3);
  assert.equal(map.get("c"), 3);
  // a becomes the newest, then b: the newest mark must follow each move.
  assert.equal(map.get("a"), 1);
  assert.equal(map.get("b"), 2);
  assert.equal(map.get("b"), 2);
  map.set("d", 4); // c is the least recently used now
  assert.deepEqual(kept(map, ["a", "b", "c", "d"]), ["a", "b", "d"]);
});

Deno.test("RecentMap moves an entry used again after a newer one was set", () => {
  const map = new RecentMap<string, number>({ maxEntries: 2 });
  map.set("a", 1);
  map.set("b", 2);
  assert.equal(map.get("a"), 1);
  map.set("c", 3); // b goes; c is the newest, after a
  assert.equal(map.get("a"), 1);
  map.set("d", 4); // c goes
  assert.deepEqual(kept(map, ["a", "c", "d"]), ["a", "d"]);
});

Deno.test("RecentMap moves an entry that became last by a delete when it is used", () => {
  const map = new RecentMap<string, number>({ maxEntries: 3 });
  map.set("a", 1);
  map.set("b", 2);
  map.set("c", 3);
  assert.equal(map.delete("c"), true);
  assert.equal(map.delete("c"), false);
  assert.equal(map.get("a"), 1); // order b, a
  map.set("c", 3);
  map.set("d", 4); // b goes
  assert.deepEqual(kept(map, ["a", "b", "c", "d"]), ["a", "c", "d"]);
});

Deno.test("RecentMap drops the least recently used entries past maxBytes", () => {
  const map = bySize(10, 8);
  map.set("a", "123");
  map.set("b", "123");
  assert.equal(map.get("a"), "123");
  map.set("c", "1234"); // 10 bytes: b goes, 7 are left
  assert.deepEqual(kept(map, ["a", "b", "c"]), ["a", "c"]);
  map.set("d", "12345678"); // exactly the bound: every other entry goes
  assert.deepEqual(kept(map, ["a", "c", "d"]), ["d"]);
  assert.equal(map.size, 1);
});

Deno.test("RecentMap counts a replaced value's bytes once, at the end or not", () => {
  const map = bySize(10, 8);
  map.set("a", "12");
  map.set("b", "12");
  map.set("b", "123456"); // b is the newest: replaced in place, 8 bytes
  assert.deepEqual(kept(map, ["a", "b"]), ["a", "b"]);
  map.set("a", "1"); // a replaced: 7 bytes
  map.set("c", "1"); // 8 bytes
  assert.deepEqual(kept(map, ["a", "b", "c"]), ["a", "b", "c"]);
  map.set("c", "12"); // c is the newest and grows: a, the oldest, goes
  assert.deepEqual(kept(map, ["a", "b", "c"]), ["b", "c"]);
  assert.equal(map.bytes, 8);
  map.delete("b");
  assert.equal(map.bytes, 2);
  assert.equal(new RecentMap({ maxEntries: 1 }).bytes, 0);
});

Deno.test("RecentMap does not keep a value larger than maxBytes, and drops the one it replaces", () => {
  const map = bySize(10, 4);
  map.set("a", "12");
  map.set("b", "12");
  map.set("c", "12345");
  assert.equal(map.get("c"), undefined);
  assert.deepEqual(kept(map, ["a", "b"]), ["a", "b"]);
  map.set("b", "12345");
  assert.equal(map.get("b"), undefined);
  assert.equal(map.size, 1);
  // The bytes of the dropped value were given back: two more fit.
  map.set("b", "12");
  assert.deepEqual(kept(map, ["a", "b"]), ["a", "b"]);
});

Deno.test("RecentMap.clear() drops every entry and its bytes", () => {
  const map = bySize(3, 8);
  map.set("a", "1234");
  map.set("b", "1234");
  map.clear();
  assert.equal(map.size, 0);
  assert.equal(map.get("b"), undefined);
  // b was the newest before: set again, it is a new entry of its own bytes.
  map.set("b", "1234");
  map.set("c", "1234");
  assert.deepEqual(kept(map, ["a", "b", "c"]), ["b", "c"]);
  map.set("d", "1"); // 9 bytes: b, the least recently used, goes
  assert.deepEqual(kept(map, ["b", "c", "d"]), ["c", "d"]);
});

Deno.test("RecentMap keeps an entry whose value is undefined in order of use", () => {
  const map = new RecentMap<string, number | undefined>({ maxEntries: 2 });
  map.set("a", undefined);
  map.set("b", 2);
  map.get("a");
  map.set("c", 3);
  assert.equal(map.size, 2);
  assert.equal(map.get("b"), undefined);
  assert.equal(map.delete("a"), true);
});

Deno.test("RecentMap refuses bounds that are missing, not positive integers or half given", () => {
  const make = (options: unknown) => () =>
    new RecentMap(options as { maxEntries: number });
  assert.throws(make({}), {
    name: "TypeError",
    message: "Cannot create a RecentMap: maxEntries is required",
  });
  assert.throws(make({ maxEntries: 0 }), {
    name: "RangeError",
    message:
      "Cannot create a RecentMap: maxEntries must be an integer from 1 to 9007199254740991 entries",
  });
  assert.throws(make({ maxEntries: 1, maxBytes: 1.5, sizeOf: () => 1 }), {
    name: "RangeError",
  });
  assert.throws(make({ maxEntries: 1, maxBytes: 8 }), {
    name: "TypeError",
    message:
      "Cannot create a RecentMap: maxBytes and sizeOf go together; give both or neither",
  });
  assert.throws(make({ maxEntries: 1, sizeOf: () => 1 }), {
    name: "TypeError",
  });
  assert.throws(make({ maxEntries: 1, maxBytes: 8, sizeOf: 8 }), {
    name: "TypeError",
    message: "Cannot create a RecentMap: sizeOf must be a function",
  });
  assert.throws(make({ maxEntry: 1 }), {
    name: "TypeError",
    message:
      "Cannot create a RecentMap: unknown option maxEntry; did you mean maxEntries?",
  });
});

Deno.test("RecentMap refuses a size that is not a whole number of bytes, and keeps its total", () => {
  for (const bad of [Number.NaN, -1, 1.5, Infinity]) {
    const map = new RecentMap<string, number>({
      maxEntries: 4,
      maxBytes: 10,
      sizeOf: (value) => value,
    });
    map.set("a", 3);
    assert.throws(() => map.set("b", bad), TypeError);
    assert.equal(map.bytes, 3);
    assert.equal(map.get("a"), 3);
    assert.equal(map.get("b"), undefined);
  }
});
