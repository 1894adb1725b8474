import assert from "node:assert/strict";
import {
  classifySpecifier,
  dynamicImportDenial,
  importAttributesDenial,
  isNodeCompatSpecifier,
  NODE_COMPAT_MODULES,
  quoteSpecifier,
} from "./import_specifier.ts";
import { ERROR_CODES } from "../protocol/error_codes.ts";

function codeOf(specifier: string): string {
  const found = classifySpecifier(specifier);
  return found.kind === "denied" ? found.code : found.kind;
}

Deno.test("classifySpecifier() denies every URL scheme with its own code", () => {
  const cases: [string, string][] = [
    ["node:fs", "IMPORT_NODE_BUILTIN"],
    ["NODE:child_process", "IMPORT_NODE_BUILTIN"],
    ["npm:lodash@4", "IMPORT_NPM"],
    ["jsr:@std/path", "IMPORT_JSR"],
    ["https://example.com/x.js", "IMPORT_REMOTE"],
    ["http://127.0.0.1:8000/x.js", "IMPORT_REMOTE"],
    ["file:///etc/hostname", "IMPORT_FILE"],
    ["data:text/javascript,export default 1", "IMPORT_DATA"],
    ["blob:null/1234", "IMPORT_BLOB"],
    ["javascript:alert(1)", "IMPORT_SCHEME"],
    ["ws://127.0.0.1/x", "IMPORT_SCHEME"],
  ];
  for (const [specifier, code] of cases) {
    assert.equal(codeOf(specifier), code, specifier);
  }
});

Deno.test("classifySpecifier() denies absolute, drive and protocol-relative paths", () => {
  assert.equal(codeOf("/etc/hostname"), "IMPORT_FILE");
  assert.equal(codeOf("\\etc\\hostname"), "IMPORT_FILE");
  assert.equal(codeOf("C:\\Windows\\win.ini"), "IMPORT_FILE");
  assert.equal(codeOf("c:/x.js"), "IMPORT_FILE");
  assert.equal(codeOf("//evil.example/x.js"), "IMPORT_REMOTE");
});

Deno.test("classifySpecifier() sees through whitespace, tabs and percent-encoding", () => {
  assert.equal(codeOf("  node:fs "), "IMPORT_NODE_BUILTIN");
  assert.equal(codeOf("no\tde:fs"), "IMPORT_NODE_BUILTIN");
  assert.equal(codeOf("node%3Afs"), "IMPORT_NODE_BUILTIN");
  assert.equal(codeOf("%2Fetc%2Fhostname"), "IMPORT_FILE");
  assert.equal(codeOf("%66s"), "IMPORT_COMPAT");
  assert.equal(codeOf("%2e%2e/secret.js"), "IMPORT_PATH_ESCAPE");
  assert.equal(codeOf(".%2e/secret.js"), "IMPORT_PATH_ESCAPE");
  assert.equal(codeOf("./%2e%2e/secret.js"), "IMPORT_PATH_ESCAPE");
  assert.equal(codeOf("./a%2Fb.js"), "IMPORT_PATH_ESCAPE");
  assert.equal(codeOf("%252e%252e/secret.js"), "IMPORT_PATH_ESCAPE");
});

Deno.test("classifySpecifier() reads a specifier with a megabyte of spaces or controls inside it once", () => {
  // Each run of them was tried against the end of the specifier, which
  // took 13 s for 100 KB.
  for (const filler of [" ", "\u0001"]) {
    const specifier = `greet${filler.repeat(1_000_000)}x`;
    const found = classifySpecifier(specifier);
    assert.equal(found.kind === "denied" && found.code, "IMPORT_UNDECLARED");
  }
});

Deno.test("classifySpecifier() never throws on malformed percent-encoding", () => {
  for (
    const specifier of [
      "%",
      "%E0%A4%A",
      "./%zz.js",
      "pack/%",
      "%ff%fe",
      "\uD800",
      "%%%2e%",
    ]
  ) {
    const found = classifySpecifier(specifier);
    assert.ok(["denied", "bare", "relative"].includes(found.kind), specifier);
  }
});

Deno.test("classifySpecifier() denies Node built-in names with their subpaths", () => {
  for (
    const specifier of [
      "fs",
      "fs/promises",
      "child_process",
      "process",
      "worker_threads",
      "path/posix",
      "stream/web",
    ]
  ) {
    assert.equal(codeOf(specifier), "IMPORT_COMPAT", specifier);
  }
  assert.equal(isNodeCompatSpecifier("@acme/fs"), false);
  assert.equal(codeOf("fsx"), "bare");
});

