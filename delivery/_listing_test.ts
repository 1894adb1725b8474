import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { createDiskCatalog } from "../catalog/disk_catalog.ts";
import { summariesReader } from "../catalog/in_memory_delivery.ts";
import { EMPTY_CATALOG } from "../catalog/empty_catalog.ts";
import type { SandboxModuleCatalog } from "../catalog/types.ts";
import type { PackSummary } from "../protocol/mod.ts";
import { ListingCache } from "./_listing.ts";
import { copyTree } from "./_test_copy_tree_test.ts";

const FIXTURE_PACKS = fileURLToPath(
  new URL("../fixtures/packs/", import.meta.url),
);

function summary(name: string): PackSummary {
  return {
    name,
    version: "1.0.0",
    graphDigest: "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
    modules: [],
  };
}

async function body(cache: ListingCache, list: readonly PackSummary[]) {
  const listing = await cache.prepare(list);
  return await listing.respond(null, false, false).json();
}

Deno.test("ListingCache knows a frozen list unchanged by its identity, without comparing its packs", async () => {
  const cache = new ListingCache();
  // Packs that are not frozen never count as unchanged when compared one
  // by one; the frozen list around them still is the same list.
  const list = Object.freeze([summary("a"), summary("b")]);
  const first = cache.prepare(list);
  assert.equal(cache.prepare(list), first);
  // A copy is compared pack by pack, and these packs are not frozen.
  const copied = cache.prepare([...list]);
  assert.notEqual(copied, first);
  assert.deepEqual(
    await body(cache, list),
    await (await first).respond(null, false, false).json(),
  );
});

Deno.test("ListingCache prepares a new listing when the list changes, and keeps one for a copy of frozen packs", async () => {
  const cache = new ListingCache();
  const a = Object.freeze(summary("a"));
  const b = Object.freeze(summary("b"));
  const list = Object.freeze([a]);
  const first = cache.prepare(list);
  assert.equal(cache.prepare([a]), first, "a copy with the same frozen packs");
  assert.equal(cache.prepare(list), first);
  const grown = Object.freeze([a, b]);
  assert.notEqual(cache.prepare(grown), first);
  assert.deepEqual(
    (await body(cache, grown)).packs.map((p: PackSummary) => p.name),
    ["a", "b"],
  );
  // Packs changed in place are never taken for the same.
  const loose = [summary("c")];
  const looseFirst = cache.prepare(loose);
  assert.notEqual(cache.prepare(loose), looseFirst);
});

Deno.test("summariesReader() answers a disk catalog's one frozen list until a re-scan finds a change", async () => {
  const root = await Deno.makeTempDir({ prefix: "cordon_listing_" });
  try {
    await copyTree(FIXTURE_PACKS, root);
    const catalog = await createDiskCatalog(root);
    const listNow = summariesReader(catalog);
    const first = listNow();
    assert.ok(Object.isFrozen(first));
    assert.equal(listNow(), first);
    assert.deepEqual(first, catalog.summaries());
    await Deno.mkdir(`${root}/extra`);
    await Deno.writeTextFile(`${root}/extra/index.js`, "export const x = 1;\n");
    await Deno.writeTextFile(
      `${root}/extra/package.json`,
      JSON.stringify({
        name: "extra",
        version: "1.0.0",
        cordon: { exports: { ".": "./index.js" } },
      }),
    );
    await catalog.rescan();
    const second = listNow();
    assert.notEqual(second, first);
    assert.ok(Object.isFrozen(second));
    assert.ok(second.some((pack) => pack.name === "extra"));
    assert.ok(!first.some((pack) => pack.name === "extra"), "never changed");
    assert.equal(listNow(), second);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("summariesReader() of a catalog that registered nothing asks its summaries() each time", () => {
  let calls = 0;
  const catalog: SandboxModuleCatalog = {
    ...EMPTY_CATALOG,
    summaries: () => {
      calls++;
      return [summary("a")];
    },
  };
  const listNow = summariesReader(catalog);
  listNow();
  listNow();
  assert.equal(calls, 2);
});

Deno.test("ListingCache prepares one private listing per set of packs, shared by every request that lists the same packs", async () => {
  const cache = new ListingCache("private");
  const list = Object.freeze(
    ["a", "b", "c"].map((n) => Object.freeze(summary(n))),
  );
  const candidates = cache.candidates(list);
  assert.equal(candidates, list);
  assert.deepEqual(
    cache.candidates(list, ["b", "nope"]).map((p) => p.name),
    ["b"],
  );
  const some = await cache.prepareOf(list, [list[0]!, list[2]!]);
  assert.equal(await cache.prepareOf(list, [list[0]!, list[2]!]), some);
  const other = await cache.prepareOf(list, [list[0]!]);
  assert.notEqual(other.etagFor(false), some.etagFor(false));
  const response = some.respond(null, false, false);
  assert.equal(response.headers.get("cache-control"), "private, no-cache");
  assert.deepEqual(
    (await response.json()).packs.map((p: PackSummary) => p.name),
    ["a", "c"],
  );
  // Every pack is the whole listing, with its tag.
  const all = await cache.prepareOf(list, list);
  assert.equal(all.etagFor(false), (await cache.prepare(list)).etagFor(false));
  assert.equal(
    new ListingCache().candidates(list) === list &&
      (await new ListingCache().prepare(list)).respond(null, false, false)
        .headers.get("cache-control"),
    "no-cache",
  );
});
