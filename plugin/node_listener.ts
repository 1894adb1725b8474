import type { IncomingMessage, ServerResponse } from "node:http";
import { type Duplex, Readable } from "node:stream";
import { PROBLEM_CONTENT_TYPE, problemDocument } from "../protocol/problem.ts";
import { readOptions } from "../protocol/options.ts";
import {
  requestTargetDetail,
  requestTargetProblem,
} from "./_request_target.ts";
import { requestWithUsedBody } from "./_used_body.ts";

/** A Node `http` request listener. */
export type NodeRequestListener = (
  request: IncomingMessage,
  response: ServerResponse,
) => void;

/** Options of {@linkcode toNodeListener}. */
export interface NodeListenerOptions {
  /**
   * The origin used when a request has no Host header.
   * @default {"http://localhost:<the port the request came in on>", as Deno.serve builds it}
   */
  fallbackOrigin?: string | undefined;
  /**
   * Whether each request's `signal` aborts when the client goes away. Off by
   * default because Node's `Request` links a given signal through a
   * finalization registry, which costs about a third of the listener's time
   * per request under load; turn it on for handlers that stream or wait
   * long and should stop for a client that left.
   * @default {false}
   */
  abortOnDisconnect?: boolean | undefined;
}

/**
 * The web `Request` of a Node request, or why it cannot be routed as sent.
 * The URL is the Host header and the request target joined, as Deno builds
 * it: resolving the target against the Host would read
 * `//elsewhere/plugins/a/` as the path `/plugins/a/` of another host.
 * Without a Host header the origin is the fallback, by default
 * `http://localhost:<port>` with the port the request came in on, and the
 * target `*` (of `OPTIONS *`) is the path `/*`, as Deno builds them too.
 */
function toRequest(
  incoming: IncomingMessage,
  signal: AbortSignal | undefined,
  fallbackOrigin: string | undefined,
): Request | string {
  const headers = new Headers();
  for (let i = 0; i < incoming.rawHeaders.length; i += 2) {
    headers.append(incoming.rawHeaders[i]!, incoming.rawHeaders[i + 1]!);
  }
  // Every Host field, joined: Node's `headers.host` keeps the first only,
  // so a second one would reach the handler in its headers while the URL
  // was built from the first. Joined, they are no host[:port], and refused.
  const host = headers.get("host");
  const target = incoming.url === "*" ? "/*" : incoming.url ?? "/";
  const origin = host !== null
    ? `http://${host}`
    : fallbackOrigin ?? `http://localhost:${incoming.socket.localPort}`;
  const url = target.startsWith("/") ? `${origin}${target}` : target;
  const method = incoming.method ?? "GET";
  const refused = requestTargetProblem(url, host, method);
  if (refused !== null) return refused;
  const init = { method, headers, signal };
  try {
    if (method === "GET" || method === "HEAD") return new Request(url, init);
    // A body parser ahead of the listener (express.json(), Fastify's) read
    // the stream: its web stream cannot make a Request, and an empty body
    // would tell the handler the client sent none.
    if (incoming.readableDidRead) return requestWithUsedBody(url, init);
    return new Request(url, {
      ...init,
      body: Readable.toWeb(incoming),
      // Node's Request takes a streamed body only with duplex.
      duplex: "half",
    } as RequestInit);
  } catch {
    // A URL the parser reads but a Request refuses: `http:user@host/`
    // holds user info.
    return "its URL cannot be read";
  }
}

/**
 * The most header fields a request may carry: Deno.serve's bound, beyond
 * which it answers 400. Node takes more: Node 20 hands on only about the
 * first thousand and drops the rest without a word, so a field a proxy
 * appends (the caller's identity, say) could be pushed out by a client's
 * filler; Node 22 and later refuse a head past the thousand themselves.
 */
const MAX_HEADER_FIELDS = 128;

function tooManyHeaderFields(incoming: IncomingMessage): boolean {
  return incoming.rawHeaders.length > MAX_HEADER_FIELDS * 2;
}

/** A signal that aborts when `outgoing` closes before it finished. */
function disconnectSignal(outgoing: ServerResponse): AbortSignal {
  const controller = new AbortController();
  outgoing.once("close", () => {
    if (!outgoing.writableFinished) controller.abort();
  });
  return controller.signal;
}

/** Resolves when `outgoing` can take more, or has closed. */
function drained(outgoing: ServerResponse): Promise<void> {
  if (outgoing.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      outgoing.off("drain", done);
      outgoing.off("close", done);
      resolve();
    };
    outgoing.once("drain", done);
    outgoing.once("close", done);
  });
}

