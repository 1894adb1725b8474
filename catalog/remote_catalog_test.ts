import assert from "node:assert/strict";
import {
  unreadable,
  withPollutedPrototype,
} from "../protocol/_test_hostile_test.ts";
import { createHash } from "node:crypto";
import { fileURLToPath } from "node:url";
import {
  type CatalogListing,
  CordonError,
  PackManifestSchema,
  type PackSummary,
} from "../protocol/mod.ts";
import { createDeliveryHandler } from "../delivery/handler.ts";
import {
  createImportPolicy,
  GUEST_MODULE_NAME,
} from "../policy/import_policy.ts";
import { toReprDigest } from "./digest.ts";
import { createDiskCatalog } from "./disk_catalog.ts";
import { createStagedCatalog } from "./staged_catalog.ts";
import { buildPackGraph, type PackGraph } from "./graph.ts";
import {
  createMemoryModuleCache,
  createRemoteCatalog,
  type FetchFunction,
  type ModuleCache,
  type RemoteCatalog,
} from "./remote_catalog.ts";
import {
  flood,
  HANG_MS,
  head,
  neverAnswer,
  type RawExchange,
  type RawServer,
  send,
  serveRaw,
  type StuckBody,
  stuckBody,
  unlessHung,
} from "./_misbehaving_server_test.ts";
import { settleWithin } from "../protocol/deadline.ts";
import { runScript } from "../tools/_script_run_test.ts";

const FIXTURE_PACKS = fileURLToPath(
  new URL("../fixtures/packs/", import.meta.url),
);

function nodeSri(data: string | Uint8Array): string {
  return `sha256-${createHash("sha256").update(data).digest("base64")}`;
}

/** A small pack with an exported entry, a second export and a helper. */
async function mathPack(version = "1.0.0", round = "Math.round"): Promise<
  PackGraph
> {
  const manifest = PackManifestSchema.parse({
    name: "@acme/math",
    version,
    cordon: {
      exports: { ".": "./index.js", "./trig": "./trig.js" },
      internal: ["./lib/round.js"],
    },
  });
  const built = await buildPackGraph(manifest, {
    "./index.js":
      'import { round } from "./lib/round.js";\nexport const add = (a, b) => round(a + b);\n',
    "./trig.js": "export const sin = Math.sin;\n",
    "./lib/round.js": `export const round = ${round};\n`,
  });
  assert.ok(built.ok);
  return built.graph;
}

/** How the fake server answers one module request. */
type Tamper =
  | "none"
  | "wrong-body"
  | "wrong-header"
  | "missing-header"
  | "malformed-header"
  | "status-500"
  | "status-403"
  | "html-page";

interface FakeServer extends AsyncDisposable {
  url: string;
  /** Every request's path and query, in arrival order. */
  requests: { path: string; ifNoneMatch: string | null }[];
  /** Replaces what the server lists and serves. */
  setPacks(packs: PackGraph[]): void;
  /** Makes the server tamper with one module path (`./lib/round.js`). */
  tamper(path: string, how: Tamper): void;
  /** Holds module answers until `count` module requests are in flight. */
  holdUntil(count: number): void;
  /** The most module requests that were in flight at once. */
  maxInFlight(): number;
}

function listingBody(packs: PackGraph[]): string {
  const listing: CatalogListing = { packs: packs.map((p) => p.summary) };
  return JSON.stringify(listing);
}

/**
 * A delivery server that can lie: it lists real packs, and answers module
 * requests honestly or with a tampered body or header, or an error status.
 */
function serveFake(
  initial: PackGraph[],
  { selects = false }: { selects?: boolean } = {},
): FakeServer {
  let packs = initial;
  const tampers = new Map<string, Tamper>();
  const requests: FakeServer["requests"] = [];
  let hold = 0;
  let inFlight = 0;
  let maxInFlight = 0;
  let release: () => void = () => {};
  let released = Promise.resolve();
  let safety: ReturnType<typeof setTimeout> | undefined;

  async function handle(request: Request): Promise<Response> {
    const url = new URL(request.url);
    requests.push({
      path: url.pathname + url.search,
      ifNoneMatch: request.headers.get("if-none-match"),
    });
    if (url.pathname === "/api/sandbox-modules") {
      // As the delivery handler answers `?packs=a,b`, when asked to.
      const names = url.searchParams.get("packs")?.split(",");
      const body = listingBody(
        selects && names !== undefined
          ? packs.filter((p) => names.includes(p.summary.name))
          : packs,
      );
      const etag = `"${nodeSri(body)}"`;
      if (request.headers.get("if-none-match") === etag) {
        return new Response(null, { status: 304, headers: { etag } });
      }
      return new Response(body, {
        headers: { "content-type": "application/json", etag },
      });
    }
    const id = url.pathname.slice("/api/sandbox-modules/".length);
    const pack = packs.find((p) => p.summary.modules.some((m) => m.id === id));
    const module = pack?.summary.modules.find((m) => m.id === id);
    if (pack === undefined || module === undefined) {
      return Response.json({ code: "MODULE_NOT_FOUND", detail: "No" }, {
        status: 404,
        headers: { "content-type": "application/problem+json" },
      });
    }
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    if (inFlight >= hold) release();
    await released;
    inFlight--;
    const source = pack.sources[module.path]!;
    const how = tampers.get(module.path) ?? "none";
    const etag = `"${module.digest}"`;
    const ifNoneMatch = request.headers.get("if-none-match");
    if (ifNoneMatch === etag || ifNoneMatch === "*") {
      return new Response(null, { status: 304, headers: { etag } });
    }
    const headers = new Headers({
      "content-type": "text/javascript; charset=utf-8",
      etag,
      "repr-digest": toReprDigest(module.digest),
    });
    switch (how) {
      case "status-500":
        return new Response("boom", { status: 500 });
      case "status-403":
        return Response.json(
          { code: "DELIVERY_FORBIDDEN", detail: "No" },
          {
            status: 403,
            headers: { "content-type": "application/problem+json" },
          },
        );
      case "wrong-body": {
        // The header still announces the honest digest.
        return new Response("export const round = () => 666;\n", { headers });
      }
      case "wrong-header": {
        const evil = "export const round = () => 666;\n";
        headers.set("repr-digest", toReprDigest(nodeSri(evil)));
        return new Response(source, { headers });
      }
      case "html-page":
        // A portal's or proxy's page, sent with 200 and no Repr-Digest.
        return new Response("<!doctype html><title>Sign in</title>\n", {
          headers: { "content-type": "text/html" },
        });
      case "missing-header":
        headers.delete("repr-digest");
        return new Response(source, { headers });
      case "malformed-header":
        headers.set("repr-digest", "sha-256=not-a-digest");
        return new Response(source, { headers });
      default:
        return new Response(source, { headers });
    }
  }

  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    handle,
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    requests,
    setPacks(next) {
      packs = next;
    },
    tamper(path, how) {
      tampers.set(path, how);
    },
    holdUntil(count) {
      hold = count;
      released = new Promise((resolve) => {
        release = () => {
          clearTimeout(safety);
          resolve();
        };
      });
      // Only a safety valve: a sequential client would otherwise hang. It
      // opens at HANG_MS, so a loaded machine's slow requests never do.
      safety = setTimeout(() => release(), HANG_MS);
    },
    maxInFlight: () => maxInFlight,
    async [Symbol.asyncDispose]() {
      release();
      clearTimeout(safety);
      await server.shutdown();
    },
  };
}

function moduleRequests(server: FakeServer): string[] {
  return server.requests.map((r) => r.path).filter((path) =>
    path.startsWith("/api/sandbox-modules/")
  );
}

const DECLARATION = {
  source: 'import { add } from "@acme/math"; export default add(1, 2);',
  packages: ["@acme/math"],
};

/** A cache that records what was put, to prove what was (not) cached. */
function recordingCache(): ModuleCache & { puts: [string, string][] } {
  const inner = createMemoryModuleCache();
  const puts: [string, string][] = [];
  return {
    puts,
    get: (digest) => inner.get(digest),
    put(digest, source) {
      puts.push([digest, source]);
      inner.put(digest, source);
    },
  };
}

async function rejection(promise: Promise<unknown>): Promise<CordonError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof CordonError, String(error));
    return error;
  }
  assert.fail("expected the promise to reject");
}

Deno.test("createRemoteCatalog() prefetches a declaration through the real delivery handler", async () => {
  const disk = await createDiskCatalog(FIXTURE_PACKS);
  const handler = createDeliveryHandler(disk);
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    handler,
  );
  const catalog = createRemoteCatalog({
    baseUrl: `http://127.0.0.1:${server.addr.port}`,
  });
  const installed = disk.summaries();
  assert.ok(installed.length > 0, "the fixture packs are installed");
  const declaration = {
    source: "export default 1;",
    packages: installed.map((pack) => pack.name),
  };
  await catalog.prefetch(declaration);
  const remote = catalog.resolveForExecution(declaration);
  const local = disk.resolveForExecution(declaration);
  assert.deepEqual(remote, local);
  assert.deepEqual(catalog.summaries(), installed);
});

Deno.test("prefetch() takes a module from a cache another requester's catalog filled only once the server grants it to this catalog's requester", async () => {
  const paid = "@cordon-fixtures/math";
  const disk = await createDiskCatalog(FIXTURE_PACKS, {
    entitlement: (pack, requester) =>
      pack.name !== paid || requester.tenantId === "a",
  });
  const handler = createDeliveryHandler(disk, {
    requester: (request) => {
      const token = request.headers.get("authorization");
      return token === null ? {} : { tenantId: token.replace(/^Bearer /, "") };
    },
  });
  // A server that lists every pack to everyone (as one that lists before
  // a pack is taken from a tenant does), so tenant b asks for the modules.
  const listsEverything = createDeliveryHandler(disk);
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) =>
      new URL(request.url).pathname === "/api/sandbox-modules"
        ? listsEverything(request)
        : handler(request),
  );
  const baseUrl = `http://127.0.0.1:${server.addr.port}`;
  // One cache for both tenants, as a server keeps one, or a browser keeps
  // one across the users who sign in on it.
  const cache = createMemoryModuleCache();
  const declaration = {
    source: `import { add } from "${paid}"; export default add(1, 2);`,
    packages: [paid],
  };
  const tenantA = createRemoteCatalog({
    baseUrl,
    cache,
    headers: { authorization: "Bearer a" },
  });
  await tenantA.prefetch(declaration);
  assert.equal(
    tenantA.resolveForExecution(declaration).statuses[0]?.status,
    "ok",
  );

  const tenantB = createRemoteCatalog({
    baseUrl,
    cache,
    headers: { authorization: "Bearer b" },
  });
  const refused = await rejection(tenantB.prefetch(declaration));
  assert.equal(refused.code, "FETCH_FAILED");
  assert.match(refused.message, /403 DELIVERY_FORBIDDEN/);
  const resolution = tenantB.resolveForExecution(declaration);
  assert.notEqual(resolution.statuses[0]?.status, "ok");
  assert.deepEqual(Object.keys(resolution.modules), []);
});

Deno.test("prefetch() resolves a pack the server lists only to other requesters as not installed, as a pack no one installed", async () => {
  const paid = "@cordon-fixtures/math";
  const disk = await createDiskCatalog(FIXTURE_PACKS, {
    entitlement: (pack, requester) =>
      pack.name !== paid || requester.tenantId === "a",
  });
  const handler = createDeliveryHandler(disk, {
    requester: (request) => {
      const token = request.headers.get("authorization");
      return token === null ? {} : { tenantId: token.replace(/^Bearer /, "") };
    },
  });
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    handler,
  );
  const baseUrl = `http://127.0.0.1:${server.addr.port}`;
  const statusOf = async (tenant: string, pack: string) => {
    const catalog = createRemoteCatalog({
      baseUrl,
      headers: { authorization: `Bearer ${tenant}` },
    });
    const declaration = { source: "export default 1;", packages: [pack] };
    await catalog.prefetch(declaration);
    const resolution = catalog.resolveForExecution(declaration);
    assert.equal(
      resolution.installed.includes(pack),
      resolution.statuses[0]?.status === "ok",
    );
    return resolution.statuses[0];
  };
  assert.equal((await statusOf("a", paid))?.status, "ok");
  const refused = await statusOf("b", paid);
  const absent = await statusOf("b", "@cordon-fixtures/nope");
  assert.ok(refused?.status === "not-installed", JSON.stringify(refused));
  assert.ok(absent?.status === "not-installed", JSON.stringify(absent));
  assert.equal(refused.code, "PACK_NOT_INSTALLED");
  assert.equal(
    refused.message,
    absent.message.replace("@cordon-fixtures/nope", paid),
  );
});

