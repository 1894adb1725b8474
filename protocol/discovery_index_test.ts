import assert from "node:assert/strict";
import {
  DiscoveryIndexPackSchema,
  isDiscoveryIndexPack,
} from "./discovery_index.ts";
import { compileJsonCheck } from "./_json_schema_check.ts";
import { variants } from "./_test_variants_test.ts";

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

Deno.test("isDiscoveryIndexPack() agrees with the zod schema on every variant of valid lines", () => {
  let tried = 0;
  let valid = 0;
  for (const line of [INSTALLED, REJECTED]) {
    assert.equal(isDiscoveryIndexPack(line), true);
    for (const variant of variants(line, SUBSTITUTES)) {
      // Through JSON, as the index file gives them.
      const parsed = JSON.parse(JSON.stringify(variant));
      const expected = DiscoveryIndexPackSchema.safeParse(parsed).success;
      assert.equal(
        isDiscoveryIndexPack(parsed),
        expected,
        `disagrees on ${JSON.stringify(parsed)}`,
      );
      tried++;
      if (expected) valid++;
    }
  }
  // Both answers occur, so agreement is not agreement on one answer.
  assert.ok(tried > 1000, `only ${tried} variants`);
  assert.ok(valid > 50 && valid < tried - 1000, `${valid} valid`);
});

Deno.test("compileJsonCheck() refuses a keyword it does not understand", () => {
  assert.throws(
    () => compileJsonCheck({ type: "object", $anchor: "x" }),
    (error: unknown) =>
      error instanceof TypeError && /"\$anchor"/.test(error.message),
  );
  assert.throws(
    () => compileJsonCheck({ properties: { a: { format: "email" } } }),
    TypeError,
  );
});

Deno.test("compileJsonCheck() follows $ref to the root's own $defs, recursively", () => {
  const tree = compileJsonCheck({
    $ref: "#/$defs/node",
    $defs: {
      node: {
        type: "object",
        properties: {
          name: { type: "string" },
          children: { type: "array", items: { $ref: "#/$defs/node" } },
        },
        required: ["name"],
        additionalProperties: false,
      },
    },
  });
  const leaf = (name: unknown) => ({ name, children: [] });
  assert.equal(tree({ name: "a", children: [leaf("b"), leaf("c")] }), true);
  assert.equal(
    tree({ name: "a", children: [{ children: [leaf("d")] }] }),
    false,
  );
  assert.equal(tree({ name: "a", children: [leaf("b"), leaf(2)] }), false);
  for (const ref of ["#/$defs/missing", "#/$defs/__proto__", "other.json#/x"]) {
    assert.throws(
      () => compileJsonCheck({ $ref: ref, $defs: {} }),
      (error: unknown) =>
        error instanceof TypeError && error.message.includes(ref),
    );
  }
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
