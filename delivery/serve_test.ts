import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { fileURLToPath, pathToFileURL } from "node:url";
import {
  CatalogListingSchema,
  CordonError,
  type ModuleSummary,
  type PackSummary,
  ProblemSchema,
} from "../protocol/mod.ts";
import { type CatalogChange, serveDelivery } from "./serve.ts";
import { copyTree } from "./_test_copy_tree_test.ts";
import { unhandledDuring } from "../protocol/_test_unhandled_test.ts";

const FIXTURE_PACKS = new URL("../fixtures/packs/", import.meta.url);

/**
 * A temporary copy of the fixture packs plus two broken packs, reached
 * through a symlink so the given path and the real path differ.
 */
async function packsFolder(): Promise<
  { dir: string; real: string; root: string } & AsyncDisposable
> {
  const root = await Deno.makeTempDir({ prefix: "cordon_serve_" });
  const real = `${root}/real-packs`;
  await copyTree(fileURLToPath(FIXTURE_PACKS), real);
  await Deno.mkdir(`${real}/broken`);
  await Deno.writeTextFile(`${real}/broken/package.json`, "{ not json");
  await Deno.mkdir(`${real}/escape`);
  await Deno.writeTextFile(
    `${real}/escape/package.json`,
    JSON.stringify({
      name: "escape",
      version: "1.0.0",
      cordon: { exports: { ".": "./index.js" } },
    }),
  );
  await Deno.writeTextFile(`${root}/outside.js`, "export default 1;\n");
  await Deno.symlink(`${root}/outside.js`, `${real}/escape/index.js`);
  const dir = `${root}/linked-packs`;
  await Deno.symlink(real, dir);
  return {
    dir,
    real: await Deno.realPath(real),
    root,
    [Symbol.asyncDispose]: () => Deno.remove(root, { recursive: true }),
  };
}

/** Every response text of this file, to scan for the packs folder. */
const seen: string[] = [];

async function fetchRecorded(
  input: string,
  init?: RequestInit,
): Promise<{ response: Response; body: Uint8Array }> {
  const response = await fetch(input, init);
  const body = new Uint8Array(await response.arrayBuffer());
  seen.push(
    `${response.status} ${JSON.stringify([...response.headers])} ${
      new TextDecoder().decode(body)
    }`,
  );
  return { response, body };
}

function sha256Base64(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("base64");
}

function moduleOf(
  packs: PackSummary[],
  name: string,
  path: string,
): ModuleSummary {
  const pack = packs.find((p) => p.name === name);
  assert.ok(pack, name);
  const module = pack.modules.find((m) => m.path === path);
  assert.ok(module, `${name} ${path}`);
  return module;
}

async function listing(url: string): Promise<PackSummary[]> {
  const { response, body } = await fetchRecorded(url);
  assert.equal(response.status, 200);
  return CatalogListingSchema.parse(
    JSON.parse(new TextDecoder().decode(body)),
  ).packs;
}

function problemCode(response: Response, body: Uint8Array): string {
  assert.equal(
    response.headers.get("content-type"),
    "application/problem+json",
  );
  return ProblemSchema.parse(JSON.parse(new TextDecoder().decode(body))).code;
}