Deno.test("authorizeDelivery() answers only for the requester its headers authenticate, so a catalog one tenant's runs share with another's grants the other nothing", async () => {
  const paid = "@cordon-fixtures/math";
  const disk = await createDiskCatalog(FIXTURE_PACKS, {
    entitlement: (pack, requester) =>
      pack.name !== paid || requester.tenantId === "a",
  });
  const handler = createDeliveryHandler(disk, {
    requester: (request) => {
      const token = request.headers.get("authorization");
      return token === null ? {} : { tenantId: token.replace(/^Bearer /, "") };
    },
  });
  let requests = 0;
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) => {
      requests++;
      return handler(request);
    },
  );
  const catalog = createRemoteCatalog({
    baseUrl: `http://127.0.0.1:${server.addr.port}`,
    headers: { authorization: "Bearer a" },
    requester: { tenantId: "a" },
  });
  await catalog.prefetch({ source: "", packages: [paid] });
  const id = catalog.summaries()[0]!.modules[0]!.id;
  assert.equal((await catalog.authorizeDelivery(id)).ok, true);
  assert.equal(
    (await catalog.authorizeDelivery(id, { tenantId: "a" })).ok,
    true,
  );

  const before = requests;
  for (
    const other of [{ tenantId: "b" }, {}, { tenantId: "a", principalId: "u" }]
  ) {
    const refused = await catalog.authorizeDelivery(id, other);
    assert.deepEqual(
      refused.ok ? refused : [refused.reason, refused.code],
      ["forbidden", "DELIVERY_FORBIDDEN"],
      JSON.stringify(other),
    );
    assert.ok(!refused.ok && refused.message.includes(`module "${id}"`));
  }
  assert.equal(requests, before, "a refused requester costs no request");

  // An id a dependency put on Object.prototype names no one.
  const anonymous = await withPollutedPrototype(
    { tenantId: "a" },
    () => catalog.authorizeDelivery(id, {}),
  );
  assert.equal(anonymous.ok, false);

  // Without the requester option the catalog speaks for no one it can name.
  const unnamed = createRemoteCatalog({
    baseUrl: `http://127.0.0.1:${server.addr.port}`,
    headers: { authorization: "Bearer a" },
  });
  assert.equal((await unnamed.authorizeDelivery(id)).ok, true);
  const named = await unnamed.authorizeDelivery(id, { tenantId: "a" });
  assert.equal(named.ok, false);
});

Deno.test("a delivery handler over a remote catalog refuses a module to a request its requester hook names no one for, as it leaves the pack out of that request's listing", async () => {
  const paid = "@cordon-fixtures/math";
  const disk = await createDiskCatalog(FIXTURE_PACKS, {
    entitlement: (pack, requester) =>
      pack.name !== paid || requester.tenantId === "a",
  });
  const upstream = createDeliveryHandler(disk, {
    requester: (request) => {
      const token = request.headers.get("authorization");
      return token === null ? {} : { tenantId: token.replace(/^Bearer /, "") };
    },
  });
  const catalog = createRemoteCatalog({
    baseUrl: "http://upstream.test",
    fetch: (input, init) => upstream(new Request(input, init)),
    headers: { authorization: "Bearer a" },
    requester: { tenantId: "a" },
  });
  await catalog.prefetch({ source: "", packages: [paid] });
  const id = catalog.summaries()[0]!.modules[0]!.id;
  // A relay whose hook names a tenant from a header, and no one (the
  // anonymous requester, as the hook's contract reads undefined) without.
  const relay = createDeliveryHandler(catalog, {
    requester: (request) => {
      const tenant = request.headers.get("x-tenant");
      return (tenant === null ? undefined : { tenantId: tenant }) as {
        tenantId: string;
      };
    },
  });
  const ask = async (path: string, headers: Record<string, string>) => {
    const response = await relay(
      new Request(`http://relay.test/api/sandbox-modules${path}`, { headers }),
    );
    return { status: response.status, body: await response.text() };
  };
  const tenantA = { "x-tenant": "a" };
  assert.equal((await ask(`/${id}`, tenantA)).status, 200);
  assert.match((await ask("", tenantA)).body, /cordon-fixtures\/math/);

  const listing = await ask("", {});
  assert.equal(listing.status, 200);
  assert.doesNotMatch(listing.body, /cordon-fixtures\/math/);
  const module = await ask(`/${id}`, {});
  assert.equal(module.status, 403, module.body);
  assert.match(module.body, /DELIVERY_FORBIDDEN/);
});

Deno.test("createRemoteCatalog() refuses a requester option that is not { principalId?, tenantId? } of strings", () => {
  for (const requester of [null, "a", { tenantId: 1 }, { tenant: "a" }]) {
    assert.throws(
      () =>
        createRemoteCatalog({
          baseUrl: "http://127.0.0.1:1",
          requester: requester as never,
        }),
      TypeError,
      JSON.stringify(requester),
    );
  }
  createRemoteCatalog({
    baseUrl: "http://127.0.0.1:1",
    requester: { principalId: "p", tenantId: "t" },
  });
});

Deno.test("createRemoteCatalog() refuses a baseUrl with credentials, as the staged catalog refuses its indexUrl", () => {
  for (
    const baseUrl of ["http://user:s3cret@127.0.0.1:8000", "https://token@h"]
  ) {
    assert.throws(
      () => createRemoteCatalog({ baseUrl }),
      (error: Error) =>
        error instanceof TypeError &&
        /baseUrl must not hold a user name or password: .*headers/.test(
          error.message,
        ) && !error.message.includes("s3cret"),
    );
  }
});

Deno.test("createRemoteCatalog() follows a redirect without headers, and refuses one while it sends headers, which never reach the other address", async () => {
  const disk = await createDiskCatalog(FIXTURE_PACKS);
  const handler = createDeliveryHandler(disk);
  const seen: (string | null)[] = [];
  await using target = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) => {
      seen.push(request.headers.get("x-api-key"));
      return handler(request);
    },
  );
  await using front = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) => {
      const { pathname, search } = new URL(request.url);
      return Response.redirect(
        `http://127.0.0.1:${target.addr.port}${pathname}${search}`,
        307,
      );
    },
  );
  const declaration = {
    source: "export default 1;",
    packages: [disk.summaries()[0]!.name],
  };
  const baseUrl = `http://127.0.0.1:${front.addr.port}`;
  await createRemoteCatalog({ baseUrl }).prefetch(declaration);
  assert.ok(seen.length > 0);
  seen.length = 0;
  const withHeaders = createRemoteCatalog({
    baseUrl,
    headers: { "x-api-key": "secret" },
  });
  await assert.rejects(
    withHeaders.prefetch(declaration),
    (error) =>
      error instanceof CordonError && error.code === "FETCH_FAILED" &&
      /the host answered a redirect \(307\), which the catalog does not follow while it sends the headers it was given/
        .test(error.message),
  );
  assert.deepEqual(seen, []);
});

Deno.test("createRemoteCatalog() answers not-installed, version and digest pins like the disk catalog", async () => {
  const disk = await createDiskCatalog(FIXTURE_PACKS);
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    createDeliveryHandler(disk),
  );
  const catalog = createRemoteCatalog({
    baseUrl: `http://127.0.0.1:${server.addr.port}`,
    listing: "full",
  });
  const [first] = disk.summaries();
  const declaration = {
    source: "export default 1;",
    packages: [
      "nope-not-installed",
      { specifier: first!.name, packVersion: "99.0.0" },
      {
        specifier: first!.name,
        graphDigest: nodeSri("something else"),
      },
    ],
  };
  await catalog.prefetch(declaration);
  const remote = catalog.resolveForExecution(declaration);
  assert.deepEqual(
    remote.statuses.map((s) => s.status),
    ["not-installed", "version-mismatch", "digest-mismatch"],
  );
  assert.deepEqual(remote, disk.resolveForExecution(declaration));
});

Deno.test("resolveForExecution() reports a pack that was not prefetched as unavailable", () => {
  const catalog = createRemoteCatalog({ baseUrl: "http://127.0.0.1:9" });
  const resolution = catalog.resolveForExecution(DECLARATION);
  const [status] = resolution.statuses;
  assert.equal(status && "code" in status ? status.code : "", "FETCH_FAILED");
  assert.equal(status?.status, "unavailable");
  assert.deepEqual(resolution.modules, {});
});

Deno.test("prefetch() fetches every module of a declared pack once, by pinned URL, and verifies it", async () => {
  const pack = await mathPack();
  await using server = serveFake([pack]);
  const cache = recordingCache();
  const catalog = createRemoteCatalog({ baseUrl: server.url, cache });
  await catalog.prefetch(DECLARATION);

  const fetched = moduleRequests(server).sort();
  const expected = pack.summary.modules.map((m) =>
    `/api/sandbox-modules/${m.id}?digest=${encodeURIComponent(m.digest)}`
  ).sort();
  assert.deepEqual(fetched, expected);
  assert.deepEqual(
    cache.puts.map(([digest]) => digest).sort(),
    pack.summary.modules.map((m) => m.digest).sort(),
  );

  const resolution = catalog.resolveForExecution(DECLARATION);
  assert.deepEqual(resolution.statuses, [{
    name: "@acme/math",
    status: "ok",
    version: "1.0.0",
    graphDigest: pack.summary.graphDigest,
  }]);
  const resolved = resolution.packs["@acme/math"]!;
  assert.deepEqual(Object.keys(resolved.exports).sort(), [".", "./trig"]);
  for (const module of pack.summary.modules) {
    const got = resolution.modules[module.id]!;
    assert.equal(got.source, pack.sources[module.path]);
    assert.equal(got.digest, nodeSri(got.source));
    assert.equal(resolved.files[module.path], module.id);
  }
});

Deno.test("prefetch() fetches a declaration's modules in parallel", async () => {
  const pack = await mathPack();
  await using server = serveFake([pack]);
  const count = pack.summary.modules.length;
  server.holdUntil(count);
  const catalog = createRemoteCatalog({ baseUrl: server.url });
  await catalog.prefetch(DECLARATION);
  assert.equal(server.maxInFlight(), count);
});

/**
 * A fetch that holds every module answer until `open()` is called, so
 * prefetches that start together are all under way before any module
 * arrives. Held answers still end when their signal aborts.
 */
function gatedFetch(): {
  fetch: FetchFunction;
  open(): void;
  /** Listing answers handed to the catalog, module requests held. */
  counts: { listings: number; modules: number };
} {
  let open = () => {};
  const opened = new Promise<void>((resolve) => open = resolve);
  const counts = { listings: 0, modules: 0 };
  return {
    open,
    counts,
    async fetch(input, init) {
      if (!new URL(input).pathname.startsWith("/api/sandbox-modules/")) {
        const response = await fetch(input, init);
        counts.listings++;
        return response;
      }
      counts.modules++;
      const aborted = new Promise<never>((_, reject) => {
        init.signal?.addEventListener(
          "abort",
          () => reject(init.signal!.reason),
          { once: true },
        );
      });
      await Promise.race([opened, aborted]);
      return await fetch(input, init);
    },
  };
}

