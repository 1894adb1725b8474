// The delivery entry of the Node build, on Node: `@cordon/cordon/delivery`
// loads without the Deno namespace, `serveDelivery()` refuses with
// DELIVERY_SERVE_NEEDS_DENO, and `createDeliveryHandler()` over a catalog
// of the platform's own, served with node:http through `toNodeListener()`,
// answers the listing, a module, a 304, an entitlement's 403 and a 404, and
// is what a remote catalog and a QuickJS loader on Node read from. The
// catalog here is a platform's own, which reads the fixture packs itself
// and builds their graphs with `buildPackGraph()` (catalog/node_test/ serves
// the disk catalog).

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import { test } from "node:test";

const BUILD = new URL("../../dist/node/", import.meta.url);
const PACKS = new URL("../../fixtures/packs/", import.meta.url);

const { createDeliveryHandler, serveDelivery } = await import(
  new URL("delivery/mod.js", BUILD).href
);
const { buildPackGraph, createRemoteCatalog } = await import(
  new URL("catalog/mod.js", BUILD).href
);
const { createQuickJSLoader } = await import(
  new URL("loader/mod.js", BUILD).href
);
const { PackManifestSchema } = await import(new URL("mod.js", BUILD).href);
const { toNodeListener } = await import(new URL("plugin/mod.js", BUILD).href);

const GREET = "greet";
const MATH = "@cordon-fixtures/math";
/** The tenant the catalog's own rule grants every pack; others get greet. */
const ENTITLED = "acme";

/** A fixture pack's graph, built from its files as a platform would. */
async function packGraph(name) {
  const folder = new URL(`${name}/`, PACKS);
  const manifest = PackManifestSchema.parse(
    JSON.parse(await readFile(new URL("package.json", folder), "utf8")),
  );
  const files = [
    ...Object.values(manifest.cordon.exports),
    ...(manifest.cordon.internal ?? []),
  ];
  const sources = {};
  for (const file of files) {
    sources[file] = await readFile(new URL(file, folder), "utf8");
  }
  const result = await buildPackGraph(manifest, sources);
  assert.ok(result.ok, result.message);
  return result.graph;
}

function refusal(reason, code, message) {
  return { ok: false, reason, code, message };
}

/**
 * A `SandboxModuleCatalog` of the platform's own over `graphs`, whose
 * entitlement rule lets tenant ENTITLED have every pack and any other
 * requester only greet. The handler never resolves a declaration, so
 * `resolveForExecution` answers nothing.
 */
function ownCatalog(graphs) {
  const modules = new Map();
  for (const { summary, sources } of graphs) {
    for (const module of summary.modules) {
      modules.set(module.id, { pack: summary, module, sources });
    }
  }
  return {
    resolveForExecution: () => ({
      statuses: [],
      packs: {},
      modules: {},
      installed: [],
    }),
    summaries: () => graphs.map(({ summary }) => structuredClone(summary)),
    authorizeDelivery(moduleId, requester) {
      const found = modules.get(moduleId);
      if (found === undefined) {
        return Promise.resolve(refusal(
          "not-found",
          "MODULE_NOT_FOUND",
          `No module "${moduleId}" is installed`,
        ));
      }
      const { pack, module, sources } = found;
      if (pack.name !== GREET && requester?.tenantId !== ENTITLED) {
        return Promise.resolve(refusal(
          "forbidden",
          "DELIVERY_FORBIDDEN",
          `Cannot deliver module "${moduleId}": the tenant may not have ${pack.name}`,
        ));
      }
      return Promise.resolve({
        ok: true,
        moduleId,
        content: sources[module.path],
        mediaType: "text/javascript",
        digest: module.digest,
        graphDigest: module.graphDigest,
        dependencyIds: module.dependencyIds,
        pack: { name: pack.name, version: pack.version },
        path: module.path,
      });
    },
  };
}

