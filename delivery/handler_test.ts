import assert from "node:assert/strict";
import process from "node:process";
import { createHash } from "node:crypto";
import { fileURLToPath } from "node:url";
import { sha256Digest } from "../catalog/digest.ts";
import { createDiskCatalog } from "../catalog/disk_catalog.ts";
import { answerFromMemory } from "../catalog/in_memory_delivery.ts";
import type {
  EntitlementOptions,
  SandboxModuleCatalog,
} from "../catalog/types.ts";
import {
  type AuthorizedDelivery,
  CatalogListingSchema,
  type DeliveryRefusal,
  ModuleIdSchema,
  type PackSummary,
  ProblemSchema,
  type Requester,
} from "../protocol/mod.ts";
import { createDeliveryHandler, type DeliveryRequestInfo } from "./handler.ts";
import { copyTree } from "./_test_copy_tree_test.ts";
import { unhandledDuring } from "../protocol/_test_unhandled_test.ts";
import { withPollutedPrototype } from "../protocol/_test_hostile_test.ts";

/** A server-side path that must never reach a client. */
const SECRET_PATH = "/srv/cordon-secret/packs";
const BASE = "http://localhost/api/sandbox-modules";

function sri(text: string): string {
  return `sha256-${createHash("sha256").update(text, "utf8").digest("base64")}`;
}

function reprDigest(bytes: Uint8Array): string {
  return `sha-256=:${createHash("sha256").update(bytes).digest("base64")}:`;
}

interface MemoryModule {
  id: string;
  content: string;
  path: string;
  dependencyIds: string[];
  pack: { name: string; version: string };
  /** A digest to claim instead of the real one (an inconsistent catalog). */
  claimedDigest?: string;
}

/** A small in-memory catalog whose refusals and faults name a secret path. */
class MemoryCatalog implements SandboxModuleCatalog {
  modules = new Map<string, MemoryModule>();
  forbidden = new Set<string>();
  unavailable = new Set<string>();
  throwing = new Set<string>();
  requesters: (Requester | undefined)[] = [];

  add(module: MemoryModule): this {
    this.modules.set(module.id, module);
    return this;
  }

  resolveForExecution(): ReturnType<
    SandboxModuleCatalog["resolveForExecution"]
  > {
    return { statuses: [], packs: {}, modules: {}, installed: [] };
  }

