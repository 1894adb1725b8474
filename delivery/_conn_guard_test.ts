import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { serveDelivery, type ServeDeliveryOptions } from "./serve.ts";
import { scanHead } from "./_conn_guard.ts";
import { isOutOfDescriptors, maxConnectionsFor } from "./_conn_limits.ts";

const PACKS = fileURLToPath(new URL("../fixtures/packs/", import.meta.url));
const encoder = new TextEncoder();
const decoder = new TextDecoder();
/**
 * How long a test waits for a close before it calls the wait a hang: far
 * past any deadline under test and any delay of a loaded machine, and
 * short of the ten-minute idle deadline (IDLE_MS) of the servers whose
 * header deadline is tested, so only that deadline closes their
 * connections in time.
 */
const HANG_MS = 120_000;
/** An idle deadline no wait of this file reaches. */
const IDLE_MS = 600_000;

function serve(options: Partial<ServeDeliveryOptions> = {}) {
  return serveDelivery({ packsDir: PACKS, port: 0, ...options });
}

async function connect(port: number): Promise<Deno.TcpConn> {
  return await Deno.connect({ hostname: "127.0.0.1", port });
}

/**
 * Resolves with how long the server took to close `conn` (reading and
 * dropping whatever it sends first), measured from `since`; rejects when
 * it is still open after {@linkcode HANG_MS}.
 */
async function closedAfter(
  conn: Deno.Conn,
  since: number,
): Promise<number> {
  const buffer = new Uint8Array(1024);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error("The server left the connection open")),
      HANG_MS,
    );
  });
  try {
    for (;;) {
      const n = await Promise.race([conn.read(buffer).catch(() => null), late]);
      if (n === null) return performance.now() - since;
    }
  } finally {
    clearTimeout(timer);
    conn.close();
  }
}

/**
 * Whether `conn` is still open after `ms`, reading and dropping whatever
 * the server sends meanwhile. The caller closes it.
 */
async function stillOpenAfter(conn: Deno.Conn, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const waited = new Promise<"open">((resolve) => {
    timer = setTimeout(() => resolve("open"), ms);
  });
  const buffer = new Uint8Array(1024);
  const closed = (async () => {
    while ((await conn.read(buffer).catch(() => null)) !== null) {
      // Not closed yet.
    }
    return "closed" as const;
  })();
  const first = await Promise.race([closed, waited]);
  clearTimeout(timer);
  // The pending read ends when the caller closes the connection.
  closed.then(() => {});
  return first === "open";
}

