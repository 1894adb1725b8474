/**
 * `Deno.serve` that outlives a failed accept.
 *
 * On Deno 2.9.6 the accept loop of `Deno.serve` ends for good at the first
 * failed accept, such as "Too many open files" when clients hold every
 * descriptor: `finished` rejects, the port is released, and the server
 * never accepts again. Here, when that happens, the dead server is shut
 * down gracefully, which lets its requests in flight finish and closes its
 * idle connections (including those that never finished a request head,
 * which are what used the descriptors up), and a new `Deno.serve` listens
 * on the same address at once.
 *
 * @module
 */

/** The first pause before listening again fails and is retried. */
const FIRST_RETRY_MS = 10;
/** The longest pause between retries. */
const MAX_RETRY_MS = 1000;

/** Options of {@linkcode serveRelistening}. */
export interface RelistenOptions {
  /** The address to listen on. */
  hostname: string;
  /** The port to listen on; 0 picks a free one, kept for every restart. */
  port: number;
  /** Told why accepting stopped, and each failed attempt to listen again. */
  onAcceptError: (error: Error) => void;
}

/** A running server. The caller owns it and must shut it down. */
export interface RelisteningServer {
  /** The listening address. */
  readonly addr: Deno.NetAddr;
  /** Resolves once `shutdown` is done; a failed accept does not settle it. */
  readonly finished: Promise<void>;
  /** Stops listening and shuts down every server started, gracefully. */
  shutdown(): Promise<void>;
}

/**
 * Serves `handler` with `Deno.serve`, listening again whenever accepting
 * fails.
 *
 * @param handler The request handler.
 * @param options The address and the error hook.
 * @returns The running server.
 * @throws {Error} When the address cannot be bound at first.
 */
export function serveRelistening(
  handler: Deno.ServeHandler<Deno.NetAddr>,
  options: RelistenOptions,
): RelisteningServer {
  return new Relistening(handler, options);
}

class Relistening implements RelisteningServer {
  readonly addr: Deno.NetAddr;
  readonly finished: Promise<void>;
  #handler: Deno.ServeHandler<Deno.NetAddr>;
  #options: RelistenOptions;
  /** Every server started and not yet shut down, the listening one last. */
  #servers = new Set<Deno.HttpServer<Deno.NetAddr>>();
  #retry: ReturnType<typeof setTimeout> | undefined;
  #stopping: Promise<void> | undefined;
  #resolveFinished: () => void;

  constructor(
    handler: Deno.ServeHandler<Deno.NetAddr>,
    options: RelistenOptions,
  ) {
    this.#handler = handler;
    this.#options = options;
    const server = this.#listen(options.port);
    // A restart must come back on the same port, also when it was 0.
    this.addr = server.addr;
    const { promise, resolve } = Promise.withResolvers<void>();
    this.finished = promise;
    this.#resolveFinished = resolve;
  }

  shutdown(): Promise<void> {
    this.#stopping ??= (async () => {
      clearTimeout(this.#retry);
      await Promise.all([...this.#servers].map((server) => server.shutdown()));
      this.#resolveFinished();
    })();
    return this.#stopping;
  }

  #listen(port: number): Deno.HttpServer<Deno.NetAddr> {
    const server = Deno.serve({
      hostname: this.#options.hostname,
      port,
      onListen() {},
    }, this.#handler);
    this.#servers.add(server);
    server.finished.catch((error) => this.#onStopped(server, error));
    return server;
  }

  #onStopped(server: Deno.HttpServer<Deno.NetAddr>, error: unknown): void {
    if (this.#stopping) return;
    this.#report("Cannot accept connections", error, "listening again");
    // Closing the dead server's idle connections gives back the
    // descriptors they hold; requests in flight still finish.
    server.shutdown().catch(() => {}).finally(() =>
      this.#servers.delete(server)
    );
    this.#relisten(FIRST_RETRY_MS);
  }

  #relisten(nextRetryMs: number): void {
    if (this.#stopping) return;
    try {
      this.#listen(this.addr.port);
    } catch (error) {
      this.#report(
        "Cannot listen again",
        error,
        `retrying in ${nextRetryMs} ms`,
      );
      this.#retry = setTimeout(
        () => this.#relisten(Math.min(nextRetryMs * 2, MAX_RETRY_MS)),
        nextRetryMs,
      );
    }
  }

  #report(what: string, error: unknown, next: string): void {
    // Deno.serve wraps the OS error as "Error: Too many open files ...".
    const detail = (error instanceof Error ? error.message : String(error))
      .replace(/^Error: /, "");
    try {
      this.#options.onAcceptError(
        new Error(`${what}: ${detail}; ${next}`, { cause: error }),
      );
    } catch {
      // A failing hook must not stop the server.
    }
  }
}
