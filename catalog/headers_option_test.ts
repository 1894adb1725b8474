import assert from "node:assert/strict";
import { createRemoteCatalog } from "./remote_catalog.ts";
import { createStagedCatalog } from "./staged_catalog.ts";

// The remote and the staged catalog read `headers` by one rule: a value
// that is not headers is refused with a TypeError that names the option
// and the work, and never quotes a value (headers carry credentials).

const factories = {
  "create a remote catalog": (headers: unknown) =>
    createRemoteCatalog({
      baseUrl: "http://127.0.0.1:4730",
      headers: headers as Record<string, string>,
    }),
  "create a staged catalog": (headers: unknown) =>
    createStagedCatalog({
      indexUrl: "http://127.0.0.1:4730/cordon/index.json",
      headers: headers as Record<string, string>,
    }),
};

const notHeaders: [string, unknown][] = [
  ["a number", 5],
  ["a string", "Bearer secret"],
  ["null", null],
  ["a function", () => ({ authorization: "Bearer secret" })],
  ["a symbol", Symbol("headers")],
  ["a pair short of a value", [["authorization"]]],
  ["a name with a space", { "bad name": "secret" }],
  ["a value with a line break", {
    authorization: "Bearer secret\nX-Injected: 1",
  }],
];

for (const [action, create] of Object.entries(factories)) {
  for (const [what, headers] of notHeaders) {
    Deno.test(`${action} refuses headers that are ${what}, naming the option`, () => {
      assert.throws(() => create(headers), (error: unknown) => {
        assert.ok(error instanceof TypeError);
        assert.match(error.message, new RegExp(`^Cannot ${action}: headers `));
        assert.doesNotMatch(error.message, /secret/);
        return true;
      });
    });
  }

  Deno.test(`${action} says which header option threw when reading it throws`, () => {
    const headers = {
      get authorization(): string {
        throw new Error("vault locked");
      },
    };
    assert.throws(() => create(headers), (error: unknown) => {
      assert.ok(error instanceof TypeError);
      assert.equal(
        error.message,
        `Cannot ${action}: headers could not be read: vault locked`,
      );
      return true;
    });
  });

  Deno.test(`${action} says headers could not be read when a Proxy's ownKeys trap throws`, () => {
    const headers = new Proxy({}, {
      ownKeys() {
        throw new Error("no keys");
      },
    });
    assert.throws(
      () => create(headers),
      new TypeError(`Cannot ${action}: headers could not be read: no keys`),
    );
  });

  Deno.test(`${action} reads each header once, so the value checked is the value sent`, async () => {
    let reads = 0;
    const sent: (string | null)[] = [];
    const headers = {
      get authorization(): string {
        reads++;
        return `Bearer t${reads}`;
      },
    };
    const options = {
      headers,
      fetch: (_input: string, init: RequestInit) => {
        sent.push(new Headers(init.headers).get("authorization"));
        return Promise.resolve(new Response("{}", { status: 500 }));
      },
    };
    const catalog = action === "create a remote catalog"
      ? createRemoteCatalog({ baseUrl: "http://127.0.0.1:4730", ...options })
      : createStagedCatalog({
        indexUrl: "http://127.0.0.1:4730/cordon/index.json",
        ...options,
      });
    const declaration = { source: "", packages: ["greet"] };
    await catalog.prefetch(declaration).catch(() => {});
    await catalog.prefetch(declaration).catch(() => {});
    assert.equal(reads, 1);
    assert.deepEqual([...new Set(sent)], ["Bearer t1"]);
  });

  Deno.test(`${action} takes headers as a Headers, a record and a list of pairs`, () => {
    for (
      const headers of [
        new Headers({ authorization: "Bearer a" }),
        { authorization: "Bearer a" },
        [["authorization", "Bearer a"]],
      ]
    ) create(headers);
  });
}