  authorizeDelivery(
    moduleId: string,
    requester?: Requester,
  ): Promise<AuthorizedDelivery | DeliveryRefusal> {
    try {
      return Promise.resolve(this.answer(moduleId, requester));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** The catalog's answer, computed at once; throws for `throwing` ids. */
  answer(
    moduleId: string,
    requester?: Requester,
  ): AuthorizedDelivery | DeliveryRefusal {
    this.requesters.push(requester);
    if (this.throwing.has(moduleId)) {
      throw new Error(`Cannot read ${SECRET_PATH}/math/x.js`);
    }
    const module = this.modules.get(moduleId);
    if (module === undefined) {
      return {
        ok: false,
        reason: "not-found",
        code: "MODULE_NOT_FOUND",
        message: `Nothing at ${SECRET_PATH}/${moduleId}`,
      };
    }
    if (
      this.forbidden.has(moduleId) ||
      requester?.principalId === "eve"
    ) {
      return {
        ok: false,
        reason: "forbidden",
        code: "DELIVERY_FORBIDDEN",
        message: `Refused ${SECRET_PATH}/${module.path}`,
      };
    }
    if (this.unavailable.has(moduleId)) {
      return {
        ok: false,
        reason: "unavailable",
        code: "DELIVERY_UNAVAILABLE",
        message: `Disk busy at ${SECRET_PATH}`,
      };
    }
    return {
      ok: true,
      moduleId,
      content: module.content,
      mediaType: "text/javascript",
      digest: module.claimedDigest ?? sri(module.content),
      graphDigest: sri(`graph:${module.content}`),
      dependencyIds: module.dependencyIds,
      pack: module.pack,
      path: module.path,
    };
  }

  summaries(): PackSummary[] {
    const packs = new Map<string, PackSummary>();
    for (const module of this.modules.values()) {
      const key = `${module.pack.name}@${module.pack.version}`;
      let pack = packs.get(key);
      if (pack === undefined) {
        pack = {
          ...module.pack,
          graphDigest: sri(key),
          modules: [],
        };
        packs.set(key, pack);
      }
      pack.modules.push({
        id: module.id,
        path: module.path,
        exportedAs: module.path === "./index.js" ? ["."] : [],
        digest: sri(module.content),
        graphDigest: sri(`graph:${module.content}`),
        dependencyIds: module.dependencyIds,
      });
    }
    return [...packs.values()];
  }
}

const MATH = { name: "@acme/math", version: "1.2.0" };
const INDEX_SOURCE =
  'import { round } from "./lib/round.js";\nexport const add = (a, b) => round(a + b); // π ≈ 3.14\n';
const ROUND_SOURCE = "export const round = (x) => Math.round(x);\n";

function memoryCatalog(): MemoryCatalog {
  return new MemoryCatalog()
    .add({
      id: "mIndex_01",
      content: INDEX_SOURCE,
      path: "./index.js",
      dependencyIds: ["mRound_02"],
      pack: MATH,
    })
    .add({
      id: "mRound_02",
      content: ROUND_SOURCE,
      path: "./lib/round.js",
      dependencyIds: [],
      pack: MATH,
    })
    .add({
      id: "mLie_03",
      content: "export default 1;\n",
      path: "./lie.js",
      dependencyIds: [],
      pack: MATH,
      claimedDigest: sri("export default 2;\n"),
    });
}

/** The memory catalog with a second pack, `other`, of one module. */
function withOtherPack(): MemoryCatalog {
  return memoryCatalog().add({
    id: "mOther_04",
    content: "export default 4;\n",
    path: "./index.js",
    dependencyIds: [],
    pack: { name: "other", version: "1.0.0" },
  });
}

/**
 * The same catalog registered to answer from memory, at once (and throwing
 * for `throwing` ids, like a broken catalog would); `authorizeDelivery`
 * must then never be called.
 */
class ImmediateCatalog extends MemoryCatalog {
  nowCalls = 0;

  constructor() {
    super();
    answerFromMemory(this, (moduleId, requester) => {
      this.nowCalls++;
      return this.answer(moduleId, requester);
    });
  }

  override authorizeDelivery(): Promise<AuthorizedDelivery | DeliveryRefusal> {
    return Promise.reject(new Error("the in-memory answer was not used"));
  }
}

function immediateCatalog(): ImmediateCatalog {
  const catalog = new ImmediateCatalog();
  for (const module of memoryCatalog().modules.values()) catalog.add(module);
  return catalog;
}

/** Every response text the suite saw, to scan for the secret path. */
const seen: string[] = [];

async function record(response: Response): Promise<Uint8Array> {
  const body = new Uint8Array(await response.arrayBuffer());
  seen.push(
    `${response.status} ${JSON.stringify([...response.headers])} ${
      new TextDecoder().decode(body)
    }`,
  );
  return body;
}

async function problemOf(response: Response): Promise<{
  code: string;
  status: number;
  detail: string;
}> {
  assert.equal(
    response.headers.get("content-type"),
    "application/problem+json",
  );
  assert.equal(response.headers.get("access-control-allow-origin"), "*");
  const body = await record(response);
  const problem = ProblemSchema.parse(
    JSON.parse(new TextDecoder().decode(body)),
  );
  assert.equal(problem.status, response.status);
  assert.equal(problem.type, `urn:cordon:error:${problem.code}`);
  assert.doesNotMatch(problem.detail, /\.$/);
  return problem;
}

Deno.test("createDeliveryHandler() serves a module's bytes with digests, pack and dependency headers", async () => {
  const handle = createDeliveryHandler(memoryCatalog());
  const response = await handle(new Request(`${BASE}/mIndex_01`));
  const body = await record(response);
  assert.equal(response.status, 200);
  assert.equal(new TextDecoder().decode(body), INDEX_SOURCE);
  const h = response.headers;
  assert.equal(h.get("content-type"), "text/javascript; charset=utf-8");
  assert.equal(h.get("content-length"), String(body.byteLength));
  assert.equal(h.get("repr-digest"), reprDigest(body));
  assert.equal(h.get("etag"), `"${sri(INDEX_SOURCE)}"`);
  assert.equal(h.get("x-cordon-graph-digest"), sri(`graph:${INDEX_SOURCE}`));
  assert.equal(h.get("x-cordon-dependencies"), "mRound_02");
  assert.equal(h.get("x-cordon-pack"), "@acme/math@1.2.0");
  assert.equal(h.get("x-content-type-options"), "nosniff");
  assert.equal(h.get("cache-control"), "public, no-cache");
  assert.equal(h.get("access-control-allow-origin"), "*");
  // Browsers on other origins may read every header (no credentials).
  assert.equal(h.get("access-control-expose-headers"), "*");
});

Deno.test("createDeliveryHandler() delivers an internal file with an empty dependency header", async () => {
  const handle = createDeliveryHandler(memoryCatalog());
  const response = await handle(new Request(`${BASE}/mRound_02`));
  const body = await record(response);
  assert.equal(new TextDecoder().decode(body), ROUND_SOURCE);
  assert.equal(response.headers.get("repr-digest"), reprDigest(body));
  assert.equal(response.headers.get("x-cordon-dependencies"), "");
});

Deno.test("createDeliveryHandler() leaves out a dependency header too long for common clients", async () => {
  // Node's fetch refuses a head over 16 KiB: a module importing 1,000
  // others would otherwise be undeliverable to it.
  const many = Array.from({ length: 1_000 }, (_, i) => `mDep${i}_0123456789`);
  const handle = createDeliveryHandler(
    memoryCatalog().add({
      id: "mWide_04",
      content: "export default 0;\n",
      path: "./wide.js",
      dependencyIds: many,
      pack: MATH,
    }),
  );
  const response = await handle(new Request(`${BASE}/mWide_04`));
  await record(response);
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("x-cordon-dependencies"), null);
  const size = [...response.headers].reduce(
    (total, [name, value]) => total + name.length + value.length + 4,
    0,
  );
  assert.ok(size < 16 * 1024, `a head of ${size} bytes`);
});

Deno.test("createDeliveryHandler() answers HEAD with the GET headers and no body", async () => {
  const handle = createDeliveryHandler(memoryCatalog());
  for (const url of [`${BASE}/mIndex_01`, BASE, `${BASE}/nope`]) {
    const get = await handle(new Request(url));
    await record(get);
    const head = await handle(new Request(url, { method: "HEAD" }));
    assert.equal(head.body, null);
    assert.equal(head.status, get.status);
    assert.deepEqual([...head.headers], [...get.headers]);
    await record(head);
  }
});

Deno.test("createDeliveryHandler() answers 412 PRECONDITION_FAILED to an If-Match that names no current tag, compared the strong way", async () => {
  const handle = createDeliveryHandler(memoryCatalog());
  const etag = `"${sri(INDEX_SOURCE)}"`;
  const listing = await handle(new Request(BASE));
  const listingTag = listing.headers.get("etag")!;
  await listing.body?.cancel();
  // [url, If-Match, If-None-Match, status]: If-Match is evaluated first
  // (RFC 9110 sections 13.1.1 and 13.2.2), a weak tag never matches it,
  // and an answer that is no 2xx without it ignores it (section 13.2.1).
  const cases: [string, string, string | null, number][] = [
    [`${BASE}/mIndex_01`, etag, null, 200],
    [`${BASE}/mIndex_01`, `"x", ${etag}`, null, 200],
    [`${BASE}/mIndex_01`, "*", null, 200],
    [`${BASE}/mIndex_01?digest=${sri(INDEX_SOURCE)}`, etag, null, 200],
    [`${BASE}/mIndex_01`, etag, etag, 304],
    [`${BASE}/mIndex_01`, `W/${etag}`, null, 412],
    [`${BASE}/mIndex_01`, `"${sri(ROUND_SOURCE)}"`, null, 412],
    [`${BASE}/mIndex_01`, etag.slice(1, -1), null, 412],
    [`${BASE}/mIndex_01`, '"x"', etag, 412],
    [`${BASE}/mIndex_01?digest=${sri(INDEX_SOURCE)}`, '"x"', null, 412],
    [`${BASE}/mMissing_99`, '"x"', null, 404],
    [`${BASE}/mIndex_01?digest=${sri(ROUND_SOURCE)}`, '"x"', null, 404],
    [BASE, listingTag, null, 200],
    [BASE, "*", null, 200],
    [BASE, '"x"', null, 412],
    [`${BASE}?packs=other`, listingTag, null, 412],
  ];
  for (const [url, ifMatch, ifNoneMatch, status] of cases) {
    for (const method of ["GET", "HEAD"]) {
      const headers: Record<string, string> = { "if-match": ifMatch };
      if (ifNoneMatch !== null) headers["if-none-match"] = ifNoneMatch;
      const response = await handle(new Request(url, { method, headers }));
      const label = `${method} ${url} If-Match ${ifMatch}`;
      assert.equal(response.status, status, label);
      if (status !== 412) {
        await record(response);
      } else if (method === "HEAD") {
        assert.equal(response.body, null, label);
      } else {
        const problem = await problemOf(response);
        assert.equal(problem.code, "PRECONDITION_FAILED", label);
      }
    }
  }
});

Deno.test("createDeliveryHandler() reads no Range and no date condition: every such request gets the whole 200", async () => {
  const handle = createDeliveryHandler(memoryCatalog());
  const whole = new TextEncoder().encode(INDEX_SOURCE);
  for (
    const headers of [
      { range: "bytes=0-3" },
      { range: "bytes=-5" },
      { range: "bytes=0-0,2-3" },
      { range: "bytes=0-3", "if-range": `"${sri(INDEX_SOURCE)}"` },
      { "if-modified-since": "Fri, 01 Jan 2100 00:00:00 GMT" },
      { "if-unmodified-since": "Thu, 01 Jan 1970 00:00:00 GMT" },
    ] as Record<string, string>[]
  ) {
    const response = await handle(
      new Request(`${BASE}/mIndex_01`, { headers }),
    );
    const label = JSON.stringify(headers);
    assert.equal(response.status, 200, label);
    assert.equal(response.headers.get("last-modified"), null, label);
    assert.equal(response.headers.get("accept-ranges"), null, label);
    assert.equal(response.headers.get("content-range"), null, label);
    assert.deepEqual(await record(response), whole, label);
  }
});

Deno.test("createDeliveryHandler() answers 304 to a matching If-None-Match, weak, listed or *", async () => {
  const handle = createDeliveryHandler(memoryCatalog());
  const etag = `"${sri(INDEX_SOURCE)}"`;
  for (
    const tag of [
      etag,
      `W/${etag}`,
      `"other", ${etag}`,
      `"a,b" ,W/${etag}`,
      "*",
    ]
  ) {
    const response = await handle(
      new Request(`${BASE}/mIndex_01`, { headers: { "if-none-match": tag } }),
    );
    assert.equal(response.status, 304, tag);
    assert.equal(response.body, null);
    assert.equal(response.headers.get("etag"), etag);
    assert.equal(response.headers.get("cache-control"), "public, no-cache");
    await record(response);
  }
  for (
    const tag of [
      `"${sri(ROUND_SOURCE)}"`,
      etag.slice(1, -1),
      `"x", ${etag.slice(0, -2)}"`,
      // "*" stands alone (RFC 9110 section 13.1.2): in a list it is malformed.
      `"x", *`,
      `*, "x"`,
      "W/*",
      // A malformed field matches nothing, even with the tag in it.
      `${etag}, sha256-x`,
      `${etag}"x"`,
      `W/, ${etag}`,
    ]
  ) {
    const response = await handle(
      new Request(`${BASE}/mIndex_01`, { headers: { "if-none-match": tag } }),
    );
    assert.equal(response.status, 200, tag);
    await record(response);
  }
});

Deno.test("createDeliveryHandler() answers a catalog's in-memory answer exactly as through authorizeDelivery", async () => {
  const etag = `"${sri(INDEX_SOURCE)}"`;
  const requests: [string, RequestInit][] = [
    [`${BASE}/mIndex_01`, {}],
    [`${BASE}/mIndex_01`, { headers: { "if-none-match": etag } }],
    [`${BASE}/mIndex_01`, { method: "HEAD" }],
    [`${BASE}/mIndex_01?digest=${encodeURIComponent(sri(INDEX_SOURCE))}`, {}],
    [`${BASE}/mIndex_01?digest=sha256-old`, {}],
    [`${BASE}/mIndex_01`, { headers: { "x-user": "eve" } }],
    [`${BASE}/mRound_02`, {}],
    [`${BASE}/mLie_03`, {}],
    [`${BASE}/nope`, {}],
    [`${BASE}/mGone_04`, {}],
    [`${BASE}/mBusy_05`, {}],
  ];
  const hooks = [
    {},
    {
      requester: (r: Request) => ({
        principalId: r.headers.get("x-user") ?? "",
      }),
    },
    {
      requester: (r: Request) =>
        Promise.resolve({ principalId: r.headers.get("x-user") ?? "" }),
    },
  ];
  for (const options of hooks) {
    const eager = immediateCatalog();
    const lazy = memoryCatalog();
    for (const catalog of [eager, lazy]) {
      catalog.throwing.add("mGone_04");
      catalog.unavailable.add("mBusy_05");
      catalog.add({ ...catalog.modules.get("mRound_02")!, id: "mBusy_05" });
    }
    const answers = [];
    for (const catalog of [eager, lazy]) {
      const handle = createDeliveryHandler(catalog, options);
      const seenHere = [];
      for (const [url, init] of requests) {
        const response = await handle(new Request(url, init));
        const body = await record(response);
        seenHere.push([
          response.status,
          [...response.headers],
          new TextDecoder().decode(body),
        ]);
      }
      answers.push(seenHere);
    }
    assert.deepEqual(answers[0], answers[1]);
    assert.deepEqual(
      answers[0]!.map(([status]) => status),
      // Only a requester hook tells the catalog who "eve" is.
      [200, 304, 200, 200, 404, "requester" in options ? 403 : 200]
        .concat([200, 503, 404, 503, 503]),
    );
    // Every request asked the catalog, through the immediate path only.
    assert.equal(eager.nowCalls, requests.length);
    assert.deepEqual(eager.requesters, lazy.requesters);
  }
});

Deno.test("createDeliveryHandler() hands out a fresh response each time, which the caller may change", async () => {
  const handle = createDeliveryHandler(memoryCatalog());
  const etag = `"${sri(INDEX_SOURCE)}"`;
  for (
    const init of [
      { headers: { "if-none-match": etag } },
      { method: "HEAD" },
      {},
    ]
  ) {
    const first = await handle(new Request(`${BASE}/mIndex_01`, init));
    first.headers.set("set-cookie", "session=ada");
    first.headers.delete("etag");
    const second = await handle(new Request(`${BASE}/mIndex_01`, init));
    assert.notEqual(second, first);
    assert.equal(second.headers.get("set-cookie"), null);
    assert.equal(second.headers.get("etag"), etag);
    await record(first);
    await record(second);
  }
});

Deno.test("createDeliveryHandler() serves the new bytes after a re-install behind the same id", async () => {
  const catalog = memoryCatalog();
  const handle = createDeliveryHandler(catalog);
  const first = await handle(new Request(`${BASE}/mRound_02`));
  await record(first);
  const oldTag = first.headers.get("etag")!;
  const upgraded = "export const round = (x) => Math.round(x * 100) / 100;\n";
  catalog.add({
    ...catalog.modules.get("mRound_02")!,
    content: upgraded,
    pack: { ...MATH, version: "1.3.0" },
  });
  const second = await handle(
    new Request(`${BASE}/mRound_02`, { headers: { "if-none-match": oldTag } }),
  );
  const body = await record(second);
  assert.equal(second.status, 200);
  assert.equal(new TextDecoder().decode(body), upgraded);
  assert.equal(second.headers.get("etag"), `"${sri(upgraded)}"`);
  assert.equal(second.headers.get("x-cordon-pack"), "@acme/math@1.3.0");
  assert.equal(second.headers.get("repr-digest"), reprDigest(body));
});

Deno.test("createDeliveryHandler() marks a URL pinned to the current digest immutable", async () => {
  const handle = createDeliveryHandler(memoryCatalog());
  const digest = sri(INDEX_SOURCE);
  for (
    const query of [
      `digest=${digest}`,
      `digest=${encodeURIComponent(digest)}`,
      `v=1&digest=${encodeURIComponent(digest)}`,
    ]
  ) {
    const response = await handle(new Request(`${BASE}/mIndex_01?${query}`));
    const body = await record(response);
    assert.equal(response.status, 200, query);
    assert.equal(new TextDecoder().decode(body), INDEX_SOURCE);
    assert.equal(
      response.headers.get("cache-control"),
      "public, max-age=31536000, immutable",
    );
  }
  const revalidated = await handle(
    new Request(`${BASE}/mIndex_01?digest=${encodeURIComponent(digest)}`, {
      headers: { "if-none-match": `"${digest}"` },
    }),
  );
  assert.equal(revalidated.status, 304);
  assert.equal(
    revalidated.headers.get("cache-control"),
    "public, max-age=31536000, immutable",
  );
  await record(revalidated);
});

Deno.test("createDeliveryHandler() reads a digest given twice as one pin only when both are the same", async () => {
  const handle = createDeliveryHandler(memoryCatalog());
  const digest = encodeURIComponent(sri(INDEX_SOURCE));
  const same = await handle(
    new Request(`${BASE}/mIndex_01?digest=${digest}&digest=${digest}`),
  );
  assert.equal(same.status, 200);
  assert.equal(
    same.headers.get("cache-control"),
    "public, max-age=31536000, immutable",
  );
  await record(same);
  for (
    const query of [
      `digest=${digest}&digest=sha256-old`,
      `digest=sha256-old&digest=${digest}`,
    ]
  ) {
    const response = await handle(new Request(`${BASE}/mIndex_01?${query}`));
    assert.equal(response.status, 404, query);
    const problem = ProblemSchema.parse(await response.json());
    assert.equal(problem.code, "MODULE_NOT_FOUND", query);
  }
});

Deno.test("createDeliveryHandler() answers 404 to a URL pinned to a digest that is no longer installed", async () => {
  const handle = createDeliveryHandler(memoryCatalog());
  const stale = sri("export const add = () => 0;\n");
  for (
    const query of [
      `digest=${encodeURIComponent(stale)}`,
      "digest=",
      "digest",
      "digest=%E0%A4%A",
      `digest=${sri(INDEX_SOURCE).replace("+", " ")}`,
    ]
  ) {
    const response = await handle(new Request(`${BASE}/mIndex_01?${query}`));
    assert.equal(response.status, 404, query);
    assert.equal(response.headers.get("cache-control"), "no-store");
    const problem = await problemOf(response);
    assert.equal(problem.code, "MODULE_NOT_FOUND");
    assert.match(problem.detail, /no longer installed: list the catalog again/);
  }
});

Deno.test("createDeliveryHandler() lists the catalog as JSON with an entity tag", async () => {
  const catalog = memoryCatalog();
  const handle = createDeliveryHandler(catalog);
  const response = await handle(new Request(BASE));
  const body = await record(response);
  assert.equal(response.status, 200);
  assert.equal(
    response.headers.get("content-type"),
    "application/json; charset=utf-8",
  );
  assert.equal(response.headers.get("cache-control"), "no-cache");
  const listing = CatalogListingSchema.parse(
    JSON.parse(new TextDecoder().decode(body)),
  );
  assert.deepEqual(listing, { packs: catalog.summaries() });
  const etag = response.headers.get("etag")!;
  assert.equal(
    etag,
    `"sha256-${createHash("sha256").update(body).digest("base64")}"`,
  );

  const again = await handle(
    new Request(BASE, { headers: { "if-none-match": etag } }),
  );
  assert.equal(again.status, 304);
  assert.equal(again.headers.get("etag"), etag);
  await record(again);

  catalog.modules.delete("mLie_03");
  const changed = await handle(
    new Request(BASE, { headers: { "if-none-match": etag } }),
  );
  assert.equal(changed.status, 200);
  assert.notEqual(changed.headers.get("etag"), etag);
  const changedListing = JSON.parse(
    new TextDecoder().decode(await record(changed)),
  );
  assert.equal(changedListing.packs[0].modules.length, 2);
});

Deno.test("createDeliveryHandler() answers the listing at its prefix with a trailing slash, where nginx's location /x/ redirects /x", async () => {
  const catalog = memoryCatalog();
  for (const prefix of [undefined, "/m"]) {
    const handle = createDeliveryHandler(
      catalog,
      prefix === undefined ? {} : { prefix },
    );
    const base = `http://localhost${prefix ?? "/api/sandbox-modules"}`;
    const plain = await handle(new Request(base));
    const slashed = await handle(new Request(`${base}/`));
    assert.equal(slashed.status, 200, base);
    assert.equal(slashed.headers.get("etag"), plain.headers.get("etag"));
    assert.deepEqual(await record(slashed), await record(plain));
    const head = await handle(new Request(`${base}/`, { method: "HEAD" }));
    assert.equal(head.status, 200);
    await record(head);
  }
});

Deno.test("createDeliveryHandler() answers 404 to unknown ids and paths outside its prefix", async () => {
  const handle = createDeliveryHandler(memoryCatalog());
  const unknown = await handle(new Request(`${BASE}/mNope_99`));
  assert.equal(unknown.status, 404);
  assert.equal((await problemOf(unknown)).code, "MODULE_NOT_FOUND");
  for (
    const url of [
      "http://localhost/",
      "http://localhost/api/sandbox-modulesX",
      "http://localhost/api",
      "http://localhost/api/sandbox-modules-x/mIndex_01",
    ]
  ) {
    const response = await handle(new Request(url, { method: "DELETE" }));
    assert.equal(response.status, 404, url);
    assert.equal((await problemOf(response)).code, "MODULE_NOT_FOUND");
  }
});

Deno.test("createDeliveryHandler() answers 400 REQUEST_INVALID to a Host header that is not host[:port], which would move the request's target", async () => {
  const infos: DeliveryRequestInfo[] = [];
  const handle = createDeliveryHandler(memoryCatalog(), {
    onRequest: (info) => infos.push(info),
  });
  // Deno.serve builds Request.url from the Host header as sent, so
  // `GET /mIndex_01` with `Host: h/api/sandbox-modules` arrives as below.
  for (
    const [host, target] of [
      ["h/api/sandbox-modules", "/mIndex_01"],
      ["h/api", "/sandbox-modules"],
      ["h?x=", "/api/sandbox-modules/mIndex_01"],
      ["user@h", "/api/sandbox-modules/mIndex_01"],
      ["a, b", "/api/sandbox-modules/mIndex_01"],
    ] as const
  ) {
    // A Host no URL can hold (Deno's server refuses it itself) is sent
    // beside a plain URL: the rule refuses it all the same.
    const url = URL.canParse(`http://${host}${target}`)
      ? `http://${host}${target}`
      : `${BASE}/mIndex_01`;
    const response = await handle(new Request(url, { headers: { host } }));
    assert.equal(response.status, 400, host);
    assert.equal((await problemOf(response)).code, "REQUEST_INVALID");
    assert.equal(infos.at(-1)?.status, 400);
  }
  for (const host of ["localhost", "127.0.0.1:8000", "[::1]:80", "h.example"]) {
    const response = await handle(
      new Request(`${BASE}/mIndex_01`, { headers: { host } }),
    );
    assert.equal(response.status, 200, host);
    await record(response);
  }
});

Deno.test("createDeliveryHandler() answers 404 MODULE_ID_INVALID to malformed ids without echoing them", async () => {
  const handle = createDeliveryHandler(memoryCatalog());
  const ids = [
    "a/b",
    "..",
    "%2e%2e",
    "%2E%2E%2Fetc",
    "mIndex_01%2F",
    "%00",
    "%ZZ",
    "%E0%A4%A",
    "%C0%AF",
    "a%252e",
    "a.b",
    "a%20b",
    "x".repeat(129),
    "%5C",
    "m%C3%A9",
    "mIndex_01%00",
  ];
  for (const id of ids) {
    const request = new Request(`${BASE}/${id}`);
    const response = await handle(request);
    assert.equal(response.status, 404, id);
    const problem = await problemOf(response);
    // The URL parser of `new Request` resolves `..` and backslashes before
    // the handler sees them; what still reaches the id route is malformed.
    const reachesIdRoute = new URL(request.url).pathname.startsWith(
      "/api/sandbox-modules/",
    );
    assert.equal(
      problem.code,
      reachesIdRoute ? "MODULE_ID_INVALID" : "MODULE_NOT_FOUND",
      id,
    );
    if (id.length > 2) assert.ok(!problem.detail.includes(id), id);
  }
  // One decoding: an escaped valid id is still that id.
  const escaped = await handle(new Request(`${BASE}/mIndex%5F01`));
  assert.equal(escaped.status, 200);
  await record(escaped);
});

Deno.test("createDeliveryHandler() answers 403 to a refusal without forwarding the catalog's message", async () => {
  const catalog = memoryCatalog();
  catalog.forbidden.add("mRound_02");
  const handle = createDeliveryHandler(catalog);
  const response = await handle(new Request(`${BASE}/mRound_02`));
  assert.equal(response.status, 403);
  const problem = await problemOf(response);
  assert.equal(problem.code, "DELIVERY_FORBIDDEN");
  assert.ok(!problem.detail.includes("Refused"));
});

Deno.test("createDeliveryHandler() answers a refusal 403 DELIVERY_FORBIDDEN whatever the method, pin or conditional headers, with no tag or digest of the module", async () => {
  const catalog = memoryCatalog();
  catalog.forbidden.add("mRound_02");
  const handle = createDeliveryHandler(catalog);
  const digest = sri(ROUND_SOURCE);
  const pin = `?digest=${encodeURIComponent(digest)}`;
  const variants: [string, RequestInit][] = [
    ["", {}],
    ["", { method: "HEAD" }],
    [pin, {}],
    [pin, { headers: { "if-none-match": "*" } }],
    ["", { headers: { "if-match": '"other"' } }],
  ];
  for (const [query, init] of variants) {
    const response = await handle(
      new Request(`${BASE}/mRound_02${query}`, init),
    );
    assert.equal(response.status, 403);
    assert.equal(response.headers.get("etag"), null);
    assert.equal(response.headers.get("repr-digest"), null);
    const body = new TextDecoder().decode(await record(response));
    assert.ok(!body.includes(digest.slice("sha256-".length)));
    if (init.method !== "HEAD") {
      assert.equal(JSON.parse(body).code, "DELIVERY_FORBIDDEN");
    }
  }
});

Deno.test("createDeliveryHandler() passes the requester to the catalog and marks answers private", async () => {
  const catalog = memoryCatalog();
  const handle = createDeliveryHandler(catalog, {
    requester: (request) => ({
      principalId: request.headers.get("x-user") ?? "anonymous",
      tenantId: "t1",
    }),
  });
  const allowed = await handle(
    new Request(`${BASE}/mIndex_01`, { headers: { "x-user": "ada" } }),
  );
  assert.equal(allowed.status, 200);
  assert.equal(allowed.headers.get("cache-control"), "private, no-cache");
  await record(allowed);
  const pinned = await handle(
    new Request(
      `${BASE}/mIndex_01?digest=${encodeURIComponent(sri(INDEX_SOURCE))}`,
    ),
  );
  assert.equal(pinned.headers.get("cache-control"), "private, no-cache");
  await record(pinned);
  const refused = await handle(
    new Request(`${BASE}/mIndex_01`, { headers: { "x-user": "eve" } }),
  );
  assert.equal(refused.status, 403);
  await problemOf(refused);
  // The catalog is given copies with a null prototype.
  assert.deepEqual(catalog.requesters.map((requester) => ({ ...requester })), [
    { principalId: "ada", tenantId: "t1" },
    { principalId: "anonymous", tenantId: "t1" },
    { principalId: "eve", tenantId: "t1" },
  ]);
});

/**
 * Whether a private cache (a browser's) may answer a later request with a
 * stored response without asking the server (RFC 9111 §4.2): it is fresh
 * for a while, and `no-cache` does not make every use wait for the server.
 */
function reusableWithoutAsking(response: Response): boolean {
  const directives = (response.headers.get("cache-control") ?? "")
    .toLowerCase().split(",").map((part) => part.trim());
  if (directives.includes("no-cache") || directives.includes("no-store")) {
    return false;
  }
  return directives.some((directive) =>
    /^max-age=\d+$/.test(directive) && directive !== "max-age=0"
  );
}

Deno.test("createDeliveryHandler() with a requester hook has every answer to a pinned URL revalidated, so a client cache never hands one requester's module to another", async () => {
  const handle = createDeliveryHandler(memoryCatalog(), {
    requester: (request) => ({
      principalId: request.headers.get("x-user") ?? "anonymous",
    }),
  });
  const pinned = `${BASE}/mIndex_01?digest=${
    encodeURIComponent(sri(INDEX_SOURCE))
  }`;
  const asAda: RequestInit[] = [
    { headers: { "x-user": "ada" } },
    { method: "HEAD", headers: { "x-user": "ada" } },
    { headers: { "x-user": "ada", "if-none-match": "*" } },
  ];
  for (const init of asAda) {
    const response = await handle(new Request(pinned, init));
    assert.ok(response.status === 200 || response.status === 304);
    assert.equal(reusableWithoutAsking(response), false);
    assert.match(response.headers.get("cache-control") ?? "", /\bprivate\b/);
    await record(response);
  }
  // What the client cache must then do: ask, and be refused.
  const eve = await handle(
    new Request(pinned, { headers: { "x-user": "eve", "if-none-match": "*" } }),
  );
  assert.equal(eve.status, 403);
  assert.equal((await problemOf(eve)).code, "DELIVERY_FORBIDDEN");
});

Deno.test("createDeliveryHandler() without a requester hook still lets any cache keep a pinned URL", async () => {
  const handle = createDeliveryHandler(memoryCatalog());
  const response = await handle(
    new Request(
      `${BASE}/mIndex_01?digest=${encodeURIComponent(sri(INDEX_SOURCE))}`,
    ),
  );
  assert.equal(reusableWithoutAsking(response), true);
  await record(response);
});

Deno.test("createDeliveryHandler() answers 503 when the module is unavailable or a hook fails", async (t) => {
  const catalog = memoryCatalog();
  catalog.unavailable.add("mIndex_01");
  catalog.throwing.add("mRound_02");
  const handle = createDeliveryHandler(catalog);
  await t.step("an unavailable refusal", async () => {
    const response = await handle(new Request(`${BASE}/mIndex_01`));
    assert.equal(response.status, 503);
    assert.equal(response.headers.get("retry-after"), "5");
    assert.equal((await problemOf(response)).code, "DELIVERY_UNAVAILABLE");
  });
  await t.step("a catalog that throws", async () => {
    const response = await handle(new Request(`${BASE}/mRound_02`));
    assert.equal(response.status, 503);
    assert.equal(response.headers.get("retry-after"), "5");
    assert.equal((await problemOf(response)).code, "DELIVERY_UNAVAILABLE");
  });
  await t.step("a catalog whose digest does not match its bytes", async () => {
    const response = await handle(new Request(`${BASE}/mLie_03`));
    assert.equal(response.status, 503);
    assert.equal(response.headers.get("retry-after"), "5");
    assert.equal((await problemOf(response)).code, "DELIVERY_UNAVAILABLE");
  });
  await t.step("a catalog that answers with another module", async () => {
    const other = memoryCatalog();
    const answer = other.authorizeDelivery.bind(other);
    other.authorizeDelivery = () => answer("mRound_02");
    const response = await createDeliveryHandler(other)(
      new Request(`${BASE}/mIndex_01`),
    );
    assert.equal(response.status, 503);
    assert.equal((await problemOf(response)).code, "DELIVERY_UNAVAILABLE");
  });
  await t.step("a requester hook that throws", async () => {
    const failing = createDeliveryHandler(memoryCatalog(), {
      requester: () =>
        Promise.reject(new Error(`Cannot read ${SECRET_PATH}/tokens`)),
    });
    const response = await failing(new Request(`${BASE}/mIndex_01`));
    assert.equal(response.status, 503);
    assert.equal(response.headers.get("retry-after"), "5");
    await problemOf(response);
  });
  await t.step("a listing that throws", async () => {
    const broken = memoryCatalog();
    broken.summaries = () => {
      throw new Error(`Cannot list ${SECRET_PATH}`);
    };
    const response = await createDeliveryHandler(broken)(new Request(BASE));
    assert.equal(response.status, 503);
    assert.equal(response.headers.get("retry-after"), "5");
    await problemOf(response);
  });
});

Deno.test("createDeliveryHandler() answers 503 when requester answers no requester, at once or later, and never asks the policy", async () => {
  let asked = 0;
  const { catalog } = await tenantHandler(() => {
    asked++;
    return true;
  });
  const id = catalog.summaries()[0]!.modules[0]!.id;
  const answers: Record<string, unknown> = {
    "a string": "tenant-a",
    "a number": 7,
    "a tenant id that is a number": { tenantId: 7 },
    "a principal id that is an object": { principalId: {} },
  };
  for (const [name, answer] of Object.entries(answers)) {
    for (const later of [false, true]) {
      const handle = createDeliveryHandler(catalog, {
        requester: () =>
          (later ? Promise.resolve(answer) : answer) as Requester,
      });
      for (const url of [`${BASE}/${id}`, BASE]) {
        const response = await handle(new Request(url));
        const what = `${name}${later ? " later" : ""} at ${url}`;
        assert.equal(response.status, 503, what);
        assert.equal((await problemOf(response)).code, "DELIVERY_UNAVAILABLE");
      }
    }
  }
  assert.equal(asked, 0);
});

Deno.test("createDeliveryHandler() answers 405 with Allow to other methods and 204 to a preflight", async () => {
  const handle = createDeliveryHandler(memoryCatalog());
  for (const url of [BASE, `${BASE}/mIndex_01`]) {
    for (const method of ["POST", "PUT", "DELETE", "PATCH"]) {
      const response = await handle(new Request(url, { method }));
      assert.equal(response.status, 405, `${method} ${url}`);
      assert.equal(response.headers.get("allow"), "GET, HEAD, OPTIONS");
      assert.equal((await problemOf(response)).code, "METHOD_NOT_ALLOWED");
    }
    const preflight = await handle(
      new Request(url, {
        method: "OPTIONS",
        headers: {
          origin: "https://app.example",
          "access-control-request-method": "GET",
        },
      }),
    );
    assert.equal(preflight.status, 204);
    assert.equal(preflight.body, null);
    assert.equal(preflight.headers.get("access-control-allow-origin"), "*");
    // Every conditional header the routes honour, so a page on another
    // origin can revalidate (304) and pin a version (412).
    assert.deepEqual(
      preflight.headers.get("access-control-allow-headers")!.split(", "),
      ["If-None-Match", "If-Match", "Authorization"],
    );
    assert.equal(
      preflight.headers.get("access-control-allow-methods"),
      "GET, HEAD",
    );
    await record(preflight);
  }
});

Deno.test("createDeliveryHandler() lets scripts on other origins send the request headers corsRequestHeaders names, and refuses a name that is no field name", async () => {
  const handle = createDeliveryHandler(memoryCatalog(), {
    corsRequestHeaders: ["X-Tenant", "authorization"],
  });
  const preflight = await handle(
    new Request(BASE, {
      method: "OPTIONS",
      headers: {
        origin: "https://app.example",
        "access-control-request-method": "GET",
        "access-control-request-headers": "x-tenant",
      },
    }),
  );
  assert.equal(preflight.status, 204);
  assert.equal(
    preflight.headers.get("access-control-allow-headers"),
    "If-None-Match, If-Match, Authorization, X-Tenant",
  );
  await record(preflight);
  // "*" is any header to a browser; a name given twice is listed once.
  const wildcard = await createDeliveryHandler(memoryCatalog(), {
    corsRequestHeaders: ["*", "X-Tenant", "x-tenant"],
  })(new Request(BASE, { method: "OPTIONS" }));
  assert.equal(
    wildcard.headers.get("access-control-allow-headers"),
    "If-None-Match, If-Match, Authorization, *, X-Tenant",
  );
  await record(wildcard);
  // A hole in a sparse array is no name either, though every() skips it.
  // deno-lint-ignore no-sparse-arrays
  const holed = [, "X-Tenant"];
  for (const bad of [["x tenant"], ["a\r\nb"], [""], "X-Tenant", [1], holed]) {
    assert.throws(
      () =>
        createDeliveryHandler(memoryCatalog(), {
          corsRequestHeaders: bad as string[],
        }),
      (error: unknown) =>
        error instanceof TypeError &&
        error.message.startsWith(
          "Cannot create a delivery handler: corsRequestHeaders must be an array of header field names",
        ) && !error.message.includes("\r"),
    );
  }
});

Deno.test("createDeliveryHandler() serves under a custom prefix and rejects a malformed one", async () => {
  const handle = createDeliveryHandler(memoryCatalog(), { prefix: "/m" });
  const response = await handle(new Request("http://localhost/m/mIndex_01"));
  assert.equal(response.status, 200);
  await record(response);
  const listing = await handle(new Request("http://localhost/m"));
  assert.equal(listing.status, 200);
  await record(listing);
  const old = await handle(new Request(`${BASE}/mIndex_01`));
  assert.equal(old.status, 404);
  await record(old);
  const root = createDeliveryHandler(memoryCatalog(), { prefix: "" });
  const atRoot = await root(new Request("http://localhost/mRound_02"));
  assert.equal(atRoot.status, 200);
  await record(atRoot);
  const rootListing = await root(new Request("http://localhost/"));
  assert.equal(rootListing.status, 200);
  await record(rootListing);
  for (const prefix of ["api", "/api/", "/a?b", "/a b", "/a#b"]) {
    assert.throws(
      () => createDeliveryHandler(memoryCatalog(), { prefix }),
      TypeError,
      prefix,
    );
  }
});

Deno.test("createDeliveryHandler() refuses a prefix no request's URL holds as written, naming the form that arrives, where it then answered every request 404", async () => {
  const cases = [
    ["/é", "/%C3%A9"],
    ["/a/../m", "/m"],
    ["/%2e%2e/m", "/m"],
    ["/a/./m", "/a/m"],
    ["/a\\m", "/a/m"],
    ["/{m}", "/%7Bm%7D"],
  ] as const;
  for (const [prefix, arrives] of cases) {
    assert.throws(
      () => createDeliveryHandler(memoryCatalog(), { prefix }),
      {
        name: "TypeError",
        message:
          `Cannot create a delivery handler: prefix must be written as a request's URL holds it: ${
            JSON.stringify(prefix)
          } arrives as ${JSON.stringify(arrives)}`,
      },
      prefix,
    );
  }
  const encoded = createDeliveryHandler(memoryCatalog(), { prefix: "/%C3%A9" });
  const listing = await encoded(new Request("http://localhost/é"));
  assert.equal(listing.status, 200);
  await record(listing);
});

Deno.test("createDeliveryHandler() refuses a misspelt option and hooks that are not functions", () => {
  assert.throws(
    () => createDeliveryHandler(memoryCatalog(), { prefx: "/m" } as never),
    {
      name: "TypeError",
      message:
        "Cannot create a delivery handler: unknown option prefx; did you mean prefix?",
    },
  );
  assert.throws(
    () => createDeliveryHandler(memoryCatalog(), { requester: {} as never }),
    {
      name: "TypeError",
      message: "Cannot create a delivery handler: requester must be a function",
    },
  );
});

Deno.test("createDeliveryHandler() reports each request once, with its path and no query", async () => {
  const infos: DeliveryRequestInfo[] = [];
  const handle = createDeliveryHandler(memoryCatalog(), {
    onRequest: (info) => infos.push(info),
  });
  await record(await handle(new Request(`${BASE}/mIndex_01?digest=x`)));
  await record(
    await handle(new Request(`${BASE}/mIndex_01`, { method: "HEAD" })),
  );
  await record(await handle(new Request(BASE)));
  await record(
    await handle(new Request("http://localhost/other", { method: "POST" })),
  );
  assert.deepEqual(
    infos.map(({ durationMs, ...rest }) => {
      assert.ok(durationMs >= 0);
      return rest;
    }),
    [
      {
        method: "GET",
        path: "/api/sandbox-modules/mIndex_01",
        route: "module",
        status: 404,
        code: "MODULE_NOT_FOUND",
      },
      {
        method: "HEAD",
        path: "/api/sandbox-modules/mIndex_01",
        route: "module",
        status: 200,
      },
      {
        method: "GET",
        path: "/api/sandbox-modules",
        route: "listing",
        status: 200,
      },
      {
        method: "POST",
        path: "/other",
        route: "none",
        status: 404,
        code: "MODULE_NOT_FOUND",
      },
    ],
  );
  const throwing = createDeliveryHandler(memoryCatalog(), {
    onRequest: () => {
      throw new Error("log sink down");
    },
  });
  const response = await throwing(new Request(`${BASE}/mIndex_01`));
  assert.equal(response.status, 200);
  await record(response);
});

Deno.test("createDeliveryHandler() answers as without it when an async onRequest rejects, and leaves the rejection handled", async () => {
  let calls = 0;
  const handle = createDeliveryHandler(memoryCatalog(), {
    onRequest: () => {
      calls++;
      return Promise.reject(new Error("log sink down")) as never;
    },
  });
  let response: Response | undefined;
  const unhandled = await unhandledDuring(async () => {
    response = await handle(new Request(`${BASE}/mIndex_01`));
  });
  assert.deepEqual(unhandled, []);
  assert.equal(calls, 1);
  assert.equal(response?.status, 200);
  await record(response!);
});

Deno.test("createDeliveryHandler() lists a user catalog's pack once for a thenable that answers twice, and answers 503 to a listing whose summaries() answers a promise, leaving no rejection unhandled", async () => {
  const twice = new class extends MemoryCatalog {
    override authorizeDelivery(moduleId: string, requester?: Requester) {
      const answer = this.answer(moduleId, requester);
      // A thenable of the platform's that calls back twice.
      return {
        then(resolve: (value: unknown) => void) {
          resolve(answer);
          resolve(null);
        },
      } as unknown as Promise<AuthorizedDelivery>;
    }
  }();
  for (const module of memoryCatalog().modules.values()) twice.add(module);
  const asyncSummaries = new class extends MemoryCatalog {
    override summaries(): PackSummary[] {
      return Promise.reject(new Error("listing store down")) as never;
    }
  }();
  const requester = () => ({ tenantId: "t" });
  const statuses: number[] = [];
  let listed: unknown;
  const unhandled = await unhandledDuring(async () => {
    for (const catalog of [twice, asyncSummaries]) {
      const handle = createDeliveryHandler(catalog, { requester });
      const response = await handle(new Request(BASE));
      statuses.push(response.status);
      if (response.ok) listed = await response.json();
      else await response.body?.cancel();
    }
  });
  assert.deepEqual(unhandled, []);
  assert.deepEqual(statuses, [200, 503]);
  assert.deepEqual(
    (listed as { packs: { name: string }[] }).packs.map((pack) => pack.name),
    [MATH.name],
  );
});

Deno.test("createDeliveryHandler() answers every request again after many concurrent ones", async () => {
  const handle = createDeliveryHandler(memoryCatalog());
  const responses = await Promise.all(
    Array.from(
      { length: 200 },
      (_, i) =>
        handle(new Request(`${BASE}/${i % 2 ? "mIndex_01" : "mRound_02"}`)),
    ),
  );
  const bodies = await Promise.all(responses.map(record));
  for (const [i, body] of bodies.entries()) {
    assert.equal(
      new TextDecoder().decode(body),
      i % 2 ? INDEX_SOURCE : ROUND_SOURCE,
    );
  }
});

Deno.test("createDeliveryHandler() accepts exactly the ids ModuleIdSchema accepts", async () => {
  const handle = createDeliveryHandler(memoryCatalog());
  let state = 0x9e3779b9;
  const next = () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 0x1_0000_0000;
  };
  const alphabet = [..."Aa0_-.~ %/\\é\u0000\n"];
  // The empty id is the listing's path (`{prefix}/`), not an id.
  const candidates = ["a", "x".repeat(128), "x".repeat(129), "-_-"];
  for (let i = 0; i < 400; i++) {
    const length = 1 + Math.floor(next() * 140);
    const plain = next() < 0.5;
    candidates.push(
      Array.from(
        { length },
        () =>
          plain
            ? "Aa0_-"[Math.floor(next() * 5)]
            : alphabet[Math.floor(next() * alphabet.length)],
      ).join(""),
    );
  }
  let valid = 0;
  for (const id of candidates) {
    const response = await handle(
      new Request(`${BASE}/${encodeURIComponent(id)}`),
    );
    const code = (await problemOf(response)).code;
    const schemaAccepts = ModuleIdSchema.safeParse(id).success;
    if (schemaAccepts) valid++;
    assert.equal(
      code,
      schemaAccepts ? "MODULE_NOT_FOUND" : "MODULE_ID_INVALID",
      JSON.stringify(id),
    );
  }
  assert.ok(valid > 50 && valid < candidates.length - 50, `${valid} valid`);
});

