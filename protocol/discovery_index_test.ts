import assert from "node:assert/strict";
import {
  DiscoveryIndexPackSchema,
  isDiscoveryIndexPack,
} from "./discovery_index.ts";
import { compileJsonCheck } from "./_json_schema_check.ts";

const DIGEST = `sha256-${"A".repeat(43)}=`;

const INSTALLED = {
  folder: "@acme/math",
  files: [
    ["package.json", 120, 1700000000000, 1700000000001, 2049, 77],
    ["./index.js", 40, 1700000000000, null, null, null],
    ["./lib/add.js", 30, 1700000000000, 1700000000001, 2049, 78],
  ],
  outcome: {
    ok: true,
    name: "@acme/math",
    version: "1.0.0",
    graphDigest: DIGEST,
    exports: { ".": "./index.js", "./add": "./lib/add.js" },
    modules: [
      ["./index.js", "m_index", DIGEST, DIGEST, [1]],
      ["./lib/add.js", "m_add", DIGEST, DIGEST, []],
    ],
  },
};

const REJECTED = {
  folder: "broken",
  files: [["package.json", 2, 0, null, null, null]],
  outcome: {
    ok: false,
    name: "broken",
    diagnostic: {
      pack: "broken",
      code: "PACK_MANIFEST_INVALID",
      message: "Cannot use pack",
    },
  },
};

/** Values put in place of each part of a line. */
const SUBSTITUTES: unknown[] = [
  null,
  0,
  -1,
  1.5,
  2 ** 60,
  "",
  "x",
  "../x.js",
  "./a/../../x.js",
  "package.json",
  "./ok.js",
  "m_ok",
  DIGEST,
  "sha256-short=",
  "@Bad/Name",
  "a".repeat(215),
  true,
  false,
  [],
  [1],
  {},
  { extra: 1 },
];

/** Every variant of `value` with one part replaced, removed or added. */
function* mutations(value: unknown): Generator<unknown> {
  for (const substitute of SUBSTITUTES) yield substitute;
  if (Array.isArray(value)) {
    yield [...value, value[0]];
    yield value.slice(0, -1);
    for (let i = 0; i < value.length; i++) {
      for (const inner of mutations(value[i])) {
        yield value.map((item, j) => (j === i ? inner : item));
      }
    }
  } else if (typeof value === "object" && value !== null) {
    const record = value as Record<string, unknown>;
    yield { ...record, extra: 1 };
    yield JSON.parse(`{"__proto__": {"polluted": true}, "folder": "x"}`);
    for (const key of Object.keys(record)) {
      const { [key]: _removed, ...rest } = record;
      yield rest;
      for (const inner of mutations(record[key])) {
        yield { ...record, [key]: inner };
      }
    }
  }
}

Deno.test("isDiscoveryIndexPack() agrees with the zod schema on every variant of valid lines", () => {
  let variants = 0;
  let valid = 0;
  for (const line of [INSTALLED, REJECTED]) {
    assert.equal(isDiscoveryIndexPack(line), true);
    for (const variant of mutations(line)) {
      // Through JSON, as the index file gives them.
      const parsed = JSON.parse(JSON.stringify(variant));
      const expected = DiscoveryIndexPackSchema.safeParse(parsed).success;
      assert.equal(
        isDiscoveryIndexPack(parsed),
        expected,
        `disagrees on ${JSON.stringify(parsed)}`,
      );
      variants++;
      if (expected) valid++;
    }
  }
  // Both answers occur, so agreement is not agreement on one answer.
  assert.ok(variants > 1000, `only ${variants} variants`);
  assert.ok(valid > 50 && valid < variants - 1000, `${valid} valid`);
});

Deno.test("compileJsonCheck() refuses a keyword it does not understand", () => {
  assert.throws(
    () => compileJsonCheck({ type: "object", $ref: "#/$defs/x" }),
    (error: unknown) =>
      error instanceof TypeError && /"\$ref"/.test(error.message),
  );
  assert.throws(
    () => compileJsonCheck({ properties: { a: { format: "email" } } }),
    TypeError,
  );
});

Deno.test("compileJsonCheck() checks oneOf as exactly one", () => {
  const check = compileJsonCheck({
    oneOf: [{ type: "integer" }, { type: "number", minimum: 1 }],
  });
  assert.equal(check(0), true);
  assert.equal(check(0.5), false);
  assert.equal(check(1.5), true);
  assert.equal(check(2), false);
});