/** Lets the event loop turn until `ready()` holds, at most 1,000 times. */
async function turnUntil(ready: () => boolean): Promise<void> {
  for (let turn = 0; turn < 1000 && !ready(); turn++) {
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  assert.ok(ready(), "the catalog never got that far");
}

/** Makes the server honest again and checks that the catalog then prefetches and resolves. */
async function assertRecovers(
  server: ReturnType<typeof serveFake>,
  catalog: RemoteCatalog,
): Promise<void> {
  server.tamper("./lib/round.js", "none");
  await catalog.prefetch(DECLARATION);
  assert.equal(
    catalog.resolveForExecution(DECLARATION).statuses[0]?.status,
    "ok",
  );
}

/**
 * Five prefetches of DECLARATION at once, returned once every one has its
 * listing and the gate holds the module requests of the pack's `count`
 * modules, before any module answer arrives.
 */
async function prefetchesAtTheGate(
  catalog: RemoteCatalog,
  gate: ReturnType<typeof gatedFetch>,
  count: number,
): Promise<Promise<void>[]> {
  const prefetches = Array.from(
    { length: 5 },
    () => catalog.prefetch(DECLARATION),
  );
  await turnUntil(() =>
    gate.counts.listings === 5 && gate.counts.modules >= count
  );
  return prefetches;
}

/** A pack named "@acme/wide" whose entry imports `count` helpers. */
async function widePack(count: number): Promise<PackGraph> {
  const helpers = Array.from({ length: count }, (_, i) => `./lib/h${i}.js`);
  const manifest = PackManifestSchema.parse({
    name: "@acme/wide",
    version: "1.0.0",
    cordon: { exports: { ".": "./index.js" }, internal: helpers },
  });
  const files: Record<string, string> = {
    "./index.js": helpers.map((path) => `import "${path}";\n`).join("") +
      "export const wide = true;\n",
  };
  helpers.forEach((path, i) => files[path] = `export const h = ${i};\n`);
  const built = await buildPackGraph(manifest, files);
  assert.ok(built.ok);
  return built.graph;
}

Deno.test("prefetch() keeps at most 32 module requests in flight, however many modules a pack lists", async () => {
  const pack = await widePack(99);
  await using server = serveFake([pack]);
  const gate = gatedFetch();
  const catalog = createRemoteCatalog({
    baseUrl: server.url,
    fetch: gate.fetch,
  });
  const declaration = { source: "", packages: ["@acme/wide"] };
  const prefetching = catalog.prefetch(declaration);
  await turnUntil(() => gate.counts.modules >= 32);
  // The catalog is given time to ask for more than it may.
  for (let turn = 0; turn < 20; turn++) {
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  assert.equal(gate.counts.modules, 32);
  gate.open();
  await prefetching;
  assert.equal(moduleRequests(server).length, 100);
  assert.equal(
    catalog.resolveForExecution(declaration).statuses[0]?.status,
    "ok",
  );
});

Deno.test("prefetch() keeps at most maxConcurrentFetches module requests in flight, and refuses with CATALOG_BUSY the requests past maxQueued waiting for them", async () => {
  const pack = await widePack(19);
  await using server = serveFake([pack]);
  const declaration = { source: "", packages: ["@acme/wide"] };
  const gate = gatedFetch();
  const catalog = createRemoteCatalog({
    baseUrl: server.url,
    fetch: gate.fetch,
    maxConcurrentFetches: 5,
  });
  const prefetching = catalog.prefetch(declaration);
  await turnUntil(() => gate.counts.modules >= 5);
  // The catalog is given time to ask for more than it may.
  for (let turn = 0; turn < 20; turn++) {
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  assert.equal(gate.counts.modules, 5);
  gate.open();
  await prefetching;
  assert.equal(moduleRequests(server).length, 20);

  // 20 modules, 2 in flight: 18 would wait, 10 may.
  const held = gatedFetch();
  const bounded = createRemoteCatalog({
    baseUrl: server.url,
    fetch: held.fetch,
    maxConcurrentFetches: 2,
    maxQueued: 10,
  });
  const refused = rejection(bounded.prefetch(declaration));
  await turnUntil(() => held.counts.modules >= 2);
  // The catalog is given time to ask for every module.
  for (let turn = 0; turn < 20; turn++) {
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  held.open();
  const error = await refused;
  assert.equal(error.code, "CATALOG_BUSY");
  assert.match(
    error.message,
    /as many requests waiting for one of its 2 fetch slots as its maxQueued allows \(10\): retry once requests finish, or raise maxQueued/,
  );
  // The two in flight and the ten that waited were sent; the other eight
  // were refused without waiting.
  assert.equal(held.counts.modules, 12);
});

Deno.test("prefetch() ends at fetchTimeoutMs when a fetch of the caller's ignores its signal, and holds no request slot past it", async () => {
  const pack = await widePack(40);
  await using server = serveFake([pack]);
  let hung = 0;
  const catalog = createRemoteCatalog({
    baseUrl: server.url,
    fetchTimeoutMs: 200,
    // Answers the listing, and never answers a module, whatever its signal.
    fetch: (input, init) => {
      if (!new URL(input).pathname.startsWith("/api/sandbox-modules/")) {
        return fetch(input, init);
      }
      hung++;
      return new Promise<Response>(() => {});
    },
  });
  const error = await settleWithin(
    rejection(catalog.prefetch({ source: "", packages: ["@acme/wide"] })),
    HANG_MS,
    () =>
      assert.fail("the prefetch still waited on fetches past their deadline"),
  );
  assert.equal(error.code, "FETCH_FAILED");
  assert.match(error.message, /fetchTimeoutMs \(200 ms\)/);
  assert.ok(hung >= 32, `${hung} module requests`);
});

Deno.test("prefetch() rejects with ABORTED when its signal aborts while module requests wait for their turn", async () => {
  const pack = await widePack(99);
  await using server = serveFake([pack]);
  const gate = gatedFetch();
  const catalog = createRemoteCatalog({
    baseUrl: server.url,
    fetch: gate.fetch,
  });
  const controller = new AbortController();
  const prefetching = rejection(
    catalog.prefetch({ source: "", packages: ["@acme/wide"] }, {
      signal: controller.signal,
    }),
  );
  await turnUntil(() => gate.counts.modules >= 32);
  controller.abort();
  const error = await prefetching;
  assert.equal(error.code, "ABORTED");
  assert.equal(gate.counts.modules, 32);
});

const REMOTE_CATALOG = new URL("./remote_catalog.ts", import.meta.url).href;

Deno.test("prefetch() aborted while its listing is fetched leaves its process free to exit, where it kept it alive until fetchTimeoutMs", async () => {
  // Deno keeps a timeout signal's timer armed while a signal that follows
  // it holds an abort listener, even one that already ran: with one left,
  // this process would end only at fetchTimeoutMs, ten minutes. The child's
  // own two-minute guard, which keeps nothing alive, tells it has hung.
  const code = await runScript(`
import { createRemoteCatalog } from ${JSON.stringify(REMOTE_CATALOG)};
Deno.unrefTimer(setTimeout(() => {
  console.error("The process still ran two minutes after its prefetch was aborted");
  Deno.exit(1);
}, 120_000));
const controller = new AbortController();
const catalog = createRemoteCatalog({
  baseUrl: "http://127.0.0.1:9",
  fetchTimeoutMs: 600_000,
  // The listing request is under way, and never answers, when the caller aborts.
  fetch: () => {
    queueMicrotask(() => controller.abort());
    return new Promise(() => {});
  },
});
const declaration = { source: "export default 1;", packages: ["greet"] };
const code = await catalog.prefetch(declaration, { signal: controller.signal })
  .then(() => "resolved", (error) => error.code);
console.log(JSON.stringify(code));
`);
  assert.equal(code, "ABORTED");
});

Deno.test("prefetch() fetches each module once when prefetches of the same pack run at once", async () => {
  const pack = await mathPack();
  await using server = serveFake([pack]);
  const gate = gatedFetch();
  const catalog = createRemoteCatalog({
    baseUrl: server.url,
    fetch: gate.fetch,
  });
  const count = pack.summary.modules.length;
  const prefetches = await prefetchesAtTheGate(catalog, gate, count);
  // The catalog is given time to ask for more than one copy of a module.
  for (let turn = 0; turn < 20; turn++) {
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  gate.open();
  await Promise.all(prefetches);
  assert.equal(gate.counts.modules, count);
  assert.equal(moduleRequests(server).length, count);
  assert.equal(
    catalog.resolveForExecution(DECLARATION).statuses[0]?.status,
    "ok",
  );
});

Deno.test("prefetch() shares a failed module fetch with the prefetches that joined it, and a later prefetch fetches it again", async () => {
  const pack = await mathPack();
  await using server = serveFake([pack]);
  server.tamper("./lib/round.js", "wrong-body");
  const gate = gatedFetch();
  const catalog = createRemoteCatalog({
    baseUrl: server.url,
    fetch: gate.fetch,
  });
  const count = pack.summary.modules.length;
  const prefetches = await prefetchesAtTheGate(catalog, gate, count);
  gate.open();
  const errors = await Promise.all(prefetches.map(rejection));
  assert.deepEqual(
    errors.map((error) => error.code),
    Array(5).fill("DIGEST_MISMATCH"),
  );
  for (const error of errors) {
    assert.match(
      error.message,
      /module \.\/lib\/round\.js of pack "@acme\/math"/,
    );
  }
  // One request per module, and one more past the HTTP cache for the
  // tampered one: it was not asked for again by each prefetch that waited
  // for it.
  assert.equal(moduleRequests(server).length, count + 1);

  // The failure is not kept: once the server is honest, it is fetched.
  await assertRecovers(server, catalog);
});

Deno.test("prefetch() whose caller aborts the module fetches others joined leaves them one fetch of each module between them", async () => {
  const pack = await mathPack();
  await using server = serveFake([pack]);
  const gate = gatedFetch();
  // The listing stays fresh, so the later prefetches join the first's
  // module fetches within the turn they start in.
  const catalog = createRemoteCatalog({
    baseUrl: server.url,
    fetch: gate.fetch,
    listingMaxAgeMs: 60_000,
  });
  const count = pack.summary.modules.length;
  const leaver = new AbortController();
  const leaving = catalog.prefetch(DECLARATION, { signal: leaver.signal });
  await turnUntil(() => gate.counts.modules === count);
  const joined = Array.from({ length: 5 }, () => catalog.prefetch(DECLARATION));
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(gate.counts.modules, count);
  leaver.abort();
  assert.equal((await rejection(leaving)).code, "ABORTED");
  await turnUntil(() => gate.counts.modules >= 2 * count);
  gate.open();
  await Promise.all(joined);
  assert.equal(gate.counts.modules, 2 * count);
  assert.equal(
    catalog.resolveForExecution(DECLARATION).statuses[0]?.status,
    "ok",
  );
});

/**
 * A `fetch` in front of `fetch` that, like a browser's HTTP cache that kept
 * one bad answer for a pinned module URL (served immutable), answers
 * `path`'s module with rewritten bytes under its honest headers, and lets
 * only a request sent with `cache: "reload"` reach the server.
 */
function cacheHoldingBadAnswer(
  pack: PackGraph,
  path: string,
): { fetch: typeof fetch; reloads: string[] } {
  const id = pack.summary.modules.find((m) => m.path === path)!.id;
  const reloads: string[] = [];
  return {
    reloads,
    async fetch(input, init) {
      const url = String(input);
      if (init?.cache === "reload") reloads.push(url);
      const response = await fetch(input, init);
      if (!url.includes(`/${id}?digest=`) || init?.cache === "reload") {
        return response;
      }
      await response.body?.cancel();
      return new Response("export const round = () => 666;\n", {
        headers: response.headers,
      });
    },
  };
}

Deno.test("prefetch() fetches a module whose bytes fail their digest once more past the HTTP cache, so a cache that kept a bad answer does not fail every later run", async () => {
  const pack = await mathPack();
  await using server = serveFake([pack]);
  const cached = cacheHoldingBadAnswer(pack, "./lib/round.js");
  const catalog = createRemoteCatalog({
    baseUrl: server.url,
    fetch: cached.fetch,
  });
  await catalog.prefetch(DECLARATION);
  assert.equal(
    catalog.resolveForExecution(DECLARATION).statuses[0]?.status,
    "ok",
  );
  const round = pack.summary.modules.find((m) => m.path === "./lib/round.js")!;
  assert.deepEqual(
    cached.reloads.map((url) => new URL(url).pathname),
    [`/api/sandbox-modules/${round.id}`],
  );
});

Deno.test("prefetch() refuses with DIGEST_MISMATCH a module whose bytes fail their digest again when fetched past the HTTP cache", async () => {
  const pack = await mathPack();
  await using server = serveFake([pack]);
  server.tamper("./lib/round.js", "wrong-body");
  const reloads: string[] = [];
  const catalog = createRemoteCatalog({
    baseUrl: server.url,
    fetch: (input, init) => {
      if (init?.cache === "reload") reloads.push(String(input));
      return fetch(input, init);
    },
  });
  const error = await rejection(catalog.prefetch(DECLARATION));
  assert.equal(error.code, "DIGEST_MISMATCH");
  assert.match(
    error.message,
    /module \.\/lib\/round\.js of pack "@acme\/math"/,
  );
  assert.equal(reloads.length, 1);
});

Deno.test("prefetch() refuses a module sent gzip-compressed without Content-Encoding with DIGEST_MISMATCH that names the compression, not a server to distrust", async () => {
  const pack = await mathPack();
  await using server = serveFake([pack]);
  const catalog = createRemoteCatalog({
    baseUrl: server.url,
    // A proxy that compresses answers and forgets to say so.
    async fetch(input, init) {
      const response = await fetch(input, init);
      if (!String(input).includes("?digest=")) return response;
      const body = response.body!.pipeThrough(new CompressionStream("gzip"));
      return new Response(body, { headers: response.headers });
    },
  });
  const error = await rejection(catalog.prefetch(DECLARATION));
  assert.equal(error.code, "DIGEST_MISMATCH");
  assert.match(
    error.message,
    /^Refusing module \.\/\S+ of pack "@acme\/math": its bytes hash to sha256-\S+ but the catalog listing gives sha256-\S+, and they are gzip data \(they begin 1f 8b\) the host sent without Content-Encoding: gzip, so nothing inflated them; serve the file uncompressed, or with that header \(a file compressed ahead of time needs it\); the module was not cached or run$/,
  );
});

Deno.test("prefetch() fetches again a module whose shared fetch asked for another version of its pack, which the server no longer has", async () => {
  const v1 = await mathPack("1.0.0");
  const v2 = await mathPack("1.0.1");
  // The same bytes under other ids: an upgrade that changed no file.
  assert.deepEqual(
    v2.summary.modules.map((m) => m.digest),
    v1.summary.modules.map((m) => m.digest),
  );
  assert.notDeepEqual(
    v2.summary.modules.map((m) => m.id),
    v1.summary.modules.map((m) => m.id),
  );
  await using server = serveFake([v1]);
  const gate = gatedFetch();
  const catalog = createRemoteCatalog({
    baseUrl: server.url,
    fetch: gate.fetch,
  });
  const count = v1.summary.modules.length;
  const first = catalog.prefetch(DECLARATION);
  await turnUntil(() =>
    gate.counts.listings === 1 && gate.counts.modules >= count
  );
  server.setPacks([v2]);
  const second = catalog.prefetch(DECLARATION);
  await turnUntil(() => gate.counts.listings === 2);
  // The catalog is given time to join the second prefetch to the first's
  // module fetches, which ask for ids the server has dropped since.
  for (let turn = 0; turn < 20; turn++) {
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  gate.open();
  await Promise.allSettled([first]);
  await second;
  const status = catalog.resolveForExecution(DECLARATION).statuses[0];
  assert.equal(status?.status, "ok");
  assert.equal(status.status === "ok" && status.version, "1.0.1");
});

/** A second pack, `@acme/text`, whose one module says its version. */
async function textPack(version: string): Promise<PackGraph> {
  const manifest = PackManifestSchema.parse({
    name: "@acme/text",
    version,
    cordon: { exports: { ".": "./index.js" } },
  });
  const built = await buildPackGraph(manifest, {
    "./index.js": `export const version = ${JSON.stringify(version)};\n`,
  });
  assert.ok(built.ok);
  return built.graph;
}

Deno.test("prefetch() resolves a run's packs from one listing, where a concurrent prefetch's newer listing of one of them mixed an old pack with a new one", async () => {
  const both = {
    source:
      'import { add } from "@acme/math"; import { version } from "@acme/text"; export default [add(1, 2), version];',
    packages: ["@acme/math", "@acme/text"],
  };
  const textOnly = {
    source: 'import { version } from "@acme/text"; export default version;',
    packages: ["@acme/text"],
  };
  const release1 = [await mathPack("1.0.0"), await textPack("1.0.0")];
  const release2 = [
    await mathPack("2.0.0", "Math.floor"),
    await textPack("2.0.0"),
  ];
  await using server = serveFake(release1, { selects: true });
  // Module answers come from the server at once and reach the catalog
  // only once the gate opens: the first run fetched release 1's bytes.
  let open = () => {};
  const opened = new Promise<void>((resolve) => open = resolve);
  const counts = { listings: 0, modules: 0 };
  const catalog = createRemoteCatalog({
    baseUrl: server.url,
    async fetch(input, init) {
      const response = await fetch(input, init);
      if (!new URL(input).pathname.startsWith("/api/sandbox-modules/")) {
        counts.listings++;
        return response;
      }
      counts.modules++;
      await opened;
      return response;
    },
  });
  const first = catalog.prefetch(both);
  await turnUntil(() =>
    counts.listings === 1 && counts.modules === release1.length + 2
  );
  // Both packs are upgraded together while the first run fetches modules.
  server.setPacks(release2);
  const second = catalog.prefetch(textOnly);
  await turnUntil(() => counts.listings === 2);
  open();
  await Promise.all([first, second]);
  const versions = catalog.resolveForExecution(both).statuses.map((status) =>
    status.status === "ok" ? status.version : status.code
  );
  assert.equal(versions.length, 2);
  assert.equal(
    versions[0],
    versions[1],
    `the run resolves packs no listing held together: ${versions.join(", ")}`,
  );
  assert.equal(versions[0], "2.0.0");
});

Deno.test("prefetch() lists a run's packs again together when listingMaxAgeMs kept each fresh from listings of different releases", async () => {
  const release1 = [await mathPack("1.0.0"), await textPack("1.0.0")];
  const release2 = [
    await mathPack("2.0.0", "Math.floor"),
    await textPack("2.0.0"),
  ];
  await using server = serveFake(release1, { selects: true });
  const catalog = createRemoteCatalog({
    baseUrl: server.url,
    listingMaxAgeMs: 3_600_000,
  });
  const math = { source: "", packages: ["@acme/math"] };
  const text = { source: "", packages: ["@acme/text"] };
  const both = { source: "", packages: ["@acme/math", "@acme/text"] };
  await catalog.prefetch(math);
  server.setPacks(release2);
  await catalog.prefetch(text);
  await catalog.prefetch(both);
  const versions = catalog.resolveForExecution(both).statuses.map((status) =>
    status.status === "ok" ? status.version : status.code
  );
  assert.deepEqual(versions, ["2.0.0", "2.0.0"]);
  // Listed together once, the two stay fresh together: no request more.
  const before = server.requests.length;
  await catalog.prefetch(both);
  assert.equal(server.requests.length, before);
});

Deno.test("prefetch() fetches again a module whose shared fetch another prefetch's caller aborted", async () => {
  const pack = await mathPack();
  await using server = serveFake([pack]);
  const gate = gatedFetch();
  const catalog = createRemoteCatalog({
    baseUrl: server.url,
    fetch: gate.fetch,
  });
  const count = pack.summary.modules.length;
  const controller = new AbortController();
  const first = catalog.prefetch(DECLARATION, { signal: controller.signal });
  const second = catalog.prefetch(DECLARATION);
  await turnUntil(() =>
    gate.counts.listings === 2 && gate.counts.modules >= count
  );
  controller.abort();
  assert.equal((await rejection(first)).code, "ABORTED");
  gate.open();
  await second;
  assert.equal(
    catalog.resolveForExecution(DECLARATION).statuses[0]?.status,
    "ok",
  );
});

Deno.test("prefetch() revalidates the listing with If-None-Match and reuses it on 304", async () => {
  const pack = await mathPack();
  await using server = serveFake([pack]);
  const catalog = createRemoteCatalog({ baseUrl: server.url });
  await catalog.prefetch(DECLARATION);
  const before = server.requests.length;
  await catalog.prefetch(DECLARATION);
  const again = server.requests.slice(before);
  assert.equal(again.length, 1, "only the listing is asked for");
  assert.equal(again[0]!.path, "/api/sandbox-modules?packs=%40acme%2Fmath");
  assert.match(again[0]!.ifNoneMatch ?? "", /^"sha256-/);
  assert.equal(
    catalog.resolveForExecution(DECLARATION).statuses[0]?.status,
    "ok",
  );
});

Deno.test("createRemoteCatalog() and createStagedCatalog() read listingMaxAgeMs and indexMaxAgeMs by the integer rule every bound follows", () => {
  const makers: [string, (maxAgeMs: unknown) => unknown][] = [
    [
      "listingMaxAgeMs",
      (maxAgeMs) =>
        createRemoteCatalog({
          baseUrl: "http://x",
          listingMaxAgeMs: maxAgeMs as number,
        }),
    ],
    [
      "indexMaxAgeMs",
      (maxAgeMs) =>
        createStagedCatalog({
          indexUrl: "https://h/index.json",
          indexMaxAgeMs: maxAgeMs as number,
        }),
    ],
  ];
  for (const [name, make] of makers) {
    for (const wrongType of [null, "5", true]) {
      assert.throws(
        () => make(wrongType),
        (error: Error) =>
          error instanceof TypeError &&
          error.message.endsWith(`${name} must be a number of milliseconds`),
        `${name}: ${JSON.stringify(wrongType)}`,
      );
    }
    for (const outOfRange of [-1, 1.5, Infinity, NaN]) {
      assert.throws(
        () => make(outOfRange),
        (error: Error) =>
          error instanceof RangeError &&
          error.message.includes(`${name} must be an integer from 0 to `),
        `${name}: ${outOfRange}`,
      );
    }
    make(0);
    make(3_600_000);
  }
});

Deno.test("prefetch() does not revalidate a listing younger than listingMaxAgeMs", async () => {
  const pack = await mathPack();
  await using server = serveFake([pack]);
  const catalog = createRemoteCatalog({
    baseUrl: server.url,
    listingMaxAgeMs: 3_600_000,
  });
  await catalog.prefetch(DECLARATION);
  const before = server.requests.length;
  await catalog.prefetch(DECLARATION);
  assert.equal(server.requests.length, before);
});

Deno.test("prefetch() caches by digest: a shared cache spares refetching, an upgrade is a miss", async () => {
  const v1 = await mathPack("1.0.0");
  await using server = serveFake([v1]);
  const cache = recordingCache();
  await createRemoteCatalog({ baseUrl: server.url, cache }).prefetch(
    DECLARATION,
  );
  assert.equal(moduleRequests(server).length, v1.summary.modules.length);

  // A second catalog with the same cache, which may speak for another
  // requester, has the server grant each module, and gets no body back.
  const second = createRemoteCatalog({ baseUrl: server.url, cache });
  const asked = server.requests.length;
  const puts = cache.puts.length;
  await second.prefetch(DECLARATION);
  const granted = server.requests.slice(asked).filter((request) =>
    request.path.startsWith("/api/sandbox-modules/")
  );
  assert.equal(granted.length, v1.summary.modules.length);
  assert.ok(granted.every((request) => request.ifNoneMatch === "*"));
  assert.equal(cache.puts.length, puts);
  assert.equal(
    second.resolveForExecution(DECLARATION).statuses[0]?.status,
    "ok",
  );

  // The upgrade changes one file's bytes: only new digests are fetched.
  const v2 = await mathPack("1.0.0", "Math.floor");
  server.setPacks([v2]);
  const changed = v2.summary.modules.filter((m) =>
    !v1.summary.modules.some((old) => old.digest === m.digest)
  );
  assert.deepEqual(changed.map((m) => m.path), ["./lib/round.js"]);
  const mark = moduleRequests(server).length;
  await second.prefetch(DECLARATION);
  const fetched = moduleRequests(server).slice(mark);
  assert.deepEqual(
    fetched.map((path) => path.split("?")[0]!.split("/").pop()).sort(),
    changed.map((m) => m.id).sort(),
  );
  const resolution = second.resolveForExecution(DECLARATION);
  const round = Object.values(resolution.modules).find((m) =>
    m.path === "./lib/round.js"
  );
  assert.equal(round?.source, "export const round = Math.floor;\n");
  assert.equal(resolution.statuses[0]?.status, "ok");
  assert.equal(
    resolution.statuses[0]?.status === "ok" &&
      resolution.statuses[0].graphDigest,
    v2.summary.graphDigest,
  );
});

for (
  const [how, code, detail] of [
    ["wrong-body", "DIGEST_MISMATCH", /its bytes hash to sha256-/],
    ["wrong-header", "DIGEST_MISMATCH", /Repr-Digest header announces/],
    ["missing-header", "DIGEST_MISMATCH", /no Repr-Digest header/],
    ["malformed-header", "DIGEST_MISMATCH", /no valid sha-256 member/],
    ["status-500", "FETCH_FAILED", /the server answered 500/],
    ["status-403", "FETCH_FAILED", /answered 403 DELIVERY_FORBIDDEN/],
  ] as const
) {
  Deno.test(`prefetch() rejects a ${how} answer with ${code}, names the pack and caches nothing of it`, async () => {
    const pack = await mathPack();
    await using server = serveFake([pack]);
    server.tamper("./lib/round.js", how);
    const cache = recordingCache();
    const catalog = createRemoteCatalog({ baseUrl: server.url, cache });
    const error = await rejection(catalog.prefetch(DECLARATION));
    assert.equal(error.code, code);
    assert.match(
      error.message,
      /module \.\/lib\/round\.js of pack "@acme\/math"/,
    );
    assert.match(error.message, detail);

    const round = pack.summary.modules.find((m) =>
      m.path === "./lib/round.js"
    )!;
    assert.ok(cache.puts.every(([digest]) => digest !== round.digest));
    assert.ok(cache.puts.every(([, source]) => !source.includes("666")));
    // Nothing of the pack can run: it does not resolve.
    const resolution = catalog.resolveForExecution(DECLARATION);
    assert.equal(resolution.statuses[0]?.status, "unavailable");
    assert.deepEqual(resolution.modules, {});

    // Once the server is honest again, the same catalog recovers.
    await assertRecovers(server, catalog);
  });
}

Deno.test("prefetch() refuses an HTML page sent with 200 and no Repr-Digest in place of a module with DIGEST_MISMATCH that names the page, not a server to distrust", async () => {
  const pack = await mathPack();
  await using server = serveFake([pack]);
  server.tamper("./lib/round.js", "html-page");
  const cache = recordingCache();
  const catalog = createRemoteCatalog({ baseUrl: server.url, cache });
  const error = await rejection(catalog.prefetch(DECLARATION));
  assert.equal(error.code, "DIGEST_MISMATCH");
  assert.match(
    error.message,
    /^Refusing module \.\/lib\/round\.js of pack "@acme\/math": the response has no Repr-Digest header, and the body is an HTML page \(it begins <\), such as a host answers .*; the module was not cached or run$/,
  );
  assert.ok(!error.message.includes("do not trust"));
  assert.ok(cache.puts.every(([, source]) => !source.includes("Sign in")));
  await assertRecovers(server, catalog);
});

Deno.test("prefetch() rejects with FETCH_FAILED naming the pack when the server refuses connections", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  const catalog = createRemoteCatalog({ baseUrl: `http://127.0.0.1:${port}` });
  const error = await rejection(catalog.prefetch(DECLARATION));
  assert.equal(error.code, "FETCH_FAILED");
  assert.match(error.message, /catalog listing for pack "@acme\/math"/);
  assert.match(error.message, /check the server URL/);
});

Deno.test("prefetch() refuses a listing whose graph digests do not add up, before fetching modules", async () => {
  const pack = await mathPack();
  const forged: PackSummary = {
    ...pack.summary,
    // Claims the helper is not a dependency, to hide it from a pin.
    modules: pack.summary.modules.map((m) => ({ ...m, dependencyIds: [] })),
  };
  await using server = serveFake([{ ...pack, summary: forged }]);
  const catalog = createRemoteCatalog({ baseUrl: server.url });
  const error = await rejection(catalog.prefetch(DECLARATION));
  assert.equal(error.code, "DIGEST_MISMATCH");
  assert.match(error.message, /Refusing pack "@acme\/math"/);
  assert.deepEqual(moduleRequests(server), []);
});

Deno.test("prefetch() refuses a listing whose modules chain through more links than a catalog follows, at once and before fetching modules", async () => {
  const pack = await mathPack();
  // 1,500 chained modules: 1.1 million links to walk for their closures,
  // in a listing of 0.3 MB.
  const digest = pack.summary.modules[0]!.digest;
  const modules = Array.from({ length: 1500 }, (_, i) => ({
    id: `m${i}`,
    path: `./m${i}.js`,
    exportedAs: i === 0 ? ["."] : [],
    digest,
    graphDigest: digest,
    dependencyIds: i + 1 < 1500 ? [`m${i + 1}`] : [],
  }));
  await using server = serveFake([
    { ...pack, summary: { ...pack.summary, modules } },
  ]);
  const catalog = createRemoteCatalog({ baseUrl: server.url });
  const error = await rejection(catalog.prefetch(DECLARATION));
  assert.equal(error.code, "PACK_GRAPH_TOO_LARGE");
  assert.match(error.message, /^Refusing pack "@acme\/math": its modules/);
  assert.deepEqual(moduleRequests(server), []);
});

Deno.test("prefetch() refuses a listing that names a pack twice with FETCH_FAILED", async () => {
  const pack = await mathPack();
  const again = { ...pack, summary: { ...pack.summary, version: "6.6.6" } };
  await using server = serveFake([pack, again]);
  const error = await rejection(
    createRemoteCatalog({ baseUrl: server.url }).prefetch(DECLARATION),
  );
  assert.equal(error.code, "FETCH_FAILED");
  assert.match(error.message, /names pack "@acme\/math" twice/);
});

Deno.test("prefetch() refuses a listing whose pack version is no semver, as a pack manifest's would be, where any text was listed and handed to apps", async () => {
  const pack = await mathPack();
  for (
    const version of ["1.0.0\nINFO forged", "1.0.0\u0000", "9".repeat(100_000)]
  ) {
    const bad = { ...pack, summary: { ...pack.summary, version } };
    await using server = serveFake([bad]);
    const error = await rejection(
      createRemoteCatalog({ baseUrl: server.url }).prefetch(DECLARATION),
    );
    assert.equal(error.code, "FETCH_FAILED");
    assert.match(error.message, /does not match the catalog listing schema/);
  }
});

Deno.test("prefetch() refuses a listing of 300,000 wrong entries with FETCH_FAILED, as any listing that breaks its schema", async () => {
  const listing = JSON.stringify({ packs: new Array(300_000).fill(1) });
  const catalog = createRemoteCatalog({
    baseUrl: "http://catalog.invalid",
    fetch: () =>
      Promise.resolve(
        new Response(listing, {
          headers: { "content-type": "application/json" },
        }),
      ),
  });
  const error = await rejection(catalog.prefetch(DECLARATION));
  assert.equal(error.code, "FETCH_FAILED");
  assert.match(error.message, /does not match the catalog listing schema/);
});

Deno.test("prefetch() refuses a listing of 100,000 empty entries at its first wrong entry, where it gathered an issue for every missing field of every entry", async () => {
  // A server's 3 MB of `{}` cost 14 s and 1.2 GB of issues before the
  // refusal; 16 MiB of them more than a host has.
  const listing = `{"packs":[${new Array(100_000).fill("{}").join(",")}]}`;
  await using server = serveRaw((exchange) =>
    send(exchange, { "content-type": "application/json" }, listing)
  );
  const catalog = createRemoteCatalog({ baseUrl: server.url });
  const error = await unlessHung(rejection(catalog.prefetch(DECLARATION)));
  assert.equal(error.code, "FETCH_FAILED");
  assert.match(error.message, /does not match the catalog listing schema/);
  const { issues } = error.cause as { issues: { path: PropertyKey[] }[] };
  assert.equal(issues.length, 1);
  assert.deepEqual(issues[0]!.path.slice(0, 2), ["packs", 0]);
});

Deno.test("prefetch() refuses with FETCH_FAILED a fetch option that answers with no Response, saying what the option must answer", async () => {
  for (
    const [answer, kind] of [[undefined, "undefined"], [null, "null"], [{
      status: 200,
    }, "object"], ["{}", "string"]] as const
  ) {
    const catalog = createRemoteCatalog({
      baseUrl: "http://catalog.invalid",
      fetch: () => Promise.resolve(answer as unknown as Response),
    });
    const error = await rejection(catalog.prefetch(DECLARATION));
    assert.equal(error.code, "FETCH_FAILED");
    assert.match(
      error.message,
      new RegExp(
        `the fetch option answered with ${kind}, not a Response; pass a function that answers as fetch does$`,
      ),
    );
  }
});

Deno.test("prefetch() rejects with FETCH_FAILED when the fetch option throws or rejects with a value that cannot be read as text", async () => {
  const refuse = () => {
    throw new Error("unreadable");
  };
  const unreadableValue = unreadable();
  const noText = { toString: refuse };
  const fetches: Record<string, () => Promise<Response>> = {
    "throws a proxy": () => {
      throw unreadableValue;
    },
    "rejects with a proxy": () => Promise.reject(unreadableValue),
    "throws a value whose toString throws": () => {
      throw noText;
    },
  };
  for (const [name, fetch] of Object.entries(fetches)) {
    const catalog = createRemoteCatalog({
      baseUrl: "http://catalog.invalid",
      fetch,
    });
    const error = await rejection(catalog.prefetch(DECLARATION));
    assert.equal(error.code, "FETCH_FAILED", name);
    assert.match(
      error.message,
      /: a value that cannot be read as text; /,
      name,
    );
  }
});

Deno.test("prefetch() ignores a cached source that does not match its digest", async () => {
  const pack = await mathPack();
  await using server = serveFake([pack]);
  const poisoned: ModuleCache = {
    get: () => "export const round = () => 666;\n",
    put() {},
  };
  const catalog = createRemoteCatalog({ baseUrl: server.url, cache: poisoned });
  await catalog.prefetch(DECLARATION);
  assert.equal(moduleRequests(server).length, pack.summary.modules.length);
  const sources = Object.values(
    catalog.resolveForExecution(DECLARATION).modules,
  ).map((m) => m.source);
  assert.ok(sources.every((source) => !source.includes("666")));
});

Deno.test("prefetch() rejects with ABORTED when its signal aborts", async () => {
  const pack = await mathPack();
  await using server = serveFake([pack]);
  const catalog = createRemoteCatalog({ baseUrl: server.url });
  const controller = new AbortController();
  controller.abort();
  const error = await rejection(
    catalog.prefetch(DECLARATION, { signal: controller.signal }),
  );
  assert.equal(error.code, "ABORTED");
});

Deno.test("prefetch() rejects with ABORTED and caches nothing when aborted while modules are fetched", async () => {
  const pack = await mathPack();
  await using server = serveFake([pack]);
  const controller = new AbortController();
  const cache = recordingCache();
  const catalog = createRemoteCatalog({
    baseUrl: server.url,
    cache,
    fetch(input, init) {
      if (input.includes("?digest=")) controller.abort();
      return fetch(input, init);
    },
  });
  const error = await rejection(
    catalog.prefetch(DECLARATION, { signal: controller.signal }),
  );
  assert.equal(error.code, "ABORTED");
  assert.deepEqual(cache.puts, []);
  assert.equal(
    catalog.resolveForExecution(DECLARATION).statuses[0]?.status,
    "unavailable",
  );
});

/** A cache whose get or put never settles, as a blocked IndexedDB may. */
function hungCache(hung: "get" | "put"): ModuleCache {
  const never = () => new Promise<never>(() => {});
  const inner = createMemoryModuleCache();
  return hung === "get"
    ? { get: never, put: (digest, source) => inner.put(digest, source) }
    : { get: (digest) => inner.get(digest), put: never };
}

for (const hung of ["get", "put"] as const) {
  Deno.test(`prefetch() rejects with ABORTED when its signal aborts while the cache's ${hung} never settles`, async () => {
    const pack = await mathPack();
    await using server = serveFake([pack]);
    const catalog = createRemoteCatalog({
      baseUrl: server.url,
      cache: hungCache(hung),
    });
    const error = await settleWithin(
      rejection(
        catalog.prefetch(DECLARATION, { signal: AbortSignal.timeout(100) }),
      ),
      HANG_MS,
      () =>
        assert.fail("prefetch() was still waiting after its signal aborted"),
    );
    assert.equal(error.code, "ABORTED");
  });
}

for (const hung of ["get", "put"] as const) {
  Deno.test(`authorizeDelivery() answers within fetchTimeoutMs while the cache's ${hung} never settles`, async () => {
    const pack = await mathPack();
    await using server = serveFake([pack]);
    const catalog = createRemoteCatalog({
      baseUrl: server.url,
      cache: hungCache(hung),
      fetchTimeoutMs: 300,
    });
    const module = pack.summary.modules.find((m) => m.path === "./index.js")!;
    const answer = await settleWithin(
      catalog.authorizeDelivery(module.id),
      HANG_MS,
      () => assert.fail("authorizeDelivery() was still waiting on the cache"),
    );
    assert.ok(answer.ok, !answer.ok ? answer.message : "");
    assert.equal(answer.content, pack.sources["./index.js"]);
  });
}

Deno.test("createMemoryModuleCache() keeps sources within maxBytes, two bytes a code unit, least recently used out first", () => {
  const cache = createMemoryModuleCache({ maxBytes: 100 });
  cache.put("sha256-a", "a".repeat(20));
  cache.put("sha256-b", "b".repeat(20));
  assert.equal(cache.get("sha256-a"), "a".repeat(20));
  // 3 × 40 bytes do not fit in 100: the least recently used, b, goes.
  cache.put("sha256-c", "c".repeat(20));
  assert.equal(cache.get("sha256-b"), undefined);
  assert.equal(cache.get("sha256-a"), "a".repeat(20));
  assert.equal(cache.get("sha256-c"), "c".repeat(20));
  cache.put("sha256-d", "d".repeat(51));
  assert.equal(cache.get("sha256-d"), undefined);
  assert.throws(() => createMemoryModuleCache({ maxBytes: 0 }), {
    name: "RangeError",
  });
});

Deno.test("createMemoryModuleCache() holds 64 MiB by default, where it held 1,024 sources of any size", () => {
  const cache = createMemoryModuleCache();
  const big = "x".repeat(8 * 1024 * 1024);
  for (let i = 0; i < 5; i++) cache.put(`sha256-${i}`, big);
  // Five sources of 16 MiB each: four fit, the first went.
  assert.equal(cache.get("sha256-0"), undefined);
  assert.equal(cache.get("sha256-1"), big);
  assert.equal(cache.get("sha256-4"), big);
});

Deno.test("authorizeDelivery() returns a verified module and revalidates it with If-None-Match", async () => {
  const pack = await mathPack();
  await using server = serveFake([pack]);
  const catalog = createRemoteCatalog({ baseUrl: server.url });
  const module = pack.summary.modules.find((m) => m.path === "./index.js")!;
  const first = await catalog.authorizeDelivery(module.id);
  assert.ok(first.ok);
  assert.equal(first.content, pack.sources["./index.js"]);
  assert.equal(first.digest, module.digest);
  assert.deepEqual(first.pack, { name: "@acme/math", version: "1.0.0" });
  assert.equal(first.path, "./index.js");

  const mark = server.requests.length;
  const second = await catalog.authorizeDelivery(module.id);
  assert.deepEqual(second, first);
  const revalidation = server.requests.slice(mark).find((r) =>
    r.path === `/api/sandbox-modules/${module.id}`
  );
  assert.equal(revalidation?.ifNoneMatch, `"${module.digest}"`);
});

Deno.test("authorizeDelivery() refuses unknown ids, server refusals and tampered bytes", async () => {
  const pack = await mathPack();
  await using server = serveFake([pack]);
  const catalog = createRemoteCatalog({ baseUrl: server.url });
  const round = pack.summary.modules.find((m) => m.path === "./lib/round.js")!;

  const unknown = await catalog.authorizeDelivery("AAAAAAAAAAAAAAAAAAAAAA");
  assert.equal(!unknown.ok && unknown.code, "MODULE_NOT_FOUND");
  const malformed = await catalog.authorizeDelivery("../etc/passwd");
  assert.equal(!malformed.ok && malformed.code, "MODULE_ID_INVALID");

  server.tamper("./lib/round.js", "status-403");
  const forbidden = await catalog.authorizeDelivery(round.id);
  assert.equal(!forbidden.ok && forbidden.reason, "forbidden");
  assert.equal(!forbidden.ok && forbidden.code, "DELIVERY_FORBIDDEN");

  server.tamper("./lib/round.js", "wrong-body");
  const tampered = await catalog.authorizeDelivery(round.id);
  assert.equal(!tampered.ok && tampered.code, "DIGEST_MISMATCH");
  assert.match(!tampered.ok ? tampered.message : "", /pack "@acme\/math"/);
});

Deno.test("authorizeDelivery() keeps a server's problem code only when it fits the refusal, and answers FETCH_FAILED otherwise", async () => {
  const pack = await mathPack();
  const round = pack.summary.modules.find((m) => m.path === "./lib/round.js")!;
  let answer: Response = new Response(null);
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) =>
      new URL(request.url).pathname === "/api/sandbox-modules"
        ? new Response(listingBody([pack]))
        : answer.clone(),
  );
  await using _ = { [Symbol.asyncDispose]: () => server.shutdown() };
  const catalog = createRemoteCatalog({
    baseUrl: `http://127.0.0.1:${server.addr.port}`,
  });
  const problem = (status: number, code: string) =>
    Response.json({ code, detail: "No" }, {
      status,
      headers: { "content-type": "application/problem+json" },
    });
  for (
    const [status, code, reason, expected] of [
      [404, "SANDBOX_CRASHED", "not-found", "FETCH_FAILED"],
      [500, "TIMEOUT", "unavailable", "FETCH_FAILED"],
      [403, "DIGEST_MISMATCH", "forbidden", "FETCH_FAILED"],
      [404, "DELIVERY_FORBIDDEN", "not-found", "FETCH_FAILED"],
      [404, "MODULE_NOT_FOUND", "not-found", "MODULE_NOT_FOUND"],
      [403, "DELIVERY_FORBIDDEN", "forbidden", "DELIVERY_FORBIDDEN"],
      [503, "PACK_FILE_CHANGED", "unavailable", "PACK_FILE_CHANGED"],
    ] as const
  ) {
    answer = problem(status, code);
    const refused = await catalog.authorizeDelivery(round.id);
    assert.ok(!refused.ok);
    assert.deepEqual(
      [refused.reason, refused.code],
      [reason, expected],
      `${status} ${code}`,
    );
  }
  // A pack that changed while the server read it is the server's moment,
  // not a wrong URL: the message says to run again.
  for (const code of ["PACK_FILE_CHANGED", "DELIVERY_UNAVAILABLE"]) {
    answer = problem(503, code);
    const refused = await catalog.authorizeDelivery(round.id);
    assert.ok(!refused.ok);
    assert.match(refused.message, /at that moment.*run again/, code);
    assert.doesNotMatch(refused.message, /check the server URL/, code);
  }
});

/**
 * A server that answers honestly but for the first request `stalls`
 * matches, which it never answers: `asked` resolves when that request
 * arrives, `closed` when its client hangs up.
 */
function serveStalling(pack: PackGraph, stalls: (path: string) => boolean): {
  server: RawServer;
  asked: Promise<void>;
  closed: Promise<void>;
  paths: string[];
} {
  const asked = Promise.withResolvers<void>();
  const closed = Promise.withResolvers<void>();
  const paths: string[] = [];
  let stalled = false;
  const server = serveRaw(async (exchange) => {
    paths.push(exchange.path);
    if (stalled || !stalls(exchange.path)) {
      return answerHonestly(exchange, pack);
    }
    stalled = true;
    asked.resolve();
    await neverAnswer(exchange);
    closed.resolve();
  });
  return { server, asked: asked.promise, closed: closed.promise, paths };
}

/**
 * Asks `catalog` for `moduleId` with a signal, aborts it once the stalling
 * server was asked, waits until the server saw the connection closed (the
 * fetch was abandoned, not only its answer), and returns the answer.
 */
async function abortOnceAsked(
  catalog: RemoteCatalog,
  moduleId: string,
  server: { asked: Promise<void>; closed: Promise<void> },
): ReturnType<RemoteCatalog["authorizeDelivery"]> {
  const caller = new AbortController();
  const answer = catalog.authorizeDelivery(moduleId, undefined, {
    signal: caller.signal,
  });
  await unlessHung(server.asked);
  caller.abort();
  await unlessHung(server.closed);
  return await answer;
}

Deno.test("authorizeDelivery() abandons its module fetch when its signal aborts, answers ABORTED, caches nothing, and delivers the module on the next call", async () => {
  const pack = await mathPack();
  const round = pack.summary.modules.find((m) => m.path === "./lib/round.js")!;
  const { server, asked, closed } = serveStalling(
    pack,
    (path) => path.endsWith(round.id),
  );
  await using _ = server;
  const cache = recordingCache();
  const catalog = createRemoteCatalog({ baseUrl: server.url, cache });
  const refused = await abortOnceAsked(catalog, round.id, { asked, closed });
  assert.ok(!refused.ok);
  assert.deepEqual([refused.reason, refused.code], ["unavailable", "ABORTED"]);
  assert.deepEqual(cache.puts, []);

  const delivered = await catalog.authorizeDelivery(round.id);
  assert.ok(delivered.ok);
  assert.equal(delivered.content, pack.sources[round.path]);
});

Deno.test("authorizeDelivery() abandons its listing fetch when its signal aborts, and answers ABORTED at once, fetching nothing, for a signal already aborted", async () => {
  const pack = await mathPack();
  const round = pack.summary.modules.find((m) => m.path === "./lib/round.js")!;
  const { server, asked, closed, paths } = serveStalling(
    pack,
    (path) =>
      path.startsWith("/api/sandbox-modules?") ||
      path === "/api/sandbox-modules",
  );
  await using _ = server;
  const catalog = createRemoteCatalog({ baseUrl: server.url });
  const refused = await abortOnceAsked(catalog, round.id, { asked, closed });
  assert.equal(!refused.ok && refused.code, "ABORTED");

  const asks = paths.length;
  const early = await catalog.authorizeDelivery(round.id, undefined, {
    signal: AbortSignal.abort(),
  });
  assert.equal(!early.ok && early.code, "ABORTED");
  assert.equal(paths.length, asks);

  const delivered = await catalog.authorizeDelivery(round.id);
  assert.ok(delivered.ok);
  assert.equal(delivered.content, pack.sources[round.path]);
});

Deno.test("createRemoteCatalog() rejects bad options", () => {
  assert.throws(() => createRemoteCatalog({ baseUrl: "not a url" }), TypeError);
  assert.throws(
    () => createRemoteCatalog({ baseUrl: "file:///tmp/packs" }),
    TypeError,
  );
  assert.throws(
    () => createRemoteCatalog({ baseUrl: "http://x/?q=1" }),
    TypeError,
  );
  assert.throws(
    () => createRemoteCatalog({ baseUrl: "http://x", prefix: "api/" }),
    TypeError,
  );
  assert.throws(
    () => createRemoteCatalog({ baseUrl: "http://x", listingMaxAgeMs: -1 }),
    RangeError,
  );
  assert.throws(
    () =>
      createRemoteCatalog({
        baseUrl: "http://x",
        cache: {} as unknown as ModuleCache,
      }),
    TypeError,
  );
  for (
    const bad of [
      { fetchTimeoutMs: 0 },
      { fetchTimeoutMs: 2_147_483_648 },
      { maxListingBytes: -1 },
      { maxModuleBytes: 1.5 },
      { maxHeldPacks: 0 },
    ]
  ) {
    assert.throws(
      () => createRemoteCatalog({ baseUrl: "http://x", ...bad }),
      RangeError,
    );
  }
  for (
    const [bad, message] of [
      [
        { maxConcurrentFetches: 0 },
        "maxConcurrentFetches must be an integer from 1 to 1024",
      ],
      [
        { maxConcurrentFetches: 1025 },
        "maxConcurrentFetches must be an integer from 1 to 1024",
      ],
      [{ maxQueued: -1 }, "maxQueued must be an integer from 0 to 1000000000"],
      [{ maxQueued: 0.5 }, "maxQueued must be an integer from 0 to 1000000000"],
    ] as const
  ) {
    assert.throws(() => createRemoteCatalog({ baseUrl: "http://x", ...bad }), {
      name: "RangeError",
      message: `Cannot create a remote catalog: ${message}`,
    });
  }
  assert.throws(
    () =>
      createRemoteCatalog({
        baseUrl: "http://x",
        fetchTimeoutMs: "1000" as unknown as number,
      }),
    TypeError,
  );
});

Deno.test("createRemoteCatalog() honours the base path and prefix", async () => {
  const pack = await mathPack();
  const seen: string[] = [];
  const catalog = createRemoteCatalog({
    baseUrl: "http://cordon.test/app/",
    prefix: "/modules",
    headers: { authorization: "Bearer t" },
    fetch(input, init) {
      seen.push(`${input} ${new Headers(init.headers).get("authorization")}`);
      return Promise.resolve(
        new Response(JSON.stringify({ packs: [pack.summary] }), {
          headers: { "content-type": "application/json" },
        }),
      );
    },
  });
  await catalog.prefetch({
    source: 'import "@acme/math"; export default 1;',
    packages: [],
  });
  assert.deepEqual(seen, [
    "http://cordon.test/app/modules?packs=%40acme%2Fmath Bearer t",
  ]);
  assert.deepEqual(catalog.summaries(), [pack.summary]);
});

// Misbehaving peers over raw TCP: a server that stalls, drips or floods.

/** Answers the listing and the modules of `pack` honestly. */
function answerHonestly(
  exchange: RawExchange,
  pack: PackGraph,
  options: { dripModulesMs?: number } = {},
): Promise<void> {
  if (exchange.path.split("?")[0] === "/api/sandbox-modules") {
    return send(
      exchange,
      { "content-type": "application/json" },
      listingBody([
        pack,
      ]),
    );
  }
  const module = moduleOf(pack, exchange.path);
  return send(
    exchange,
    {
      "content-type": "text/javascript",
      "repr-digest": toReprDigest(module.digest),
    },
    pack.sources[module.path]!,
    { dripMs: options.dripModulesMs },
  );
}

function moduleOf(pack: PackGraph, path: string): PackSummary["modules"][0] {
  const id = path.split("?")[0]!.split("/").pop();
  const module = pack.summary.modules.find((m) => m.id === id);
  assert.ok(module !== undefined, `no module at ${path}`);
  return module;
}

const FLOOD_BYTES = 400 * 1024 * 1024;
const MIB = 1024 * 1024;

/**
 * Prefetches DECLARATION through `catalog` and asserts that it fails with
 * FETCH_FAILED within its `fetchTimeoutMs`, naming what it was `fetching`
 * and the limit.
 */
async function prefetchTimesOut(
  catalog: RemoteCatalog,
  fetchTimeoutMs: number,
  fetching: RegExp,
): Promise<CordonError> {
  const error = await unlessHung(rejection(catalog.prefetch(DECLARATION)));
  assert.equal(error.code, "FETCH_FAILED");
  assert.match(error.message, fetching);
  assert.ok(
    error.message.includes(`within fetchTimeoutMs (${fetchTimeoutMs} ms)`),
    error.message,
  );
  return error;
}

/**
 * Closes `server` and asserts that its client stopped reading a flood
 * early and that the process's memory (`rss` before) grew by little.
 */
async function assertFloodRefused(
  server: RawServer,
  rss: number,
): Promise<void> {
  await server[Symbol.asyncDispose]();
  // Half the flood: a client that read it all is far over both bounds,
  // while on a loaded machine the bytes in flight before the client's
  // abort lands, and the garbage the in-process server leaves, vary a lot
  // (100 MiB of growth was passed once with other jobs on the cores).
  const bound = FLOOD_BYTES / 2;
  assert.ok(
    server.written() < bound,
    `the server wrote ${server.written()} bytes, of ${FLOOD_BYTES} per answer`,
  );
  const grown = Deno.memoryUsage().rss - rss;
  assert.ok(grown < bound, `rss grew by ${grown} bytes`);
}

Deno.test("prefetch() fails with FETCH_FAILED by fetchTimeoutMs when the server accepts and never answers", async () => {
  await using server = serveRaw(neverAnswer);
  const catalog = createRemoteCatalog({
    baseUrl: server.url,
    fetchTimeoutMs: 300,
  });
  const error = await prefetchTimesOut(
    catalog,
    300,
    /catalog listing for pack "@acme\/math"/,
  );
  assert.match(error.message, /raise fetchTimeoutMs/);
});

Deno.test("prefetch() rejects with ABORTED when its signal aborts a fetch the server never answers", async () => {
  await using server = serveRaw(neverAnswer);
  const catalog = createRemoteCatalog({ baseUrl: server.url });
  const error = await unlessHung(
    rejection(
      catalog.prefetch(DECLARATION, { signal: AbortSignal.timeout(200) }),
    ),
  );
  assert.equal(error.code, "ABORTED");
});

Deno.test("prefetch() fails with FETCH_FAILED by fetchTimeoutMs when the listing drips", async () => {
  const pack = await mathPack();
  await using server = serveRaw((exchange) =>
    send(
      exchange,
      { "content-type": "application/json" },
      listingBody([pack]),
      {
        dripMs: 100,
      },
    )
  );
  const catalog = createRemoteCatalog({
    baseUrl: server.url,
    fetchTimeoutMs: 500,
  });
  await prefetchTimesOut(
    catalog,
    500,
    /catalog listing for pack "@acme\/math"/,
  );
  assert.deepEqual(catalog.summaries(), []);
});

Deno.test("prefetch() fails with FETCH_FAILED naming the pack by fetchTimeoutMs when a module drips", async () => {
  const pack = await mathPack();
  await using server = serveRaw((exchange) =>
    answerHonestly(exchange, pack, { dripModulesMs: 100 })
  );
  const cache = recordingCache();
  const catalog = createRemoteCatalog({
    baseUrl: server.url,
    cache,
    fetchTimeoutMs: 500,
  });
  await prefetchTimesOut(catalog, 500, /module \.\/\S+ of pack "@acme\/math"/);
  assert.deepEqual(cache.puts, []);
  assert.equal(
    catalog.resolveForExecution(DECLARATION).statuses[0]?.status,
    "unavailable",
  );
});

Deno.test("prefetch() fails with FETCH_FAILED by fetchTimeoutMs, and cancels each body, when module bodies leave a read pending past the deadline", async () => {
  const pack = await mathPack();
  const bodies: StuckBody[] = [];
  const fetchStuck: FetchFunction = (input) => {
    const url = new URL(input);
    if (url.pathname === "/api/sandbox-modules") {
      return Promise.resolve(new Response(listingBody([pack])));
    }
    const id = url.pathname.split("/").at(-1);
    const module = pack.summary.modules.find((m) => m.id === id)!;
    const body = stuckBody();
    bodies.push(body);
    return Promise.resolve(
      new Response(body.stream, {
        headers: { "repr-digest": toReprDigest(module.digest) },
      }),
    );
  };
  const cache = recordingCache();
  const catalog = createRemoteCatalog({
    baseUrl: "http://127.0.0.1:9",
    fetch: fetchStuck,
    cache,
    fetchTimeoutMs: 200,
  });
  const error = await settleWithin(
    rejection(catalog.prefetch(DECLARATION)),
    HANG_MS,
    () => assert.fail("prefetch() was still waiting past its fetchTimeoutMs"),
  );
  assert.equal(error.code, "FETCH_FAILED");
  assert.match(error.message, /module \.\/\S+ of pack "@acme\/math"/);
  assert.match(error.message, /within fetchTimeoutMs \(200 ms\)/);
  assert.equal(bodies.length, pack.summary.modules.length);
  assert.ok(bodies.every((body) => body.cancelled()));
  assert.deepEqual(cache.puts, []);
});

Deno.test("authorizeDelivery() refuses with FETCH_FAILED by fetchTimeoutMs when the server never answers", async () => {
  await using server = serveRaw(neverAnswer);
  const catalog = createRemoteCatalog({
    baseUrl: server.url,
    fetchTimeoutMs: 300,
  });
  const answer = await unlessHung(
    catalog.authorizeDelivery("AAAAAAAAAAAAAAAAAAAAAA"),
  );
  assert.equal(!answer.ok && answer.code, "FETCH_FAILED");
  assert.match(!answer.ok ? answer.message : "", /fetchTimeoutMs \(300 ms\)/);
});

for (const announced of [true, false]) {
  const how = announced ? "announces" : "streams";
  Deno.test(`prefetch() abandons a module body that ${how} more than maxModuleBytes, names the pack and caches nothing`, async () => {
    const pack = await mathPack();
    const round = pack.summary.modules.find((m) =>
      m.path === "./lib/round.js"
    )!;
    await using server = serveRaw(async (exchange) => {
      if (!exchange.path.startsWith(`/api/sandbox-modules/${round.id}`)) {
        return answerHonestly(exchange, pack);
      }
      await exchange.write(head("200 OK", {
        "content-type": "text/javascript",
        "repr-digest": toReprDigest(round.digest),
        ...(announced ? { "content-length": FLOOD_BYTES } : {}),
      }));
      await flood(exchange, FLOOD_BYTES);
    });
    const cache = recordingCache();
    const catalog = createRemoteCatalog({
      baseUrl: server.url,
      cache,
      maxModuleBytes: MIB,
    });
    const rss = Deno.memoryUsage().rss;
    const error = await rejection(catalog.prefetch(DECLARATION));
    assert.equal(error.code, "FETCH_FAILED");
    assert.match(
      error.message,
      /module \.\/lib\/round\.js of pack "@acme\/math"/,
    );
    assert.match(error.message, /longer than maxModuleBytes \(1048576 bytes\)/);
    assert.ok(cache.puts.every(([digest]) => digest !== round.digest));
    assert.equal(
      catalog.resolveForExecution(DECLARATION).statuses[0]?.status,
      "unavailable",
    );
    await assertFloodRefused(server, rss);
  });
}

Deno.test("prefetch() abandons a listing longer than maxListingBytes", async () => {
  await using server = serveRaw(async (exchange) => {
    await exchange.write(
      head("200 OK", { "content-type": "application/json" }),
    );
    await exchange.write('{"packs":[');
    await flood(exchange, FLOOD_BYTES, " ");
  });
  const catalog = createRemoteCatalog({ baseUrl: server.url });
  const rss = Deno.memoryUsage().rss;
  const error = await rejection(catalog.prefetch(DECLARATION));
  assert.equal(error.code, "FETCH_FAILED");
  assert.match(error.message, /catalog listing for pack "@acme\/math"/);
  assert.match(
    error.message,
    /longer than maxListingBytes \(16777216 bytes\); .*raise maxListingBytes/,
  );
  await assertFloodRefused(server, rss);
});

Deno.test("prefetch() reads only the start of an oversized problem+json error body", async () => {
  const pack = await mathPack();
  await using server = serveRaw(async (exchange) => {
    if (!exchange.path.includes("?digest=")) {
      return answerHonestly(exchange, pack);
    }
    await exchange.write(head("500 Internal Server Error", {
      "content-type": "application/problem+json",
    }));
    await exchange.write('{"code":"DELIVERY_UNAVAILABLE","detail":"');
    await flood(exchange, FLOOD_BYTES);
  });
  const catalog = createRemoteCatalog({ baseUrl: server.url });
  const rss = Deno.memoryUsage().rss;
  const error = await rejection(catalog.prefetch(DECLARATION));
  assert.equal(error.code, "FETCH_FAILED");
  assert.match(error.message, /module \.\/\S+ of pack "@acme\/math"/);
  assert.match(error.message, /the server answered 500;/);
  await assertFloodRefused(server, rss);
});

Deno.test("prefetch() lists only the declared packs and the packs the guest imports, and tells an undeclared import apart as on disk", async () => {
  const disk = await createDiskCatalog(FIXTURE_PACKS);
  const requests: string[] = [];
  const handler = createDeliveryHandler(disk);
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) => {
      const url = new URL(request.url);
      requests.push(url.pathname + url.search);
      return handler(request);
    },
  );
  const catalog = createRemoteCatalog({
    baseUrl: `http://127.0.0.1:${server.addr.port}`,
  });
  const declaration = {
    source:
      'import { hello } from "greet"; import "left-pad"; export default 1;',
    packages: ["@cordon-fixtures/math"],
  };
  await catalog.prefetch(declaration);
  const listings = requests.filter((path) =>
    path.split("?")[0] === "/api/sandbox-modules"
  );
  assert.deepEqual(listings, [
    "/api/sandbox-modules?packs=%40cordon-fixtures%2Fmath,greet,left-pad",
  ]);
  assert.deepEqual(
    catalog.summaries().map((pack) => pack.name),
    ["@cordon-fixtures/math", "greet"],
  );
  const remote = createImportPolicy(catalog.resolveForExecution(declaration));
  const local = createImportPolicy(disk.resolveForExecution(declaration));
  for (const specifier of ["greet", "left-pad", "@cordon-fixtures/math"]) {
    assert.deepEqual(
      remote.resolve(GUEST_MODULE_NAME, specifier),
      local.resolve(GUEST_MODULE_NAME, specifier),
    );
  }
});

/** Two packs whose helper `./lib.js` the listing gives one module id. */
async function packsSharingAnId(): Promise<[PackGraph, PackGraph]> {
  const built = await Promise.all(["@acme/a", "@acme/b"].map(async (name) => {
    const manifest = PackManifestSchema.parse({
      name,
      version: "1.0.0",
      cordon: { exports: { ".": "./index.js" }, internal: ["./lib.js"] },
    });
    const graph = await buildPackGraph(manifest, {
      "./index.js": 'export { v } from "./lib.js";\n',
      "./lib.js": `export const v = ${JSON.stringify(name)};\n`,
    });
    assert.ok(graph.ok);
    return graph.graph;
  }));
  const [a, b] = built as [PackGraph, PackGraph];
  // Ids are not part of any digest, so each pack's graph still adds up.
  const lib = (pack: PackGraph) =>
    pack.summary.modules.find((m) => m.path === "./lib.js")!;
  const index = b.summary.modules.find((m) => m.path === "./index.js")!;
  const taken = lib(a).id;
  index.dependencyIds = [taken];
  lib(b).id = taken;
  return [a, b];
}

Deno.test("resolveForExecution() refuses a pack whose module id the listing also gives to another declared pack", async () => {
  const packs = await packsSharingAnId();
  const byDigest = new Map(
    packs.flatMap((pack) =>
      pack.summary.modules.map((m) => [m.digest, pack.sources[m.path]!])
    ),
  );
  // A server that serves every module by the digest the catalog pins.
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) => {
      const url = new URL(request.url);
      if (url.pathname === "/api/sandbox-modules") {
        return new Response(listingBody(packs));
      }
      const digest = url.searchParams.get("digest") ?? "";
      return new Response(byDigest.get(digest) ?? "", {
        headers: { "repr-digest": toReprDigest(digest) },
      });
    },
  );
  const catalog = createRemoteCatalog({
    baseUrl: `http://127.0.0.1:${server.addr.port}`,
  });
  const declaration = {
    source: 'import { v } from "@acme/a"; export default v;',
    packages: ["@acme/a", "@acme/b"],
  };
  await catalog.prefetch(declaration);
  const resolution = catalog.resolveForExecution(declaration);
  assert.equal(resolution.statuses[0]?.status, "ok");
  const refused = resolution.statuses[1]!;
  assert.ok(refused.status === "unavailable", refused.status);
  assert.equal(refused.code, "DIGEST_MISMATCH");
  assert.match(
    refused.message,
    /^Refusing pack "@acme\/b": its module \.\/lib\.js has the id "[\w-]+" of a module of pack "@acme\/a"/,
  );
  // What pack "@acme/a" imports is its own module, never the other's.
  assert.deepEqual(Object.keys(resolution.packs), ["@acme/a"]);
  const shared = packs[0].summary.modules.find((m) => m.path === "./lib.js")!;
  assert.equal(
    resolution.modules[shared.id]?.source,
    'export const v = "@acme/a";\n',
  );
});