Deno.test("createDeliveryHandler() never puts the catalog's server-side path in any response of this suite", () => {
  assert.ok(seen.length > 80, `only ${seen.length} responses recorded`);
  for (const text of seen) {
    assert.ok(!text.includes(SECRET_PATH), text.slice(0, 200));
    assert.ok(!text.includes("cordon-secret"), text.slice(0, 200));
  }
});

Deno.test("createDeliveryHandler() sends a catalog's new content when the catalog changes the delivery it answered in place, where it kept sending the bytes it prepared from it first", async () => {
  const id = "AAAAAAAAAAAAAAAAAAAAAA";
  const delivery: AuthorizedDelivery = {
    ok: true,
    moduleId: id,
    content: "export default 1;",
    mediaType: "text/javascript",
    digest: sri("export default 1;"),
    graphDigest: sri("graph 1"),
    dependencyIds: [],
    pack: { name: "p", version: "1.0.0" },
    path: "./index.js",
  };
  const catalog: SandboxModuleCatalog = {
    resolveForExecution: () => ({
      statuses: [],
      packs: {},
      modules: {},
      installed: [],
    }),
    authorizeDelivery: () => Promise.resolve(delivery),
    summaries: () => [],
  };
  const handle = createDeliveryHandler(catalog);
  const get = async () => {
    const response = await handle(
      new Request(`http://localhost/api/sandbox-modules/${id}`),
    );
    return [
      await response.text(),
      response.headers.get("repr-digest"),
      response.headers.get("x-cordon-pack"),
    ];
  };
  assert.deepEqual(await get(), [
    "export default 1;",
    reprDigest(new TextEncoder().encode("export default 1;")),
    "p@1.0.0",
  ]);
  delivery.content = "export default 2;";
  delivery.digest = sri("export default 2;");
  delivery.pack.version = "2.0.0";
  assert.deepEqual(await get(), [
    "export default 2;",
    reprDigest(new TextEncoder().encode("export default 2;")),
    "p@2.0.0",
  ]);
});

