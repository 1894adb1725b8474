/**
 * Serves a web-standard `fetch` handler (such as a plugin host's) with
 * Node's `http` server.
 *
 * @module
 */

import type { IncomingMessage, ServerResponse } from "node:http";
import { Readable } from "node:stream";
import { PROBLEM_CONTENT_TYPE, problemDocument } from "../protocol/problem.ts";

/** A Node `http` request listener. */
export type NodeRequestListener = (
  request: IncomingMessage,
  response: ServerResponse,
) => void;

/** Options of {@linkcode toNodeListener}. */
export interface NodeListenerOptions {
  /** The origin used when a request has no Host header. @default {"http://localhost"} */
  fallbackOrigin?: string;
  /**
   * Whether each request's `signal` aborts when the client goes away. Off by
   * default because Node's `Request` links a given signal through a
   * finalization registry, which costs about a third of the listener's time
   * per request under load; turn it on for handlers that stream or wait
   * long and should stop for a client that left.
   * @default {false}
   */
  abortOnDisconnect?: boolean;
}

function toRequest(
  incoming: IncomingMessage,
  signal: AbortSignal | undefined,
  fallbackOrigin: string,
): Request {
  const origin = incoming.headers.host === undefined
    ? fallbackOrigin
    : `http://${incoming.headers.host}`;
  const url = new URL(incoming.url ?? "/", origin);
  const headers = new Headers();
  for (let i = 0; i < incoming.rawHeaders.length; i += 2) {
    headers.append(incoming.rawHeaders[i]!, incoming.rawHeaders[i + 1]!);
  }
  const method = incoming.method ?? "GET";
  const hasBody = method !== "GET" && method !== "HEAD";
  return new Request(url, {
    method,
    headers,
    ...(signal === undefined ? {} : { signal }),
    body: hasBody
      ? (Readable.toWeb(incoming) as unknown as ReadableStream<Uint8Array>)
      : undefined,
    // Needed by Node's fetch for streamed request bodies.
    ...(hasBody ? { duplex: "half" } : {}),
  } as RequestInit);
}

/** A signal that aborts when `outgoing` closes before it finished. */
function disconnectSignal(outgoing: ServerResponse): AbortSignal {
  const controller = new AbortController();
  outgoing.once("close", () => {
    if (!outgoing.writableFinished) controller.abort();
  });
  return controller.signal;
}

async function send(
  response: Response,
  incoming: IncomingMessage,
  outgoing: ServerResponse,
) {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of response.headers) {
    if (name === "set-cookie") continue;
    headers[name] = value;
  }
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) headers["set-cookie"] = cookies;
  // An answer before the whole body was read (a body over the limit) leaves
  // the rest of it on the connection: the client must not send its next
  // request there, where it would be read as part of this one's body.
  if (!incoming.complete) headers["connection"] = "close";
  outgoing.writeHead(response.status, response.statusText, headers);
  if (response.body === null) {
    outgoing.end();
    return;
  }
  for await (const chunk of response.body) {
    if (!outgoing.write(chunk)) {
      await new Promise((resolve) => outgoing.once("drain", resolve));
    }
  }
  outgoing.end();
}

/**
 * Adapts a `fetch` handler to a Node `http` listener:
 * `http.createServer(toNodeListener(host.fetch))`. The request body streams
 * through; with `abortOnDisconnect`, the request's signal aborts when the
 * client goes away.
 *
 * @param handler The web-standard handler.
 * @param options The fallback origin, and whether requests get a signal.
 * @returns The listener.
 *
 * @example
 * ```ts ignore
 * import http from "node:http";
 * import {
 *   createPluginHost,
 *   identifyAnonymously,
 *   toNodeListener,
 * } from "@cordon/cordon/plugin";
 *
 * const host = createPluginHost({ identify: identifyAnonymously });
 * http.createServer(toNodeListener(host.fetch)).listen(8080, "127.0.0.1");
 * ```
 */
export function toNodeListener(
  handler: (request: Request) => Response | Promise<Response>,
  options: NodeListenerOptions = {},
): NodeRequestListener {
  const fallbackOrigin = options.fallbackOrigin ?? "http://localhost";
  const abortOnDisconnect = options.abortOnDisconnect ?? false;
  return (incoming, outgoing) => {
    const signal = abortOnDisconnect ? disconnectSignal(outgoing) : undefined;
    (async () => {
      const request = toRequest(incoming, signal, fallbackOrigin);
      const response = await handler(request);
      await send(response, incoming, outgoing);
    })().catch(() => {
      if (!outgoing.headersSent) {
        outgoing.writeHead(500, { "content-type": PROBLEM_CONTENT_TYPE });
        outgoing.end(JSON.stringify(problemDocument(
          "BRIDGE_HANDLER_REJECTED",
          500,
          "The server failed to answer: retry later",
        )));
      } else {
        outgoing.destroy();
      }
    });
  };
}