async function namedPack(name: string): Promise<PackGraph> {
  const manifest = PackManifestSchema.parse({
    name,
    version: "1.0.0",
    cordon: { exports: { ".": "./index.js" } },
  });
  const built = await buildPackGraph(manifest, {
    "./index.js": `export const name = ${JSON.stringify(name)};\n`,
  });
  assert.ok(built.ok);
  return built.graph;
}

function declaring(...names: string[]) {
  return { source: "export default 1;", packages: names };
}

function statusesOf(catalog: RemoteCatalog, ...names: string[]): string[] {
  return catalog.resolveForExecution(declaring(...names)).statuses.map((
    status,
  ) => "code" in status ? `${status.name} ${status.code}` : status.name);
}

Deno.test("prefetch() keeps the sources of the last maxHeldPacks packs prefetched, and loads a pack let go again from the cache", async () => {
  const names = ["@acme/p0", "@acme/p1", "@acme/p2"];
  const packs = await Promise.all(names.map(namedPack));
  await using server = serveFake(packs);
  const inner = createMemoryModuleCache();
  const gets: string[] = [];
  const cache: ModuleCache = {
    get(digest) {
      gets.push(digest);
      return inner.get(digest);
    },
    put: (digest, source) => inner.put(digest, source),
  };
  const catalog = createRemoteCatalog({
    baseUrl: server.url,
    cache,
    maxHeldPacks: 2,
  });
  for (const name of names) await catalog.prefetch(declaring(name));
  const digestOf = (i: number) => packs[i]!.summary.modules[0]!.digest;
  assert.deepEqual(gets, [digestOf(0), digestOf(1), digestOf(2)]);
  assert.equal(moduleRequests(server).length, 3);
  // p1 and p2 are held: prefetched again, they need neither cache nor
  // server. p0 was let go: its source comes from the cache.
  for (const name of ["@acme/p1", "@acme/p2", "@acme/p0"]) {
    await catalog.prefetch(declaring(name));
    assert.deepEqual(statusesOf(catalog, name), [name]);
  }
  assert.deepEqual(gets.slice(3), [digestOf(0)]);
  assert.equal(moduleRequests(server).length, 3);
  // p1 is now the least recently prefetched, and was let go for p0.
  await catalog.prefetch(declaring("@acme/p1"));
  assert.deepEqual(gets.slice(4), [digestOf(1)]);
});