Deno.test("createDeliveryHandler() sends a disk catalog's bytes as it read and checked them once, without hashing them again", async () => {
  const packs = fileURLToPath(new URL("../fixtures/packs", import.meta.url));
  const catalog = await createDiskCatalog(packs);
  const handle = createDeliveryHandler(catalog);
  const pack = catalog.summaries()[0]!;
  const module = pack.modules[0]!;
  // Hashing goes through node:crypto in Deno and crypto.subtle in
  // browsers: count calls of both.
  const nodeCrypto = process.getBuiltinModule("node:crypto") as {
    createHash: (...args: unknown[]) => unknown;
  };
  const { createHash } = nodeCrypto;
  const digest = crypto.subtle.digest;
  let hashed = 0;
  nodeCrypto.createHash = (...args: unknown[]) => {
    hashed++;
    return createHash.apply(nodeCrypto, args);
  };
  crypto.subtle.digest = (...args: Parameters<typeof digest>) => {
    hashed++;
    return digest.apply(crypto.subtle, args);
  };
  let response: Response;
  let hashedFirst: number;
  try {
    assert.notEqual(await sha256Digest("counted"), undefined);
    assert.equal(hashed, 1, "the spies see the catalog's hashing");
    hashed = 0;
    // The catalog reads the file on the first request and checks it
    // against its listed digest, once.
    await (await handle(new Request(`${BASE}/${module.id}`))).arrayBuffer();
    hashedFirst = hashed;
    hashed = 0;
    response = await handle(new Request(`${BASE}/${module.id}`));
  } finally {
    crypto.subtle.digest = digest;
    nodeCrypto.createHash = createHash;
  }
  assert.equal(hashedFirst, 1);
  assert.equal(response.status, 200);
  assert.equal(hashed, 0);
  const bytes = await Deno.readFile(
    `${packs}/${pack.name}/${module.path.slice(2)}`,
  );
  assert.deepEqual(new Uint8Array(await response.arrayBuffer()), bytes);
  assert.equal(response.headers.get("repr-digest"), reprDigest(bytes));
  assert.equal(response.headers.get("etag"), `"${module.digest}"`);
});