Deno.test("serveDelivery() answers every route over a real socket", async (t) => {
  await using packs = await packsFolder();
  await using server = await serveDelivery({
    packsDir: packs.dir,
    port: 0,
    entitlement: (pack) => {
      if (pack.name === "greet") return false;
      if (pack.name === "@cordon-fixtures/clock") {
        throw new Error(`Cannot read ${packs.real}/grants.json`);
      }
      return true;
    },
  });
  assert.equal(server.addr.hostname, "127.0.0.1");
  assert.equal(
    server.url,
    `http://127.0.0.1:${server.addr.port}/api/sandbox-modules`,
  );
  const packList = await listing(server.url);
  const installed = packList.map((p) => `${p.name}@${p.version}`);
  for (
    const pack of [
      "@cordon-fixtures/clock@1.0.0",
      "@cordon-fixtures/math@1.0.0",
      "greet@1.0.0",
    ]
  ) {
    assert.ok(installed.includes(pack), pack);
  }
  assert.deepEqual(
    server.catalog.diagnostics().map((d) => [d.pack, d.code]),
    [["broken", "PACK_MANIFEST_INVALID"], ["escape", "PACK_FILE_OUTSIDE"]],
  );
  const index = moduleOf(packList, "@cordon-fixtures/math", "./index.js");
  const round = moduleOf(packList, "@cordon-fixtures/math", "./lib/round.js");
  const moduleUrl = `${server.url}/${index.id}`;

  await t.step("GET the listing, then 304 with its entity tag", async () => {
    const { response } = await fetchRecorded(server.url);
    const etag = response.headers.get("etag")!;
    const again = await fetchRecorded(server.url, {
      headers: { "if-none-match": etag },
    });
    assert.equal(again.response.status, 304);
    assert.equal(again.body.byteLength, 0);
  });

  await t.step(
    "GET a module: bytes and a Repr-Digest equal to sha256 of the body",
    async () => {
      const { response, body } = await fetchRecorded(moduleUrl);
      assert.equal(response.status, 200);
      const onDisk = await Deno.readFile(
        `${packs.real}/@cordon-fixtures/math/index.js`,
      );
      assert.deepEqual(body, onDisk);
      assert.equal(
        response.headers.get("repr-digest"),
        `sha-256=:${sha256Base64(body)}:`,
      );
      assert.equal(response.headers.get("etag"), `"${index.digest}"`);
      assert.equal(
        response.headers.get("x-cordon-graph-digest"),
        index.graphDigest,
      );
      assert.equal(response.headers.get("x-cordon-dependencies"), round.id);
      assert.equal(
        response.headers.get("x-cordon-pack"),
        "@cordon-fixtures/math@1.0.0",
      );
      assert.equal(
        response.headers.get("content-length"),
        String(body.byteLength),
      );
      assert.equal(response.headers.get("cache-control"), "public, no-cache");
    },
  );

  await t.step("GET an internal file", async () => {
    const { response, body } = await fetchRecorded(`${server.url}/${round.id}`);
    assert.equal(response.status, 200);
    assert.equal(`sha256-${sha256Base64(body)}`, round.digest);
  });

  await t.step("a second GET with the ETag gets 304, every time", async () => {
    // The server answers bodyless requests with one shared response; each
    // answer must still be whole.
    for (let i = 0; i < 3; i++) {
      const { response, body } = await fetchRecorded(moduleUrl, {
        headers: { "if-none-match": `"${index.digest}"` },
      });
      assert.equal(response.status, 304);
      assert.equal(response.headers.get("etag"), `"${index.digest}"`);
      assert.equal(response.headers.get("cache-control"), "public, no-cache");
      assert.equal(response.headers.get("access-control-allow-origin"), "*");
      assert.equal(body.byteLength, 0);
    }
  });

  await t.step(
    "HEAD gets the GET headers and no body, every time",
    async () => {
      const get = await fetchRecorded(moduleUrl);
      const withoutDate = (r: Response) =>
        [...r.headers].filter(([name]) => name !== "date");
      for (let i = 0; i < 3; i++) {
        const head = await fetchRecorded(moduleUrl, { method: "HEAD" });
        assert.equal(head.response.status, 200);
        assert.equal(head.body.byteLength, 0);
        assert.deepEqual(withoutDate(head.response), withoutDate(get.response));
      }
    },
  );

  await t.step("a pinned URL is immutable; a stale pin is 404", async () => {
    const pinned = await fetchRecorded(
      `${moduleUrl}?digest=${encodeURIComponent(index.digest)}`,
    );
    assert.equal(pinned.response.status, 200);
    assert.equal(
      pinned.response.headers.get("cache-control"),
      "public, max-age=31536000, immutable",
    );
    const stale = await fetchRecorded(
      `${moduleUrl}?digest=${encodeURIComponent(round.digest)}`,
    );
    assert.equal(stale.response.status, 404);
    assert.equal(
      problemCode(stale.response, stale.body),
      "MODULE_NOT_FOUND",
    );
  });

  await t.step("unknown and malformed ids get 404", async () => {
    const unknown = await fetchRecorded(`${server.url}/AAAAAAAAAAAAAAAAAAAAAA`);
    assert.equal(unknown.response.status, 404);
    assert.equal(
      problemCode(unknown.response, unknown.body),
      "MODULE_NOT_FOUND",
    );
    const malformed = await fetchRecorded(`${server.url}/a%2F..%2Fb`);
    assert.equal(malformed.response.status, 404);
    assert.equal(
      problemCode(malformed.response, malformed.body),
      "MODULE_ID_INVALID",
    );
  });

  await t.step("a pack the policy refuses gets 403", async () => {
    const greet = moduleOf(packList, "greet", "./index.js");
    const { response, body } = await fetchRecorded(`${server.url}/${greet.id}`);
    assert.equal(response.status, 403);
    assert.equal(problemCode(response, body), "DELIVERY_FORBIDDEN");
  });

  await t.step("a policy that fails gets 503", async () => {
    const clock = moduleOf(packList, "@cordon-fixtures/clock", "./index.js");
    const { response, body } = await fetchRecorded(`${server.url}/${clock.id}`);
    assert.equal(response.status, 503);
    assert.equal(problemCode(response, body), "DELIVERY_UNAVAILABLE");
  });

  await t.step("other methods get 405 with Allow", async () => {
    for (const method of ["POST", "PUT", "DELETE"]) {
      const { response, body } = await fetchRecorded(moduleUrl, { method });
      assert.equal(response.status, 405);
      assert.equal(response.headers.get("allow"), "GET, HEAD, OPTIONS");
      assert.equal(problemCode(response, body), "METHOD_NOT_ALLOWED");
    }
    const { response } = await fetchRecorded(server.url, { method: "OPTIONS" });
    assert.equal(response.status, 204);
  });

  await t.step(
    "a Host header holding a path gets 400, not the module it names",
    async () => {
      const conn = await Deno.connect({
        hostname: "127.0.0.1",
        port: server.addr.port,
      });
      await conn.write(
        new TextEncoder().encode(
          `GET /${index.id} HTTP/1.1\r\nHost: 127.0.0.1/api/sandbox-modules\r\nConnection: close\r\n\r\n`,
        ),
      );
      const answer = new TextDecoder().decode(
        await new Response(conn.readable).arrayBuffer(),
      );
      assert.match(answer, /^HTTP\/1\.1 400 /);
      assert.match(answer, /"code":"REQUEST_INVALID"/);
      assert.doesNotMatch(answer, /export /);
    },
  );

  await t.step("paths outside the prefix get 404", async () => {
    const origin = new URL(server.url).origin;
    for (const path of ["/", "/favicon.ico", "/api/sandbox-modules-x"]) {
      const { response } = await fetchRecorded(`${origin}${path}`);
      assert.equal(response.status, 404, path);
    }
  });
});