/**
 * Whether bytes of `incoming`'s body may still be on the connection, where
 * the next request would be read from them. Node marks a request complete
 * only after its listener ran, even one without a body: a request with
 * neither Content-Length nor Transfer-Encoding has none to leave behind.
 */
function bodyLeftUnread(incoming: IncomingMessage): boolean {
  if (incoming.complete) return false;
  const length = incoming.headers["content-length"];
  return incoming.headers["transfer-encoding"] !== undefined ||
    (length !== undefined && Number(length) !== 0);
}

/**
 * Whether an answer of `status` is framed at all: 1xx, 204 and 304 answers
 * never have a body, so neither runtime sends them a length.
 */
function mayHaveBody(status: number): boolean {
  return status >= 200 && status !== 204 && status !== 304;
}

async function send(
  response: Response,
  incoming: IncomingMessage,
  outgoing: ServerResponse,
) {
  // No prototype: a header may be named "__proto__".
  const headers: Record<string, string | string[]> = Object.create(null);
  // Cookies cannot be joined: each is a line of its own.
  const cookies = response.headers.getSetCookie();
  // The listener frames the answer, as Deno.serve does: Node would send a
  // handler's Transfer-Encoding as it is, beside its Content-Length or
  // naming a coding Node does not apply, and a client or proxy would not
  // know where the answer ends and the next one starts.
  const framedByHandler = response.headers.has("transfer-encoding");
  for (const [name, value] of response.headers) {
    if (name === "transfer-encoding") continue;
    if (name === "content-length" && framedByHandler) continue;
    headers[name] = name === "set-cookie" ? cookies : value;
  }
  // An answer before the whole body was read (a body over the limit) leaves
  // the rest of it on the connection: the client must not send its next
  // request there, where it would be read as part of this one's body.
  if (bodyLeftUnread(incoming)) headers["connection"] = "close";
  // Node frames an answer it is given no length for as chunked, an empty
  // body too; Deno.serve sends one without a body as Content-Length: 0.
  if (response.body === null && mayHaveBody(response.status)) {
    headers["content-length"] ??= "0";
  }
  // A Response built without a statusText has "": Node would send that
  // as the reason phrase, where Deno.serve sends the status's own ("OK"),
  // which Node sends when given none. None is left out, not passed as
  // undefined: middleware that wraps writeHead (Express's compression,
  // through on-headers) reads the headers from the second argument then,
  // and dropped every one.
  const { status, statusText } = response;
  // A body longer or shorter than the Content-Length the handler set
  // would put the client's next answer out of step with its bytes (Node
  // sends what it is given): refused, it ends the connection instead, as
  // Deno.serve does for one that falls short.
  outgoing.strictContentLength = true;
  if (statusText === "") outgoing.writeHead(status, headers);
  else outgoing.writeHead(status, statusText, headers);
  if (response.body === null) {
    outgoing.end();
    return;
  }
  // Node drops what is written to a HEAD answer at once, without waiting
  // for the socket, so reading the body would never yield to the client
  // leaving: an endless one held the process until memory ran out.
  // Deno.serve does not read it either.
  if (incoming.method === "HEAD") {
    outgoing.end();
    response.body.cancel().catch(() => {});
    return;
  }
  // A client that leaves ends the answer: its body is cancelled, as
  // Deno.serve does, which also ends a read under way.
  const reader = response.body.getReader();
  const left = () => {
    if (!outgoing.writableFinished) reader.cancel().catch(() => {});
  };
  if (outgoing.destroyed) left();
  outgoing.once("close", left);
  let sent = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!outgoing.write(value)) await drained(outgoing);
    }
    sent = true;
  } finally {
    outgoing.off("close", left);
    // A write Node refused (a body longer than its Content-Length) ends
    // the answer: its body is cancelled, as Deno.serve cancels it, or a
    // source that never ends would hold what it reads from for good.
    if (!sent) reader.cancel().catch(() => {});
  }
  outgoing.end();
}

function answerProblem(
  outgoing: ServerResponse,
  status: number,
  code: "BRIDGE_HANDLER_REJECTED" | "REQUEST_INVALID",
  detail: string,
  headers: Record<string, string> = {},
): void {
  outgoing.writeHead(status, {
    "content-type": PROBLEM_CONTENT_TYPE,
    ...headers,
  });
  outgoing.end(JSON.stringify(problemDocument(code, status, detail)));
}