/** Serves `handle` on 127.0.0.1 with node:http through toNodeListener(). */
async function serve(handle) {
  const server = createServer(toNodeListener(handle));
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/api/sandbox-modules`,
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The delivery handler over the own catalog, served on Node; then closed. */
async function withDeliveryServer(use) {
  const graphs = [await packGraph(GREET), await packGraph(MATH)];
  const handle = createDeliveryHandler(ownCatalog(graphs), {
    requester: (request) => ({
      tenantId: request.headers.get("x-tenant") ?? undefined,
    }),
    corsRequestHeaders: ["X-Tenant"],
  });
  const server = await serve(handle);
  try {
    await use({ url: server.url, graphs });
  } finally {
    await server.close();
  }
}

function entryOf(graph) {
  const module = graph.summary.modules.find((m) => m.exportedAs.includes("."));
  return { id: module.id, source: graph.sources[module.path] };
}

async function problemOf(response) {
  assert.equal(
    response.headers.get("content-type"),
    "application/problem+json",
  );
  return (await response.json()).code;
}

test("@cordon/cordon/delivery loads on Node and serveDelivery() refuses with DELIVERY_SERVE_NEEDS_DENO, naming toNodeListener", async () => {
  assert.equal(typeof createDeliveryHandler, "function");
  await assert.rejects(serveDelivery({ packsDir: PACKS, port: 0 }), (error) => {
    assert.equal(error.name, "CordonError");
    assert.equal(error.code, "DELIVERY_SERVE_NEEDS_DENO");
    assert.match(error.message, /createDeliveryHandler/);
    assert.match(error.message, /toNodeListener/);
    return true;
  });
});

test("createDeliveryHandler() over a platform's own catalog, served by node:http through toNodeListener(), answers the listing, a module, a 304, an entitlement's 403 and a 404", async () => {
  await withDeliveryServer(async ({ url, graphs }) => {
    const [greet, math] = graphs.map(entryOf);
    const tenant = { "x-tenant": ENTITLED };

    const listing = await fetch(url, { headers: tenant });
    assert.equal(listing.status, 200);
    assert.deepEqual(
      (await listing.json()).packs.map((pack) => pack.name).sort(),
      [MATH, GREET].sort(),
    );
    const unentitled = await fetch(url);
    assert.deepEqual(
      (await unentitled.json()).packs.map((pack) => pack.name),
      [GREET],
    );

    const module = await fetch(`${url}/${greet.id}`);
    assert.equal(module.status, 200);
    const bytes = Buffer.from(await module.arrayBuffer());
    assert.equal(bytes.toString("utf8"), greet.source);
    const digest = createHash("sha256").update(bytes).digest("base64");
    assert.equal(module.headers.get("repr-digest"), `sha-256=:${digest}:`);
    const etag = module.headers.get("etag");
    assert.match(etag, /^"sha256-/);

    const unchanged = await fetch(`${url}/${greet.id}`, {
      headers: { "if-none-match": etag },
    });
    assert.equal(unchanged.status, 304);
    assert.equal(await unchanged.text(), "");

    const forbidden = await fetch(`${url}/${math.id}`);
    assert.equal(forbidden.status, 403);
    assert.equal(await problemOf(forbidden), "DELIVERY_FORBIDDEN");
    const granted = await fetch(`${url}/${math.id}`, { headers: tenant });
    assert.equal(granted.status, 200);
    assert.equal(await granted.text(), math.source);

    const missing = await fetch(`${url}/no-such-module`);
    assert.equal(missing.status, 404);
    assert.equal(await problemOf(missing), "MODULE_NOT_FOUND");
  });
});

test("a remote catalog on Node reads from the handler served on Node, and a QuickJS loader on Node runs a declaration from it", async () => {
  await withDeliveryServer(async ({ url }) => {
    const catalog = createRemoteCatalog({
      baseUrl: new URL(url).origin,
      headers: { "x-tenant": ENTITLED },
      requester: { tenantId: ENTITLED },
    });
    const loader = await createQuickJSLoader({ catalog });
    try {
      const result = await loader.run({
        source:
          `import { add } from "${MATH}"; import { greet } from "${GREET}";\n` +
          `export default greet(String(add(2, 3)));`,
        packages: [MATH, GREET],
      });
      assert.deepEqual(
        result.ok ? result.value : result.error,
        "Hello, 5!",
      );
      assert.deepEqual(
        catalog.summaries().map((pack) => pack.name).sort(),
        [MATH, GREET].sort(),
      );
    } finally {
      loader[Symbol.dispose]();
    }
  });
});
