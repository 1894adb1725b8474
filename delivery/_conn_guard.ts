/**
 * The connection guard: a TCP front before an inner `Deno.serve`.
 *
 * `Deno.serve` (Deno 2.9.6) has no header timeout, no idle timeout and no
 * connection count. So the guard listens instead: it accepts each
 * connection, counts it, and waits for its first request head under a
 * deadline. Only then does it connect to the inner `Deno.serve` on a
 * loopback port and copy bytes both ways, following where each connection
 * is:
 *
 * - `head`: the client owes a request head;
 * - `waiting`: the server owes an answer;
 * - `answered`: answer bytes went out, and the client's next bytes start a
 *   new head;
 * - `h2`: HTTP/2 with prior knowledge, whose frames the guard does not
 *   read.
 *
 * A connection in `head` longer than the header timeout is closed, and so
 * is any connection that moved no bytes either way for the idle timeout.
 * At the connection limit a new connection closes the one with nothing in
 * flight (any phase but `waiting`) that moved bytes least recently; when
 * every one is waiting, the new one is closed.
 *
 * @module
 */

import { CordonError } from "../protocol/cordon_error.ts";
import {
  DESCRIPTORS_PER_CONNECTION,
  isOutOfDescriptors,
} from "./_conn_limits.ts";
import { type RelisteningServer, serveRelistening } from "./_conn_relisten.ts";

/** Where the inner `Deno.serve` listens; only the guard connects to it. */
const INNER_HOSTNAME = "127.0.0.1";
/** The largest first head the guard holds; a larger one goes on as is. */
const MAX_HEAD_BYTES = 64 * 1024;
/** One read from a client: requests are small. */
const REQUEST_CHUNK_BYTES = 4 * 1024;
/** One read from the inner server: answers are up to a module's size. */
const ANSWER_CHUNK_BYTES = 16 * 1024;
/** The first pause after a failed accept, doubled up to a second. */
const FIRST_BACKOFF_MS = 10;
const MAX_BACKOFF_MS = 1000;
/** Descriptors kept free when the limit is learned from a failed accept. */
const LEARNED_MARGIN_DESCRIPTORS = 32;
/** What an HTTP/2 client with prior knowledge sends first. */
const H2_PREFACE = new TextEncoder().encode("PRI * HTTP/2.0\r\n\r\n");

/** Options of {@linkcode serveGuarded}. */
export interface GuardedServeOptions {
  /** The address to listen on. */
  hostname: string;
  /** The port to listen on; 0 picks a free one. */
  port: number;
  /** How long a client may take to send a request head, in milliseconds. */
  headerTimeoutMs: number;
  /** How long a connection may move no bytes, in milliseconds. */
  idleTimeoutMs: number;
  /** The most connections open at once; lowered when descriptors run out. */
  maxConnections: number;
  /** Told each failed accept or connect; serving goes on. */
  onError: (error: Error) => void;
}

/**
 * Serves `handler` on an inner `Deno.serve` that clients reach only through
 * the guard, listening on `hostname:port`.
 *
 * @param handler The request handler.
 * @param options The address, the limits and the error hook.
 * @returns The running server. The caller owns it and must shut it down.
 * @throws {Error} When either address cannot be bound.
 */
export async function serveGuarded(
  handler: Deno.ServeHandler<Deno.NetAddr>,
  options: GuardedServeOptions,
): Promise<RelisteningServer> {
  const onError = (error: Error) => {
    try {
      options.onError(error);
    } catch {
      // A failing hook must not stop the server.
    }
  };
  const inner = serveInner(handler, onError);
  let guard: Guard;
  try {
    guard = new Guard(
      Deno.listen({ hostname: options.hostname, port: options.port }),
      { ...options, onError, upstreamPort: inner.addr.port },
    );
  } catch (error) {
    await inner.shutdown();
    throw error;
  }
  const { promise: finished, resolve } = Promise.withResolvers<void>();
  let stopping: Promise<void> | undefined;
  return {
    addr: guard.addr,
    finished,
    shutdown() {
      stopping ??= (async () => {
        await guard.stopAccepting();
        // The inner server finishes the requests in flight and closes its
        // idle connections, and the guard closes each client whose inner
        // connection closed.
        await inner.shutdown();
        await guard.close();
        resolve();
      })();
      return stopping;
    },
  };
}