Deno.test("serveDelivery() allows the corsRequestHeaders it is given in its preflight answers, and refuses a bad one before it reads the packs", async () => {
  await using packs = await packsFolder();
  await using server = await serveDelivery({
    packsDir: packs.dir,
    port: 0,
    corsRequestHeaders: ["X-Tenant"],
  });
  const preflight = await fetch(server.url, {
    method: "OPTIONS",
    headers: {
      origin: "https://app.example",
      "access-control-request-method": "GET",
      "access-control-request-headers": "x-tenant",
    },
  });
  await preflight.body?.cancel();
  assert.equal(preflight.status, 204);
  assert.equal(
    preflight.headers.get("access-control-allow-headers"),
    "If-None-Match, If-Match, Authorization, X-Tenant",
  );
  await assert.rejects(
    serveDelivery({
      packsDir: `${packs.dir}/missing`,
      port: 0,
      corsRequestHeaders: ["x tenant"],
    }),
    /^TypeError: Cannot create a delivery handler: corsRequestHeaders must be an array of header field names/,
  );
});

Deno.test("serveDelivery() serves new bytes after a re-scan and 404s the old pinned digest", async () => {
  await using packs = await packsFolder();
  await using server = await serveDelivery({ packsDir: packs.dir, port: 0 });
  const before = await listing(server.url);
  const round = moduleOf(before, "@cordon-fixtures/math", "./lib/round.js");
  const index = moduleOf(before, "@cordon-fixtures/math", "./index.js");
  const roundUrl = `${server.url}/${round.id}`;
  await fetchRecorded(roundUrl);

  const upgraded = "export function round(x) { return Math.round(x); }\n";
  await Deno.writeTextFile(
    `${packs.real}/@cordon-fixtures/math/lib/round.js`,
    upgraded,
  );
  const change = await server.rescan();
  assert.deepEqual(change.changed, ["@cordon-fixtures/math@1.0.0"]);
  assert.deepEqual([change.added, change.removed], [[], []]);

  const revalidated = await fetchRecorded(roundUrl, {
    headers: { "if-none-match": `"${round.digest}"` },
  });
  assert.equal(revalidated.response.status, 200);
  assert.equal(new TextDecoder().decode(revalidated.body), upgraded);
  assert.equal(
    revalidated.response.headers.get("repr-digest"),
    `sha-256=:${sha256Base64(revalidated.body)}:`,
  );
  const stale = await fetchRecorded(
    `${roundUrl}?digest=${encodeURIComponent(round.digest)}`,
  );
  assert.equal(stale.response.status, 404);
  // The graph digest of a module above the changed one changes too.
  const after = await listing(server.url);
  const indexAfter = moduleOf(after, "@cordon-fixtures/math", "./index.js");
  assert.equal(indexAfter.digest, index.digest);
  assert.notEqual(indexAfter.graphDigest, index.graphDigest);
  const indexResponse = await fetchRecorded(`${server.url}/${index.id}`);
  assert.equal(
    indexResponse.response.headers.get("x-cordon-graph-digest"),
    indexAfter.graphDigest,
  );
});

