// The remote and the staged catalog of the Node build read `headers` by
// the rule they follow on Deno: what is not headers is a TypeError that
// names the option and quotes no header value, and a getter that throws
// is reported as the options that could not be read.

import assert from "node:assert/strict";
import { test } from "node:test";

const BUILD = new URL("../../dist/node/", import.meta.url);
const { createRemoteCatalog, createStagedCatalog } = await import(
  new URL("catalog/mod.js", BUILD).href
);

const factories = {
  "create a remote catalog": (headers) =>
    createRemoteCatalog({ baseUrl: "http://127.0.0.1:4730", headers }),
  "create a staged catalog": (headers) =>
    createStagedCatalog({
      indexUrl: "http://127.0.0.1:4730/cordon/index.json",
      headers,
    }),
};

const notHeaders = [
  5,
  "Bearer secret",
  null,
  () => ({ authorization: "Bearer secret" }),
  [["authorization"]],
  { "bad name": "secret" },
  { authorization: "Bearer secret\nX-Injected: 1" },
];

for (const [action, create] of Object.entries(factories)) {
  test(`${action} refuses what is not headers, naming the option`, () => {
    for (const headers of notHeaders) {
      assert.throws(() => create(headers), (error) => {
        assert.ok(error instanceof TypeError);
        assert.match(error.message, new RegExp(`^Cannot ${action}: headers `));
        assert.doesNotMatch(error.message, /secret/);
        return true;
      });
    }
  });

  test(`${action} reports a header getter that throws`, () => {
    const headers = {
      get authorization() {
        throw new Error("vault locked");
      },
    };
    assert.throws(
      () => create(headers),
      new TypeError(
        `Cannot ${action}: headers could not be read: vault locked`,
      ),
    );
  });
}
