import assert from "node:assert/strict";
import vm from "node:vm";
import { DeclarationSchema } from "./declaration.ts";
import { readDeclaration, safeParseDeclaration } from "./read_declaration.ts";
import type { SafeParseResult } from "./schema.ts";
import { withPollutedPrototype } from "./_test_hostile_test.ts";

const DIGEST = "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=";
const NAMES: unknown[] = [
  "math",
  "@acme/math",
  "a.b_c-d",
  "Bad",
  "../x",
  "@acme/",
  "",
  "a".repeat(214),
  "a".repeat(215),
  "A".repeat(215),
  1,
  null,
  undefined,
  [],
  {},
];
const VERSIONS: unknown[] = [
  undefined,
  "1.0.0",
  "",
  "x".repeat(64),
  "x".repeat(65),
  5,
];
const DIGESTS: unknown[] = [undefined, DIGEST, "sha256-x", 7];

/** Declarations of every shape a caller may pass, valid and not. */
function corpus(): unknown[] {
  const values: unknown[] = [
    null,
    undefined,
    1,
    Number.NaN,
    "export default 1;",
    true,
    1n,
    Symbol("x"),
    () => {},
    [],
    new Date(0),
    new Map(),
    Object.create(null),
    Object.create({ source: "inherited" }),
    {},
    { source: 1 },
    { source: "a" },
    { source: "a", packages: undefined },
    { source: "a", packages: null },
    { source: "a", packages: "math" },
    { source: "a", packages: {} },
    { source: "a", extra: 1 },
    { source: "a", extra: 1, other: 2 },
    { source: 1, extra: 1 },
    { extra: 1 },
    { source: "a", packages: ["math", "Bad", { specifier: "Bad" }] },
    { source: Infinity },
    { source: -Infinity, packages: [{ specifier: "a", packVersion: NaN }] },
    { source: "a", 'quote"and\\backslash': 1 },
    Object.create({ source: "a", extra: 1 }),
    { source: "a", packages: [Object.create({ specifier: "a", extra: 1 })] },
    { source: "a", packages: [Object.create({ specifier: "a" })] },
    {
      source: "a",
      packages: [Object.create({ specifier: "a", packVersion: "1" })],
    },
    JSON.parse('{"source":"a","__proto__":{"source":1}}'),
    { source: new (class Code {})() },
    { source: "a", packages: Array(256).fill("math") },
    { source: "a", packages: Array(257).fill("math") },
    { source: "a", packages: Array(257).fill(1) },
    { source: 1, packages: Array(300).fill("Bad"), extra: 1 },
  ];
  for (const name of NAMES) {
    values.push({ source: "a", packages: [name] });
    values.push({ source: "a", packages: ["math", name] });
    for (const packVersion of VERSIONS) {
      for (const graphDigest of DIGESTS) {
        values.push({
          source: "a",
          packages: [{ specifier: name, packVersion, graphDigest }],
        });
        const pinned: Record<string, unknown> = { specifier: name };
        if (packVersion !== undefined) pinned.packVersion = packVersion;
        if (graphDigest !== undefined) pinned.graphDigest = graphDigest;
        values.push({ source: "a", packages: [pinned] });
        values.push({ source: "a", packages: [{ ...pinned, extra: true }] });
      }
    }
  }
  return values;
}