/** Sends one GET and reads its whole answer, keeping the connection. */
async function getOver(conn: Deno.Conn, path: string): Promise<string> {
  await conn.write(
    encoder.encode(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`),
  );
  let text = "";
  const buffer = new Uint8Array(16 * 1024);
  for (;;) {
    const n = await conn.read(buffer);
    if (n === null) throw new Error(`The server closed after: ${text}`);
    text += decoder.decode(buffer.subarray(0, n));
    const end = text.indexOf("\r\n\r\n");
    const length = /content-length: (\d+)/i.exec(text);
    if (end >= 0 && length && text.length >= end + 4 + Number(length[1])) {
      return text;
    }
  }
}

async function status(url: string): Promise<number> {
  const response = await fetch(url);
  await response.body?.cancel();
  return response.status;
}

Deno.test("serveDelivery() closes a connection whose request head stalls after the header timeout, while another gets 200", async () => {
  await using server = await serve({
    headerTimeoutMs: 300,
    idleTimeoutMs: IDLE_MS,
  });
  const since = performance.now();
  const stalled = await connect(server.addr.port);
  await stalled.write(encoder.encode("GET / HTTP/1.1\r\nHost: x\r\n"));
  const closing = closedAfter(stalled, since);
  assert.equal(await status(server.url), 200);
  const ms = await closing;
  assert.ok(ms >= 290, `closed after ${ms} ms, before its deadline`);
});

/**
 * Serves with a header timeout of 200 ms, opens a connection that sends
 * nothing and asserts the server closed it no sooner than its deadline.
 */
async function assertSilentConnectionClosedAfterHeaderTimeout(): Promise<void> {
  await using server = await serve({
    headerTimeoutMs: 200,
    idleTimeoutMs: IDLE_MS,
  });
  const since = performance.now();
  const silent = await connect(server.addr.port);
  const ms = await closedAfter(silent, since);
  assert.ok(ms >= 190, `closed after ${ms} ms, before its deadline`);
}

Deno.test("serveDelivery() closes a connection that sends nothing after the header timeout", async () => {
  await assertSilentConnectionClosedAfterHeaderTimeout();
});

Deno.test("serveDelivery() times each later head on a keep-alive connection, and lets a quiet one live until the idle timeout", async (t) => {
  await t.step("a second head that stalls is closed", async () => {
    // An idle timeout far past what closedAfter waits: only the header
    // deadline can close the connection in time.
    await using server = await serve({
      headerTimeoutMs: 300,
      idleTimeoutMs: IDLE_MS,
    });
    const path = new URL(server.url).pathname;
    const conn = await connect(server.addr.port);
    assert.match(await getOver(conn, path), /^HTTP\/1\.1 200 /);
    // Quiet for longer than the header timeout: no head is owed yet, so
    // the deadline below runs from the next head's first byte.
    await new Promise((resolve) => setTimeout(resolve, 600));
    const since = performance.now();
    await conn.write(encoder.encode(`GET ${path} HTTP/1.1\r\nHo`));
    const ms = await closedAfter(conn, since);
    assert.ok(ms >= 290, `closed after ${ms} ms, before its deadline`);
  });

  await t.step(
    "a connection that stays quiet after its answer is closed at the idle timeout",
    async () => {
      await using server = await serve({
        headerTimeoutMs: 300,
        idleTimeoutMs: 3000,
      });
      const path = new URL(server.url).pathname;
      const conn = await connect(server.addr.port);
      assert.match(await getOver(conn, path), /^HTTP\/1\.1 200 /);
      // Five header timeouts on and half the idle timeout away: a
      // connection that owes no head outlives the header deadline.
      assert.equal(
        await stillOpenAfter(conn, 1500),
        true,
        "the header deadline closed a connection that owes no head",
      );
      // And the idle timeout, the one deadline left, closes it.
      await closedAfter(conn, performance.now());
    },
  );
});

Deno.test("serveDelivery() at maxConnections closes the connection that was idle longest and serves the new one", async () => {
  // The idle deadline is far past the wait for the close: only the room
  // made for the third connection closes the first in time.
  await using server = await serve({
    maxConnections: 2,
    idleTimeoutMs: IDLE_MS,
  });
  const path = new URL(server.url).pathname;
  const idle = await connect(server.addr.port);
  assert.match(await getOver(idle, path), /^HTTP\/1\.1 200 /);
  // Later activity than `idle`: this one must stay.
  const partial = await connect(server.addr.port);
  await partial.write(encoder.encode("GET / HTTP/1.1\r\n"));
  const third = await connect(server.addr.port);
  assert.match(await getOver(third, path), /^HTTP\/1\.1 200 /);
  // Closed when the third came in: the wait only bounds a server that
  // never closes it.
  await closedAfter(idle, performance.now());
  assert.equal(await stillOpenAfter(partial, 200), true);
  third.close();
  partial.close();
});

Deno.test("serveDelivery() at maxConnections refuses a new connection rather than close one with a request in flight", async () => {
  const { promise: release, resolve } = Promise.withResolvers<void>();
  const { promise: asked, resolve: ask } = Promise.withResolvers<void>();
  await using server = await serve({
    maxConnections: 1,
    idleTimeoutMs: IDLE_MS,
    requester: async () => {
      ask();
      await release;
      return {};
    },
  });
  // The requester hook runs for module routes only.
  const listing = await (await fetch(server.url)).json();
  const path = `${new URL(server.url).pathname}/${
    listing.packs[0].modules[0].id
  }`;
  const busy = await connect(server.addr.port);
  const answer = getOver(busy, path);
  await asked;
  const late = await connect(server.addr.port);
  await late.write(encoder.encode(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`));
  // Closed at once: a server that kept it waiting for the busy one, which
  // answers only after this, would hold it open for good.
  await closedAfter(late, performance.now());
  resolve();
  assert.match(await answer, /^HTTP\/1\.1 200 /);
  busy.close();
});

Deno.test("serveDelivery() with the guard answers HTTP/2 with prior knowledge, and answers an Upgrade request over HTTP/1.1", async () => {
  await using server = await serve({ headerTimeoutMs: 300 });
  const h2 = await connect(server.addr.port);
  await h2.write(encoder.encode("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"));
  // An empty SETTINGS frame.
  await h2.write(new Uint8Array([0, 0, 0, 4, 0, 0, 0, 0, 0]));
  const frame = new Uint8Array(64);
  const n = await h2.read(frame);
  assert.ok(n !== null && n >= 9);
  assert.equal(frame[3], 4, "the server's first frame is SETTINGS");
  // Its frames are not request heads: quiet past the header timeout, it
  // stays open.
  assert.equal(await stillOpenAfter(h2, 600), true);
  h2.close();

  const path = new URL(server.url).pathname;
  const upgrade = await connect(server.addr.port);
  await upgrade.write(encoder.encode(
    `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n` +
      "Upgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" +
      "Sec-WebSocket-Version: 13\r\n\r\n",
  ));
  let text = "";
  const buffer = new Uint8Array(4096);
  while (!text.includes("\r\n\r\n")) {
    const read = await upgrade.read(buffer);
    if (read === null) break;
    text += decoder.decode(buffer.subarray(0, read));
  }
  assert.match(text, /^HTTP\/1\.1 200 /);
  assert.match(await getOver(upgrade, path), /^HTTP\/1\.1 200 /);
  upgrade.close();
});

