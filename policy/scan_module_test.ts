import assert from "node:assert/strict";
import { initScanner, packScanFailure, scanModule } from "./scan_module.ts";

await initScanner();

type ScanResult =
  | { ok: true; specifiers: string[] }
  | { ok: false; code: string; detail: string };

/** Scans in pack mode and reports as pack discovery does. */
function scanImports(source: string): ScanResult {
  const scan = scanModule(source, { mode: "pack" });
  const failure = packScanFailure(scan, source);
  if (failure !== null) return { ok: false, ...failure };
  return { ok: true, specifiers: scan.readable ? scan.specifiers : [] };
}

function failureOf(result: ScanResult): { code: string; detail: string } {
  assert.equal(result.ok, false, "expected the scan to fail");
  return result as { code: string; detail: string };
}

Deno.test("scanModule() in pack mode lists static imports and export-from specifiers once, in order", () => {
  const result = scanImports([
    'import { a } from "./a.js";',
    'export * from "./b.js";',
    'export { c } from "./c.js";',
    'import "./a.js";',
    "import * as d from './d.js';",
    "export const meta = import.meta.url;",
  ].join("\n"));
  assert.deepEqual(result, {
    ok: true,
    specifiers: ["./a.js", "./b.js", "./c.js", "./d.js"],
  });
});

Deno.test("scanModule() in pack mode accepts a module without imports", () => {
  assert.deepEqual(scanImports("export default 42;\n"), {
    ok: true,
    specifiers: [],
  });
});

Deno.test("scanModule() in pack mode rejects import() with a literal or computed argument", () => {
  for (const call of ['import("./a.js")', "import(name)", "import.source(x)"]) {
    const failure = failureOf(scanImports(`const x = 1;\nawait ${call};`));
    assert.equal(failure.code, "PACK_DYNAMIC_IMPORT");
    assert.equal(failure.detail, "uses import() on line 2");
  }
});

Deno.test("scanModule() in pack mode rejects bare require calls, even spaced out", () => {
  for (
    const call of [
      'require("fs")',
      "require ('fs')",
      "require\n(x)",
      "[...require(x)]",
      "(0, require)(x) || require(x)",
      "!require(x)",
    ]
  ) {
    const failure = failureOf(scanImports(`\n\nconst fs = ${call};`));
    assert.equal(failure.code, "PACK_DYNAMIC_IMPORT");
    assert.equal(failure.detail, "calls require on line 3");
  }
});

Deno.test("scanModule() in pack mode passes require( in comments, strings, templates and regular expressions, and refuses it in template code", () => {
  for (
    const source of [
      "// linkify.tlds(require('tlds'))\nexport const a = 1;",
      "/**\n * @example\n * const x = require('x');\n */\nexport const a = 1;",
      "export const s = 'require(x)' + \"require (y)\";",
      "export const t = `use require(x) in Node`;",
      "export const r = /require (x)/;",
      "export const r = a / require2 / 2;",
    ]
  ) {
    assert.deepEqual(scanImports(source), { ok: true, specifiers: [] }, source);
  }
  for (
    const source of [
      "export const t = `${require('x')}`;",
      "// require('a')\nexport default require('b');",
      "const s = 'require(x)'; if (false) require(y);",
    ]
  ) {
    assert.equal(
      failureOf(scanImports(source)).code,
      "PACK_DYNAMIC_IMPORT",
      source,
    );
  }
  assert.equal(
    failureOf(scanImports("// require('a')\n\nexport default require('b');"))
      .detail,
    "calls require on line 3",
  );
});

Deno.test("scanModule() finds import() after a spread, which the lexer alone reads as a property, in either mode", () => {
  for (const mode of ["pack", "guest"] as const) {
    for (
      const call of [
        "[...import('x')]",
        "f(... /* a */ import('x'))",
        "({ ...import('x') })",
        "[...\n// b\nimport('x')]",
        "[...import(`x${y}`)]",
      ]
    ) {
      const scan = scanModule(`const a = 1;\nexport default ${call};`, {
        mode,
      });
      assert.ok(scan.readable && scan.refusal?.kind === "dynamic", call);
      assert.equal(scan.refusal.line, 2 + call.split("\n").length - 1, call);
    }
    for (
      const source of [
        "export const s = \"[...import('x')]\";",
        "// [...import('x')]\nexport const a = 1;",
        "export const b = [...imports, ...important];",
        'import { a } from "./a...js";\nexport const c = [...a];',
      ]
    ) {
      const scan = scanModule(source, { mode });
      assert.ok(scan.readable && scan.refusal === null, source);
    }
  }
  const scan = scanModule('import { a } from "./a...js"; [...a];', {
    mode: "guest",
  });
  assert.ok(scan.readable);
  assert.deepEqual(scan.specifiers, ["./a...js"]);
});