function describe(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

Deno.test("safeParseDeclaration() accepts, copies and refuses exactly what DeclarationSchema does", () => {
  const values = corpus();
  assert.ok(values.length > 1000);
  for (const value of values) {
    const ours = safeParseDeclaration(value);
    const schema = DeclarationSchema.safeParse(value);
    const label = describe(value);
    assert.equal(ours.success, schema.success, label);
    if (schema.success) {
      assert.deepEqual(ours.data, schema.data, label);
      continue;
    }
    const issues = (result: SafeParseResult<unknown>) =>
      result.error!.issues.map(({ code, path, message }) => ({
        code,
        path,
        message,
      }));
    assert.deepEqual(issues(ours), issues(schema), label);
  }
});

Deno.test("safeParseDeclaration() returns a new declaration, not the one it was given", () => {
  const packages = ["math", { specifier: "@acme/math", packVersion: "1.0.0" }];
  const given = { source: "export default 1;", packages };
  const result = safeParseDeclaration(given);
  assert.ok(result.success);
  assert.notEqual(result.data, given);
  assert.notEqual(result.data.packages, packages);
  assert.notEqual(result.data.packages[1], packages[1]);
  assert.deepEqual(result.data, given);
});

Deno.test("safeParseDeclaration() reports a failure as an error carrying every issue", () => {
  const result = safeParseDeclaration({ source: 1, packages: ["Bad"] });
  assert.equal(result.success, false);
  assert.ok(result.error instanceof Error);
  assert.deepEqual(result.error.issues.map((issue) => issue.path), [
    ["source"],
    ["packages", 0],
  ]);
});

Deno.test("safeParseDeclaration() refuses more than 256 packs by their count, without reading them", () => {
  const packages: unknown[] = [];
  packages.length = 2 ** 32 - 1;
  const result = safeParseDeclaration({ source: "", packages });
  assert.deepEqual(
    result.error?.issues.map(({ path, message }) => ({ path, message })),
    [{
      path: ["packages"],
      message: "Too big: expected array to have <=256 items",
    }],
  );
});

Deno.test("readDeclaration() reads a string as the source of a declaration without packs", () => {
  assert.deepEqual(readDeclaration("export default 1;"), {
    ok: true,
    declaration: { source: "export default 1;", packages: [] },
  });
});

Deno.test("readDeclaration() calls each getter once and never asks a Proxy's get trap", () => {
  const asked: string[] = [];
  const pinned = new Proxy({ specifier: "@acme/math", packVersion: "1.0.0" }, {
    get(target, key, receiver) {
      asked.push(`get ${String(key)}`);
      return Reflect.get(target, key, receiver);
    },
  });
  const given = {
    get source() {
      asked.push("source");
      return "export default 1;";
    },
    get packages() {
      asked.push("packages");
      return ["math", pinned];
    },
  };
  const read = readDeclaration(given);
  assert.deepEqual(read, {
    ok: true,
    declaration: {
      source: "export default 1;",
      packages: ["math", { specifier: "@acme/math", packVersion: "1.0.0" }],
    },
  });
  assert.deepEqual(asked, ["source", "packages"]);
});

Deno.test("readDeclaration() answers what it cannot read as DECLARATION_INVALID, never by throwing", () => {
  const long = "x".repeat(100_000);
  const read = readDeclaration({
    source: "export default 1;",
    packages: [{
      get specifier(): string {
        throw new Error(long);
      },
    }],
  });
  assert.equal(read.ok, false);
  const message = read.ok ? "" : read.error.message;
  assert.ok(message.length < 1_000, `${message.length} characters`);
  assert.match(
    message,
    /^The declaration is invalid at packages\.0\.specifier: Cannot be read: it threw x{20}/,
  );
});

Deno.test("readDeclaration() keeps a __proto__ key a key, so it is refused and changes no prototype", () => {
  const given = JSON.parse(
    '{"source":"export default 1;","packages":[{"specifier":"math","__proto__":{"packVersion":"1"}}]}',
  );
  const read = readDeclaration(given);
  assert.deepEqual(
    read.ok ? read : read.error.message,
    'The declaration is invalid at packages.0: Unrecognized key: "__proto__"; pass { source, packages } with pack names or { specifier } objects',
  );
  assert.equal(({} as Record<string, unknown>).packVersion, undefined);
});

Deno.test("readDeclaration() names a field by at most 300 characters of its key, however long the key", () => {
  const key = "k".repeat(1_000_000);
  const read = readDeclaration({
    source: "export default 1;",
    get [key](): string {
      throw new Error("not loaded");
    },
  });
  assert.equal(read.ok, false);
  const message = read.ok ? "" : read.error.message;
  assert.ok(message.length < 1_000, `${message.length} characters`);
  assert.match(
    message,
    /^The declaration is invalid at k{300}…: Cannot be read: it threw not loaded; /,
  );
});

Deno.test("readDeclaration() says what a field wants and what kind of object it got, running none of the object's code", () => {
  const ran: string[] = [];
  class Hidden {
    static get name(): string {
      ran.push("name");
      return "Hidden";
    }
  }
  class Record {
    source = "export default 1;";
  }
  const bytes = new Uint8Array(2);
  Object.defineProperty(bytes, Symbol.toStringTag, {
    get() {
      ran.push("tag");
      return "Array";
    },
  });
  const cases: [unknown, string, string][] = [
    [{ source: "", packages: bytes }, "packages", "array, received Uint8Array"],
    [{ source: "", packages: new Set() }, "packages", "array, received Set"],
    [
      { source: "", packages: new Hidden() },
      "packages",
      "array, received an object of another kind",
    ],
    [{ source: new String("") }, "source", "string, received String object"],
    [new Map(), "the declaration", "object, received Map"],
    [
      new Record(),
      "the declaration",
      "object, received an object of class Record",
    ],
    [
      { source: "", packages: [new Date(0)] },
      "packages.0",
      "string or object, received Date",
    ],
    [
      { source: "", packages: [{ specifier: new String("m") }] },
      "packages.0.specifier",
      "string, received String object",
    ],
  ];
  for (const [given, where, wanted] of cases) {
    const read = readDeclaration(given);
    assert.equal(
      read.ok ? "accepted" : read.error.message,
      `The declaration is invalid at ${where}: Invalid input: expected ${wanted}; pass { source, packages } with pack names or { specifier } objects`,
    );
  }
  assert.deepEqual(ran, []);
});

Deno.test("readDeclaration() words an error thrown in another realm as one thrown in its own, reading its message once", () => {
  const context = vm.createContext({});
  const given = vm.runInContext(
    `const error = new Error("x");
     let reads = 0;
     Object.defineProperty(error, "message", { get() { reads++; return "trap"; } });
     ({ declaration: { get source() { throw error; } }, reads: () => reads })`,
    context,
  );
  const read = readDeclaration(given.declaration);
  assert.equal(
    read.ok ? "accepted" : read.error.message,
    "The declaration is invalid at source: Cannot be read: it threw trap; pass { source, packages } with pack names or { specifier } objects",
  );
  assert.equal(given.reads(), 1);
});

Deno.test("readDeclaration() reads a declaration as given when a polluted Object.prototype holds get, as a string or a function", async () => {
  for (const get of ["x", () => "export default 'polluted';"]) {
    const read = await withPollutedPrototype(
      { get },
      () =>
        readDeclaration({ source: "export default 1;", packages: ["greet"] }),
    );
    assert.deepEqual(read, {
      ok: true,
      declaration: { source: "export default 1;", packages: ["greet"] },
    });
  }
});