Deno.test("prefetch() keeps every pack of its own declaration past maxHeldPacks", async () => {
  const names = ["@acme/p0", "@acme/p1", "@acme/p2"];
  await using server = serveFake(await Promise.all(names.map(namedPack)));
  const catalog = createRemoteCatalog({ baseUrl: server.url, maxHeldPacks: 1 });
  await catalog.prefetch(declaring(...names));
  assert.deepEqual(statusesOf(catalog, ...names), names);
});

Deno.test("prefetch() keeps the packs of a prefetch under way while later prefetches let packs go", async () => {
  const names = ["@acme/p0", "@acme/p1", "@acme/p2"];
  const packs = await Promise.all(names.map(namedPack));
  await using server = serveFake(packs);
  const slowIds = packs[0]!.summary.modules.map((module) => module.id);
  let release = () => {};
  const released = new Promise<void>((resolve) => release = resolve);
  const catalog = createRemoteCatalog({
    baseUrl: server.url,
    maxHeldPacks: 1,
    async fetch(input, init) {
      const id = new URL(input).pathname.split("/").pop()!;
      if (slowIds.includes(id)) await released;
      return await fetch(input, init);
    },
  });
  const slow = catalog.prefetch(declaring("@acme/p0"));
  await catalog.prefetch(declaring("@acme/p1"));
  await catalog.prefetch(declaring("@acme/p2"));
  release();
  await slow;
  assert.deepEqual(statusesOf(catalog, "@acme/p0"), ["@acme/p0"]);
  assert.deepEqual(statusesOf(catalog, "@acme/p1", "@acme/p2"), [
    "@acme/p1 FETCH_FAILED",
    "@acme/p2 FETCH_FAILED",
  ]);
});

