import assert from "node:assert/strict";
import { z } from "./_zod.ts";
import type { SafeParseResult } from "./schema.ts";
import {
  compileJsonCheck,
  compileJsonParse,
  type JsonSchema,
} from "./_json_schema_check.ts";

const WORD = /^[a-z]+$/;
const MESSAGES = { [WORD.source]: "A word is lowercase letters" };

/** A shape other than the declaration's, built from the same kinds of rule. */
const SETTINGS = z.strictObject({
  name: z.string().regex(WORD, MESSAGES[WORD.source]).min(2).max(8),
  enabled: z.boolean().optional(),
  tags: z.array(z.string().min(1)).default(["all"]),
  owner: z.union([
    z.string().max(3),
    z.strictObject({ id: z.string(), team: z.string().optional() }),
  ]).optional(),
  code: z.union([z.string().max(3), z.string().min(5)]).optional(),
});

function settingsParse() {
  return compileJsonParse(
    z.toJSONSchema(SETTINGS, { io: "input" }) as JsonSchema,
    { patternMessages: MESSAGES },
  );
}

function answer(result: SafeParseResult<unknown>) {
  return result.success ? { data: result.data } : {
    issues: result.error.issues.map(({ code, path, message }) => ({
      code,
      path,
      message,
    })),
  };
}

Deno.test("compileJsonParse() answers as the zod schema whose JSON Schema it compiles", () => {
  const parse = settingsParse();
  const values: unknown[] = [
    { name: "ab" },
    { name: "ab", enabled: true, tags: [], owner: "bob" },
    { name: "ab", enabled: undefined, owner: { id: "x", team: undefined } },
    { name: "A" },
    { name: "abcdefghi9" },
    { name: 3, enabled: "yes", tags: [""], owner: "bobby" },
    { name: "ab", owner: { id: 1 } },
    { name: "ab", owner: { id: "x", extra: 1 } },
    { name: "ab", owner: 5 },
    { name: "ab", tags: "all", colour: "red", size: 1 },
    { name: "ab", tags: [1, "", "x"] },
    { name: "ab", code: "abcd" },
    { name: "ab", code: "abcdef" },
    { name: "ab", code: 4 },
    { name: "ab", owner: "😀😀😀" },
    { name: "ab", owner: "😀😀😀😀" },
    { name: "ab", code: "😀😀😀😀" },
    [],
    null,
    "ab",
  ];
  let refused = 0;
  for (const value of values) {
    const expected = answer(SETTINGS.safeParse(value));
    assert.deepEqual(answer(parse(value)), expected, JSON.stringify(value));
    if (expected.issues !== undefined) refused++;
  }
  // Both answers occur, so agreement is not agreement on one answer.
  assert.ok(refused > 5 && refused < values.length - 2, `${refused} refused`);
});

Deno.test("compileJsonParse() gives each value its own copy of a default", () => {
  const parse = settingsParse();
  const first = parse({ name: "ab" });
  const second = parse({ name: "ab" });
  assert.ok(first.success && second.success);
  assert.deepEqual(first.data, { name: "ab", tags: ["all"] });
  assert.notEqual(
    (first.data as { tags: unknown }).tags,
    (second.data as { tags: unknown }).tags,
  );
});

Deno.test("compileJsonParse() refuses a schema it cannot answer for as zod does", () => {
  const refused: [JsonSchema, RegExp][] = [
    [{ type: "string", format: "email" }, /"format"/],
    [{ type: "number" }, /type number/],
    [{ type: "string", pattern: "^x$" }, /no message/],
    [{ type: "object", properties: {} }, /no additional properties/],
    [{
      type: "object",
      properties: {},
      required: ["a"],
      additionalProperties: false,
    }, /required list/],
    [{ properties: { a: { type: "string" } } }, /need the type/],
    [{ anyOf: "x" }, /anyOf/],
  ];
  for (const [schema, message] of refused) {
    assert.throws(
      () => compileJsonParse(schema, { patternMessages: {} }),
      (error: unknown) =>
        error instanceof TypeError && message.test(error.message),
      JSON.stringify(schema),
    );
  }
});

Deno.test("compileJsonCheck() refuses what a not holds, and a parse reads not only beside a pattern", () => {
  const check = compileJsonCheck({ not: { type: "string" } });
  assert.equal(check(1), true);
  assert.equal(check("x"), false);
  const id = {
    type: "string",
    pattern: "^[a-z]+",
    not: { pattern: "\\n$" },
  } as const;
  assert.equal(compileJsonCheck(id)("abc"), true);
  assert.equal(compileJsonCheck(id)("abc\n"), false);
  const parse = compileJsonParse(id, {
    patternMessages: { "^[a-z]+": "Invalid name" },
  });
  assert.equal(parse("abc").success, true);
  assert.deepEqual(parse("abc\n").error?.issues.map((issue) => issue.message), [
    "Invalid name",
  ]);
  assert.throws(
    () =>
      compileJsonParse({ type: "string", not: { type: "number" } }, {
        patternMessages: {},
      }),
    /"not" is understood only beside a pattern/,
  );
});

Deno.test("compileJsonCheck() counts a string's length in code points, as JSON Schema and zod do", () => {
  const check = compileJsonCheck({
    type: "string",
    minLength: 2,
    maxLength: 3,
  });
  assert.equal(check("😀😀😀"), true);
  assert.equal(check("😀😀😀😀"), false);
  assert.equal(check("😀"), false);
  assert.equal(check("\ud800\ud800"), true);
});
