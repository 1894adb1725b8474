import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { CatalogListingSchema } from "../protocol/mod.ts";
import { serveDelivery } from "./serve.ts";
import { copyTree } from "./_test_copy_tree_test.ts";

const FIXTURE_PACKS = new URL("../fixtures/packs/", import.meta.url);
const PREFIX = "/api/sandbox-modules/";
const CONCURRENCY = 16;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A deterministic generator (xorshift32), so a failure can be replayed. */
function random(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    return state / 0x1_0000_0000;
  };
}

interface RawAnswer {
  status: number;
  text: string;
}

/**
 * Sends one GET with a raw request target, byte for byte, on its own
 * connection: `fetch` would normalise `..`, backslashes and bytes first.
 */
async function rawGet(port: number, target: Uint8Array): Promise<RawAnswer> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const chunks: Uint8Array[] = [];
  try {
    const request = [
      encoder.encode("GET "),
      target,
      encoder.encode(
        " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
      ),
    ];
    try {
      for (const part of request) {
        let written = 0;
        while (written < part.length) {
          written += await conn.write(part.subarray(written));
        }
      }
    } catch {
      // The server may answer and close before reading a huge target.
    }
    const buffer = new Uint8Array(16384);
    try {
      for (;;) {
        const n = await conn.read(buffer);
        if (n === null) break;
        chunks.push(buffer.slice(0, n));
      }
    } catch {
      // A reset after the answer: keep what was read.
    }
  } finally {
    conn.close();
  }
  const text = decoder.decode(
    chunks.length === 1 ? chunks[0] : new Uint8Array(
      chunks.flatMap((chunk) => [...chunk]),
    ),
  );
  const match = /^HTTP\/1\.1 (\d{3}) /.exec(text);
  return { status: match ? Number(match[1]) : 0, text };
}

interface Case {
  /** The bytes after the prefix. */
  tail: Uint8Array;
  /** Statuses this case may get. */
  allowed: readonly number[];
  /** Text that must not come back (the raw id, when long enough). */
  secret?: string;
}

const TRAVERSALS = [
  "..",
  "../",
  "..%2F",
  "..%2f",
  "%2e%2e",
  "%2E%2E%2F",
  "%2e%2e/",
  ".%2e",
  "%2e.",
  "%252e%252e",
  "%252F",
  "%2F",
  "%5C",
  "%5c..%5c",
  "\\..\\",
  "..\\",
  "%00",
  "%00.js",
  "%c0%ae%c0%ae",
  "%e0%80%ae",
  "....//",
  "%u002e%u002e",
  "%%32%65",
  "%2",
  "%",
  "/",
  "//",
  "./",
  "~",
  "%7e",
];
const QUESTION_MARK = 0x3f;
const HASH = 0x23;
const TARGETS = [
  "",
  "etc/passwd",
  "package.json",
  "index.js",
  "greet/index.js",
  "@cordon-fixtures/math/lib/round.js",
  "fixtures/packs/greet/index.js",
  "C:\\Windows\\win.ini",
];
const URLISH =
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~%/\\!$&'()*+,;=:@?#[]";
const ID_CHARS =
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

function buildCases(ids: readonly string[], greetId: string): Case[] {
  const next = random(0xc0_4d_0e);
  const pick = <T>(list: readonly T[]): T =>
    list[Math.floor(next() * list.length)]!;
  const text = (alphabet: string, length: number) =>
    Array.from({ length }, () => pick([...alphabet])).join("");
  const cases: Case[] = [];
  const notServed: readonly number[] = [400, 404];
  const add = (
    tail: string | Uint8Array,
    allowed: readonly number[] = notServed,
  ) => {
    const bytes = typeof tail === "string" ? encoder.encode(tail) : tail;
    const raw = typeof tail === "string" ? tail : "";
    // A tail with no id before its query or fragment asks for the
    // listing at `{prefix}/`, which every client may read.
    const listing = bytes[0] === QUESTION_MARK || bytes[0] === HASH;
    cases.push({
      tail: bytes,
      allowed: listing ? [...allowed, 200] : allowed,
      ...(raw.length >= 24 ? { secret: raw } : {}),
    });
  };

  // Random bytes, sent as they are.
  for (let i = 0; i < 3000; i++) {
    add(Uint8Array.from(
      { length: 1 + Math.floor(next() * 40) },
      () => Math.floor(next() * 256),
    ));
  }
  // Random URL-ish text.
  for (let i = 0; i < 2000; i++) add(text(URLISH, 1 + Math.floor(next() * 60)));
  // Traversals around real ids and file names.
  for (const a of TRAVERSALS) {
    for (const b of TARGETS) {
      add(`${a}${b}`);
      add(`${pick(ids)}/${a}${b}`);
      add(`${a}${a}${a}${b}`);
      add(`${pick(ids)}${a}`);
    }
  }
  // Invalid UTF-8 percent sequences.
  for (let i = 0; i < 1000; i++) {
    const count = 1 + Math.floor(next() * 6);
    const escapes = Array.from(
      { length: count },
      () => `%${(0x80 + Math.floor(next() * 0x80)).toString(16)}`,
    ).join("");
    add(next() < 0.5 ? escapes : `${pick(ids).slice(0, 8)}${escapes}`);
  }
  // Double (and triple) encoding.
  for (let i = 0; i < 1000; i++) {
    const inner = next() < 0.5
      ? `${pick(TRAVERSALS)}${pick(TARGETS)}`
      : `${pick(ids)}/${text(URLISH, 8)}`;
    const once = encodeURIComponent(inner);
    add(
      next() < 0.7
        ? encodeURIComponent(once)
        : encodeURIComponent(encodeURIComponent(once)),
    );
  }
  // Long ids, up to 64 KiB (the HTTP layer answers 400 to the longest).
  for (const length of [129, 200, 1024, 4096, 8192, 16384, 32768, 65536]) {
    add("a".repeat(length));
    add(text(ID_CHARS, length));
    add(text(URLISH, length));
    add(`${"%2e%2e%2f".repeat(Math.ceil(length / 9))}`.slice(0, length));
  }
  // Well-formed ids that are not installed.
  for (let i = 0; i < 1500; i++) {
    add(text(ID_CHARS, 1 + Math.floor(next() * 128)));
  }
  // Installed ids with a junk pin: 404 (403 for the refused pack).
  for (let i = 0; i < 400; i++) {
    const id = pick(ids);
    add(
      `${id}?digest=${
        encodeURIComponent(text(URLISH, 1 + Math.floor(next() * 60)))
      }`,
      id === greetId ? [403] : [404],
    );
  }
  // Installed ids with one character escaped decode to themselves.
  for (let i = 0; i < 300; i++) {
    const id = pick(ids);
    const at = Math.floor(next() * id.length);
    const escaped = `${id.slice(0, at)}%${
      id.charCodeAt(at).toString(16).toUpperCase()
    }${id.slice(at + 1)}`;
    add(escaped, id === greetId ? [403] : [200]);
  }
  return cases;
}

