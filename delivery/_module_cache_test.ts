import assert from "node:assert/strict";
import { sha256Digest } from "../catalog/digest.ts";
import type { AuthorizedDelivery } from "../protocol/mod.ts";
import { ModuleResponseCache, VARIANT } from "./_module_cache.ts";

const MODULE_CHARS = 1000;

/** A module of `chars` ASCII characters, as a catalog delivers it. */
async function delivery(
  moduleId: string,
  chars = MODULE_CHARS,
): Promise<AuthorizedDelivery> {
  const content = `export default "${moduleId.padEnd(chars - 18, "x")}";`;
  assert.equal(content.length, chars);
  const digest = await sha256Digest(new TextEncoder().encode(content));
  return {
    ok: true,
    moduleId,
    content,
    mediaType: "text/javascript",
    digest,
    graphDigest: digest,
    dependencyIds: [],
    pack: { name: "p", version: "1.0.0" },
    path: "./index.js",
  };
}

/** Whether the cache still holds the entry it prepared for `given`. */
async function holds(
  cache: ModuleResponseCache,
  given: AuthorizedDelivery,
  prepared: unknown,
): Promise<boolean> {
  return await cache.prepare(given) === prepared;
}

// A server whose packs are upgraded or removed all day keeps the entries
// of modules nobody asks for any more until they are pushed out, so what
// the bound counts is what such entries hold: the source text, its bytes,
// and the copy of the bytes each prepared 200 response takes (the
// Response constructor copies its body).
Deno.test("ModuleResponseCache counts the source, the bytes and each 200 response's copy of them against maxBytes", async () => {
  const cache = new ModuleResponseCache({
    scope: "public",
    maxEntries: 100,
    // The source and the bytes of four modules.
    maxBytes: 8 * MODULE_CHARS,
    servedByDeno: false,
  });
  const old = await delivery("old");
  const prepared = await cache.prepare(old);
  assert.ok(prepared !== undefined);
  // Served at its plain and pinned URLs: two more copies of the bytes.
  await prepared.respond(VARIANT.plain, false).arrayBuffer();
  await prepared.respond(VARIANT.pinned, false).arrayBuffer();
  // Bodyless answers copy nothing.
  prepared.respond(VARIANT.plainNotModified, false);
  prepared.respond(VARIANT.plain, true);
  assert.ok(await holds(cache, old, prepared));
  // The old module holds four units, two new ones four more: full.
  for (const id of ["new1", "new2"]) await cache.prepare(await delivery(id));
  assert.ok(await holds(cache, old, prepared));
  // A third is one unit too many: the oldest goes.
  await cache.prepare(await delivery("new3"));
  assert.ok(!await holds(cache, old, prepared));
});

// An entry that grows past the bound alone is let go as one that never
// fitted is never kept, rather than pushing out every other entry first.
Deno.test("ModuleResponseCache lets go of an entry whose 200 takes it past maxBytes alone, and keeps the others", async () => {
  const cache = new ModuleResponseCache({
    scope: "public",
    maxEntries: 100,
    // The small module and the large one fit, but not the large one's
    // source, bytes and a copy of them.
    maxBytes: 2.5 * MODULE_CHARS,
    servedByDeno: false,
  });
  const small = await delivery("small", MODULE_CHARS / 5);
  const kept = await cache.prepare(small);
  const largeDelivery = await delivery("large");
  const large = await cache.prepare(largeDelivery);
  assert.ok(kept !== undefined && large !== undefined);
  await large.respond(VARIANT.plain, false).arrayBuffer();
  assert.ok(await holds(cache, small, kept), "the small module stays");
  assert.ok(!await holds(cache, largeDelivery, large), "the large one goes");
});

Deno.test("ModuleResponseCache counts a source outside Latin-1 at two bytes a code unit, as V8 holds it", async () => {
  const cache = new ModuleResponseCache({
    scope: "public",
    maxEntries: 100,
    maxBytes: 3 * MODULE_CHARS,
    servedByDeno: false,
  });
  const ascii = await delivery("ascii", 500);
  const prepared = await cache.prepare(ascii);
  // 500 characters and 500 bytes: a third of the bound.
  const wide = `export default "${"€".repeat(150)}";`;
  const digest = await sha256Digest(new TextEncoder().encode(wide));
  // 168 code units at two bytes and 468 bytes of UTF-8: 804 an entry.
  // With the first entry's 1,000, two fit in 3,000 and a third does not;
  // at one byte a code unit (636 an entry) all three would fit.
  for (const id of ["w1", "w2"]) {
    await cache.prepare({ ...ascii, moduleId: id, content: wide, digest });
  }
  assert.ok(await holds(cache, ascii, prepared));
  await cache.prepare({ ...ascii, moduleId: "w3", content: wide, digest });
  assert.ok(!await holds(cache, ascii, prepared));
});
