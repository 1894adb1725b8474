/**
 * Asks a delivery server for its whole listing and reads the body, for
 * `_server_start.ts`, which measures the server's memory after it: run
 * in a process of its own so the body's copy counts against this process,
 * not the server's. Exits non-zero unless the listing answered 200.
 *
 * Run: `deno run --allow-net=127.0.0.1 bench/_fetch_listing.ts <port>`.
 *
 * @module
 */

const [port] = Deno.args;
if (port === undefined) throw new Error("usage: <port>");
const answer = await fetch(`http://127.0.0.1:${port}/api/sandbox-modules`);
if (!answer.ok) throw new Error(`the whole listing answered ${answer.status}`);
await answer.arrayBuffer();
