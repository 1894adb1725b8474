/**
 * An open-loop HTTP load for the plugin benchmark: requests start when they
 * are due, at a fixed rate, whatever the earlier ones are doing, and each is
 * timed from when it was due. A closed loop (each connection sends its next
 * request when the last one answered) cannot compare the tails of paths of
 * different throughput: its latency is connections ÷ requests/s.
 *
 * Plain HTTP/1.1 over `Deno.connect`, one request at a time per keep-alive
 * connection, because `fetch` costs the load process more per request than
 * the servers it measures, and the closed-loop generator's rate option
 * sends each second's quota in a burst.
 *
 * @module
 */

/** What one open-loop run measured. */
export interface OpenLoopResult {
  /** Latencies from when each request was due, in ms. */
  latencies: number[];
  /** Requests that failed or answered other than 2xx. */
  bad: number;
}

/** One request to send, over and over. */
export interface OpenLoopRequest {
  port: number;
  path: string;
  body: string;
  headers: Record<string, string>;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder("latin1");

/** Reads whole HTTP/1.1 responses from one connection. */
class ResponseReader {
  #conn: Deno.Conn;
  #buffer = "";
  #chunk = new Uint8Array(65536);

  constructor(conn: Deno.Conn) {
    this.#conn = conn;
  }

  async #more(): Promise<void> {
    const n = await this.#conn.read(this.#chunk);
    if (n === null) throw new Error("The server closed the connection");
    this.#buffer += decoder.decode(this.#chunk.subarray(0, n));
  }

  /** Reads one response; returns its status. */
  async status(): Promise<number> {
    let end: number;
    while ((end = this.#buffer.indexOf("\r\n\r\n")) === -1) await this.#more();
    const head = this.#buffer.slice(0, end).toLowerCase();
    this.#buffer = this.#buffer.slice(end + 4);
    const status = Number(head.slice(9, 12));
    const length = /\r\ncontent-length: *(\d+)/.exec(head);
    if (length !== null) {
      await this.#skip(Number(length[1]));
    } else if (/\r\ntransfer-encoding: *chunked/.test(head)) {
      for (;;) {
        let line: number;
        while ((line = this.#buffer.indexOf("\r\n")) === -1) await this.#more();
        const size = parseInt(this.#buffer.slice(0, line), 16);
        this.#buffer = this.#buffer.slice(line + 2);
        await this.#skip(size + 2);
        if (size === 0) break;
      }
    }
    return status;
  }

  async #skip(bytes: number): Promise<void> {
    while (this.#buffer.length < bytes) await this.#more();
    this.#buffer = this.#buffer.slice(bytes);
  }
}

/**
 * Sends `rate` requests a second for `seconds` over up to `connections`
 * keep-alive connections. A due request waits for a free connection, and
 * that wait counts in its latency, as a client's would.
 */
export async function openLoop(
  request: OpenLoopRequest,
  { rate, seconds, connections }: {
    rate: number;
    seconds: number;
    connections: number;
  },
): Promise<OpenLoopResult> {
  const head =
    `POST ${request.path} HTTP/1.1\r\nhost: 127.0.0.1:${request.port}\r\n${
      Object.entries(request.headers).map(([k, v]) => `${k}: ${v}\r\n`).join("")
    }content-length: ${encoder.encode(request.body).length}\r\n\r\n`;
  const message = encoder.encode(head + request.body);
  const total = Math.round(rate * seconds);
  const due: number[] = [];
  const waiting: (() => void)[] = [];
  const latencies: number[] = [];
  let bad = 0;
  let scheduled = 0;

  async function connection(conn: Deno.Conn): Promise<void> {
    const reader = new ResponseReader(conn);
    try {
      for (;;) {
        while (due.length === 0) {
          if (scheduled === total) return;
          await new Promise<void>((resolve) => waiting.push(resolve));
        }
        const at = due.shift()!;
        try {
          await conn.write(message);
          const status = await reader.status();
          if (status >= 200 && status < 300) {
            latencies.push(performance.now() - at);
          } else bad++;
        } catch {
          bad++;
          return;
        }
      }
    } finally {
      conn.close();
    }
  }

  // Connected before the clock starts: a connection's set-up is not the
  // server's answer time.
  const conns = await Promise.all(
    Array.from({ length: connections }, async () => {
      const conn = await Deno.connect({
        hostname: "127.0.0.1",
        port: request.port,
      });
      conn.setNoDelay(true);
      return conn;
    }),
  );
  const workers = conns.map(connection);
  const start = performance.now();
  while (scheduled < total) {
    const now = performance.now();
    for (
      ;
      scheduled < total && start + (scheduled * 1000) / rate <= now;
      scheduled++
    ) {
      due.push(start + (scheduled * 1000) / rate);
    }
    for (const wake of waiting.splice(0)) wake();
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  for (const wake of waiting.splice(0)) wake();
  await Promise.all(workers);
  return { latencies, bad };
}
