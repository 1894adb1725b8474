import assert from "node:assert/strict";
import { parseRange, pickVersion, satisfies } from "./_semver.ts";

function inRange(version: string, range: string): boolean {
  const parsed = parseRange(range);
  assert.notEqual(parsed, null, range);
  return satisfies(version, parsed!);
}

Deno.test("satisfies() reads caret, tilde, partial, wildcard and compound ranges", () => {
  const cases: [string, string, boolean][] = [
    ["1.2.3", "^1.2.0", true],
    ["2.0.0", "^1.2.0", false],
    ["0.2.9", "^0.2.3", true],
    ["0.3.0", "^0.2.3", false],
    ["0.0.4", "^0.0.3", false],
    ["1.2.9", "~1.2.3", true],
    ["1.3.0", "~1.2.3", false],
    ["1.9.0", "1.x", true],
    ["2.0.0", "1", false],
    ["5.0.0", "*", true],
    ["5.0.0", "", true],
    ["1.5.0", ">=1.2 <2", true],
    ["2.0.0", ">=1.2 <2", false],
    ["3.1.0", "^1 || ^3", true],
    ["1.4.0", "1.2.0 - 1.4.0", true],
    ["1.4.1", "1.2.0 - 1.4.0", false],
    ["1.2.3", "1.2.3", true],
    ["1.2.4", "1.2.3", false],
    ["2.0.0-beta.1", "^1.0.0", false],
    ["2.0.0-beta.2", ">=2.0.0-beta.1", true],
    ["1.3.0", "<=1.2", false],
    ["1.2.7", "<=1.2", true],
  ];
  for (const [version, range, expected] of cases) {
    assert.equal(inRange(version, range), expected, `${version} in ${range}`);
  }
});

Deno.test("satisfies() takes a prerelease a range names as -0, as npm does", () => {
  // @messageformat/core 3.4 depends on "@messageformat/date-skeleton":
  // "2.0.0-0", an exact version whose prerelease tag is 0.
  const cases: [string, string, boolean][] = [
    ["2.0.0-0", "2.0.0-0", true],
    ["2.0.0-1", "2.0.0-0", false],
    ["2.0.0-1", "^2.0.0-0", true],
    ["2.0.0-0", ">=2.0.0-0 <3", true],
    // The bounds the reader makes up end in -0 too, and let no prerelease in.
    ["1.3.0-0", ">1.2", false],
    ["1.3.0-beta", "1.2.x || >=1.3.0-beta <1.3.0", true],
    ["2.0.0-0", "^1.2.0", false],
    ["1.3.0-0", "<=1.2", false],
  ];
  for (const [version, range, expected] of cases) {
    assert.equal(inRange(version, range), expected, `${version} in ${range}`);
  }
  assert.equal(
    pickVersion(["1.1.0", "2.0.0-0"], parseRange("2.0.0-0")!, "1.1.0"),
    "2.0.0-0",
  );
});

Deno.test("parseRange() refuses what it cannot read", () => {
  assert.equal(parseRange("git+https://example.com/x.git"), null);
  assert.equal(parseRange("^1.2.3.4"), null);
});

Deno.test("pickVersion() prefers latest in range, else the highest", () => {
  const versions = ["1.0.0", "1.4.0", "2.0.0", "2.1.0-rc.1"];
  assert.equal(pickVersion(versions, parseRange("^1")!, "2.0.0"), "1.4.0");
  assert.equal(pickVersion(versions, parseRange("*")!, "1.0.0"), "1.0.0");
  assert.equal(pickVersion(versions, parseRange("^2")!, undefined), "2.0.0");
  assert.equal(pickVersion(versions, parseRange("^3")!, "2.0.0"), undefined);
});

Deno.test("parseRange() reads the loose ranges npm reads dependencies with, as sails 0.9.16's ~2.2.0rc, where it read none of them, and no more", () => {
  const cases: [string, string, boolean][] = [
    ["2.2.0-rc", "~2.2.0rc", true],
    ["2.2.5", "~2.2.0rc", true],
    ["2.3.0", "~2.2.0rc", false],
    ["2.2.0-rc1", "~2.2.0rc1", true],
    ["1.2.3-beta", "1.2.3beta", true],
    ["1.2.3", "=v1.2.3", true],
    ["1.2.3", "v=1.2.3", true],
    ["1.2.9", "~=1.2.3", true],
    ["1.2.9", "vv1.2", true],
    ["1.2.3-b", ">=1.2.3b <2", true],
    ["1.2.3-beta", "1.2.3beta+b.1", true],
    ["1.2.9", "1.2.x-rc", true],
    ["1.2.0-rc", "1.2.x-rc", false],
  ];
  for (const [version, range, expected] of cases) {
    assert.equal(inRange(version, range), expected, `${version} in ${range}`);
  }
  for (const range of ["1.2rc", "1.2-rc", "1.2.3.4", "^1.2.3.beta", "1.x.3"]) {
    assert.equal(parseRange(range), null, range);
  }
});

Deno.test("parseRange() reads no version of over 256 characters, as npm reads none, so a dependency's range of thousands of digits is refused at once, where each was read in time that grew with the square of its length", () => {
  const longest = `1.2.${"3".repeat(256 - "1.2.".length)}`;
  assert.notEqual(parseRange(longest), null);
  assert.notEqual(parseRange(`^${longest}`), null);
  assert.equal(parseRange(`${longest}3`), null);
  assert.equal(parseRange(`~${longest}3`), null);
  // A prerelease without its `-` may start with digits, so every split of
  // the patch's digits was tried before the last character refused them.
  assert.equal(parseRange(`1.2.${"3".repeat(20_000)}!`), null);
});