/**
 * Adapts a `fetch` handler to a Node `http` listener:
 * `http.createServer(toNodeListener(host.fetch))`. The request body streams
 * through; one that middleware ahead of the listener already read (a
 * framework's body parser) reaches the handler as used (`bodyUsed`), which
 * the plugin host answers 400 `BRIDGE_MARSHAL_FAILED`. With
 * `abortOnDisconnect`, the request's signal aborts when the client goes
 * away. The answer's body is cancelled when the client goes away
 * before it is sent, and unread for a HEAD request, which sends none. A body
 * longer or shorter than the Content-Length the handler set ends the
 * connection, where Node would send it and the client read the next answer
 * out of step, and the rest of a longer one is cancelled. The listener
 * frames each answer itself: a `Transfer-Encoding` the handler set is
 * dropped, and its `Content-Length` with it, as Deno.serve does. An answer without a body is sent with `Content-Length: 0`,
 * as Deno.serve sends it, where Node would frame it chunked. A request that
 * cannot be routed as sent (a `.` or `..` path
 * segment, a Host that is not `host[:port]` or a second Host field, which
 * Deno.serve refuses too, a target that is not visible ASCII, holds a
 * fragment or names a scheme other than http or https) or that a web
 * `Request` cannot carry (`TRACE`) is answered 400 `REQUEST_INVALID`
 * without calling the handler, with the detail the plugin host gives on
 * Deno. A request of more than 128 header fields, which Deno.serve refuses,
 * is answered 431 `REQUEST_INVALID`: Node 20 would hand on only the first
 * thousand or so (Node 22 and later answer a head of more than a thousand
 * 431 themselves, with no body). `OPTIONS *` reaches the handler as the path
 * `/*`, as on Deno. Requests pipelined on one connection reach the handler one at a
 * time, each once the answer before it is sent, and none once the client
 * left, as Deno.serve reads them, where Node hands on all it has read at
 * once.
 *
 * @param handler The web-standard handler.
 * @param options The fallback origin, and whether requests get a signal.
 * @returns The listener.
 * @throws {TypeError} When `handler` is not a function: a host is passed as
 * `host.fetch`, which answered every request 500 otherwise.
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
  if (typeof handler !== "function") {
    throw new TypeError(
      "Cannot serve with toNodeListener(): pass a fetch handler such as host.fetch, not the host",
    );
  }
  const where = "serve with toNodeListener()";
  const read = readOptions(where, options, {
    fallbackOrigin: true,
    abortOnDisconnect: true,
  });
  const fallbackOrigin = read.fallbackOrigin === undefined
    ? undefined
    : new URL(read.fallbackOrigin).origin;
  const abortOnDisconnect = read.abortOnDisconnect ?? false;
  if (typeof abortOnDisconnect !== "boolean") {
    throw new TypeError(
      `Cannot ${where}: abortOnDisconnect must be true or false`,
    );
  }
  return (incoming, outgoing) => {
    if (tooManyHeaderFields(incoming)) {
      answerProblem(
        outgoing,
        431,
        "REQUEST_INVALID",
        `The request has more than ${MAX_HEADER_FIELDS} header fields: send fewer`,
        { connection: "close" },
      );
      return;
    }
    const signal = abortOnDisconnect ? disconnectSignal(outgoing) : undefined;
    const request = toRequest(incoming, signal, fallbackOrigin);
    if (typeof request === "string") {
      answerProblem(
        outgoing,
        400,
        "REQUEST_INVALID",
        requestTargetDetail(request),
        // Its body is not read: the next request must not follow it.
        bodyLeftUnread(incoming) ? { connection: "close" } : {},
      );
      return;
    }
    const answer = async () => {
      try {
        await send(await handler(request), incoming, outgoing);
      } catch {
        if (!outgoing.headersSent) {
          answerProblem(
            outgoing,
            500,
            "BRIDGE_HANDLER_REJECTED",
            "The server failed to answer: retry later",
          );
        } else {
          outgoing.destroy();
        }
      }
    };
    answerInTurn(incoming.socket, answer);
  };
}

/**
 * The answer under way on each connection. Node hands on at once every
 * request a client pipelined, where Deno.serve reads the next one only
 * after answering the one before: so one connection could run any number
 * of handlers at once, and take every slot a plugin host allows a plugin.
 */
const answering = new WeakMap<Duplex, Promise<void>>();

/**
 * Runs `answer` once the answer before it on `connection` is done, or
 * not at all when the client left meanwhile (Deno.serve would not have
 * read its request). `answer` must not reject.
 */
function answerInTurn(
  connection: Duplex,
  answer: () => Promise<void>,
): void {
  const before = answering.get(connection);
  // The connection, not the answer: Node destroys only the answer it is
  // writing when the client leaves, and leaves the ones queued behind it.
  const turn = before === undefined
    ? answer()
    : before.then(() => connection.writable ? answer() : undefined);
  answering.set(connection, turn);
  turn.then(() => {
    if (answering.get(connection) === turn) answering.delete(connection);
  });
}