Deno.test("serveDelivery() lists each tenant only its own packs and the public ones, over a real socket", async () => {
  await using packs = await packsFolder();
  const owned: Record<string, string> = {
    a: "@cordon-fixtures/math",
    b: "@cordon-fixtures/clock",
  };
  await using server = await serveDelivery({
    packsDir: packs.dir,
    port: 0,
    entitlement: (pack, requester) =>
      pack.name === "greet" ||
      (requester.tenantId !== undefined &&
        owned[requester.tenantId] === pack.name),
    requester: (request) => {
      const tenantId = request.headers.get("x-tenant");
      return tenantId === null ? {} : { tenantId };
    },
  });
  const as = (tenant: string | undefined, extra: HeadersInit = {}) => {
    const headers = new Headers(extra);
    // One representation throughout, so each tag stays the one compared.
    headers.set("accept-encoding", "identity");
    if (tenant !== undefined) headers.set("x-tenant", tenant);
    return { headers };
  };
  const listFor = async (tenant: string | undefined, query = "") => {
    const { response, body } = await fetchRecorded(
      `${server.url}${query}`,
      as(tenant),
    );
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("cache-control"), "private, no-cache");
    const text = new TextDecoder().decode(body);
    return {
      etag: response.headers.get("etag")!,
      text,
      packs: CatalogListingSchema.parse(JSON.parse(text)).packs,
    };
  };
  const a = await listFor("a");
  const b = await listFor("b");
  const anonymous = await listFor(undefined);
  assert.deepEqual(a.packs.map((p) => p.name), [owned.a, "greet"]);
  assert.deepEqual(b.packs.map((p) => p.name), [owned.b, "greet"]);
  assert.deepEqual(anonymous.packs.map((p) => p.name), ["greet"]);
  assert.equal(new Set([a.etag, b.etag, anonymous.etag]).size, 3);
  for (const { text } of [b, anonymous]) {
    assert.doesNotMatch(text, /fixtures\/math/);
  }

  // Tenant b's revalidation with tenant a's tag gets b's whole listing.
  const crossed = await fetchRecorded(
    server.url,
    as("b", { "if-none-match": a.etag }),
  );
  assert.equal(crossed.response.status, 200);
  assert.equal(new TextDecoder().decode(crossed.body), b.text);
  const own = await fetchRecorded(
    server.url,
    as("a", { "if-none-match": a.etag }),
  );
  assert.equal(own.response.status, 304);

  // Naming another tenant's pack answers as naming one never installed.
  const named = await listFor("b", `?packs=${encodeURIComponent(owned.a!)}`);
  const absent = await listFor("b", "?packs=nope");
  assert.deepEqual(named.packs, []);
  assert.equal(named.text, absent.text);
  assert.equal(named.etag, absent.etag);

  // The module route keeps refusing another tenant's module by its id.
  const math = moduleOf(a.packs, owned.a!, "./index.js");
  const refused = await fetchRecorded(`${server.url}/${math.id}`, as("b"));
  assert.equal(refused.response.status, 403);
  assert.equal(
    problemCode(refused.response, refused.body),
    "DELIVERY_FORBIDDEN",
  );
  const served = await fetchRecorded(`${server.url}/${math.id}`, as("a"));
  assert.equal(served.response.status, 200);
});

