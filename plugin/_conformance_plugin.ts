/**
 * The plugin the conformance harness hosts, written as ordinary type-checked
 * functions and turned into module text by {@linkcode conformancePluginSource}
 * through the one realm-source helper. Each function is self-contained: it
 * runs inside the plugin's realm, so it refers to nothing outside its body
 * but what it is handed (the library, the data and `cordon:host`).
 *
 * @module
 */

import type { SerializedRequest } from "../protocol/bridge_messages.ts";
import { realmSource } from "../realm/realm_source.ts";

/** The parts of `cordon:host` the conformance plugin calls. */
interface ConformanceHost {
  capabilities: { call(name: string, args: unknown): Promise<unknown> };
  bodyText(request: SerializedRequest): string;
  utf8: { encode(text: string): Uint8Array };
}

/**
 * FNV-1a over bytes, as hex: the plugin sends it back over the echoed body
 * and the run's nonce, so a bridge cannot answer the round trip from a
 * cached or made-up response.
 *
 * @returns Eight hex digits.
 */
export function fingerprint(bytes: Uint8Array): string {
  let hash = 0x811c9dc5;
  for (const byte of bytes) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, "0");
}

type Library = { fingerprint: typeof fingerprint };

function conformancePlugin(
  library: Library,
  data: { nonce: string },
  host: ConformanceHost,
) {
  const { nonce } = data;
  const record = (event: string) =>
    host.capabilities.call("conformance.record", { event });
  return {
    routes: () => [
      { method: "POST", path: "/conformance/echo/:item" },
      { method: "GET", path: "/conformance/throw" },
      { method: "GET", path: "/conformance/denied" },
      { method: "DELETE", path: "/conformance/items/:id" },
    ],
    start: async () => void await record("start"),
    stop: async () => void await record("stop"),
    async handleRequest(req: SerializedRequest) {
      if (req.url.endsWith("/conformance/throw")) {
        throw new RangeError("conformance failure " + nonce);
      }
      if (req.url.endsWith("/conformance/denied")) {
        await host.capabilities.call("conformance.forbidden", {});
        return {
          status: 200,
          headers: [],
          body: "the capability was not denied",
        };
      }
      const body = host.bodyText(req);
      const header = req.headers.find(([name]) => name === "x-conformance");
      return {
        status: 201,
        headers: [
          ["content-type", "application/json"],
          ["x-conformance-echo", header ? header[1] : ""],
        ],
        body: JSON.stringify({
          method: req.method,
          body,
          fingerprint: library.fingerprint(host.utf8.encode(body + nonce)),
          header: header ? header[1] : null,
          principalId: req.principalId,
          tenantId: req.tenantId,
          capabilities: req.capabilities,
          params: req.params,
        }),
      };
    },
  };
}

/**
 * The conformance plugin's module text for one run: it imports
 * `cordon:host`, builds the plugin from the functions above and exports its
 * hooks; the module's own lines are declarations only.
 *
 * @param nonce The run's nonce, which the plugin mixes into its answers.
 */
export function conformancePluginSource(nonce: string): string {
  const build = realmSource(conformancePlugin, { fingerprint }, { nonce });
  return `import * as host from "cordon:host";
export const { routes, start, stop, handleRequest } = (${build})(host);
`;
}
