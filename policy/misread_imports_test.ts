import assert from "node:assert/strict";
import { misreadImport } from "./misread_imports.ts";

Deno.test("misreadImport() finds import text after a `}` followed by a `/`", () => {
  assert.deepEqual(
    misreadImport('const f = function () {} / 1;\nimport "x"; 1 / 2;'),
    { kind: "other", line: 2, index: 30 },
  );
  assert.equal(misreadImport('const f = () => 1 / 2;\nimport "x";'), null);
});

Deno.test("misreadImport() finds import text where the lexer may take a property or an escaped name for a keyword before a `/`", () => {
  const objects = "const o = { return: 1, if: () => 1 }, \\u{61}return = 1;\n";
  for (
    const [prefix, kind] of [
      ["o. return / 1; import 'x'; 1 / 2;", "other"],
      ["o.\ntypeof / import('x') / 1;", "call"],
      ["o./* c */await / 1; export * from 'x'; 1 / 2;", "other"],
      ["o. // c\nvoid / import('x') / 1;", "call"],
      ["o?. delete / import('x') / 1;", "call"],
      ["o.\u3000in / import('x') / 1;", "call"],
      ["o. if(1) / import('x') / 1;", "call"],
      ["o.\nwhile (1) / 1; import 'x'; 1 / 2;", "other"],
      ["\\u{61}return / 1; import 'x'; 1 / 2;", "other"],
      ["a\\u{72}\\u{000065}typeof / import('x') / 1;", "call"],
      ["\\u{61}for(1) / import('x') / 1;", "call"],
    ] as const
  ) {
    const source = objects + prefix;
    assert.equal(misreadImport(source)?.kind, kind, prefix);
  }
});

Deno.test("misreadImport() finds import text where the lexer takes a `/` after `extends`, `++` or `--` for a division", () => {
  for (
    const [source, kind] of [
      ["class A extends /'/.constructor {} import 'x'; // '", "other"],
      ["x = class extends/* c *//'/.constructor {}; import('x'); // '", "call"],
      ["let n = ++ /'/.lastIndex + import('x'); // '", "call"],
      ["let n = --\n/'/.lastIndex; export * from 'x'; // '", "other"],
    ] as const
  ) {
    assert.equal(misreadImport(source)?.kind, kind, source);
  }
});

Deno.test("misreadImport() finds the import a member or a name spelled import hides from the lexer, which reads a statement there", () => {
  for (
    const source of [
      'const o = { import: 1 }; o. import / 1;\nexport * as "./ok.js" from "./secret.js";',
      'const \\u{61}import = 1; \\u{61}import + 1;\nexport * as "a" from "b";',
    ]
  ) {
    assert.equal(misreadImport(source)?.kind, "other", source);
  }
});

Deno.test("misreadImport() leaves keywords, members right after a dot and other escapes alone", () => {
  for (
    const source of [
      "function f() { return /import('x')/; }",
      "export default typeof /import('x')/;",
      "const o = { return: 1 }; o.return / 1; import 'x'; 1 / 2;",
      "const o = { return: 1 }; o\n.return / 1; import 'x'; 1 / 2;",
      "const \\u0061return = 1; \\u0061return / 1; import 'x';",
      "const o = { returned: 1 }; o. returned / 2; import 'x';",
      "export const n = [...a]; import 'x';",
      "export const s = [... new Set([1])]; import 'x';",
      "// The date, e.g. new Date(0). In UTC.\nimport 'x';",
      "const o = { return: 1 }; o. return + 1; import 'x';",
      "const \\u{61}returns = 1; \\u{61}returns / 1; import 'x';",
    ]
  ) {
    assert.equal(misreadImport(source), null, source);
  }
});