/**
 * Starts the inner server on a free port of INNER_HOSTNAME. Deno checks
 * that port, 0, against `--allow-net`, so a process granted only its public
 * address is refused here, and told why, rather than with a bare denial of
 * an address it never named.
 */
function serveInner(
  handler: Deno.ServeHandler<Deno.NetAddr>,
  onAcceptError: (error: Error) => void,
): RelisteningServer {
  try {
    return serveRelistening(handler, {
      hostname: INNER_HOSTNAME,
      port: 0,
      onAcceptError,
    });
  } catch (error) {
    if (!(error instanceof Deno.errors.NotCapable)) throw error;
    throw new CordonError(
      "DELIVERY_LISTEN_FAILED",
      `Cannot start the delivery server: its connection guard serves through an inner server on a free port of ${INNER_HOSTNAME}, which this process may not listen on; grant --allow-net=${INNER_HOSTNAME} (every port) as well as the public address, or pass connectionGuard: false behind a proxy that limits connections`,
      { cause: error },
    );
  }
}

type Phase = "head" | "waiting" | "answered" | "h2";

/** One client connection and, once its first head is in, its upstream. */
class GuardedConn {
  readonly client: Deno.TcpConn;
  upstream: Deno.TcpConn | undefined;
  phase: Phase = "head";
  /** When the current head began, for the header deadline. */
  headSince: number;
  /** When bytes last moved either way, for the idle deadline. */
  lastActive: number;
  closed = false;
  /** How far the head's closing blank line has come; see `scanHead`. */
  #blankLine = 0;

  constructor(client: Deno.TcpConn, now: number) {
    this.client = client;
    this.headSince = now;
    this.lastActive = now;
  }

  /** Nothing is in flight, so closing it loses no answer. */
  get evictable(): boolean {
    return this.phase !== "waiting";
  }

  /** Follows the client's bytes: the end of a head, or a new one. */
  sawRequestBytes(chunk: Uint8Array, now: number): void {
    this.lastActive = now;
    if (this.phase === "answered") {
      this.phase = "head";
      this.headSince = now;
      this.#blankLine = 0;
    }
    if (this.phase !== "head") return;
    this.#blankLine = scanHead(chunk, this.#blankLine);
    if (this.#blankLine === HEAD_DONE) this.phase = "waiting";
  }

  sawAnswerBytes(now: number): void {
    this.lastActive = now;
    if (this.phase === "waiting") this.phase = "answered";
  }

  isOverdue(
    now: number,
    headerTimeoutMs: number,
    idleTimeoutMs: number,
  ): boolean {
    return (this.phase === "head" && now - this.headSince >= headerTimeoutMs) ||
      now - this.lastActive >= idleTimeoutMs;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    closeQuietly(this.client);
    if (this.upstream) closeQuietly(this.upstream);
  }
}

interface GuardOptions extends GuardedServeOptions {
  upstreamPort: number;
}

class Guard {
  readonly addr: Deno.NetAddr;
  #listener: Deno.TcpListener;
  #options: GuardOptions;
  #open = new Set<GuardedConn>();
  #tasks = new Set<Promise<void>>();
  #limit: number;
  #sweeper: ReturnType<typeof setInterval>;
  #accepting: Promise<void>;
  #stopped = false;
  #wake: (() => void) | undefined;

  constructor(listener: Deno.TcpListener, options: GuardOptions) {
    this.#listener = listener;
    this.#options = options;
    this.addr = listener.addr;
    this.#limit = options.maxConnections;
    // One sweep over every connection costs less than a timer per request.
    const shorter = Math.min(options.headerTimeoutMs, options.idleTimeoutMs);
    this.#sweeper = setInterval(
      () => this.#sweep(),
      Math.min(500, Math.max(5, Math.floor(shorter / 10))),
    );
    this.#accepting = this.#acceptLoop();
  }