Deno.test("createDeliveryHandler() lists only the packs ?packs= names, and every pack without it", async () => {
  const catalog = await createDiskCatalog(
    fileURLToPath(new URL("../fixtures/packs/", import.meta.url)),
  );
  const handler = createDeliveryHandler(catalog);
  const list = async (query: string) => {
    const response = await handler(new Request(`${BASE}${query}`));
    assert.equal(response.status, 200);
    return CatalogListingSchema.parse(await response.json()).packs.map((
      pack,
    ) => pack.name);
  };
  const every = catalog.summaries().map((pack) => pack.name);
  assert.deepEqual(await list(""), every);
  assert.deepEqual(await list("?packs=greet"), ["greet"]);
  assert.deepEqual(
    await list("?packs=greet,%40cordon-fixtures%2Fmath,nope,greet"),
    ["@cordon-fixtures/math", "greet"],
  );
  assert.deepEqual(await list("?packs=nope"), []);
  assert.deepEqual(
    await list("?packs=greet&v=1&packs=%40cordon-fixtures%2Fmath"),
    ["@cordon-fixtures/math", "greet"],
  );
});

Deno.test("createDeliveryHandler() refuses a malformed packs parameter with LISTING_QUERY_INVALID", async () => {
  const catalog = await createDiskCatalog(
    fileURLToPath(new URL("../fixtures/packs/", import.meta.url)),
  );
  const handler = createDeliveryHandler(catalog);
  const tooMany = Array.from({ length: 65 }, (_, i) => `p${i}`).join(",");
  for (
    const query of [
      "?packs=",
      "?packs=../etc",
      "?packs=%zz",
      "?packs=A",
      `?packs=${tooMany}`,
      "?packs=greet&packs=",
      "?packs=greet&packs=%zz",
      `?packs=${tooMany.slice(0, 200)}&packs=${tooMany.slice(200)}`,
    ]
  ) {
    const response = await handler(new Request(`${BASE}${query}`));
    assert.equal(response.status, 400, query);
    const problem = ProblemSchema.parse(await response.json());
    assert.equal(problem.code, "LISTING_QUERY_INVALID");
  }
});

