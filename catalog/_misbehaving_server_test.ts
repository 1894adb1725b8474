/**
 * Misbehaving delivery servers over raw TCP, for the tests of the remote
 * catalog and of the loaders that fetch through it: {@linkcode serveRaw}
 * hands each connection to an answer that may never come
 * ({@linkcode neverAnswer}), drip ({@linkcode send} with `dripMs`) or
 * flood ({@linkcode flood}). Used by tests only; it holds no tests, and its
 * `_test.ts` name keeps it out of the published package.
 *
 * @module
 */

import assert from "node:assert/strict";
import { settleWithin } from "../protocol/deadline.ts";

const encoder = new TextEncoder();

/**
 * How long a test waits for a bounded wait to end before it calls it a
 * hang. The tests tell a limit kept from one missed by what ended the wait
 * (its code, its message), never by how fast: this is far past every limit
 * they set, so only a wait that never ends reaches it, however loaded the
 * machine.
 */
export const HANG_MS = 120_000;

/** One connection of a raw server, with what its client asked for. */
export interface RawExchange {
  /** The request's path and query. */
  path: string;
  /** Writes all of `text` (or bytes), counting what the socket took. */
  write(data: string | Uint8Array): Promise<void>;
  /** Resolves when the client closes the connection. */
  closed(): Promise<void>;
}

/** A raw server; the caller owns it and must dispose it. */
export interface RawServer extends AsyncDisposable {
  url: string;
  /** Bytes the server's writers got into the socket, over all connections. */
  written(): number;
}

/** Resolves after `ms` milliseconds. */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Reads a request's head and returns its path, or `null` at EOF. */
async function readRequestPath(conn: Deno.Conn): Promise<string | null> {
  const buffer = new Uint8Array(16 * 1024);
  let head = "";
  while (!head.includes("\r\n\r\n")) {
    const n = await conn.read(buffer);
    if (n === null) return null;
    head += new TextDecoder().decode(buffer.subarray(0, n));
  }
  return head.split(" ")[1] ?? "/";
}

/**
 * A server on 127.0.0.1 that hands each connection to `answer` after
 * reading the request head. Disposing it (once or twice) closes the
 * listener and every connection, and waits for every answer to end.
 */
export function serveRaw(
  answer: (exchange: RawExchange) => Promise<void>,
): RawServer {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const open = new Set<Deno.Conn>();
  const answers: Promise<void>[] = [];
  let written = 0;
  let closing: Promise<void> | undefined;

  function close(conn: Deno.Conn): void {
    if (open.delete(conn)) conn.close();
  }

  async function handle(conn: Deno.Conn): Promise<void> {
    try {
      const path = await readRequestPath(conn);
      if (path === null) return;
      await answer({
        path,
        async write(data) {
          const bytes = typeof data === "string" ? encoder.encode(data) : data;
          for (let offset = 0; offset < bytes.length;) {
            const n = await conn.write(bytes.subarray(offset));
            offset += n;
            written += n;
          }
        },
        async closed() {
          const sink = new Uint8Array(1024);
          while (await conn.read(sink) !== null) {
            // Discard whatever else the client sends.
          }
        },
      });
    } catch {
      // The client went away or the server is closing: the answer ends.
    } finally {
      close(conn);
    }
  }

  const accepting = (async () => {
    try {
      for await (const conn of listener) {
        open.add(conn);
        answers.push(handle(conn));
      }
    } catch {
      // The listener was closed.
    }
  })();

  return {
    url: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    written: () => written,
    [Symbol.asyncDispose]() {
      closing ??= (async () => {
        listener.close();
        for (const conn of [...open]) close(conn);
        await accepting;
        await Promise.allSettled(answers);
      })();
      return closing;
    },
  };
}

/** An HTTP/1.1 response head with `headers` and `connection: close`. */
export function head(
  status: string,
  headers: Record<string, string | number>,
): string {
  const lines = Object.entries(headers).map(([name, value]) =>
    `${name}: ${value}\r\n`
  );
  return `HTTP/1.1 ${status}\r\n${lines.join("")}connection: close\r\n\r\n`;
}

/** Takes the request and answers nothing until the client hangs up. */
export function neverAnswer(exchange: RawExchange): Promise<void> {
  return exchange.closed();
}

/**
 * Answers 200 with `headers`, the `content-length` of `body`, and `body`:
 * at once, or one byte every `dripMs` milliseconds.
 */
export async function send(
  exchange: RawExchange,
  headers: Record<string, string | number>,
  body: string | Uint8Array,
  options: { dripMs?: number } = {},
): Promise<void> {
  const bytes = typeof body === "string" ? encoder.encode(body) : body;
  await exchange.write(
    head("200 OK", { ...headers, "content-length": bytes.length }),
  );
  if (options.dripMs === undefined) return exchange.write(bytes);
  for (let offset = 0; offset < bytes.length; offset++) {
    await exchange.write(bytes.subarray(offset, offset + 1));
    await delay(options.dripMs);
  }
}

/** Writes `total` bytes of `fill` in 1 MiB chunks, until done or refused. */
export async function flood(
  exchange: RawExchange,
  total: number,
  fill = "a",
): Promise<void> {
  const chunk = encoder.encode(fill.repeat(1024 * 1024));
  for (let sent = 0; sent < total; sent += chunk.length) {
    await exchange.write(chunk);
  }
}

/**
 * Awaits `promise`, and fails the test when it has not settled within
 * {@linkcode HANG_MS}: a wait the limit under test should have ended.
 *
 * @returns What `promise` resolved to.
 * @throws What `promise` rejected with, or an assertion error at the hang.
 */
export function unlessHung<T>(promise: Promise<T>): Promise<T> {
  return settleWithin(
    promise,
    HANG_MS,
    () => assert.fail(`still waiting after ${HANG_MS} ms: a hang`),
  );
}

/** A response body that never yields a byte, and whether it was cancelled. */
export interface StuckBody {
  /** The body: each read stays pending until the stream is cancelled. */
  stream: ReadableStream<Uint8Array>;
  /** Whether its reader cancelled it, which releases the pending read. */
  cancelled(): boolean;
}

/**
 * A body whose reads stay pending after the request's signal aborted, as
 * Node's fetch (undici) leaves some bodies it cannot decompress (a
 * `content-encoding: br` answer whose bytes are not brotli): only
 * cancelling its reader ends the read. Measured on Node 20.20: 3 such
 * answers in 200 left the read pending past the abort.
 */
export function stuckBody(): StuckBody {
  let cancelled = false;
  const stream = new ReadableStream<Uint8Array>({
    pull: () => new Promise<void>(() => {}),
    cancel() {
      cancelled = true;
    },
  });
  return { stream, cancelled: () => cancelled };
}
