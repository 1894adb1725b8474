import assert from "node:assert/strict";
import { createRemoteCatalog } from "../catalog/remote_catalog.ts";
import {
  neverAnswer,
  type RawExchange,
  send,
  serveRaw,
  unlessHung,
} from "../catalog/_misbehaving_server_test.ts";
import { createQuickJSLoader } from "./quickjs_loader.ts";
import { createQuickJSPool } from "./quickjs_pool.ts";

const DECLARATION = {
  source: 'import { greet } from "greet"; export default greet("Ada");',
  packages: ["greet"],
};

/** How a misbehaving delivery server answers every request. */
const MISBEHAVIOURS = {
  "never answers": neverAnswer,
  // Headers that announce a long listing, then one byte per 100 ms.
  "drips the listing": (exchange: RawExchange) =>
    send(
      exchange,
      { "content-type": "application/json" },
      `{${" ".repeat(999_999)}`,
      { dripMs: 100 },
    ),
} as const;

for (const [how, misbehaviour] of Object.entries(MISBEHAVIOURS)) {
  Deno.test(`run() fails with TIMEOUT at its timeoutMs when the remote catalog's server ${how}`, async () => {
    await using server = serveRaw(misbehaviour);
    const catalog = createRemoteCatalog({ baseUrl: server.url });
    using loader = await createQuickJSLoader({ catalog });
    const result = await unlessHung(
      loader.run(DECLARATION, { timeoutMs: 1000 }),
    );
    assert.equal(!result.ok && result.error.code, "TIMEOUT");
    assert.match(
      !result.ok ? result.error.message : "",
      /time limit of 1000 ms before its code started, waiting for the catalog .*delivery server and any proxy in front of it/,
    );
  });
}

Deno.test("run() fails with ABORTED when its signal aborts a prefetch the server never answers", async () => {
  await using server = serveRaw(neverAnswer);
  const catalog = createRemoteCatalog({ baseUrl: server.url });
  using loader = await createQuickJSLoader({ catalog });
  const result = await unlessHung(
    loader.run(DECLARATION, {
      timeoutMs: 5000,
      signal: AbortSignal.timeout(300),
    }),
  );
  assert.equal(!result.ok && result.error.code, "ABORTED");
});

Deno.test("createQuickJSPool() run() fails with TIMEOUT at its timeoutMs when the remote catalog's server never answers", async () => {
  await using server = serveRaw(neverAnswer);
  const catalog = createRemoteCatalog({ baseUrl: server.url });
  await using pool = await createQuickJSPool({ catalog, size: 1 });
  const result = await unlessHung(
    pool.run(DECLARATION, { timeoutMs: 1000 }),
  );
  assert.equal(!result.ok && result.error.code, "TIMEOUT");
  assert.match(
    !result.ok ? result.error.message : "",
    /before its code started, waiting for the catalog/,
  );
});