Deno.test("serveDelivery() answers 503 DELIVERY_UNAVAILABLE over a real socket once catalogTimeoutMs passes without the entitlement policy's answer, where the request waited for ever", async () => {
  await using packs = await packsFolder();
  const policyAsked = Promise.withResolvers<void>();
  await using server = await serveDelivery({
    packsDir: packs.dir,
    port: 0,
    // A policy store that stopped answering.
    entitlement: () => {
      policyAsked.resolve();
      return new Promise<boolean>(() => {});
    },
    catalogTimeoutMs: 1,
  });
  const listing = await fetchRecorded(server.url);
  const id = CatalogListingSchema.parse(
    JSON.parse(new TextDecoder().decode(listing.body)),
  ).packs[0]!.modules[0]!.id;
  const stalled = await fetchRecorded(`${server.url}/${id}`);
  await policyAsked.promise;
  assert.equal(stalled.response.status, 503);
  assert.equal(stalled.response.headers.get("retry-after"), "5");
  assert.equal(
    problemCode(stalled.response, stalled.body),
    "DELIVERY_UNAVAILABLE",
  );
});

Deno.test("serveDelivery() with watch re-scans when a pack is added", async () => {
  await using packs = await packsFolder();
  const { promise: rescanned, resolve } = Promise.withResolvers<
    CatalogChange
  >();
  await using server = await serveDelivery({
    packsDir: packs.dir,
    port: 0,
    watch: true,
    watchDebounceMs: 50,
    onRescan: (change) => {
      if (change.added.length > 0) resolve(change);
    },
  });
  // Listed once before the change, so the server holds those answers.
  const before = await fetchRecorded(server.url);
  const beforeSelection = await listing(`${server.url}?packs=extra`);
  assert.deepEqual(beforeSelection, []);
  await Deno.mkdir(`${packs.real}/extra`);
  await Deno.writeTextFile(
    `${packs.real}/extra/index.js`,
    "export const x = 1;\n",
  );
  await Deno.writeTextFile(
    `${packs.real}/extra/package.json`,
    JSON.stringify({
      name: "extra",
      version: "2.0.0",
      cordon: { exports: { ".": "./index.js" } },
    }),
  );
  const change = await rescanned;
  assert.deepEqual(change.added, ["extra@2.0.0"]);
  const after = await fetchRecorded(server.url, {
    headers: { "if-none-match": before.response.headers.get("etag")! },
  });
  assert.equal(after.response.status, 200, "the old entity tag is stale");
  assert.deepEqual(
    (await listing(`${server.url}?packs=extra`)).map((pack) => pack.name),
    ["extra"],
  );
  const packList = await listing(server.url);
  const extra = moduleOf(packList, "extra", "./index.js");
  const { response, body } = await fetchRecorded(`${server.url}/${extra.id}`);
  assert.equal(response.status, 200);
  assert.equal(new TextDecoder().decode(body), "export const x = 1;\n");
});

/** Writes a pack named `name` into a packs folder. */
async function addPack(real: string, name: string): Promise<void> {
  await Deno.mkdir(`${real}/${name}`);
  await Deno.writeTextFile(`${real}/${name}/index.js`, "export const x = 1;\n");
  await Deno.writeTextFile(
    `${real}/${name}/package.json`,
    JSON.stringify({
      name,
      version: "1.0.0",
      cordon: { exports: { ".": "./index.js" } },
    }),
  );
}