Deno.test("scanModule() in pack mode passes member calls named require, which are not CommonJS require", () => {
  for (
    const call of [
      "freeModule.require('util')",
      "freeModule && freeModule.require && freeModule.require('util').types",
      "module?.require(x)",
      "module . require(x)",
      "module.\n  require(x)",
      "this.#require(x)",
      "a[0].require(x)",
    ]
  ) {
    assert.deepEqual(scanImports(`const t = ${call};`), {
      ok: true,
      specifiers: [],
    }, call);
  }
});

Deno.test("scanModule() in pack mode finds a bare require call after member calls", () => {
  const failure = failureOf(
    scanImports("a.require(x);\nb?.require(y);\nrequire(z);"),
  );
  assert.equal(failure.detail, "calls require on line 3");
});

Deno.test("scanModule() in pack mode leaves names that merely contain require alone", () => {
  const result = scanImports(
    "export const requirements = 1; export function unrequire() {}\n" +
      "$require(x); _require(y); __require(z); \u00e9require(w);",
  );
  assert.deepEqual(result, { ok: true, specifiers: [] });
});

Deno.test("scanModule() in pack mode rejects import attributes", () => {
  const failure = failureOf(
    scanImports('import data from "./d.js" with { type: "json" };'),
  );
  assert.equal(failure.code, "IMPORT_ATTRIBUTES");
});

Deno.test("scanModule() refuses the older `assert { ... }` import attributes in either mode, as Node 20 reads them", () => {
  for (
    const [source, specifier] of [
      ['import data from "./d.js" assert { type: "json" };', "./d.js"],
      ['export * from "./e.js" /* c */ assert /*\n*/ {};', "./e.js"],
      ["export { a } from './a.js'\u3000assert\n{ type: 'json' };", "./a.js"],
      ['import "./s.js" assert{type:"css"}', "./s.js"],
    ] as const
  ) {
    for (const mode of ["pack", "guest"] as const) {
      assert.deepEqual(
        scanModule(source, { mode }),
        {
          readable: true,
          specifiers: [],
          refusal: { kind: "attributes", specifier, line: 1 },
        },
        `${mode}: ${source}`,
      );
    }
  }
  assert.equal(
    failureOf(scanImports('import d from "./d.js" assert { type: "json" };'))
      .code,
    "IMPORT_ATTRIBUTES",
  );
});

Deno.test("scanModule() reads `assert` after a line break, or spelled with an escape, as code, as the engines do", () => {
  for (
    const source of [
      'import a from "./a.js"\nassert\n{ a; }',
      'import a from "./a.js" /*\n*/ assert\n{ a; }',
      'import a from "./a.js"\n\\u0061ssert\n{ a; }',
      'import a from "./a.js";\nassert({ a });',
      'import a from "./a.js"; const assertion = { a };',
    ]
  ) {
    assert.deepEqual(scanImports(source), {
      ok: true,
      specifiers: ["./a.js"],
    }, source);
  }
});

Deno.test("scanModule() in pack mode rejects source and defer phase imports", () => {
  for (
    const source of [
      'import source wasm from "./m.js";',
      'import defer * as lazy from "./m.js";',
    ]
  ) {
    assert.equal(failureOf(scanImports(source)).code, "PACK_MODULE_SYNTAX");
  }
});

Deno.test("scanModule() in pack mode rejects sources the lexer cannot read", () => {
  const failure = failureOf(
    scanImports('export const a = 1;\nimport x from "./a.js'),
  );
  assert.equal(failure.code, "PACK_MODULE_SYNTAX");
  assert.match(failure.detail, /^cannot be read as an ES module/);
});

Deno.test("scanModule() refuses a NUL character or a lone surrogate in either mode before lexing, with its line", () => {
  for (const mode of ["pack", "guest"] as const) {
    // Unreadable after the NUL: the refusal comes first all the same.
    const nul = scanModule(
      'export const a = 1;\n// \0\nimport x from "./a.js',
      {
        mode,
      },
    );
    assert.ok(nul.readable);
    assert.deepEqual(nul.specifiers, []);
    assert.equal(nul.refusal?.kind, "text");
    assert.equal(nul.refusal?.line, 2);
    const lone = scanModule(
      'import x from "./a.js";\nexport default "\uDC00";',
      {
        mode,
      },
    );
    assert.ok(lone.readable && lone.refusal?.kind === "text");
    assert.match(
      lone.refusal.detail,
      /^holds a lone surrogate \(U\+DC00\) on line 2/,
    );
  }
  // A whole pair is one character, and an escape is not a surrogate.
  for (
    const source of [
      'export default "\uD83D\uDE00";',
      'export default "\\uD800";',
    ]
  ) {
    const scan = scanModule(source, { mode: "pack" });
    assert.ok(scan.readable && scan.refusal === null, source);
  }
  const failure = failureOf(scanImports("const s = '\0';"));
  assert.equal(failure.code, "PACK_MODULE_SYNTAX");
  assert.match(failure.detail, /^holds a NUL character \(U\+0000\) on line 1/);
});

