import assert from "node:assert/strict";
import { compactSource } from "./_compact_source.ts";

Deno.test("compactSource() drops comments, blank lines and indentation", () => {
  const source = [
    "function f(a) {",
    "  // why this is so",
    "",
    "  const b = a + 1; // kept: not a whole line",
    "  return b;",
    "}",
  ].join("\n");
  assert.equal(
    compactSource(source),
    "function f(a) {\nconst b = a + 1; // kept: not a whole line\nreturn b;\n}",
  );
});

Deno.test("compactSource() keeps every line inside a template literal as it is", () => {
  const source = [
    "function f(a) {",
    "  return `first",
    "    // indented text, not a comment",
    "",
    "  last ${",
    "    a",
    "  }`;",
    "}",
  ].join("\n");
  assert.equal(
    compactSource(source),
    [
      "function f(a) {",
      "return `first",
      "    // indented text, not a comment",
      "",
      "  last ${",
      "    a",
      "  }`;",
      "}",
    ].join("\n"),
  );
});

Deno.test("compactSource() refuses backticks it cannot place, and block comments", () => {
  for (
    const line of [
      'const s = "`";',
      "const s = '`' + `x`;",
      "const r = /`/;",
      "const t = `a\\`b`;",
      "f(); // see `g`",
      "/* a block comment */",
    ]
  ) {
    assert.throws(
      () => compactSource(`function f() {\n  ${line}\n}`),
      SyntaxError,
      line,
    );
  }
});
