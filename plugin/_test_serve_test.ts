/**
 * Serves a handler with `Deno.serve` on a free port of 127.0.0.1, for the
 * plugin host's end-to-end tables.
 *
 * @module
 */

/** Serves `handler` with Deno.serve on a free port of 127.0.0.1. */
export function serve(
  handler: Deno.ServeHandler,
): { port: number; close(): Promise<void> } {
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    handler,
  );
  return { port: server.addr.port, close: () => server.shutdown() };
}