Deno.test("scanModule() in guest mode passes phase and type-only imports on as static imports", () => {
  const source = [
    'import defer * as lazy from "a";',
    'import type { T } from "b";',
    'const s = "require(x)";',
  ].join("\n");
  assert.deepEqual(scanModule(source, { mode: "guest" }), {
    readable: true,
    specifiers: ["a", "b"],
    refusal: null,
  });
});

Deno.test("scanModule() in guest mode lists the imports before the first refusal", () => {
  const scan = scanModule(
    'import a from "a";\nimport b from "b" with { type: "json" };\nimport c from "c";',
    { mode: "guest" },
  );
  assert.deepEqual(scan, {
    readable: true,
    specifiers: ["a"],
    refusal: { kind: "attributes", specifier: "b", line: 2 },
  });
});

Deno.test("scanModule() gives a computed import() no specifier", () => {
  for (const mode of ["pack", "guest"] as const) {
    const scan = scanModule("export default import(name);", { mode });
    assert.deepEqual(
      scan.readable && scan.refusal,
      { kind: "dynamic", specifier: undefined, line: 1 },
    );
  }
});

/** Every space and line end the engines read that is not ASCII or U+00A0. */
const UNICODE_SPACES = [
  "\uFEFF",
  "\u1680",
  ...Array.from({ length: 11 }, (_, i) => String.fromCharCode(0x2000 + i)),
  "\u202F",
  "\u205F",
  "\u3000",
];
const LINE_SEPARATORS = ["\u2028", "\u2029"];

Deno.test("scanModule() reads every Unicode space as a space, where the lexer alone reads one as part of a word, in either mode", () => {
  for (const mode of ["pack", "guest"] as const) {
    for (const space of UNICODE_SPACES) {
      const at = space.charCodeAt(0).toString(16);
      for (
        const source of [
          `${space}import("./a.js");`,
          `const a = 1;\n${space}import("./a.js");`,
          `const a = 1;${space}import("./a.js");`,
        ]
      ) {
        const scan = scanModule(source, { mode });
        assert.equal(scan.readable && scan.refusal?.kind, "dynamic", at);
      }
      const scan = scanModule(
        `const a = 1;${space}import b from "./b.js";${space}export * from "./c.js";`,
        { mode },
      );
      assert.deepEqual(
        scan.readable && scan.specifiers,
        ["./b.js", "./c.js"],
        at,
      );
    }
  }
});

Deno.test("scanModule() ends a line comment at U+2028 and U+2029, as the engines do, in either mode", () => {
  for (const mode of ["pack", "guest"] as const) {
    for (const separator of LINE_SEPARATORS) {
      const call = scanModule(`// note${separator}import("./a.js");`, {
        mode,
      });
      assert.equal(call.readable && call.refusal?.kind, "dynamic");
      const declaration = scanModule(
        `// note${separator}import b from "./b.js";`,
        { mode },
      );
      assert.deepEqual(declaration.readable && declaration.specifiers, [
        "./b.js",
      ]);
      // In a block comment it ends nothing.
      const block = scanModule(`/* ${separator}import("./a.js") */`, {
        mode,
      });
      assert.deepEqual(block, {
        readable: true,
        specifiers: [],
        refusal: null,
      });
    }
  }
});

Deno.test("scanModule() keeps the Unicode spaces in a specifier as written", () => {
  const scan = scanModule(
    'const a = 1;\u3000import b from "./b\u3000c.js";\nimport d from "./\\u3000d.js";',
    { mode: "guest" },
  );
  assert.deepEqual(scan.readable && scan.specifiers, [
    "./b\u3000c.js",
    "./\u3000d.js",
  ]);
});

Deno.test("scanModule() cannot read a line separator in a string, which pack discovery and the guest tiers leave to a parser or the engine", () => {
  for (const separator of LINE_SEPARATORS) {
    const source = `// note\nexport const s = "a${separator}b";`;
    const scan = scanModule(source, { mode: "guest" });
    assert.equal(scan.readable, false);
    const failure = failureOf(scanImports(source));
    assert.equal(failure.code, "PACK_MODULE_SYNTAX");
    assert.equal(failure.detail, "cannot be read as an ES module near line 2");
  }
  // Written as an escape, it is an ordinary string.
  assert.deepEqual(scanImports('export const s = "a\\u2028b";'), {
    ok: true,
    specifiers: [],
  });
});