Deno.test("createDeliveryHandler() sends a large listing gzip-compressed when the client accepts it, with its own entity tag", async () => {
  const catalog = await createDiskCatalog(
    fileURLToPath(new URL("../fixtures/packs/", import.meta.url)),
  );
  const handler = createDeliveryHandler(catalog);
  const plain = await handler(new Request(BASE));
  const plainBytes = new Uint8Array(await plain.arrayBuffer());
  assert.ok(
    plainBytes.byteLength >= 1024,
    "the fixture listing is large enough",
  );
  assert.equal(plain.headers.get("content-encoding"), null);
  assert.equal(plain.headers.get("vary"), "accept-encoding");

  // The first client that accepts gzip starts the compression in the
  // background and gets the plain body meanwhile.
  // Asked again every 10 ms for two minutes: only a compression that never
  // ends uses them up.
  const ask = () =>
    handler(
      new Request(BASE, { headers: { "accept-encoding": "br, gzip;q=0.8" } }),
    );
  let packed = await ask();
  for (
    let i = 0;
    i < 12_000 && packed.headers.get("content-encoding") === null;
    i++
  ) {
    await packed.body?.cancel();
    await new Promise((resolve) => setTimeout(resolve, 10));
    packed = await ask();
  }
  assert.equal(packed.headers.get("content-encoding"), "gzip");
  const unpacked = await new Response(
    packed.body!.pipeThrough(new DecompressionStream("gzip")),
  ).arrayBuffer();
  assert.deepEqual(new Uint8Array(unpacked), plainBytes);
  assert.notEqual(packed.headers.get("etag"), plain.headers.get("etag"));

  const refused = await handler(
    new Request(BASE, { headers: { "accept-encoding": "gzip;q=0, *" } }),
  );
  assert.equal(refused.headers.get("content-encoding"), null);
  await refused.body?.cancel();
});

Deno.test("createDeliveryHandler() revalidates a listing against the tag of the body it would send, and its 304 carries that tag", async () => {
  const catalog = await createDiskCatalog(
    fileURLToPath(new URL("../fixtures/packs/", import.meta.url)),
  );
  const handler = createDeliveryHandler(catalog);
  const ask = (headers: Record<string, string>) =>
    handler(new Request(BASE, { headers }));
  const plain = await ask({});
  const plainTag = plain.headers.get("etag")!;
  await plain.body?.cancel();
  let packed = await ask({ "accept-encoding": "gzip" });
  for (
    let i = 0;
    i < 12_000 && packed.headers.get("content-encoding") === null;
    i++
  ) {
    await packed.body?.cancel();
    await new Promise((resolve) => setTimeout(resolve, 10));
    packed = await ask({ "accept-encoding": "gzip" });
  }
  const packedTag = packed.headers.get("etag")!;
  await packed.body?.cancel();
  assert.notEqual(packedTag, plainTag);

  // [accept-encoding, if-none-match, status, etag of the answer]: each
  // request is compared with the representation it selects (RFC 9110
  // §13.1.2), so a cache holding the other one never gets a 304 that
  // names a copy it does not hold.
  const cases: [string, string, number, string][] = [
    ["gzip", packedTag, 304, packedTag],
    ["gzip", `W/${packedTag}`, 304, packedTag],
    ["identity", plainTag, 304, plainTag],
    ["gzip;q=0", plainTag, 304, plainTag],
    ["gzip", "*", 304, packedTag],
    ["identity", "*", 304, plainTag],
    ["gzip", plainTag, 200, packedTag],
    ["identity", packedTag, 200, plainTag],
    ["gzip;q=0", `"x", ${packedTag}`, 200, plainTag],
  ];
  for (const [acceptEncoding, ifNoneMatch, status, etag] of cases) {
    for (const method of ["GET", "HEAD"]) {
      const response = await handler(
        new Request(BASE, {
          method,
          headers: {
            "accept-encoding": acceptEncoding,
            "if-none-match": ifNoneMatch,
          },
        }),
      );
      await response.body?.cancel();
      const label = `${method} ${acceptEncoding} ${ifNoneMatch}`;
      assert.equal(response.status, status, label);
      assert.equal(response.headers.get("etag"), etag, label);
      assert.equal(response.headers.get("vary"), "accept-encoding", label);
    }
  }
});

Deno.test("createDeliveryHandler() answers 503 PACK_FILE_CHANGED for a disk catalog's module whose file changed since discovery, never other bytes", async () => {
  const packs = await Deno.makeTempDir({ prefix: "cordon_changed_" });
  try {
    await copyTree(
      fileURLToPath(new URL("../fixtures/packs", import.meta.url)),
      packs,
    );
    const catalog = await createDiskCatalog(packs);
    const handle = createDeliveryHandler(catalog);
    const pack = catalog.summaries()[0]!;
    const module = pack.modules[0]!;
    const file = `${packs}/${pack.name}/${module.path.slice(2)}`;
    const original = await Deno.readFile(file);
    await Deno.writeTextFile(file, "export default 'changed';\n");
    const response = await handle(new Request(`${BASE}/${module.id}`));
    assert.equal(response.status, 503);
    assert.equal(response.headers.get("retry-after"), "5");
    const problem = await response.json();
    assert.equal(problem.code, "PACK_FILE_CHANGED");
    assert.equal(JSON.stringify(problem).includes(packs), false);

    await Deno.writeFile(file, original);
    const back = await handle(new Request(`${BASE}/${module.id}`));
    assert.equal(back.status, 200);
    assert.deepEqual(new Uint8Array(await back.arrayBuffer()), original);
  } finally {
    await Deno.remove(packs, { recursive: true });
  }
});

/**
 * A disk catalog over the fixture packs whose policy gives everyone
 * `greet`, tenant `a` also the math pack and tenant `b` also the clock
 * pack; `probe` is nobody's. The hook reads the tenant from `x-tenant`.
 */
async function tenantHandler(
  policy?: (pack: { name: string }, tenant: string | undefined) => unknown,
) {
  const granted: Record<string, string[]> = {
    a: ["@cordon-fixtures/math"],
    b: ["@cordon-fixtures/clock"],
  };
  const decide = policy ?? ((pack, tenant) =>
    pack.name === "greet" ||
    (tenant !== undefined && granted[tenant]?.includes(pack.name) === true));
  const catalog = await createDiskCatalog(
    fileURLToPath(new URL("../fixtures/packs/", import.meta.url)),
    {
      entitlement: (pack, requester) =>
        decide(pack, requester.tenantId) as boolean,
    },
  );
  const handler = createDeliveryHandler(catalog, {
    requester: (request) => {
      const tenantId = request.headers.get("x-tenant");
      return tenantId === null ? {} : { tenantId };
    },
  });
  return { catalog, handler };
}

/** Asks for a listing as a tenant (or anonymously) and reads it. */
async function listAs(
  handler: (request: Request) => Promise<Response>,
  tenant: string | undefined,
  query = "",
  headers: Record<string, string> = {},
) {
  const response = await handler(
    new Request(`${BASE}${query}`, {
      headers: tenant === undefined ? headers : {
        ...headers,
        "x-tenant": tenant,
      },
    }),
  );
  const body = await record(response);
  const text = new TextDecoder().decode(body);
  return {
    response,
    text,
    names: response.status === 200
      ? CatalogListingSchema.parse(JSON.parse(text)).packs.map((p) => p.name)
      : [],
  };
}

Deno.test("createDeliveryHandler() lists to each requester only the packs the entitlement policy allows it, marked private", async () => {
  const { handler } = await tenantHandler();
  const a = await listAs(handler, "a");
  const b = await listAs(handler, "b");
  const anonymous = await listAs(handler, undefined);
  assert.deepEqual(a.names, ["@cordon-fixtures/math", "greet"]);
  assert.deepEqual(b.names, ["@cordon-fixtures/clock", "greet"]);
  assert.deepEqual(anonymous.names, ["greet"]);
  for (const { response, text } of [a, b, anonymous]) {
    assert.equal(response.headers.get("cache-control"), "private, no-cache");
    assert.doesNotMatch(text, /probe/);
  }
  const tags = [a, b, anonymous].map(({ response }) =>
    response.headers.get("etag")
  );
  assert.equal(new Set(tags).size, 3, `${tags}`);
  // The same requester gets the same tag again.
  assert.equal(
    (await listAs(handler, "a")).response.headers.get("etag"),
    tags[0],
  );
  // HEAD answers the same headers as GET.
  const head = await handler(
    new Request(BASE, { method: "HEAD", headers: { "x-tenant": "b" } }),
  );
  assert.equal(head.headers.get("etag"), tags[1]);
  assert.equal(head.headers.get("cache-control"), "private, no-cache");
  await record(head);
});

Deno.test("createDeliveryHandler() tells the entitlement policy no tenant or principal that only a polluted Object.prototype names", async () => {
  const { catalog } = await tenantHandler((pack, tenant) =>
    pack.name === "greet" || tenant === "a"
  );
  const math = catalog.summaries().find((pack) =>
    pack.name === "@cordon-fixtures/math"
  )!;
  const hooks = [
    undefined,
    () => ({}),
    () => ({ principalId: "ada" }),
    () => Object.create({ principalId: "ada" }),
  ];
  const listings: string[] = [];
  await withPollutedPrototype({ tenantId: "a" }, async () => {
    for (const requester of hooks) {
      const handler = createDeliveryHandler(
        catalog,
        requester === undefined ? {} : { requester },
      );
      const module = await handler(
        new Request(`${BASE}/${math.modules[0]!.id}`),
      );
      await record(module);
      assert.equal(module.status, 403, String(requester));
      if (requester === undefined) continue;
      const listing = await handler(new Request(BASE));
      listings.push(new TextDecoder().decode(await record(listing)));
    }
  });
  // Read once Object.prototype is clean again: zod reads inherited keys.
  for (const text of listings) {
    const { packs } = CatalogListingSchema.parse(JSON.parse(text));
    assert.deepEqual(packs.map((pack) => pack.name), ["greet"]);
  }
});

Deno.test("createDeliveryHandler() answers a requester's ?packs= naming a pack it may not have as for a pack not installed", async () => {
  const { handler } = await tenantHandler();
  const forbidden = await listAs(
    handler,
    "b",
    "?packs=%40cordon-fixtures%2Fmath",
  );
  const absent = await listAs(handler, "b", "?packs=%40cordon-fixtures%2Fnope");
  assert.equal(forbidden.response.status, 200);
  assert.deepEqual(forbidden.names, []);
  assert.equal(forbidden.text, absent.text);
  assert.deepEqual(
    [...forbidden.response.headers],
    [...absent.response.headers],
  );
  const mixed = await listAs(
    handler,
    "b",
    "?packs=greet,%40cordon-fixtures%2Fmath,%40cordon-fixtures%2Fclock",
  );
  assert.deepEqual(mixed.names, ["@cordon-fixtures/clock", "greet"]);
  const granted = await listAs(
    handler,
    "a",
    "?packs=%40cordon-fixtures%2Fmath",
  );
  assert.deepEqual(granted.names, ["@cordon-fixtures/math"]);
  assert.equal(
    granted.response.headers.get("cache-control"),
    "private, no-cache",
  );
});