  /** Stops accepting and closes the connections that still owe a head. */
  async stopAccepting(): Promise<void> {
    this.#stopped = true;
    closeQuietly(this.#listener);
    this.#wake?.();
    for (const conn of this.#open) {
      if (conn.phase === "head") this.#drop(conn);
    }
    await this.#accepting;
  }

  /**
   * Closes every connection and waits until each is let go. Called once
   * the inner server has shut down: a connection that reached it closes
   * itself when its upstream ends, after the answer's last bytes, which
   * may still be on their way; closing it here would cut that answer. The
   * sweeper keeps running until then, so a client that stopped reading is
   * still cut after `idleTimeoutMs`.
   */
  async close(): Promise<void> {
    for (const conn of this.#open) {
      if (conn.upstream === undefined) this.#drop(conn);
    }
    await Promise.all(this.#tasks);
    clearInterval(this.#sweeper);
  }

  async #acceptLoop(): Promise<void> {
    let backoffMs = FIRST_BACKOFF_MS;
    while (!this.#stopped) {
      let client: Deno.TcpConn;
      try {
        client = await this.#listener.accept();
      } catch (error) {
        if (this.#stopped) return;
        this.#report(
          "Cannot accept a connection",
          error,
          `trying again in ${backoffMs} ms`,
        );
        await this.#pause(backoffMs);
        backoffMs = Math.min(backoffMs * 2, MAX_BACKOFF_MS);
        continue;
      }
      backoffMs = FIRST_BACKOFF_MS;
      this.#admit(client);
    }
  }

  #admit(client: Deno.TcpConn): void {
    if (this.#open.size >= this.#limit && !this.#evictOne()) {
      // Every connection is waiting for an answer: refuse this one.
      closeQuietly(client);
      return;
    }
    client.setNoDelay(true);
    const conn = new GuardedConn(client, performance.now());
    this.#open.add(conn);
    const task = this.#serve(conn).finally(() => {
      this.#drop(conn);
      this.#tasks.delete(task);
    });
    this.#tasks.add(task);
  }

  #pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /** Closes the connection with nothing in flight that moved bytes last. */
  #evictOne(): boolean {
    let oldest: GuardedConn | undefined;
    for (const conn of this.#open) {
      if (
        conn.evictable &&
        (oldest === undefined || conn.lastActive < oldest.lastActive)
      ) {
        oldest = conn;
      }
    }
    if (oldest) this.#drop(oldest);
    return oldest !== undefined;
  }

  #drop(conn: GuardedConn): void {
    conn.close();
    this.#open.delete(conn);
  }

  #sweep(): void {
    const now = performance.now();
    const { headerTimeoutMs, idleTimeoutMs } = this.#options;
    for (const conn of this.#open) {
      if (conn.isOverdue(now, headerTimeoutMs, idleTimeoutMs)) {
        this.#drop(conn);
      }
    }
  }

  /**
   * Reports a failure in one line. When descriptors ran out, the
   * connections open now show what the process can hold: the limit drops
   * below that, counting each connection as forwarded, and the connections
   * over it are closed.
   */
  #report(what: string, error: unknown, next: string): void {
    const detail = error instanceof Error ? error.message : String(error);
    if (isOutOfDescriptors(error)) {
      let held = 0;
      for (const conn of this.#open) {
        held += conn.upstream ? DESCRIPTORS_PER_CONNECTION : 1;
      }
      const fit = Math.floor(
        (held - LEARNED_MARGIN_DESCRIPTORS) / DESCRIPTORS_PER_CONNECTION,
      );
      this.#limit = Math.max(1, Math.min(this.#limit, fit));
      while (this.#open.size > this.#limit && this.#evictOne()) {
        // Each pass closes one.
      }
      next = `keeping at most ${this.#limit} connections open from now on`;
    }
    this.#options.onError(
      new Error(`${what}: ${detail}; ${next}`, { cause: error }),
    );
  }

  /** Never rejects: every failure ends in closing the connection. */
  async #serve(conn: GuardedConn): Promise<void> {
    const head = await readFirstHead(conn).catch(() => null);
    if (head === null || conn.closed) return;
    if (startsWith(head, H2_PREFACE)) conn.phase = "h2";
    try {
      conn.upstream = await Deno.connect({
        hostname: INNER_HOSTNAME,
        port: this.#options.upstreamPort,
      });
    } catch (error) {
      this.#report("Cannot reach the inner server", error, "closing one");
      return;
    }
    if (conn.closed) {
      // Evicted or overdue while connecting.
      closeQuietly(conn.upstream);
      return;
    }
    conn.upstream.setNoDelay(true);
    await Promise.all([
      forwardRequests(conn, conn.upstream, head),
      forwardAnswers(conn, conn.upstream),
    ]);
  }
}