Deno.test("serveDelivery() with watch drops what an async onRescan or onRescanError rejects with, and a failing onRescan is no failed re-scan", async () => {
  await using packs = await packsFolder();
  const added: Record<string, PromiseWithResolvers<void>> = {
    first: Promise.withResolvers(),
    second: Promise.withResolvers(),
  };
  const rescanErrors: unknown[] = [];
  const unhandled = await unhandledDuring(async () => {
    await using _server = await serveDelivery({
      packsDir: packs.dir,
      port: 0,
      watch: true,
      watchDebounceMs: 50,
      onRescan: (change) => {
        for (const name of change.added) added[name.split("@")[0]!]?.resolve();
        return Promise.reject(new Error("log sink down")) as never;
      },
      onRescanError: (error) => {
        rescanErrors.push(error);
        return Promise.reject(new Error("log sink down")) as never;
      },
    });
    await addPack(packs.real, "first");
    await added.first!.promise;
    // Re-scans run one at a time, so the first one's reports are done
    // once the second one's onRescan is called.
    await addPack(packs.real, "second");
    await added.second!.promise;
  });
  assert.deepEqual(unhandled, []);
  assert.deepEqual(rescanErrors, []);
});

Deno.test("serveDelivery() stops when its signal aborts and on a second shutdown", async () => {
  await using packs = await packsFolder();
  const controller = new AbortController();
  const server = await serveDelivery({
    packsDir: packs.dir,
    port: 0,
    signal: controller.signal,
  });
  await fetchRecorded(server.url);
  controller.abort();
  await server.finished;
  await server.shutdown();
  await server[Symbol.asyncDispose]();
  await assert.rejects(fetch(server.url), TypeError);
});

Deno.test("serveDelivery()'s rescan() after shutdown() or disposal rejects with SANDBOX_DISPOSED, where it answered that nothing changed", async () => {
  await using packs = await packsFolder();
  const server = await serveDelivery({ packsDir: packs.dir, port: 0 });
  await server.shutdown();
  await assert.rejects(server.rescan(), (error) => {
    assert.ok(error instanceof CordonError);
    assert.equal(error.code, "SANDBOX_DISPOSED");
    assert.match(
      error.message,
      /^Cannot rescan the packs folder: the server is shut down; /,
    );
    return true;
  });
  const disposed = await serveDelivery({ packsDir: packs.dir, port: 0 });
  await disposed[Symbol.asyncDispose]();
  await assert.rejects(
    disposed.rescan(),
    (error) =>
      error instanceof CordonError && error.code === "SANDBOX_DISPOSED",
  );
});

Deno.test("serveDelivery() whose signal aborts while it reads the packs never listens", async () => {
  await using packs = await packsFolder();
  const controller = new AbortController();
  const reason = new Error("stopped while reading the packs");
  const serving = serveDelivery({
    packsDir: packs.dir,
    port: 0,
    signal: controller.signal,
  });
  // Reading the packs is awaited, so this lands while it goes on.
  controller.abort(reason);
  await assert.rejects(serving, (error) => error === reason);
});

Deno.test("serveDelivery() takes packsDir and indexPath as file: URLs of folders whose paths hold a space, # and é, as Deno's file APIs do", async () => {
  await using packs = await packsFolder();
  const odd = `${packs.root}/my packs #1 é`;
  await Deno.rename(packs.real, odd);
  try {
    await using server = await serveDelivery({
      packsDir: pathToFileURL(odd),
      indexPath: pathToFileURL(`${packs.root}/index #1 é.json`),
      port: 0,
    });
    const names = (await listing(server.url)).map((pack) => pack.name);
    assert.ok(names.includes("greet"), names.join(", "));
    assert.ok((await Deno.stat(`${packs.root}/index #1 é.json`)).isFile);
  } finally {
    await Deno.rename(odd, packs.real);
  }
});

