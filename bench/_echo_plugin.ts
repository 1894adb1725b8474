/**
 * The plugin the plugin and bridge benchmarks serve: no imports, so the
 * host can load the same text as a host plugin, and a little work per
 * request (a checksum of the body) so each path does the same computing.
 *
 * @module
 */

import type { PluginHost } from "../plugin/mod.ts";
import type {
  SerializedRequest,
  SerializedResponse,
} from "../protocol/bridge_messages.ts";

/** The plugin's source: the same text runs in the host and in each tier. */
export const PLUGIN_SOURCE = `
export function routes() {
  return [{ method: "POST", path: "/echo/:id" }];
}
export function handleRequest(req) {
  let sum = 0;
  const body = req.bodyBase64 ?? "";
  for (let i = 0; i < body.length; i++) sum = (sum * 31 + body.charCodeAt(i)) >>> 0;
  return {
    status: 200,
    headers: [["content-type", "application/json"]],
    body: JSON.stringify({ id: req.params.id, principal: req.principalId, tenant: req.tenantId, sum }),
  };
}
`;

/** The request body every benchmark request carries. */
export const BODY: string = JSON.stringify({ note: "x".repeat(200), n: 1 });

/** What the plugin exports. */
export interface PluginSurface {
  routes(): { method: "POST"; path: string }[];
  handleRequest(req: SerializedRequest): SerializedResponse;
}

/** The plugin imported into the host, for the host-plugin baseline. */
export async function importHostPlugin(): Promise<PluginSurface> {
  const url = `data:text/javascript;base64,${btoa(PLUGIN_SOURCE)}`;
  return await import(url) as PluginSurface;
}

/**
 * Serves `host` on a free port of 127.0.0.1, prints `{ "port": N }` for the
 * benchmark that started this process, and serves until its stdin closes.
 */
export async function serveUntilStdinCloses(host: PluginHost): Promise<void> {
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    host.fetch,
  );
  console.log(JSON.stringify({ port: server.addr.port }));
  for await (const _ of Deno.stdin.readable) { /* wait */ }
  await server.shutdown();
  await host.dispose();
}
