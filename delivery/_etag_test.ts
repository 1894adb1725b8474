import assert from "node:assert/strict";
import { ifMatchMatches, ifNoneMatchMatches } from "./_etag.ts";

const TAG = '"sha256-abc+/="';

Deno.test("ifNoneMatchMatches() matches *, the tag, its weak form and a list that holds it", () => {
  for (
    const header of [
      "*",
      " *\t",
      TAG,
      `W/${TAG}`,
      `"other", ${TAG}`,
      `"a,b" ,W/${TAG}`,
      // Empty list members are allowed (RFC 9110 section 5.6.1).
      `, ,${TAG},`,
      `"x",,\t${TAG}`,
    ]
  ) {
    assert.equal(ifNoneMatchMatches(header, TAG), true, header);
  }
  assert.equal(ifNoneMatchMatches(TAG, `W/${TAG}`), true);
});

Deno.test("ifNoneMatchMatches() matches nothing in a malformed field, whatever else it holds", () => {
  for (
    const header of [
      "",
      ",",
      TAG.slice(1, -1),
      `${TAG}, sha256-x`,
      `sha256-x, ${TAG}`,
      `${TAG} "x"`,
      `${TAG}"x"`,
      `W/`,
      `W/, ${TAG}`,
      `W/ ${TAG}`,
      `w/${TAG}`,
      `${TAG}, *`,
      `*, ${TAG}`,
      "W/*",
      `"x`,
      `${TAG}, "x`,
      `"a b", ${TAG}`,
      `"a\u0001", ${TAG}`,
      `"\u0100", ${TAG}`,
      `${TAG};q=1`,
    ]
  ) {
    assert.equal(ifNoneMatchMatches(header, TAG), false, header);
  }
});

Deno.test("ifNoneMatchMatches() reads a very long field without throwing", () => {
  const many = Array.from({ length: 20_000 }, (_, i) => `"t${i}"`).join(", ");
  assert.equal(ifNoneMatchMatches(`${many}, ${TAG}`, TAG), true);
  assert.equal(ifNoneMatchMatches(`${many}, ${TAG}, x`, TAG), false);
  assert.equal(ifNoneMatchMatches(`"${"a".repeat(1 << 20)}`, TAG), false);
  assert.equal(ifNoneMatchMatches(",".repeat(1 << 20), TAG), false);
  assert.equal(ifNoneMatchMatches("W/".repeat(1 << 18), TAG), false);
  assert.equal(ifNoneMatchMatches(`${" ".repeat(1 << 20)}x`, TAG), false);
});

Deno.test("ifMatchMatches() compares the strong way and matches nothing in a malformed field", () => {
  assert.equal(ifMatchMatches("*", TAG), true);
  assert.equal(ifMatchMatches(`"x", ${TAG}`, TAG), true);
  assert.equal(ifMatchMatches(`W/${TAG}`, TAG), false);
  assert.equal(ifMatchMatches(TAG, `W/${TAG}`), false);
  assert.equal(ifMatchMatches(`${TAG}, junk`, TAG), false);
  assert.equal(ifMatchMatches(`${TAG}"x"`, TAG), false);
});