Deno.test("resolveForExecution() of several packs shares one frozen module record between runs", async () => {
  const names = ["@acme/p0", "@acme/p1"];
  await using server = serveFake(await Promise.all(names.map(namedPack)));
  const catalog = createRemoteCatalog({ baseUrl: server.url });
  await catalog.prefetch(declaring(...names));
  const first = catalog.resolveForExecution(declaring(...names));
  await catalog.prefetch(declaring(...names));
  const second = catalog.resolveForExecution(declaring(...names));
  assert.deepEqual(second.statuses.map((status) => status.status), [
    "ok",
    "ok",
  ]);
  assert.equal(Object.keys(second.modules).length, 2);
  assert.equal(second.modules, first.modules);
  assert.ok(Object.isFrozen(second.modules));
  // The other order is another combination, with the same modules.
  const reversed = catalog.resolveForExecution(declaring(...names.reverse()));
  assert.deepEqual(
    Object.keys(reversed.modules).sort(),
    Object.keys(second.modules).sort(),
  );
});

Deno.test("prefetch() lets the packs past maxHeldPacks go when it fails too", async () => {
  // Each declaration names a pack whose module the server fails: every
  // prefetch rejects, after loading the other pack it names.
  const names = ["@acme/p0", "@acme/p1", "@acme/p2"];
  const packs = await Promise.all(names.map(namedPack));
  await using server = serveFake([...packs, await mathPack()]);
  server.tamper("./lib/round.js", "status-500");
  // One listing for every prefetch, so that what a pack's resolution
  // finds is what the catalog holds.
  const catalog = createRemoteCatalog({
    baseUrl: server.url,
    maxHeldPacks: 1,
    listing: "full",
  });
  for (const name of names) {
    const failed = await rejection(
      catalog.prefetch(declaring(name, "@acme/math")),
    );
    assert.equal(failed.code, "FETCH_FAILED");
  }
  assert.deepEqual(statusesOf(catalog, ...names), [
    "@acme/p0 FETCH_FAILED",
    "@acme/p1 FETCH_FAILED",
    "@acme/p2",
  ]);
});

