// The remote and staged catalogs of the Node build, on Node, under the
// pool. Node cannot run the delivery server or the on-disk catalog, so a
// node:http server on 127.0.0.1 serves what cordon's own code wrote from
// the fixture packs (tools/write_node_fixtures.ts, run by
// `deno task build:node`): the delivery handler's answers, and the packs'
// staged tree. The fixture table's expectations are what Deno's legs give.

import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import process from "node:process";
import { test } from "node:test";
import {
  createQuickJSPool,
  createRemoteCatalog,
  createStagedCatalog,
  FIXTURE_CASES,
  runCase,
  RUNNER_URL,
  withPool,
} from "./_node_pool.mjs";
import {
  FIXTURES,
  NOT_FOUND,
  serve,
  STAGED,
  stagedAnswer,
} from "./_fixture_server.mjs";

const MATH = "@cordon-fixtures/math";

/** The delivery handler's recorded answers, by path. */
async function recordedDelivery() {
  const { prefix, responses } = JSON.parse(
    await readFile(new URL("delivery.json", FIXTURES), "utf8"),
  );
  return { prefix, byPath: new Map(responses.map((r) => [r.path, r])) };
}

/** The id of the module the math pack exports as ".". */
async function mathEntryId() {
  const pack = JSON.parse(
    await readFile(new URL(`packs/${MATH}.json`, STAGED), "utf8"),
  );
  return pack.modules.find((module) => module.exportedAs.includes(".")).id;
}

/** Answers a request with the delivery handler's recorded answer. */
function deliveryAnswer(delivery, url) {
  const found = delivery.byPath.get(url.pathname + url.search);
  if (found === undefined) return NOT_FOUND;
  return {
    status: found.status,
    headers: found.headers,
    body: Buffer.from(found.body, "base64"),
  };
}

/** The two catalogs, each over its own server. */
const CATALOGS = [
  {
    name: "createRemoteCatalog()",
    async start(options) {
      const delivery = await recordedDelivery();
      const server = await serve(
        (url) => deliveryAnswer(delivery, url),
        options,
      );
      // The whole listing is one recorded answer; the handler's answer to
      // `?packs=` depends on which packs the catalog already holds.
      const catalog = createRemoteCatalog({
        baseUrl: server.origin,
        listing: "full",
      });
      return { server, catalog };
    },
  },
  {
    name: "createStagedCatalog()",
    async start(options) {
      const server = await serve(stagedAnswer, options);
      const catalog = createStagedCatalog({
        indexUrl: `${server.origin}/index.json`,
      });
      return { server, catalog };
    },
  },
];

async function withPoolOver(kind, options, use) {
  const { server, catalog } = await kind.start(options);
  try {
    await withPool(catalog, use);
  } finally {
    await server.close();
  }
}

for (const kind of CATALOGS) {
  test(`${kind.name} on Node gives the fixture table's outcomes under the pool`, async (t) => {
    await withPoolOver(kind, {}, async (pool) => {
      for (const fixtureCase of FIXTURE_CASES) {
        await t.test(fixtureCase.name, async () => {
          assert.deepEqual(
            await runCase(pool, fixtureCase),
            fixtureCase.expect,
          );
        });
      }
    });
  });

  test(`${kind.name} on Node refuses an undeclared pack with IMPORT_UNDECLARED`, async () => {
    await withPoolOver(kind, {}, async (pool) => {
      const result = await pool.run({
        source: `import { add } from "${MATH}";\nexport default add(1, 2);`,
        packages: ["greet"],
      });
      assert.equal(!result.ok && result.error.code, "IMPORT_UNDECLARED");
      assert.match(result.error.message, /@cordon-fixtures\/math/);
    });
  });

  test(`${kind.name} on Node fails a run with DIGEST_MISMATCH when a module's bytes are tampered with`, async () => {
    const tamperId = await mathEntryId();
    await withPoolOver(kind, { tamperId }, async (pool) => {
      const result = await pool.run({
        source:
          'console.log("guest code ran");\nimport { add } from "@cordon-fixtures/math";\nexport default add(1, 2);',
        packages: [MATH],
      });
      assert.equal(!result.ok && result.error.code, "DIGEST_MISMATCH");
      assert.match(result.error.message, /of pack "@cordon-fixtures\/math"/);
      assert.deepEqual(result.logs, []);
    });
  });
}

test("createStagedCatalog() on Node over a file: URL fails the run with FETCH_FAILED that says to serve the tree over http(s)", async () => {
  const pool = await createQuickJSPool({
    catalog: createStagedCatalog({ indexUrl: new URL("index.json", STAGED) }),
    size: 1,
    runnerUrl: RUNNER_URL,
  });
  try {
    const result = await pool.run({
      source: 'import { greet } from "greet";\nexport default greet("Ada");',
      packages: ["greet"],
    });
    assert.equal(!result.ok && result.error.code, "FETCH_FAILED");
    assert.match(
      result.error.message,
      /from file:.*where fetch cannot read file: URLs \(Node, browsers\), serve the staged tree over http\(s\)/,
    );
  } finally {
    await pool[Symbol.asyncDispose]();
  }
});