/**
 * Reads until the first head is in or {@linkcode MAX_HEAD_BYTES} came.
 *
 * @returns The bytes read, or null when the client closed first.
 */
async function readFirstHead(conn: GuardedConn): Promise<Uint8Array | null> {
  let buffer = new Uint8Array(REQUEST_CHUNK_BYTES);
  let length = 0;
  while (conn.phase === "head" && length < MAX_HEAD_BYTES) {
    if (length === buffer.length) {
      const bigger = new Uint8Array(length * 2);
      bigger.set(buffer);
      buffer = bigger;
    }
    const n = await conn.client.read(buffer.subarray(length));
    if (n === null) return null;
    conn.sawRequestBytes(
      buffer.subarray(length, length + n),
      performance.now(),
    );
    length += n;
  }
  return buffer.subarray(0, length);
}

/** Client to upstream, from the first head on; never rejects. */
async function forwardRequests(
  conn: GuardedConn,
  upstream: Deno.TcpConn,
  head: Uint8Array,
): Promise<void> {
  const buffer = new Uint8Array(REQUEST_CHUNK_BYTES);
  try {
    if (!await forwarded(upstream, head)) return;
    for (;;) {
      const n = await conn.client.read(buffer);
      if (n === null) break;
      const chunk = buffer.subarray(0, n);
      conn.sawRequestBytes(chunk, performance.now());
      if (!await forwarded(upstream, chunk)) return;
    }
    // The client sent all it will; the answer may still come.
    await upstream.closeWrite();
  } catch {
    conn.close();
  }
}

/**
 * Writes request bytes to the inner server; false when it stopped taking
 * them. The inner server stops reading after it refused a request (a head
 * over its size cap gets 400 and a close), and that answer must still
 * reach the client: `forwardAnswers` sends it and then closes.
 */
async function forwarded(
  upstream: Deno.TcpConn,
  bytes: Uint8Array,
): Promise<boolean> {
  try {
    await writeAll(upstream, bytes);
    return true;
  } catch {
    return false;
  }
}

/** Upstream to client, until either side closes; never rejects. */
async function forwardAnswers(
  conn: GuardedConn,
  upstream: Deno.TcpConn,
): Promise<void> {
  const buffer = new Uint8Array(ANSWER_CHUNK_BYTES);
  try {
    for (;;) {
      const n = await upstream.read(buffer);
      if (n === null) break;
      conn.sawAnswerBytes(performance.now());
      await writeAll(conn.client, buffer.subarray(0, n));
      // A slow reader that keeps taking bytes is not idle.
      conn.lastActive = performance.now();
    }
  } catch {
    // Either side went away.
  }
  conn.close();
}

/** `scanHead`'s state once the head's closing blank line is in. */
const HEAD_DONE = 3;

/**
 * Follows a request head to its closing blank line. The state is 0 within
 * a line, 1 after a line feed, 2 after a line feed and a carriage return,
 * and {@linkcode HEAD_DONE} after the blank line; lines may end in CRLF or,
 * as `Deno.serve` also takes, a bare LF.
 *
 * @param chunk The next bytes of the head.
 * @param state Where the previous bytes left it.
 * @returns Where these bytes leave it.
 */
export function scanHead(chunk: Uint8Array, state: number): number {
  for (const byte of chunk) {
    if (byte === 10) {
      if (state !== 0) return HEAD_DONE;
      state = 1;
    } else state = byte === 13 && state === 1 ? 2 : 0;
  }
  return state;
}

function startsWith(bytes: Uint8Array, prefix: Uint8Array): boolean {
  return bytes.length >= prefix.length &&
    prefix.every((byte, i) => bytes[i] === byte);
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let written = 0; written < bytes.length;) {
    written += await conn.write(bytes.subarray(written));
  }
}

function closeQuietly(resource: { close(): void }): void {
  try {
    resource.close();
  } catch {
    // Already closed.
  }
}
