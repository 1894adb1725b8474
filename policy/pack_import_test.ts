import assert from "node:assert/strict";
import { resolvePackImport } from "./pack_import.ts";

Deno.test("resolvePackImport() normalises like a URL and catches every escape", () => {
  const files = new Set([
    "./index.js",
    "./lib/round.js",
    "./lib/a b.js",
    "./%2e%2e/odd.js",
  ]);
  const has = (path: string) => files.has(path);
  const table: [string, string, string][] = [
    ["./lib/round.js", "./index.js", "./lib/round.js"],
    ["../index.js", "./lib/round.js", "./index.js"],
    ["./round.js", "./lib/round.js", "./lib/round.js"],
    ["./lib/../lib/./round.js", "./index.js", "./lib/round.js"],
    ["./lib/%72ound.js", "./index.js", "./lib/round.js"],
    ["./lib/a b.js", "./index.js", "./lib/a b.js"],
    ["./lib/a%20b.js", "./index.js", "./lib/a b.js"],
    ["./%252e%252e/odd.js", "./index.js", "./%2e%2e/odd.js"],
    ["../x.js", "./index.js", "PACK_IMPORT_ESCAPE"],
    ["../../index.js", "./lib/round.js", "PACK_IMPORT_ESCAPE"],
    ["./%2e%2e/x.js", "./index.js", "PACK_IMPORT_ESCAPE"],
    ["./%2E%2e/%2e./x.js", "./lib/round.js", "PACK_IMPORT_ESCAPE"],
    ["./.%2e/.%2e/x.js", "./lib/round.js", "PACK_IMPORT_ESCAPE"],
    ["../cordon-pack-a/index.js", "./index.js", "PACK_IMPORT_ESCAPE"],
    ["../cordon-pack-b/index.js", "./index.js", "PACK_IMPORT_ESCAPE"],
    ["./lib%2Fround.js", "./index.js", "PACK_IMPORT_ESCAPE"],
    ["./lib%2fround.js", "./index.js", "PACK_IMPORT_ESCAPE"],
    ["./lib%5Cround.js", "./index.js", "PACK_IMPORT_ESCAPE"],
    ["./lib\\round.js", "./index.js", "PACK_IMPORT_ESCAPE"],
    ["./%00.js", "./index.js", "PACK_IMPORT_ESCAPE"],
    ["./index.js\n", "./index.js", "PACK_IMPORT_ESCAPE"],
    ["./index.js ", "./index.js", "PACK_IMPORT_ESCAPE"],
    ["/index.js", "./index.js", "PACK_IMPORT_ESCAPE"],
    ["//evil.test/index.js", "./index.js", "PACK_IMPORT_ESCAPE"],
    ["file:///index.js", "./index.js", "PACK_IMPORT_ESCAPE"],
    [
      "cordon-pack:///cordon-pack-a/index.js",
      "./index.js",
      "PACK_IMPORT_ESCAPE",
    ],
    ["index.js", "./index.js", "PACK_IMPORT_ESCAPE"],
    [".", "./index.js", "PACK_IMPORT_ESCAPE"],
    ["..", "./index.js", "PACK_IMPORT_ESCAPE"],
    ["./lib/secret.js", "./index.js", "PACK_IMPORT_UNDECLARED"],
    ["./index.js?x=1", "./index.js", "PACK_IMPORT_UNDECLARED"],
    ["./index.js#top", "./index.js", "PACK_IMPORT_UNDECLARED"],
    ["./lib/", "./index.js", "PACK_IMPORT_UNDECLARED"],
    ["./lib//round.js", "./index.js", "PACK_IMPORT_UNDECLARED"],
    ["./%zz.js", "./index.js", "PACK_IMPORT_UNDECLARED"],
    ["./lib/%2e%2e/index.js", "./index.js", "PACK_IMPORT_ESCAPE"],
    ["./lib/%2E/round.js", "./index.js", "PACK_IMPORT_ESCAPE"],
  ];
  for (const [specifier, referrer, expected] of table) {
    const result = resolvePackImport(specifier, referrer, has);
    const actual = result.ok ? result.path : result.code;
    assert.equal(
      actual,
      expected,
      `${JSON.stringify(specifier)} from ${referrer}`,
    );
  }
});

Deno.test("resolvePackImport() tells how to import a file whose name holds # or ?", () => {
  const has = (path: string) => path === "./a#b.js";
  const result = resolvePackImport("./a#b.js", "./index.js", has);
  assert.equal(result.ok === false && result.code, "PACK_IMPORT_UNDECLARED");
  assert.match(result.ok ? "" : result.reason, /%23 or %3F/);
  assert.deepEqual(resolvePackImport("./a%23b.js", "./index.js", has), {
    ok: true,
    path: "./a#b.js",
  });
});

Deno.test("resolvePackImport() resolves plain specifiers exactly as URL parsing does", () => {
  const files = new Set(["./a.js", "./b/a.js", "./b/c/a.js", "./b/c/d/a.js"]);
  const has = (path: string) => files.has(path);
  const parts = [".", "..", "b", "c", "d", "", "a.js", "..."];
  let state = 7;
  const random = (n: number) => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state % n;
  };
  for (let i = 0; i < 5000; i++) {
    const length = 1 + random(5);
    const tail = Array.from({ length }, () => parts[random(parts.length)]);
    const plain = `${random(2) === 0 ? "." : ".."}/${
      [...tail, "a.js"].join("/")
    }`;
    // Percent-encoding one letter forces the URL path; it decodes the same.
    const encoded = plain.replace("a.js", "%61.js");
    for (const referrer of ["./a.js", "./b/c/a.js"]) {
      assert.deepEqual(
        resolvePackImport(plain, referrer, has),
        resolvePackImport(encoded, referrer, has),
        `${plain} from ${referrer}`,
      );
    }
  }
});

Deno.test("resolvePackImport() completes a path without an extension as bundlers do: .js, then .mjs, then /index.js", () => {
  const files = new Set([
    "./index.js",
    "./a.js",
    "./a/index.js",
    "./m.mjs",
    "./dir/index.js",
    "./v1.2.js",
  ]);
  const has = (path: string) => files.has(path);
  const table: [string, string][] = [
    ["./a", "./a.js"],
    ["./m", "./m.mjs"],
    ["./dir", "./dir/index.js"],
    ["./a/index", "./a/index.js"],
    ["./v1.2", "./v1.2.js"],
    ["./dir/", "PACK_IMPORT_UNDECLARED"],
    ["./nothing", "PACK_IMPORT_UNDECLARED"],
    ["./m.js", "PACK_IMPORT_UNDECLARED"],
    ["./index.js.js", "PACK_IMPORT_UNDECLARED"],
    ["./%2e/a", "PACK_IMPORT_ESCAPE"],
  ];
  for (const [specifier, expected] of table) {
    const result = resolvePackImport(specifier, "./index.js", has);
    assert.equal(result.ok ? result.path : result.code, expected, specifier);
  }
});

Deno.test("resolvePackImport() keeps percent signs in a referrer's name literal", () => {
  const files = new Set(["./%2e%2e/odd.js", "./%2e%2e/x.js", "./x.js"]);
  const has = (path: string) => files.has(path);
  assert.deepEqual(resolvePackImport("./x.js", "./%2e%2e/odd.js", has), {
    ok: true,
    path: "./%2e%2e/x.js",
  });
  assert.deepEqual(resolvePackImport("./%78.js", "./%2e%2e/odd.js", has), {
    ok: true,
    path: "./%2e%2e/x.js",
  });
});