/** The graph of a pack of `count` modules, its entry re-exporting the rest. */
async function widePack(count) {
  const { buildPackGraph } = await import("../../dist/node/catalog/mod.js");
  const { PackManifestSchema } = await import("../../dist/node/mod.js");
  const parts = Array.from({ length: count - 1 }, (_, i) => `./part${i}.js`);
  const sources = { "./index.js": "" };
  for (const [i, part] of parts.entries()) {
    sources["./index.js"] += `export { part${i} } from "${part}";\n`;
    sources[part] = `export const part${i} = ${i};\n`;
  }
  const manifest = PackManifestSchema.parse({
    name: "wide",
    version: "1.0.0",
    cordon: { exports: { ".": "./index.js" }, internal: parts },
  });
  const built = await buildPackGraph(manifest, sources);
  assert.equal(built.ok, true);
  return built.graph;
}

/** Answers as the delivery handler does: the listing and each module. */
function packAnswer({ summary, sources }, url) {
  const prefix = "/api/sandbox-modules";
  if (url.pathname === prefix) {
    const body = Buffer.from(JSON.stringify({ packs: [summary] }));
    return {
      status: 200,
      headers: [["content-type", "application/json"]],
      body,
    };
  }
  const module = summary.modules.find((m) =>
    url.pathname === `${prefix}/${m.id}`
  );
  if (module === undefined) return NOT_FOUND;
  const digest = `sha-256=:${module.digest.slice("sha256-".length)}:`;
  return {
    status: 200,
    headers: [["content-type", "text/javascript"], ["repr-digest", digest]],
    body: Buffer.from(sources[module.path]),
  };
}

test("createRemoteCatalog() on Node prefetches a pack of 48 modules, more than it fetches at once, without a MaxListenersExceededWarning", async () => {
  const graph = await widePack(48);
  const server = await serve((url) => packAnswer(graph, url));
  const warnings = [];
  const onWarning = (warning) => warnings.push(warning.name);
  process.on("warning", onWarning);
  try {
    await withPool(
      createRemoteCatalog({ baseUrl: server.origin }),
      async (pool) => {
        const result = await pool.run({
          source: 'import { part46 } from "wide";\nexport default part46;',
          packages: ["wide"],
        });
        assert.equal(result.ok && result.value, 46);
      },
    );
    // Node emits a warning on a later turn of its event loop.
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off("warning", onWarning);
    await server.close();
  }
  assert.deepEqual(warnings, []);
});

/**
 * Serves every request a head that promises a JSON body of 1,000 bytes and
 * the first bytes of it, then nothing more: a body still being read.
 */
async function stalledBody() {
  const server = createServer((_request, response) => {
    response.writeHead(200, {
      "content-type": "application/json",
      "content-length": "1000",
    });
    response.write('{"packs": [');
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    origin: `http://127.0.0.1:${server.address().port}`,
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The rejections left unhandled while `during` runs, and a turn after. */
async function unhandledDuring(during) {
  const unhandled = [];
  const onUnhandled = (reason) => unhandled.push(String(reason));
  process.on("unhandledRejection", onUnhandled);
  try {
    await during();
    await new Promise((resolve) => setTimeout(resolve, 50));
  } finally {
    process.off("unhandledRejection", onUnhandled);
  }
  return unhandled;
}

for (
  const [name, make] of [
    [
      "createRemoteCatalog()",
      (origin, fetch) => createRemoteCatalog({ baseUrl: origin, fetch }),
    ],
    [
      "createStagedCatalog()",
      (origin, fetch) =>
        createStagedCatalog({ indexUrl: `${origin}/index.json`, fetch }),
    ],
  ]
) {
  test(`${name} on Node aborted with a revoked Proxy while a body is read rejects with ABORTED and leaves no rejection unhandled`, async () => {
    const server = await stalledBody();
    const controller = new AbortController();
    const { proxy: reason, revoke } = Proxy.revocable({}, {});
    revoke();
    const catalog = make(server.origin, async (input, init) => {
      const response = await fetch(input, init);
      // The body's first bytes are on their way; the rest never come.
      setTimeout(() => controller.abort(reason), 20);
      return response;
    });
    let error;
    try {
      const unhandled = await unhandledDuring(async () => {
        error = await catalog.prefetch(
          { source: "export default 1;", packages: [MATH] },
          { signal: controller.signal },
        ).then(() => assert.fail("prefetch() resolved"), (error) => error);
      });
      assert.deepEqual(unhandled, []);
    } finally {
      await server.close();
    }
    assert.equal(error?.code, "ABORTED", String(error));
    assert.equal(error.cause, reason);
  });
}