Deno.test("createRemoteCatalog(), prefetch() and createMemoryModuleCache() refuse a misspelt option, naming the closest one", async () => {
  const baseUrl = "http://127.0.0.1:1";
  assert.throws(
    () => createRemoteCatalog({ baseUrl, fetchTimeoutMS: 10 } as never),
    {
      name: "TypeError",
      message:
        "Cannot create a remote catalog: unknown option fetchTimeoutMS; did you mean fetchTimeoutMs?",
    },
  );
  assert.throws(() => createMemoryModuleCache({ maxentries: 1 } as never), {
    name: "TypeError",
    message:
      "Cannot create a module cache: unknown option maxentries; did you mean maxEntries?",
  });
  assert.throws(() => createMemoryModuleCache({ maxEntries: 1e300 }), {
    name: "RangeError",
  });
  const catalog = createRemoteCatalog({
    baseUrl,
    fetch: () => Promise.reject(new Error("no fetch expected")),
  });
  await assert.rejects(
    () =>
      catalog.prefetch({ source: "", packages: [] }, { singal: null } as never),
    {
      name: "TypeError",
      message:
        "Cannot prefetch the declaration: unknown option singal; did you mean signal?",
    },
  );
});

/** A module path that would split, repaint or reorder a log line raw. */
const HOSTILE_PATH = "./lib/x\nINFO forged \u001b[2J\u202e.js";