async function runBounded<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: limit }, async () => {
    while (next < items.length) await work(items[next++]!);
  }));
}

Deno.test("the delivery server answers 10,000 fuzzed ids over a socket with 400, 403 or 404 only, and no path", async () => {
  const root = await Deno.makeTempDir({ prefix: "cordon_fuzz_" });
  try {
    const real = `${root}/real-packs`;
    await copyTree(fileURLToPath(FIXTURE_PACKS), real);
    const dir = `${root}/linked-packs`;
    await Deno.symlink(real, dir);
    const realPath = await Deno.realPath(real);
    await using server = await serveDelivery({
      packsDir: dir,
      port: 0,
      entitlement: (pack) => pack.name !== "greet",
    });
    const listing = CatalogListingSchema.parse(
      await (await fetch(server.url)).json(),
    );
    const ids = listing.packs.flatMap((p) => p.modules.map((m) => m.id));
    const greetId = listing.packs.find((p) => p.name === "greet")!.modules[0]!
      .id;
    const cases = buildCases(ids, greetId);
    assert.ok(cases.length >= 10_000, `only ${cases.length} cases`);

    const statuses = new Map<number, number>();
    const codes = new Map<string, number>();
    const failures: string[] = [];
    const prefix = encoder.encode(PREFIX);
    await runBounded(cases, CONCURRENCY, async (fuzz) => {
      const target = new Uint8Array(prefix.length + fuzz.tail.length);
      target.set(prefix);
      target.set(fuzz.tail, prefix.length);
      const answer = await rawGet(server.addr.port, target);
      statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
      const code = /"code":"([A-Z_]+)"/.exec(answer.text)?.[1];
      if (code !== undefined) codes.set(code, (codes.get(code) ?? 0) + 1);
      const shown = JSON.stringify(decoder.decode(fuzz.tail).slice(0, 80));
      if (!fuzz.allowed.includes(answer.status)) {
        failures.push(`${answer.status} for ${shown}`);
      }
      if (answer.text.includes(realPath) || answer.text.includes(dir)) {
        failures.push(`the packs path in the answer to ${shown}`);
      }
      if (fuzz.secret !== undefined && answer.text.includes(fuzz.secret)) {
        failures.push(`the id echoed in the answer to ${shown}`);
      }
      if (answer.text.includes("real-packs")) {
        failures.push(`a folder name in the answer to ${shown}`);
      }
    });
    assert.deepEqual(failures.slice(0, 20), [], `${failures.length} failures`);
    for (const status of statuses.keys()) {
      assert.ok(status > 0 && status < 500, `status ${status}`);
    }
    // Both layers were exercised: the HTTP layer's 400s and the handler's
    // own answers, among them thousands of malformed-id 404s.
    assert.ok((statuses.get(400) ?? 0) > 1000, "few 400s");
    assert.ok((statuses.get(404) ?? 0) > 5000, "few 404s");
    assert.ok((statuses.get(403) ?? 0) > 0, "no 403");
    assert.ok((codes.get("MODULE_ID_INVALID") ?? 0) > 3000, "few invalid ids");
    assert.ok((codes.get("MODULE_NOT_FOUND") ?? 0) > 1000, "few unknown ids");
    // The server still answers a valid request.
    const math = listing.packs.find((p) => p.name === "@cordon-fixtures/math")!
      .modules[0]!;
    const after = await fetch(`${server.url}/${math.id}`);
    assert.equal(after.status, 200);
    assert.equal(
      after.headers.get("etag"),
      `"${math.digest}"`,
    );
    await after.body?.cancel();
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