Deno.test("serveDelivery() without the guard leaves a header-less connection open, as bare Deno.serve does", async () => {
  await using server = await serve({ connectionGuard: false });
  const conn = await connect(server.addr.port);
  await conn.write(encoder.encode("GET / HTTP/1.1\r\nHost: x\r\n"));
  // Longer than the guard's timeouts in this file: nothing closes it.
  assert.equal(await stillOpenAfter(conn, 800), true);
  assert.equal(await status(server.url), 200);
  conn.close();
});

Deno.test("serveDelivery() refuses bad guard limits, and limits with the guard off", async () => {
  for (
    const options of [
      { headerTimeoutMs: 0 },
      { idleTimeoutMs: 1.5 },
      { idleTimeoutMs: 2 ** 31 },
      { maxConnections: 0 },
      { maxConnections: Infinity },
    ]
  ) {
    await assert.rejects(serve(options), RangeError, JSON.stringify(options));
  }
  await assert.rejects(
    serve({ headerTimeoutMs: "10" as unknown as number }),
    TypeError,
  );
  await assert.rejects(
    serve({ connectionGuard: false, maxConnections: 10 }),
    { name: "TypeError", message: /maxConnections needs the connection guard/ },
  );
  await assert.rejects(
    serve({ connectionGuard: "no" as unknown as boolean }),
    TypeError,
  );
});

Deno.test("scanHead() finds a head's blank line across chunks, with CRLF or bare LF", () => {
  const scan = (...chunks: string[]) =>
    chunks.reduce((state, chunk) => scanHead(encoder.encode(chunk), state), 0);
  const DONE = scan("\r\n\r\n");
  assert.equal(scan("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), DONE);
  assert.equal(scan("GET / HTTP/1.1\r\nHost: x\r", "\n\r", "\n"), DONE);
  assert.equal(scan("GET / HTTP/1.1\nHost: x\n\n"), DONE);
  assert.notEqual(scan("GET / HTTP/1.1\r\nHost: x\r\n"), DONE);
  assert.notEqual(scan("GET / HTTP/1.1\r\n", "Host: x\r\n\rX"), DONE);
});

Deno.test("maxConnectionsFor() fits three descriptors per connection under the limit", () => {
  assert.equal(maxConnectionsFor(undefined), 4096);
  assert.equal(maxConnectionsFor(256), 64);
  assert.equal(maxConnectionsFor(10), 1);
  assert.equal(maxConnectionsFor(1_048_576), 4096);
  assert.equal(
    isOutOfDescriptors(new Error("Too many open files (os error 24)")),
    true,
  );
  assert.equal(
    isOutOfDescriptors(new Error("Connection reset (os error 104)")),
    false,
  );
});

Deno.test("serveDelivery() with the guard passes on the inner server's 400 to a request head over its size cap, as without the guard", async () => {
  for (const connectionGuard of [true, false]) {
    await using server = await serve({ connectionGuard });
    const conn = await connect(server.addr.port);
    const head = `GET /api/sandbox-modules HTTP/1.1\r\nHost: x\r\nX-Pad: ${
      "a".repeat(512 * 1024)
    }\r\nConnection: close\r\n\r\n`;
    // The server may stop reading before the head is all sent.
    await conn.write(encoder.encode(head)).catch(() => 0);
    let answer = "";
    const buffer = new Uint8Array(16 * 1024);
    for (;;) {
      const n = await conn.read(buffer).catch(() => null);
      if (n === null) break;
      answer += decoder.decode(buffer.subarray(0, n));
    }
    conn.close();
    assert.match(
      answer,
      /^HTTP\/1\.1 400 /,
      `guard ${connectionGuard}: ${JSON.stringify(answer.slice(0, 80))}`,
    );
  }
});

Deno.test("serveDelivery() closes a silent connection after the header timeout while the wall clock stands still or steps back", async () => {
  const wallClock = Date.now;
  // An NTP correction can step the wall clock back by hours: deadlines
  // timed with it would not pass until it caught up again.
  Date.now = () => 0;
  try {
    await assertSilentConnectionClosedAfterHeaderTimeout();
  } finally {
    Date.now = wallClock;
  }
});