for (
  const [what, path] of [
    ["a newline", "./lib/x\nINFO forged.js"],
    ["an escape", "./lib/x\u001b[2J.js"],
    ["a bidi override", "./lib/x\u202esj.exe.js"],
    ["a C1 control", "./lib/x\u009b2J.js"],
  ] as const
) {
  Deno.test(`prefetch() refuses with FETCH_FAILED a listing whose module path holds ${what}, before fetching modules`, async () => {
    const pack = await mathPack();
    const forged: PackSummary = {
      ...pack.summary,
      modules: pack.summary.modules.map((m, i) => i === 0 ? { ...m, path } : m),
    };
    await using server = serveFake([{ ...pack, summary: forged }]);
    const catalog = createRemoteCatalog({ baseUrl: server.url });
    const error = await rejection(catalog.prefetch(DECLARATION));
    assert.equal(error.code, "FETCH_FAILED");
    assert.match(
      error.message,
      /^Cannot read the catalog listing for pack "@acme\/math" from .*: it does not match/,
    );
    assert.ok(!error.message.includes(path));
    assert.deepEqual(moduleRequests(server), []);
  });
}

Deno.test("PackManifestSchema refuses a pack file whose name would split a log line, so no listing can carry one", () => {
  const manifest = {
    name: "@acme/math",
    version: "1.0.0",
    cordon: { exports: { ".": "./index.js" }, internal: [HOSTILE_PATH] },
  };
  assert.equal(PackManifestSchema.safeParse(manifest).success, false);
});

Deno.test("prefetch() revalidates a listing older than listingMaxAgeMs even when the wall clock stepped back", async () => {
  const pack = await mathPack();
  await using server = serveFake([pack]);
  const catalog = createRemoteCatalog({
    baseUrl: server.url,
    listingMaxAgeMs: 1,
  });
  const wallClock = Date.now;
  try {
    await catalog.prefetch(DECLARATION);
    const before = server.requests.length;
    // An NTP correction that steps the wall clock back by an hour.
    const stepped = wallClock() - 3_600_000;
    Date.now = () => stepped;
    await new Promise((resolve) => setTimeout(resolve, 20));
    await catalog.prefetch(DECLARATION);
    assert.ok(
      server.requests.length > before,
      "the listing was not revalidated",
    );
  } finally {
    Date.now = wallClock;
  }
});

Deno.test("prefetch() refuses with FETCH_FAILED a fetch option whose body gives a chunk that is no Uint8Array, or transfers a chunk's buffer before the body is read in full, saying so, where the engine's message blamed the server", async () => {
  const chunks: Record<
    string,
    (controller: ReadableStreamDefaultController) => void
  > = {
    text: (controller) => controller.enqueue("{}"),
    transferred: (controller) => {
      const bytes = new TextEncoder().encode("{}");
      controller.enqueue(bytes);
      queueMicrotask(() => bytes.buffer.transfer());
    },
  };
  let closing: ReturnType<typeof setTimeout> | undefined;
  for (const [kind, give] of Object.entries(chunks)) {
    const catalog = createRemoteCatalog({
      baseUrl: "http://catalog.invalid",
      fetch: () =>
        Promise.resolve(
          new Response(
            new ReadableStream({
              start(controller) {
                give(controller);
                // Closed a turn later, so the reader waits for the end,
                // unless it gave up on the chunk and cancelled first.
                closing = setTimeout(() => controller.close(), 0);
              },
              cancel: () => clearTimeout(closing),
            }),
            { headers: { "content-type": "application/json" } },
          ),
        ),
    });
    const error = await rejection(catalog.prefetch(DECLARATION));
    assert.equal(error.code, "FETCH_FAILED", kind);
    assert.match(
      error.message,
      /: the fetch option's body gave a chunk that is no Uint8Array, or one whose buffer was transferred before the body was read in full; make the fetch option answer a Response whose body gives bytes it leaves alone$/,
      kind,
    );
  }
});