Deno.test("createDeliveryHandler() answers a listing 304 only to the requester whose body carries the tag", async () => {
  const { handler } = await tenantHandler();
  for (const query of ["", "?packs=greet,%40cordon-fixtures%2Fmath"]) {
    const a = await listAs(handler, "a", query);
    const etag = a.response.headers.get("etag")!;
    const again = await listAs(handler, "a", query, { "if-none-match": etag });
    assert.equal(again.response.status, 304);
    assert.equal(again.response.headers.get("etag"), etag);
    assert.equal(
      again.response.headers.get("cache-control"),
      "private, no-cache",
    );
    for (const other of ["b", undefined]) {
      const crossed = await listAs(handler, other, query, {
        "if-none-match": etag,
      });
      assert.equal(crossed.response.status, 200, `${other} ${query}`);
      assert.notEqual(crossed.response.headers.get("etag"), etag);
      assert.doesNotMatch(crossed.text, /fixtures\/math/);
    }
    // If-Match is the other tag's check: it fails across requesters too.
    const matched = await listAs(handler, "b", query, { "if-match": etag });
    assert.equal(matched.response.status, 412);
  }
});

Deno.test("createDeliveryHandler() leaves out of the listing a pack whose policy throws, rejects or answers anything but true", async () => {
  const { handler } = await tenantHandler((pack, tenant) => {
    if (tenant === undefined) return pack.name === "greet";
    if (pack.name === "@cordon-fixtures/math") {
      throw new Error(`policy store down at ${SECRET_PATH}`);
    }
    if (pack.name === "@cordon-fixtures/clock") {
      return Promise.reject(new Error("policy store down"));
    }
    if (pack.name === "@cordon-fixtures/probe") return "yes";
    return Promise.resolve(true);
  });
  const listed = await listAs(handler, "a");
  assert.equal(listed.response.status, 200);
  assert.deepEqual(listed.names, ["greet"]);
  assert.equal(
    listed.text,
    (await listAs(handler, undefined)).text,
    "the same packs as a requester granted only greet",
  );
  const named = await listAs(
    handler,
    "a",
    "?packs=%40cordon-fixtures%2Fmath,%40cordon-fixtures%2Fclock",
  );
  assert.equal(named.response.status, 200);
  assert.deepEqual(named.names, []);
});

Deno.test("createDeliveryHandler() lists every pack, public, without a requester hook or with the policy that allows everyone", async () => {
  const dir = fileURLToPath(new URL("../fixtures/packs/", import.meta.url));
  const guarded = await createDiskCatalog(dir, { entitlement: () => false });
  const open = await createDiskCatalog(dir);
  const every = open.summaries().map((pack) => pack.name);
  let asked = 0;
  const handlers = [
    createDeliveryHandler(guarded),
    createDeliveryHandler(open, {
      requester: () => {
        asked++;
        return { tenantId: "a" };
      },
    }),
  ];
  for (const handler of handlers) {
    const listed = await listAs(handler, "a");
    assert.deepEqual(listed.names, every);
    assert.equal(listed.response.headers.get("cache-control"), "no-cache");
  }
  assert.equal(asked, 0, "the listing needs no requester then");
});

Deno.test("createDeliveryHandler() lists another catalog's pack to a requester only when authorizeDelivery delivers its modules", async () => {
  const catalog = withOtherPack();
  catalog.forbidden.add("mOther_04");
  const handler = createDeliveryHandler(catalog, {
    requester: (request) => ({
      principalId: request.headers.get("x-user") ?? "anonymous",
    }),
  });
  const list = (user: string) =>
    listAs(handler, undefined, "", { "x-user": user });
  assert.deepEqual((await list("ada")).names, ["@acme/math"]);
  assert.deepEqual((await list("eve")).names, []);
  catalog.unavailable.add("mIndex_01");
  assert.deepEqual((await list("ada")).names, []);
  catalog.unavailable.clear();
  catalog.throwing.add("mIndex_01");
  const thrown = await list("ada");
  assert.equal(thrown.response.status, 200);
  assert.deepEqual(thrown.names, []);
});

/** A promise that never settles, as from a catalog or hook that stalls. */
function never<T>(): Promise<T> {
  return new Promise<T>(() => {});
}

Deno.test("createDeliveryHandler() answers 503 DELIVERY_UNAVAILABLE once catalogTimeoutMs passes without the catalog's or the requester hook's answer, where it waited for ever", async (t) => {
  const stalled = memoryCatalog();
  stalled.authorizeDelivery = () => never();
  const cases: [string, (request: Request) => Promise<Response>][] = [
    [
      "a catalog that never answers",
      createDeliveryHandler(stalled, { catalogTimeoutMs: 1 }),
    ],
    [
      "a requester hook that never answers",
      createDeliveryHandler(memoryCatalog(), {
        requester: () => never(),
        catalogTimeoutMs: 1,
      }),
    ],
    [
      "a requester hook that answers, then a catalog that never does",
      createDeliveryHandler(stalled, {
        requester: () => Promise.resolve({ principalId: "ada" }),
        catalogTimeoutMs: 1,
      }),
    ],
  ];
  for (const [name, handle] of cases) {
    await t.step(name, async () => {
      const response = await handle(new Request(`${BASE}/mIndex_01`));
      assert.equal(response.status, 503);
      assert.equal(response.headers.get("retry-after"), "5");
      assert.equal((await problemOf(response)).code, "DELIVERY_UNAVAILABLE");
    });
  }
  await t.step("a listing whose requester hook never answers", async () => {
    const handle = createDeliveryHandler(memoryCatalog(), {
      requester: () => never(),
      catalogTimeoutMs: 1,
    });
    const response = await handle(new Request(BASE));
    assert.equal(response.status, 503);
    assert.equal((await problemOf(response)).code, "DELIVERY_UNAVAILABLE");
  });
  await t.step(
    "a disk catalog whose entitlement policy never answers",
    async () => {
      const catalog = await createDiskCatalog(
        fileURLToPath(new URL("../fixtures/packs/", import.meta.url)),
        { entitlement: () => never() },
      );
      const id = catalog.summaries()[0]!.modules[0]!.id;
      const handle = createDeliveryHandler(catalog, { catalogTimeoutMs: 1 });
      const response = await handle(new Request(`${BASE}/${id}`));
      assert.equal(response.status, 503);
      assert.equal((await problemOf(response)).code, "DELIVERY_UNAVAILABLE");
    },
  );
});

Deno.test("createDeliveryHandler() leaves out of a requester's listing a pack whose policy has not answered by catalogTimeoutMs, and lists the others", async () => {
  const catalog = withOtherPack();
  const answer = catalog.authorizeDelivery.bind(catalog);
  catalog.authorizeDelivery = (moduleId, requester) =>
    moduleId === "mOther_04" ? never() : answer(moduleId, requester);
  const handle = createDeliveryHandler(catalog, {
    requester: () => ({ principalId: "ada" }),
    catalogTimeoutMs: 1,
  });
  const listed = await listAs(handle, undefined);
  assert.equal(listed.response.status, 200);
  assert.deepEqual(listed.names, ["@acme/math"]);
});

/**
 * Runs `work` while counting the timers it starts and those still pending
 * when it ends (started, neither cleared nor fired).
 */
async function watchTimers(
  work: () => Promise<void>,
): Promise<{ started: number; pending: number }> {
  const { setTimeout: set, clearTimeout: clear } = globalThis;
  const pending = new Set<unknown>();
  let started = 0;
  globalThis.setTimeout = ((callback: () => void, ms?: number) => {
    started++;
    const id = set(() => {
      pending.delete(id);
      callback();
    }, ms);
    pending.add(id);
    return id;
  }) as typeof setTimeout;
  globalThis.clearTimeout = ((id?: number) => {
    pending.delete(id);
    clear(id);
  }) as typeof clearTimeout;
  try {
    await work();
  } finally {
    globalThis.setTimeout = set;
    globalThis.clearTimeout = clear;
  }
  for (const id of pending) clear(id as number);
  return { started, pending: pending.size };
}

Deno.test("createDeliveryHandler() stops waiting for a catalog that never answers once the request's signal aborts, leaving no timer behind", async () => {
  const stalled = memoryCatalog();
  let asked!: () => void;
  const waiting = new Promise<void>((resolve) => asked = resolve);
  stalled.authorizeDelivery = () => {
    asked();
    return never();
  };
  const handle = createDeliveryHandler(stalled);
  const timers = await watchTimers(async () => {
    const client = new AbortController();
    const answered = handle(
      new Request(`${BASE}/mIndex_01`, { signal: client.signal }),
    );
    await waiting;
    client.abort();
    const response = await answered;
    assert.equal(response.status, 503);
    assert.equal((await problemOf(response)).code, "DELIVERY_UNAVAILABLE");
  });
  assert.deepEqual(timers, { started: 1, pending: 0 });

  const gone = new AbortController();
  gone.abort();
  const late = await handle(
    new Request(`${BASE}/mIndex_01`, { signal: gone.signal }),
  );
  assert.equal(late.status, 503, "a request whose client already left");
  await late.body?.cancel();
});

/**
 * The memory catalog, or `catalog`, made to never answer for `stalledId`,
 * with the signals its `authorizeDelivery` got for it, in order.
 */
function stallFor(
  stalledId: string,
  catalog: MemoryCatalog = memoryCatalog(),
): { catalog: MemoryCatalog; signals: (AbortSignal | undefined)[] } {
  const signals: (AbortSignal | undefined)[] = [];
  const answer = catalog.authorizeDelivery.bind(catalog);
  const stalling: SandboxModuleCatalog["authorizeDelivery"] = (
    moduleId,
    requester,
    options,
  ) => {
    if (moduleId !== stalledId) return answer(moduleId, requester);
    signals.push(options?.signal);
    return never();
  };
  catalog.authorizeDelivery = stalling;
  return { catalog, signals };
}

/**
 * Asks `handle` for the module at `url` and asserts it answered 503 and
 * that the one signal the stalled catalog got was aborted by a TimeoutError
 * that names `catalogTimeoutMs` (1 ms).
 */
async function assertModuleRequestTimesOut(
  handle: (request: Request) => Promise<Response>,
  url: string,
  signals: (AbortSignal | undefined)[],
): Promise<void> {
  const response = await handle(new Request(url));
  assert.equal(response.status, 503);
  await response.body?.cancel();
  assert.equal(signals.length, 1);
  const [signal] = signals;
  assert.equal(signal?.aborted, true);
  assert.equal(signal.reason.name, "TimeoutError");
  assert.match(signal.reason.message, /catalogTimeoutMs \(1 ms\)/);
}

/**
 * Sends `url` (the listing, as a requester, when it is `BASE`) to a handler
 * over the stalled `catalog`, waits until the catalog got a signal, lets the
 * client go, and asserts every signal the catalog got was aborted with the
 * client's reason at once.
 */
async function assertClientReasonReachesCatalog(
  catalog: SandboxModuleCatalog,
  url: string,
  signals: (AbortSignal | undefined)[],
): Promise<void> {
  const handle = createDeliveryHandler(catalog, {
    ...(url === BASE ? { requester: () => ({ principalId: "ada" }) } : {}),
  });
  const client = new AbortController();
  const answered = handle(new Request(url, { signal: client.signal }));
  while (signals.length === 0) await Promise.resolve();
  assert.equal(signals[0]?.aborted, false);
  const why = new DOMException("The client left", "AbortError");
  client.abort(why);
  for (const signal of signals) {
    assert.equal(signal?.aborted, true);
    assert.equal(signal.reason, why);
  }
  await record(await answered);
}

