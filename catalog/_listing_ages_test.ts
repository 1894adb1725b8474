import assert from "node:assert/strict";
import { ListingAges } from "./_listing_ages.ts";

Deno.test("ListingAges forgets the stale names the server did not list, so 10,000 names guests imported leave only the packs it holds", () => {
  const ages = new ListingAges(0);
  const held = new Set(["greet"]);
  for (let run = 0; run < 10_000; run++) {
    ages.listed(["greet", `missing-${run}`], run);
    ages.forgetStale(run, (name) => held.has(name));
  }
  assert.equal(ages.size, 1);
});

Deno.test("ListingAges keeps a name the server did not list while it is fresh, so it is not asked for again", () => {
  const ages = new ListingAges(1000);
  ages.listed(["missing"], 0);
  ages.forgetStale(999, () => false);
  assert.equal(ages.areFresh(["missing"], 999), true);
  ages.forgetStale(1000, () => false);
  assert.equal(ages.areFresh(["missing"], 1000), false);
  assert.equal(ages.size, 0);
});

Deno.test("ListingAges keeps the whole listing stale once a stale name was forgotten, until every pack is listed again", () => {
  const ages = new ListingAges(1000);
  ages.listedAll(["greet"], 0);
  ages.listed(["missing"], 0);
  ages.listed(["greet"], 1500);
  ages.forgetStale(1500, (name) => name === "greet");
  assert.equal(ages.areAllFresh(1500), false);
  ages.listedAll(["greet"], 1600);
  assert.equal(ages.areAllFresh(1600), true);
});