Deno.test("serveDelivery() rejects bad options and a busy port", async () => {
  await using packs = await packsFolder();
  await assert.rejects(
    serveDelivery({ packsDir: "", port: 0 }),
    TypeError,
  );
  await assert.rejects(
    serveDelivery({ packsDir: new URL("https://example.com/packs"), port: 0 }),
    TypeError,
  );
  await assert.rejects(
    serveDelivery({ packsDir: packs.dir, port: 70000 }),
    RangeError,
  );
  await assert.rejects(
    serveDelivery({ packsDir: packs.dir, port: 0, watchDebounceMs: -1 }),
    RangeError,
  );
  await assert.rejects(
    serveDelivery({ packsDir: packs.dir, port: "0" as never }),
    {
      name: "TypeError",
      message: "Cannot serve the packs: port must be a number",
    },
  );
  await assert.rejects(
    serveDelivery({ packsDir: packs.dir, port: 0, idleTimeout: 5 } as never),
    {
      name: "TypeError",
      message:
        "Cannot serve the packs: unknown option idleTimeout; did you mean idleTimeoutMs?",
    },
  );
  await assert.rejects(
    serveDelivery({ packsDir: packs.dir, port: 0, catalogTimeoutMs: 0 }),
    {
      name: "RangeError",
      message:
        "Cannot serve the packs: catalogTimeoutMs must be an integer from 1 to 2147483647 milliseconds",
    },
  );
  await assert.rejects(
    serveDelivery({ packsDir: packs.dir, port: 0, watch: "yes" as never }),
    {
      name: "TypeError",
      message: "Cannot serve the packs: watch must be true or false",
    },
  );
  await assert.rejects(
    serveDelivery({ packsDir: packs.dir, port: 0, onRescan: 1 as never }),
    {
      name: "TypeError",
      message: "Cannot serve the packs: onRescan must be a function",
    },
  );
  await using first = await serveDelivery({ packsDir: packs.dir, port: 0 });
  await assert.rejects(
    serveDelivery({ packsDir: packs.dir, port: first.addr.port }),
    Deno.errors.AddrInUse,
  );
});

Deno.test("serveDelivery() closes connections still sending a request head when it shuts down, and only then is finished", async () => {
  await using packs = await packsFolder();
  const server = await serveDelivery({ packsDir: packs.dir, port: 0 });
  let finished = false;
  const settled = server.finished.then(() => finished = true);
  const head = new TextEncoder().encode("GET / HTTP/1.1\r\nHost: x\r\n");
  const conns: Deno.Conn[] = [];
  for (let i = 0; i < 5; i++) {
    const conn = await Deno.connect({
      hostname: "127.0.0.1",
      port: server.addr.port,
    });
    conns.push(conn);
    await conn.write(head);
  }
  const reads = conns.map((conn) => conn.read(new Uint8Array(64)));
  await listing(server.url);
  assert.equal(finished, false);
  await server.shutdown();
  await settled;
  assert.deepEqual(await Promise.all(reads), conns.map(() => null));
  for (const conn of conns) conn.close();
});

Deno.test("serveDelivery() shut down while it answers a request still sends that answer, with or without its connection guard", async () => {
  await using packs = await packsFolder();
  for (const connectionGuard of [true, false]) {
    let stopping: Promise<void> | undefined;
    const server = await serveDelivery({
      packsDir: packs.dir,
      port: 0,
      connectionGuard,
      // The access log hook runs as the answer leaves the handler: the
      // shutdown then starts with that answer in flight.
      onRequest: () => stopping ??= server.shutdown(),
    });
    const response = await fetch(server.url);
    assert.equal(response.status, 200, `connectionGuard: ${connectionGuard}`);
    assert.ok((await response.json()).packs.length > 0);
    await stopping;
    await server.finished;
  }
});

Deno.test("serveDelivery() puts neither the packs folder's path nor its real path in any response of this file", async () => {
  await using packs = await packsFolder();
  await using server = await serveDelivery({ packsDir: packs.dir, port: 0 });
  // The folder's own file names, asked for directly, are ids that do not exist.
  for (
    const path of ["greet/index.js", "greet%2Findex.js", "..%2Foutside.js"]
  ) {
    const { response } = await fetchRecorded(`${server.url}/${path}`);
    assert.equal(response.status, 404);
  }
  assert.ok(seen.length > 30, `only ${seen.length} responses recorded`);
  // Every test of this file used a folder under the same temporary prefix.
  const prefix = packs.root.slice(0, packs.root.lastIndexOf("cordon_serve_"));
  for (const text of seen) {
    assert.ok(!text.includes(packs.dir), text.slice(0, 200));
    assert.ok(!text.includes(packs.real), text.slice(0, 200));
    assert.ok(!text.includes(`${prefix}cordon_serve_`), text.slice(0, 200));
    assert.ok(!text.includes("real-packs"), text.slice(0, 200));
  }
});