Deno.test("createDeliveryHandler() aborts the signal it gave a catalog's authorizeDelivery once catalogTimeoutMs passes, with a TimeoutError that names it, where the call ran on unseen", async (t) => {
  await t.step("a module request", async () => {
    const { catalog, signals } = stallFor("mIndex_01");
    const handle = createDeliveryHandler(catalog, { catalogTimeoutMs: 1 });
    await assertModuleRequestTimesOut(handle, `${BASE}/mIndex_01`, signals);
  });
  await t.step("a requester's listing, which asks for each pack", async () => {
    const { catalog, signals } = stallFor("mOther_04", withOtherPack());
    const handle = createDeliveryHandler(catalog, {
      requester: () => ({ principalId: "ada" }),
      catalogTimeoutMs: 1,
    });
    const listed = await listAs(handle, undefined);
    assert.deepEqual(listed.names, ["@acme/math"]);
    assert.equal(signals.length, 1);
    assert.equal(signals[0]?.aborted, true);
    assert.equal(signals[0].reason.name, "TimeoutError");
  });
});

Deno.test("createDeliveryHandler() aborts the signal it gave a catalog's authorizeDelivery with the client's reason when the client goes", async (t) => {
  for (const route of ["module", "listing"] as const) {
    await t.step(route, async () => {
      const { catalog, signals } = stallFor("mOther_04", withOtherPack());
      await assertClientReasonReachesCatalog(
        catalog,
        route === "listing" ? BASE : `${BASE}/mOther_04`,
        signals,
      );
    });
  }
});

Deno.test("createDeliveryHandler() answers 503 to a requester's listing whose client goes while a policy decides, as it answers a module request, where it answered 200 without the packs not yet decided", async () => {
  const { catalog, signals } = stallFor("mOther_04", withOtherPack());
  const infos: { route: string; status: number; code?: string }[] = [];
  const handle = createDeliveryHandler(catalog, {
    requester: () => ({ principalId: "ada" }),
    onRequest: (info) => infos.push(info),
  });
  const client = new AbortController();
  const answered = handle(new Request(BASE, { signal: client.signal }));
  while (signals.length === 0) await Promise.resolve();
  client.abort(new DOMException("The client left", "AbortError"));
  const response = await answered;
  assert.equal(response.status, 503);
  assert.equal((await problemOf(response)).code, "DELIVERY_UNAVAILABLE");
  assert.deepEqual(
    infos.map(({ route, status, code }) => ({ route, status, code })),
    [{ route: "listing", status: 503, code: "DELIVERY_UNAVAILABLE" }],
  );
  // A client that stays is listed what the policy decided in time.
  const stays = createDeliveryHandler(catalog, {
    requester: () => ({ principalId: "ada" }),
    catalogTimeoutMs: 1,
  });
  const listed = await listAs(stays, undefined);
  assert.equal(listed.response.status, 200);
  assert.deepEqual(listed.names, ["@acme/math"]);
});

/**
 * How many AbortControllers were constructed while `work` ran, counted by
 * a subclass put in the global's place and taken out after.
 */
async function abortControllersCreatedWhile(
  work: () => Promise<void>,
): Promise<number> {
  const { AbortController: Real } = globalThis;
  let created = 0;
  globalThis.AbortController = class extends Real {
    constructor() {
      super();
      created++;
    }
  };
  try {
    await work();
  } finally {
    globalThis.AbortController = Real;
  }
  return created;
}

Deno.test("createDeliveryHandler() creates no AbortController for a catalog that answers from memory, even when its policy waits", async () => {
  const dir = fileURLToPath(new URL("../fixtures/packs/", import.meta.url));
  const disk = await createDiskCatalog(dir, {
    entitlement: () => Promise.resolve(true),
  });
  const id = disk.summaries()[0]!.modules[0]!.id;
  const handle = createDeliveryHandler(disk, { requester: () => ({}) });
  const created = await abortControllersCreatedWhile(async () => {
    for (const url of [`${BASE}/${id}`, BASE, `${BASE}/mNone_99`]) {
      await record(await handle(new Request(url)));
    }
  });
  assert.equal(created, 0);
});

/**
 * A disk catalog over the fixture packs whose policy never answers, with
 * the signals it was given, in order (`undefined` for none).
 */
async function stalledPolicy(): Promise<{
  disk: SandboxModuleCatalog;
  id: string;
  signals: (AbortSignal | undefined)[];
}> {
  const dir = fileURLToPath(new URL("../fixtures/packs/", import.meta.url));
  const signals: (AbortSignal | undefined)[] = [];
  const disk = await createDiskCatalog(dir, {
    entitlement: (_pack, _requester, options) => {
      signals.push(options?.signal);
      return never();
    },
  });
  const id = disk.summaries()[0]!.modules[0]!.id;
  return { disk, id, signals };
}

Deno.test("createDeliveryHandler() aborts the signal a disk catalog's waiting policy got once catalogTimeoutMs passes, with a TimeoutError that names it, where the policy ran on unseen", async (t) => {
  await t.step("a module request", async () => {
    const { disk, id, signals } = await stalledPolicy();
    const handle = createDeliveryHandler(disk, { catalogTimeoutMs: 1 });
    await assertModuleRequestTimesOut(handle, `${BASE}/${id}`, signals);
  });
  await t.step("a requester's listing, which asks for each pack", async () => {
    const { disk, signals } = await stalledPolicy();
    const handle = createDeliveryHandler(disk, {
      requester: () => ({ principalId: "ada" }),
      catalogTimeoutMs: 1,
    });
    const listed = await listAs(handle, undefined);
    assert.deepEqual(listed.names, []);
    assert.equal(signals.length, disk.summaries().length);
    for (const signal of signals) {
      assert.equal(signal?.aborted, true);
      assert.equal(signal.reason.name, "TimeoutError");
    }
  });
});

Deno.test("createDeliveryHandler() aborts the signal a disk catalog's waiting policy got with the client's reason when the client goes", async (t) => {
  for (const route of ["module", "listing"] as const) {
    await t.step(route, async () => {
      const { disk, id, signals } = await stalledPolicy();
      await assertClientReasonReachesCatalog(
        disk,
        route === "listing" ? BASE : `${BASE}/${id}`,
        signals,
      );
    });
  }
});

Deno.test("createDeliveryHandler() creates no AbortController for a disk catalog whose policy answers at once, though it is given options", async () => {
  const dir = fileURLToPath(new URL("../fixtures/packs/", import.meta.url));
  const given: unknown[] = [];
  const disk = await createDiskCatalog(dir, {
    entitlement: (_pack, requester, options) => {
      given.push(options);
      return requester.principalId === "ada";
    },
  });
  const id = disk.summaries()[0]!.modules[0]!.id;
  const handle = createDeliveryHandler(disk, {
    requester: () => ({ principalId: "ada" }),
  });
  const created = await abortControllersCreatedWhile(async () => {
    for (const url of [`${BASE}/${id}`, BASE]) {
      const response = await handle(new Request(url));
      assert.equal(response.status, 200);
      await record(response);
    }
  });
  assert.equal(created, 0);
  assert.ok(given.length >= 2);
  assert.ok(given.every((options) => typeof options === "object"));
});

Deno.test("createDeliveryHandler() starts no timer for a catalog that answers at once, and clears the one of a catalog that waits", async () => {
  const dir = fileURLToPath(new URL("../fixtures/packs/", import.meta.url));
  const disk = await createDiskCatalog(dir);
  const id = disk.summaries()[0]!.modules[0]!.id;
  const handle = createDeliveryHandler(disk, { requester: () => ({}) });
  await handle(new Request(`${BASE}/${id}`)).then(record);
  const atOnce = await watchTimers(async () => {
    for (const url of [`${BASE}/${id}`, BASE, `${BASE}/mNone_99`]) {
      await record(await handle(new Request(url)));
    }
  });
  assert.deepEqual(atOnce, { started: 0, pending: 0 });
  const waits = createDeliveryHandler(memoryCatalog());
  const waited = await watchTimers(async () => {
    const response = await waits(new Request(`${BASE}/mIndex_01`));
    assert.equal(response.status, 200);
    await record(response);
  });
  assert.deepEqual(waited, { started: 1, pending: 0 });
});

Deno.test("createDeliveryHandler() gives a policy that reads its signal after the answer one already aborted, and starts no timer for it, where the read set up a bound that held the request until catalogTimeoutMs", async () => {
  const dir = fileURLToPath(new URL("../fixtures/packs/", import.meta.url));
  const kept: EntitlementOptions[] = [];
  const disk = await createDiskCatalog(dir, {
    entitlement: (_pack, _requester, options) => {
      kept.push(options!);
      return true;
    },
  });
  const id = disk.summaries()[0]!.modules[0]!.id;
  const handle = createDeliveryHandler(disk, { requester: () => ({}) });
  const timers = await watchTimers(async () => {
    assert.equal((await handle(new Request(`${BASE}/${id}`))).status, 200);
    assert.equal(kept.length, 1);
    const late = kept[0]!.signal;
    assert.equal(late?.aborted, true);
    assert.equal(late.reason.name, "AbortError");
    assert.equal(late.reason.message, "The request was answered");
  });
  assert.deepEqual(timers, { started: 0, pending: 0 });
});

Deno.test("createDeliveryHandler() leaves the signal a waiting policy read unaborted once the request is answered, so an abort listener of the policy's that throws never runs", async () => {
  const dir = fileURLToPath(new URL("../fixtures/packs/", import.meta.url));
  let heard = 0;
  const disk = await createDiskCatalog(dir, {
    entitlement: async (_pack, _requester, options) => {
      // A driver's cancel that throws once its query is over.
      options?.signal?.addEventListener("abort", () => {
        heard++;
        throw new Error("The query already finished");
      });
      await Promise.resolve();
      return true;
    },
  });
  const id = disk.summaries()[0]!.modules[0]!.id;
  const handle = createDeliveryHandler(disk, { requester: () => ({}) });
  for (const url of [`${BASE}/${id}`, BASE]) {
    const response = await handle(new Request(url));
    assert.equal(response.status, 200);
    await record(response);
  }
  assert.equal(heard, 0);
});

Deno.test("createDeliveryHandler() reads catalogTimeoutMs by the integer rule", () => {
  const create = (catalogTimeoutMs: unknown) =>
    createDeliveryHandler(memoryCatalog(), {
      catalogTimeoutMs: catalogTimeoutMs as number,
    });
  for (const value of ["5", null, 10n]) {
    assert.throws(() => create(value), {
      name: "TypeError",
      message:
        "Cannot create a delivery handler: catalogTimeoutMs must be a number of milliseconds",
    });
  }
  for (const value of [0, -1, 1.5, NaN, Infinity, 2 ** 31]) {
    assert.throws(() => create(value), {
      name: "RangeError",
      message:
        "Cannot create a delivery handler: catalogTimeoutMs must be an integer from 1 to 2147483647 milliseconds",
    });
  }
  create(1);
  create(2 ** 31 - 1);
});