Deno.test("classifySpecifier() splits bare pack specifiers into pack and subpath", () => {
  assert.deepEqual(classifySpecifier("lodash"), {
    kind: "bare",
    pack: "lodash",
    subpath: ".",
  });
  assert.deepEqual(classifySpecifier("@acme/math"), {
    kind: "bare",
    pack: "@acme/math",
    subpath: ".",
  });
  assert.deepEqual(classifySpecifier("@acme/math/trig/sin.js"), {
    kind: "bare",
    pack: "@acme/math",
    subpath: "./trig/sin.js",
  });
});

Deno.test("classifySpecifier() denies subpaths that leave their pack", () => {
  for (
    const specifier of [
      "pack/../other",
      "pack/./x",
      "pack//x",
      "pack/",
      "pack/a\\b",
      "pack/%2e%2e/x",
      "@acme/math/%2fetc",
    ]
  ) {
    assert.equal(codeOf(specifier), "IMPORT_PATH_ESCAPE", specifier);
  }
});

Deno.test("classifySpecifier() denies bare names that are not pack names", () => {
  for (const specifier of ["", "   ", "Lodash", "#internal", "@acme", "~x"]) {
    assert.equal(codeOf(specifier), "IMPORT_UNDECLARED", specifier);
  }
});

Deno.test("classifySpecifier() passes relative specifiers on for the loader to resolve", () => {
  assert.deepEqual(classifySpecifier("./lib/round.js"), { kind: "relative" });
  assert.deepEqual(classifySpecifier("../x.js"), { kind: "relative" });
  assert.deepEqual(classifySpecifier("./a%20b.js"), { kind: "relative" });
  assert.equal(codeOf(".\\x.js"), "IMPORT_PATH_ESCAPE");
  assert.equal(codeOf("..\\x.js"), "IMPORT_PATH_ESCAPE");
});

Deno.test("classifySpecifier() messages follow the style guide", () => {
  const found = classifySpecifier("node:fs");
  assert.equal(found.kind, "denied");
  assert.equal(
    found.kind === "denied" && found.message,
    'Cannot import "node:fs" from a sandbox module: node built-ins are denied; declare a pack that provides this instead',
  );
  const long = classifySpecifier("data:text/javascript," + "x".repeat(10_000));
  assert.ok(long.kind === "denied" && long.message.length < 400);
  for (
    const specifier of [
      "npm:x",
      "jsr:@a/b",
      "https://a/",
      "file:///a",
      "data:,",
      "blob:x",
      "foo:x",
      "fs",
      "/a",
      "Bad",
      "pack/../x",
      "%2e%2e/x",
    ]
  ) {
    const denial = classifySpecifier(specifier);
    assert.ok(denial.kind === "denied", specifier);
    assert.ok(denial.code in ERROR_CODES, specifier);
    assert.match(denial.message, /^Cannot import ".*" from a sandbox module: /);
    assert.ok(!denial.message.endsWith("."), specifier);
  }
});

Deno.test("dynamicImportDenial() and importAttributesDenial() name the specifier", () => {
  assert.equal(
    dynamicImportDenial().message,
    "Cannot use import() in a sandbox module: dynamic import is denied; use static import declarations of declared packs",
  );
  assert.match(dynamicImportDenial("node:fs").message, /"node:fs"/);
  const attributes = importAttributesDenial("/etc/hostname");
  assert.equal(attributes.code, "IMPORT_ATTRIBUTES");
  assert.match(attributes.message, /"\/etc\/hostname" with attributes/);
});

Deno.test("NODE_COMPAT_MODULES is frozen", () => {
  assert.ok(Object.isFrozen(NODE_COMPAT_MODULES));
  assert.ok(NODE_COMPAT_MODULES.includes("fs/promises"));
});

/** Characters that would break or reorder a log line if printed raw. */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;
const HOSTILE = "x\nINFO forged\u001b[2J\u202etxt.exe\u2028\u0085";

Deno.test("denials quote a specifier with a control, bidi or separator character escaped", () => {
  const denials = [
    classifySpecifier(`node:${HOSTILE}`),
    classifySpecifier(`https://a/${HOSTILE}`),
    classifySpecifier(`/${HOSTILE}`),
    dynamicImportDenial(HOSTILE),
    importAttributesDenial(HOSTILE),
  ];
  for (const denial of denials) {
    assert.ok(denial.kind === "denied");
    assert.ok(!HIDDEN.test(denial.message), denial.message);
    assert.ok(
      denial.message.includes(
        String.raw`x\nINFO forged\u001b[2J\u202etxt.exe\u2028\u0085"`,
      ),
      denial.message,
    );
  }
});

Deno.test("quoteSpecifier() quotes as JSON does, escapes what JSON keeps and clips a long specifier", () => {
  assert.equal(quoteSpecifier("node:fs"), '"node:fs"');
  const quoted = quoteSpecifier(HOSTILE);
  assert.ok(!HIDDEN.test(quoted), quoted);
  assert.equal(JSON.parse(quoted), HOSTILE);
  assert.equal(quoteSpecifier("x".repeat(500)), `"${"x".repeat(200)}…"`);
});
