import assert from "node:assert/strict";
import {
  createImportPolicy,
  GUEST_MODULE_NAME,
  type ImportDecision,
  packModuleName,
} from "./import_policy.ts";
import { createTestCatalog } from "../loader/_test_catalog_test.ts";

const catalog = createTestCatalog([
  {
    name: "@acme/math",
    version: "1.2.0",
    exports: { ".": "./index.js", "./trig": "./trig/index.js" },
    files: {
      "./index.js": "",
      "./trig/index.js": "",
      "./lib/round.js": "",
      "./lib/r%6fund.js": "",
    },
  },
  {
    name: "greet",
    exports: { ".": "./index.js" },
    files: { "./index.js": "" },
  },
]);

function policyFor(packages: string[]) {
  return createImportPolicy(
    catalog.resolveForExecution({ source: "", packages }),
  );
}

function codeOf(decision: ImportDecision): string {
  return decision.ok ? "ok" : decision.code;
}

const TRIG = "cordon-pack:@acme/math@1.2.0/trig/index.js";
const INDEX = "cordon-pack:@acme/math@1.2.0/index.js";

Deno.test("packModuleName() names a pack module by pack, version and path", () => {
  assert.equal(
    packModuleName({ name: "greet", version: "1.0.0" }, "./index.js"),
    "cordon-pack:greet@1.0.0/index.js",
  );
});

Deno.test("guest source imports declared packs and their exported subpaths", () => {
  const policy = policyFor(["@acme/math"]);
  const main = policy.resolve(GUEST_MODULE_NAME, "@acme/math");
  assert.equal(main.ok && main.name, INDEX);
  assert.equal(main.ok && main.module.path, "./index.js");
  const trig = policy.resolve(GUEST_MODULE_NAME, "@acme/math/trig");
  assert.equal(trig.ok && trig.name, TRIG);
  assert.equal(policy.moduleByName(TRIG)?.path, "./trig/index.js");
  assert.equal(
    policy.moduleByName("cordon-pack:greet@1.0.0/index.js"),
    undefined,
  );
});

Deno.test("guest source may not import undeclared packs, internals or relative files", () => {
  const policy = policyFor(["@acme/math"]);
  const cases: [string, string][] = [
    ["greet", "IMPORT_UNDECLARED"],
    ["lodash", "IMPORT_UNDECLARED"],
    ["@acme/math/lib/round.js", "IMPORT_NOT_EXPORTED"],
    ["@acme/math/trig/index.js", "IMPORT_NOT_EXPORTED"],
    ["@acme/math/constructor", "IMPORT_NOT_EXPORTED"],
    ["./lib/round.js", "IMPORT_PATH_ESCAPE"],
    ["../greet", "IMPORT_PATH_ESCAPE"],
    ["node:fs", "IMPORT_NODE_BUILTIN"],
    ["fs", "IMPORT_COMPAT"],
    ["cordon:guest", "IMPORT_SCHEME"],
  ];
  for (const [specifier, code] of cases) {
    assert.equal(
      codeOf(policy.resolve(GUEST_MODULE_NAME, specifier)),
      code,
      specifier,
    );
  }
  const undeclared = policy.resolve(GUEST_MODULE_NAME, "greet");
  assert.equal(undeclared.ok, false);
  assert.equal(!undeclared.ok && undeclared.name, "ImportDeniedError");
  assert.match(
    !undeclared.ok ? undeclared.message : "",
    /"greet" is not declared/,
  );
  const missing = policy.resolve(GUEST_MODULE_NAME, "lodash");
  assert.match(!missing.ok ? missing.message : "", /not declared or installed/);
});

Deno.test("pack modules import relative files of their own pack as URLs resolve", () => {
  const policy = policyFor(["@acme/math"]);
  const up = policy.resolve(TRIG, "../lib/round.js");
  assert.equal(up.ok && up.name, "cordon-pack:@acme/math@1.2.0/lib/round.js");
  const encoded = policy.resolve(INDEX, "./lib/r%6fund.js");
  assert.equal(codeOf(encoded), "ok");
  const sibling = policy.resolve(INDEX, "./trig/index.js");
  assert.equal(sibling.ok && sibling.name, TRIG);
});

Deno.test("pack modules may not leave their pack or import another pack", () => {
  const policy = policyFor(["@acme/math", "greet"]);
  const cases: [string, string][] = [
    ["../../greet/index.js", "IMPORT_PATH_ESCAPE"],
    ["../index.js", "IMPORT_PATH_ESCAPE"],
    ["./%2e%2e/greet/index.js", "IMPORT_PATH_ESCAPE"],
    ["./lib%2fround.js", "IMPORT_PATH_ESCAPE"],
    ["./missing.js", "IMPORT_PATH_ESCAPE"],
    ["greet", "IMPORT_PATH_ESCAPE"],
    ["@acme/math/trig", "IMPORT_PATH_ESCAPE"],
    ["/index.js", "IMPORT_FILE"],
    ["node:fs", "IMPORT_NODE_BUILTIN"],
  ];
  for (const [specifier, code] of cases) {
    assert.equal(codeOf(policy.resolve(INDEX, specifier)), code, specifier);
  }
  const other = policy.resolve(INDEX, "greet");
  assert.match(
    !other.ok ? other.message : "",
    /^Cannot import "greet" from pack "@acme\/math" \(\.\/index\.js\): a pack module may import only relative files of its own pack/,
  );
});

Deno.test("an unknown referrer imports nothing", () => {
  const policy = policyFor(["@acme/math"]);
  assert.equal(
    codeOf(policy.resolve("cordon-pack:greet@1.0.0/index.js", "./x.js")),
    "IMPORT_PATH_ESCAPE",
  );
});

Deno.test("denials of a run quote the specifier and the subpath with hidden characters escaped", () => {
  const hidden = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;
  const hostile = "x\nINFO forged\u001b[2J\u202etxt\u2028\u0085";
  const escaped = String.raw`x\nINFO forged\u001b[2J\u202etxt\u2028\u0085`;
  const policy = policyFor(["@acme/math"]);
  const decisions = [
    policy.resolve(GUEST_MODULE_NAME, `@acme/math/${hostile}`),
    policy.resolve(GUEST_MODULE_NAME, `./${hostile}`),
    policy.resolve(INDEX, `./${hostile}`),
    policy.resolve(`cordon-pack:${hostile}`, "./x.js"),
  ];
  for (const decision of decisions) {
    assert.ok(!decision.ok);
    assert.ok(!hidden.test(decision.message), decision.message);
    assert.ok(decision.message.includes(escaped), decision.message);
  }
});
