// The HTTP semantics table: one plugin handler per case, run directly as a
// host plugin (the baseline) and on every sandbox tier behind one plugin
// host each, over a real socket. Each tier must answer every case as the
// baseline does, and the baseline must answer as the case expects.
// plugin/http_semantics_test.ts registers it with Deno.test and Deno.serve
// on every tier, plugin/node_test/http_semantics.test.mjs with node:test and
// Node's http server on the tiers Node hosts. This file is JavaScript so
// that Node runs it as is.
//
// A handler is a self-contained function of the marshalled request: the
// baseline calls it as it is, the tiers run its source text in the plugin's
// realm. It uses only globals both have (JSON, atob, btoa, TextEncoder,
// TextDecoder, URL, URLSearchParams) and `text`, which the plugin's source
// defines too.

import assert from "node:assert/strict";
import net from "node:net";

const PLUGIN_ID = "http";
const MAX_BODY_BYTES = 8 * 1024;
/** Long enough for a loaded machine; the abort case never waits for it. */
const BODY_TIMEOUT_MS = 20_000;
const CALL_TIMEOUT_MS = 10_000;
/** The body every byte value, twice. */
const ALL_BYTES = Uint8Array.from({ length: 512 }, (_, i) => i % 256);
/** Not UTF-8: a lone continuation, a bad pair, an encoded surrogate. */
const INVALID_UTF8 = Uint8Array.from([
  0x61,
  0xff,
  0xc3,
  0x28,
  0xed,
  0xa0,
  0x80,
  0x62,
]);
/** Framing and connection fields: the runtime's, not the plugin's. */
const TRANSPORT_HEADERS = new Set([
  "date",
  "connection",
  "keep-alive",
  "content-length",
  "transfer-encoding",
]);

/**
 * What a sandboxed plugin's every answer carries, its problem answers too,
 * and a host plugin's none: a page it answers gets an opaque origin and no
 * script, and no answer is sniffed into another type.
 */
const SANDBOX_ANSWER_HEADERS = {
  "content-security-policy": ["sandbox"],
  "x-content-type-options": ["nosniff"],
};

/** The table's response header policy: the default, but cookies allowed. */
function allowCookies(defaultPolicy) {
  return (name) => name === "set-cookie" || defaultPolicy(name);
}

/** A 200 answer with a text body: the one helper handlers share. */
const text = (body, headers = []) => ({ status: 200, headers, body });
const utf8 = (value) => new TextEncoder().encode(value);

/**
 * The cases. `request` is what the client sends (`path` below the
 * plugin's prefix, raw header lines, a body); `route` the route that
 * serves it (default: the request's method on `/<name>`); `handler` the
 * plugin's code; `expect` what the answer must hold: `status`, `code` (a
 * problem document's), `headers` (each name's values in order, as they
 * HTTP reads them), `lines` (how many header lines a name takes on the
 * wire), `absent` (names that must not be sent), `body` and `failure` (the
 * `reason` of the cause and the `message` of what `onError` gets).
 */
export const HTTP_CASES = [
  // ---- bodies ----
  {
    name: "binary-echo",
    request: { method: "POST", body: ALL_BYTES },
    handler: (req) => ({
      status: 200,
      headers: [["content-type", "application/octet-stream"]],
      bodyBase64: req.bodyBase64,
    }),
    expect: {
      status: 200,
      headers: { "content-type": ["application/octet-stream"] },
      body: ALL_BYTES,
    },
  },
  {
    name: "binary-made",
    request: { method: "GET" },
    handler: () => {
      let bytes = "";
      for (let i = 0; i < 256; i++) bytes += String.fromCharCode(i);
      return { status: 200, headers: [], bodyBase64: btoa(bytes) };
    },
    expect: {
      status: 200,
      absent: ["content-type"],
      body: ALL_BYTES.slice(0, 256),
    },
  },
  {
    name: "invalid-utf8",
    request: { method: "POST", body: INVALID_UTF8 },
    handler: (req) => {
      const bytes = Uint8Array.from(
        atob(req.bodyBase64),
        (c) => c.charCodeAt(0),
      );
      return {
        status: 200,
        headers: [],
        body: new TextDecoder().decode(bytes),
      };
    },
    expect: {
      status: 200,
      headers: { "content-type": ["text/plain;charset=UTF-8"] },
      body: utf8(new TextDecoder().decode(INVALID_UTF8)),
    },
  },
  {
    name: "lone-surrogate",
    request: { method: "GET" },
    handler: () => text("a\ud800b"),
    expect: { status: 200, body: utf8("a\ufffdb") },
  },
  {
    name: "no-body",
    request: { method: "GET" },
    handler: (req) => text(JSON.stringify(req.bodyBase64)),
    expect: { status: 200, body: utf8("null") },
  },
  {
    // A GET's body is not read: the plugin gets none, and the framing
    // field the client sent with it.
    name: "get-with-body",
    request: { method: "GET", body: utf8("hello") },
    handler: (req) =>
      text(JSON.stringify([
        req.bodyBase64,
        req.headers.find(([name]) => name === "content-length")?.[1],
      ])),
    expect: { status: 200, body: utf8('[null,"5"]') },
  },
  {
    name: "empty-body",
    request: { method: "POST", body: new Uint8Array(0) },
    handler: (req) => text(JSON.stringify(req.bodyBase64)),
    expect: { status: 200, body: utf8('""') },
  },
  {
    name: "post-without-body",
    request: { method: "POST" },
    handler: (req) => text(JSON.stringify(req.bodyBase64)),
    expect: { status: 200, body: utf8('""') },
  },
  {
    name: "body-at-limit",
    request: { method: "POST", body: new Uint8Array(MAX_BODY_BYTES).fill(7) },
    handler: (req) => text(String(atob(req.bodyBase64).length)),
    expect: { status: 200, body: utf8(String(MAX_BODY_BYTES)) },
  },
  {
    name: "body-over-limit",
    request: {
      method: "POST",
      body: new Uint8Array(MAX_BODY_BYTES + 1).fill(7),
    },
    handler: () => text("the plugin was called"),
    expect: { status: 413, code: "BRIDGE_MARSHAL_FAILED" },
  },
  {
    name: "body-read-twice",
    request: { method: "POST", body: utf8("twice ☃") },
    handler: (req) => {
      const read = () =>
        new TextDecoder().decode(
          Uint8Array.from(atob(req.bodyBase64), (c) => c.charCodeAt(0)),
        );
      const first = read();
      return text(first === read() ? first : "the reads differ");
    },
    expect: { status: 200, body: utf8("twice ☃") },
  },
  {
    name: "bad-json",
    request: { method: "POST", body: utf8("{bad") },
    handler: (req) => text(JSON.stringify(JSON.parse(atob(req.bodyBase64)))),
    expect: { status: 502, code: "BRIDGE_HANDLER_REJECTED" },
  },
  {
    name: "bad-json-caught",
    request: { method: "POST", body: utf8("{bad") },
    handler: (req) => {
      try {
        return text(JSON.stringify(JSON.parse(atob(req.bodyBase64))));
      } catch (error) {
        return {
          status: 400,
          headers: [["content-type", "application/json"]],
          body: JSON.stringify({ error: error.name }),
        };
      }
    },
    expect: { status: 400, body: utf8('{"error":"SyntaxError"}') },
  },
  {
    // What Response.json() answers.
    name: "json-answer",
    request: { method: "GET" },
    handler: () => ({
      status: 200,
      headers: [["content-type", "application/json"]],
      body: JSON.stringify({ a: [1, "é"], b: null }),
    }),
    expect: {
      status: 200,
      headers: { "content-type": ["application/json"] },
      body: utf8('{"a":[1,"é"],"b":null}'),
    },
  },
  {
    name: "json-without-type",
    request: { method: "GET" },
    handler: () => text(JSON.stringify({ a: 1 })),
    expect: {
      status: 200,
      headers: { "content-type": ["text/plain;charset=UTF-8"] },
      body: utf8('{"a":1}'),
    },
  },
  {
    // What Response.redirect() answers.
    name: "redirect",
    request: { method: "GET" },
    handler: () => ({
      status: 302,
      headers: [["location", "/plugins/http/json-answer"]],
      body: null,
    }),
    expect: {
      status: 302,
      headers: { location: ["/plugins/http/json-answer"] },
      absent: ["content-type"],
      body: new Uint8Array(0),
    },
  },
  {
    // A web Response is not an answer: the plugin contract is data. The
    // host's realm has the class, so the baseline's answer is not a
    // SerializedResponse; a plugin's realm has none, so its handler throws.
    name: "web-response",
    request: { method: "GET" },
    handler: () => Response.json({ a: 1 }),
    expect: { status: 502 },
    byKind: {
      host: { code: "BRIDGE_UNMARSHAL_FAILED" },
      sandbox: { code: "BRIDGE_HANDLER_REJECTED" },
    },
  },
  {
    // A realm sends at most maxPayloadBytes (4 MiB by default) of answer;
    // a host plugin has no realm, so nothing bounds its answer there.
    name: "answer-over-payload-limit",
    request: { method: "GET" },
    handler: () => text("x".repeat(5 * 1024 * 1024)),
    expect: {},
    byKind: {
      host: { status: 200 },
      sandbox: { status: 502, code: "BRIDGE_UNMARSHAL_FAILED" },
    },
  },
  {
    // An answer is read as the data it marshals to: a field left
    // undefined is no field, a Date is its JSON text.
    name: "answer-undefined-field",
    request: { method: "GET" },
    handler: () => ({ status: 200, headers: [], body: "ok", extra: undefined }),
    expect: { status: 200, body: utf8("ok") },
  },
  {
    name: "answer-date-body",
    request: { method: "GET" },
    handler: () => ({ status: 200, headers: [], body: new Date(0) }),
    expect: { status: 200, body: utf8("1970-01-01T00:00:00.000Z") },
  },
  {
    // What new Response(null, { status: 204 }) answers.
    name: "no-content",
    request: { method: "DELETE" },
    handler: () => ({ status: 204, headers: [], body: null }),
    expect: { status: 204, absent: ["content-type"], body: new Uint8Array(0) },
  },
  {
    // Refused in the host's words, not the runtime's Response constructor
    // ("Response with null body status cannot have body" on Deno, "Invalid
    // response status code 204" on Node).
    name: "no-content-with-empty-text",
    request: { method: "GET" },
    handler: () => ({ status: 204, headers: [], body: "" }),
    expect: {
      status: 502,
      code: "BRIDGE_UNMARSHAL_FAILED",
      failure: {
        reason: "null-body-status",
        message:
          'Cannot use the answer of plugin "http": a 204 answer carries no body, not even an empty one; answer body: null',
      },
    },
  },
  {
    name: "reset-content-with-bytes",
    request: { method: "GET" },
    handler: () => ({ status: 205, headers: [], bodyBase64: "" }),
    expect: {
      status: 502,
      code: "BRIDGE_UNMARSHAL_FAILED",
      failure: {
        reason: "null-body-status",
        message:
          'Cannot use the answer of plugin "http": a 205 answer carries no body, not even an empty one; answer body: null',
      },
    },
  },
  {
    name: "not-modified-with-text",
    request: { method: "GET" },
    handler: () => ({ status: 304, headers: [["etag", '"v1"']], body: "x" }),
    expect: {
      status: 502,
      code: "BRIDGE_UNMARSHAL_FAILED",
      failure: {
        reason: "null-body-status",
        message:
          'Cannot use the answer of plugin "http": a 304 answer carries no body, not even an empty one; answer body: null',
      },
    },
  },
  {
    name: "not-modified",
    request: { method: "GET", headers: [["If-None-Match", '"v1"']] },
    handler: () => ({ status: 304, headers: [["etag", '"v1"']] }),
    expect: {
      status: 304,
      headers: { etag: ['"v1"'] },
      body: new Uint8Array(0),
    },
  },
  {
    name: "head-on-get-route",
    route: { method: "GET", path: "/head-on-get-route" },
    request: { method: "HEAD" },
    handler: () => text("not on the wire"),
    // The length a GET would send, on both runtimes (Deno.serve would say 0
    // for the body left out, Node nothing).
    expect: {
      status: 200,
      headers: {
        "content-type": ["text/plain;charset=UTF-8"],
        "content-length": ["15"],
      },
      body: new Uint8Array(0),
    },
  },
  {
    name: "head-route",
    request: { method: "HEAD" },
    handler: (req) => ({
      status: 200,
      headers: [["x-method", req.method]],
      body: "not on the wire",
    }),
    expect: {
      status: 200,
      headers: { "x-method": ["HEAD"], "content-length": ["15"] },
      body: new Uint8Array(0),
    },
  },
  {
    name: "status-599",
    request: { method: "GET" },
    handler: () => ({ status: 599, headers: [], body: "odd" }),
    expect: { status: 599, body: utf8("odd") },
  },
  {
    name: "status-600",
    request: { method: "GET" },
    handler: () => ({ status: 600, headers: [], body: "" }),
    expect: { status: 502, code: "BRIDGE_UNMARSHAL_FAILED" },
  },
  {
    name: "status-1xx",
    request: { method: "GET" },
    handler: () => ({ status: 103, headers: [["link", "</a>"]], body: null }),
    expect: { status: 502, code: "BRIDGE_UNMARSHAL_FAILED" },
  },
  {
    name: "status-text",
    request: { method: "GET" },
    handler: () => text("fine"),
    expect: { status: 200, statusText: "OK", body: utf8("fine") },
  },
  {
    name: "status-text-created",
    request: { method: "POST", body: utf8("x") },
    handler: () => ({ status: 201, headers: [], body: null }),
    expect: { status: 201, statusText: "Created", body: new Uint8Array(0) },
  },
  // ---- headers ----
  {
    name: "set-cookie-twice",
    request: { method: "GET" },
    handler: () =>
      text("ok", [
        ["set-cookie", "a=1; Path=/"],
        ["Set-Cookie", "b=2, c=3"],
      ]),
    expect: {
      status: 200,
      headers: { "set-cookie": ["a=1; Path=/", "b=2, c=3"] },
      lines: { "set-cookie": 2 },
    },
  },
  {
    name: "vary-twice",
    request: { method: "GET" },
    handler: () => text("ok", [["vary", "accept"], ["Vary", "origin"]]),
    expect: {
      status: 200,
      headers: { vary: ["accept, origin"] },
      lines: { vary: 1 },
    },
  },
  {
    name: "custom-repeated",
    request: { method: "GET" },
    handler: () =>
      text("ok", [["x-r", "1"], ["X-R", "2"], ["x-other", "o"], ["x-r", "3"]]),
    expect: {
      status: 200,
      headers: { "x-r": ["1, 2, 3"], "x-other": ["o"] },
      lines: { "x-r": 1 },
    },
  },
  // The 16 KiB bound counts the head the host sends: 200 fields of one
  // long name, 17,000 bytes as lines of their own, are one line of 682.
  {
    name: "repeated-header-joined-under-head-bound",
    request: { method: "GET" },
    handler: () =>
      text(
        "ok",
        Array.from({ length: 200 }, () => ["x-" + "n".repeat(78), "v"]),
      ),
    expect: {
      status: 200,
      headers: { ["x-" + "n".repeat(78)]: [Array(200).fill("v").join(", ")] },
      lines: { ["x-" + "n".repeat(78)]: 1 },
    },
  },
  // Cookies keep a line each, so 200 of them take 19,600 bytes of head.
  {
    name: "set-cookie-over-head-bound",
    request: { method: "GET" },
    handler: () =>
      text(
        "ok",
        Array.from({ length: 200 }, (_, i) => [
          "set-cookie",
          `c${i % 10}=${"v".repeat(81)}`,
        ]),
      ),
    expect: { status: 502, code: "BRIDGE_UNMARSHAL_FAILED" },
  },
  {
    name: "response-header-whitespace",
    request: { method: "GET" },
    handler: () => text("ok", [["X-Mixed-Case", " \t padded value\t "]]),
    expect: { status: 200, headers: { "x-mixed-case": ["padded value"] } },
  },
  {
    name: "request-headers",
    request: {
      method: "GET",
      headers: [
        ["X-Multi", "a"],
        ["x-multi", "b"],
        ["X-Space", "   spaced   "],
        ["X-Latin", "caf\u00e9"],
        ["X-Empty", ""],
        ["Authorization", "Bearer secret"],
      ],
    },
    handler: (req) =>
      text(JSON.stringify(req.headers.filter(([name]) => name !== "host"))),
    expect: {
      status: 200,
      body: utf8(JSON.stringify([
        ["x-case", "request-headers"],
        ["x-empty", ""],
        ["x-latin", "caf\u00e9"],
        ["x-multi", "a, b"],
        ["x-space", "spaced"],
      ])),
    },
  },
  {
    name: "response-latin1-value",
    request: { method: "GET" },
    handler: () => text("ok", [["x-a", "caf\u00e9"]]),
    expect: { status: 502, code: "BRIDGE_UNMARSHAL_FAILED" },
  },
  {
    name: "header-denied-by-policy",
    request: { method: "GET" },
    handler: () => text("ok", [["strict-transport-security", "max-age=0"]]),
    expect: { status: 502, code: "BRIDGE_RESPONSE_HEADER_DENIED" },
  },
  {
    name: "content-type-kept",
    request: { method: "GET" },
    handler: () => ({
      status: 200,
      headers: [["Content-Type", "text/html; charset=utf-8"]],
      bodyBase64: btoa("<p>"),
    }),
    expect: {
      status: 200,
      headers: { "content-type": ["text/html; charset=utf-8"] },
      body: utf8("<p>"),
    },
  },
  // ---- URLs ----
  {
    name: "query",
    request: {
      method: "GET",
      path: "/query?a=1&a=2&b=x+y&c=%20%2B%C3%A9&d&=e",
    },
    handler: (req) => {
      const url = new URL(req.url);
      return text(JSON.stringify({
        path: url.pathname,
        search: url.search,
        a: url.searchParams.getAll("a"),
        b: url.searchParams.get("b"),
        c: url.searchParams.get("c"),
        entries: [...url.searchParams],
      }));
    },
    expect: {
      status: 200,
      body: utf8(JSON.stringify({
        path: "/plugins/http/query",
        search: "?a=1&a=2&b=x+y&c=%20%2B%C3%A9&d&=e",
        a: ["1", "2"],
        b: "x y",
        c: " +é",
        entries: [["a", "1"], ["a", "2"], ["b", "x y"], ["c", " +é"], [
          "d",
          "",
        ], ["", "e"]],
      })),
    },
  },
  {
    name: "unicode-path",
    route: { method: "GET", path: "/unicode-path/:name" },
    request: { method: "GET", path: "/unicode-path/%C3%BC%E2%98%83%20+" },
    handler: (req) =>
      text(JSON.stringify([new URL(req.url).pathname, req.params.name])),
    expect: {
      status: 200,
      body: utf8(JSON.stringify([
        "/plugins/http/unicode-path/%C3%BC%E2%98%83%20+",
        "ü☃ +",
      ])),
    },
  },
  {
    name: "trailing-slash",
    request: { method: "GET", path: "/trailing-slash/" },
    handler: (req) => text(new URL(req.url).pathname),
    expect: { status: 200, body: utf8("/plugins/http/trailing-slash/") },
  },
  {
    name: "route-params",
    route: { method: "GET", path: "/route-params/:id/parts/:part" },
    request: { method: "GET", path: "/route-params/42/parts/a%20b%3F%C3%A9" },
    handler: (req) => text(JSON.stringify(req.params)),
    expect: { status: 200, body: utf8('{"id":"42","part":"a b?é"}') },
  },
  {
    // An encoded slash would move the request to another route.
    name: "route-param-encoded-slash",
    route: null,
    request: { method: "GET", path: "/route-params/42/parts/a%2Fb" },
    handler: null,
    expect: { status: 404, code: "PLUGIN_NOT_FOUND" },
  },
  // A segment whose percent escapes are not UTF-8 has no text to match
  // or hand on as a parameter.
  ...["%FF", "%C3", "%zz"].map((escape, i) => ({
    name: `route-param-not-utf8-${i}`,
    route: null,
    request: { method: "GET", path: `/route-params/42/parts/a${escape}b` },
    handler: null,
    expect: { status: 404, code: "PLUGIN_NOT_FOUND" },
  })),
  ...["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"].map((method) => ({
    name: `method-${method.toLowerCase()}`,
    route: { method, path: "/method" },
    request: { method, path: "/method" },
    handler: (req) => text(req.method),
    expect: { status: 200, body: utf8(method) },
  })),
  {
    name: "method-custom",
    route: null,
    request: { method: "PURGE", path: "/method" },
    handler: null,
    expect: {
      status: 405,
      code: "METHOD_NOT_ALLOWED",
      // HEAD too: the GET route answers it.
      headers: { allow: ["GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"] },
    },
  },
  {
    // The host answers no CORS preflight: a framework in front does.
    name: "options-without-route",
    route: null,
    request: {
      method: "OPTIONS",
      path: "/status-599",
      headers: [
        ["Origin", "http://app.example"],
        ["Access-Control-Request-Method", "GET"],
      ],
    },
    handler: null,
    expect: {
      status: 405,
      code: "METHOD_NOT_ALLOWED",
      headers: { allow: ["GET, HEAD"] },
      absent: ["access-control-allow-origin", "access-control-allow-methods"],
    },
  },
  {
    // A page whose script would call other plugins as the host's origin:
    // sandboxed, it runs in an opaque origin with no script.
    name: "html-page",
    request: { method: "GET" },
    handler: () =>
      text("<script>fetch('/plugins/other/')</script>", [
        ["content-type", "text/html"],
      ]),
    expect: {
      status: 200,
      headers: { "content-type": ["text/html"] },
    },
  },
  {
    name: "outside-routes",
    route: null,
    request: { method: "GET", path: "/nowhere" },
    handler: null,
    expect: { status: 404, code: "PLUGIN_NOT_FOUND" },
  },
];

/** The route of a case, or `null` when it reaches no handler of its own. */
function routeOf(item) {
  if (item.route === null) return null;
  return item.route ??
    { method: item.request.method, path: `/${item.name}` };
}

/** The plugin's routes: each case's, once. */
function pluginRoutes() {
  const seen = new Set();
  const routes = [];
  for (const item of HTTP_CASES) {
    const route = routeOf(item);
    const key = route && `${route.method} ${route.path}`;
    if (route === null || seen.has(key)) continue;
    seen.add(key);
    routes.push(route);
  }
  return routes;
}

/** The name of the case a marshalled request belongs to. */
function caseOf(req) {
  const found = req.headers.find(([name]) => name === "x-case");
  return found === undefined ? "" : found[1];
}

/**
 * The handlers by case, as the host plugin calls them. A case without a
 * handler of its own (one that tests routing) answers with `method-get`'s.
 */
function handlers() {
  const table = new Map();
  for (const item of HTTP_CASES) {
    if (item.handler !== null) table.set(item.name, item.handler);
  }
  return table;
}

/**
 * The plugin module's source: the handlers' own text in a table, and a
 * `handleRequest` that dispatches on the `x-case` header as the host
 * plugin does.
 */
export function pluginSource() {
  const entries = HTTP_CASES.filter((item) => item.handler !== null)
    .map((item) => `  [${JSON.stringify(item.name)}, ${item.handler}],`);
  return `const text = ${text};
const HANDLERS = new Map([
${entries.join("\n")}
]);
const ROUTES = ${JSON.stringify(pluginRoutes())};
export function routes() { return ROUTES; }
export function handleRequest(req) {
  const found = req.headers.find(([name]) => name === "x-case");
  const name = found === undefined ? "" : found[1];
  return (HANDLERS.get(name) ?? HANDLERS.get("method-get"))(req);
}
`;
}

/** The host plugin: the same handlers, called directly. */
function hostPlugin() {
  const table = handlers();
  return {
    routes: () => pluginRoutes(),
    handleRequest: (req) =>
      (table.get(caseOf(req)) ?? table.get("method-get"))(req),
  };
}

/** The bytes of one request, with `x-case` and `connection: close`. */
function requestBytes(port, item) {
  const { method, path = `/${item.name}`, headers = [], body } = item.request;
  const lines = [
    `${method} /plugins/${PLUGIN_ID}${path} HTTP/1.1`,
    `host: 127.0.0.1:${port}`,
    `x-case: ${item.name}`,
    ...headers.map(([name, value]) => `${name}: ${value}`),
  ];
  if (body !== undefined) lines.push(`content-length: ${body.byteLength}`);
  lines.push("connection: close", "", "");
  const head = Buffer.from(lines.join("\r\n"), "latin1");
  return body === undefined ? head : Buffer.concat([head, body]);
}

/** Reads the body of a chunked answer. */
function unchunk(bytes) {
  const parts = [];
  let at = 0;
  for (;;) {
    const lineEnd = bytes.indexOf("\r\n", at, "latin1");
    const size = parseInt(bytes.subarray(at, lineEnd).toString("latin1"), 16);
    if (!(size > 0)) break;
    parts.push(bytes.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(parts);
}

/**
 * Sends `bytes` on a new connection and reads the answer until the server
 * closes it: status, reason phrase, header lines in order (names in lower
 * case) and the body bytes, unchunked.
 */
function exchange(port, bytes) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    const chunks = [];
    socket.on("data", (chunk) => chunks.push(chunk));
    // A server that answers before reading a whole body may reset the
    // connection after its answer; what arrived is the answer.
    socket.on("error", () => {});
    socket.on("close", () => {
      const received = Buffer.concat(chunks);
      const end = received.indexOf("\r\n\r\n");
      if (end === -1) {
        reject(new Error(`No answer: ${received.toString("latin1")}`));
        return;
      }
      const [statusLine, ...lines] = received.subarray(0, end)
        .toString("latin1").split("\r\n");
      const [, status, statusText] = /^HTTP\/1\.1 (\d{3}) ?(.*)$/.exec(
        statusLine,
      );
      const headers = lines.map((line) => {
        const colon = line.indexOf(":");
        return [
          line.slice(0, colon).toLowerCase(),
          line.slice(colon + 1).trim(),
        ];
      });
      const rest = received.subarray(end + 4);
      const chunked = headers.some(([name, value]) =>
        name === "transfer-encoding" && value === "chunked"
      );
      resolve({
        status: Number(status),
        statusText,
        headers,
        body: new Uint8Array(chunked ? unchunk(rest) : rest),
      });
    });
    // Not ended: Deno reads a request whose client half-closes as cut off.
    socket.write(bytes);
  });
}

/**
 * What is compared of an answer: the transport's own fields left out, and
 * the headers every answer of a sandboxed plugin carries, which
 * assertExpected checks.
 */
function observable(answer) {
  return {
    status: answer.status,
    statusText: answer.statusText,
    headers: answer.headers.filter(([name]) =>
      !TRANSPORT_HEADERS.has(name) &&
      !Object.hasOwn(SANDBOX_ANSWER_HEADERS, name)
    ),
    body: answer.body,
  };
}

/**
 * A header's values as HTTP reads them: repeated lines are one
 * comma-joined value (RFC 9110 §5.3), but `set-cookie`, whose lines stay
 * apart.
 */
function valuesOf(answer, name) {
  const values = answer.headers.filter(([n]) => n === name).map(([, v]) => v);
  if (name === "set-cookie" || values.length < 2) return values;
  return [values.join(", ")];
}

/**
 * Checks an answer, and what `onError` got for its request (if anything),
 * against its case's expectations.
 */
function assertExpected(item, kind, answer, failure) {
  const expect = {
    ...item.expect,
    ...item.byKind?.[kind === "host" ? "host" : "sandbox"],
  };
  const where = `${item.name} on ${kind}`;
  assert.equal(answer.status, expect.status, where);
  if (expect.statusText !== undefined) {
    assert.equal(answer.statusText, expect.statusText, where);
  }
  for (const [name, values] of Object.entries(expect.headers ?? {})) {
    assert.deepEqual(valuesOf(answer, name), values, `${where}: ${name}`);
  }
  for (const [name, values] of Object.entries(SANDBOX_ANSWER_HEADERS)) {
    const sent = valuesOf(answer, name);
    assert.deepEqual(sent, kind === "host" ? [] : values, `${where}: ${name}`);
  }
  for (const [name, count] of Object.entries(expect.lines ?? {})) {
    const lines = answer.headers.filter(([n]) => n === name).length;
    assert.equal(lines, count, `${where}: ${name} lines`);
  }
  for (const name of expect.absent ?? []) {
    assert.deepEqual(valuesOf(answer, name), [], `${where}: ${name}`);
  }
  if (expect.body !== undefined) {
    assert.deepEqual(answer.body, new Uint8Array(expect.body), where);
  }
  if (expect.code !== undefined) {
    const problem = JSON.parse(new TextDecoder().decode(answer.body));
    assert.equal(problem.code, expect.code, where);
    assert.equal(problem.status, expect.status, where);
  }
  if (expect.failure !== undefined) {
    assert.equal(failure?.cause?.reason, expect.failure.reason, where);
    assert.equal(failure?.message, expect.failure.message, where);
  }
}

/**
 * Registers the table: one test for the host plugin and one per tier, each
 * with one host serving one plugin over a real socket for all its cases.
 *
 * @param api `createPluginHost`, `createHostPluginModule`,
 * `createSandboxedVmPluginModule`, `createPluginSandbox`,
 * `identifyAnonymously` and `defaultResponseHeaderPolicy` of the build under
 * test, `serve(handler)` (resolves to `{ port, close() }`) and `tiers`.
 * @param test Registers one test: `test(name, fn)`, where `fn` receives a
 * context whose `step(name, fn)` runs a sub-test.
 */
export function registerHttpSemanticsCases(api, test) {
  const {
    createPluginHost,
    createHostPluginModule,
    createSandboxedVmPluginModule,
    createPluginSandbox,
    identifyAnonymously,
    defaultResponseHeaderPolicy,
    serve,
    tiers,
  } = api;
  const responseHeaders = allowCookies(defaultResponseHeaderPolicy);
  const manifest = { id: PLUGIN_ID, version: "1.0.0" };
  const limits = {
    maxBodyBytes: MAX_BODY_BYTES,
    bodyTimeoutMs: BODY_TIMEOUT_MS,
  };

  function moduleOf(kind) {
    if (kind === "host") {
      return createHostPluginModule({
        manifest,
        plugin: hostPlugin(),
        responseHeaders,
        ...limits,
      });
    }
    return createSandboxedVmPluginModule({
      manifest,
      responseHeaders,
      ...limits,
      sandbox: createPluginSandbox(kind, {
        pluginId: PLUGIN_ID,
        pluginModule: {
          kind: "source",
          source: pluginSource(),
          identifier: "http_semantics.js",
        },
        limits: { timeoutMs: CALL_TIMEOUT_MS },
      }),
    });
  }

  /**
   * Runs every case against one kind of plugin: its answers by case name,
   * and the cases `check` refused.
   */
  async function runTable(kind, check) {
    const watch = hostWatch();
    /** What onError got, by the case whose request it failed. */
    const failures = new Map();
    // Disposed by hand: Node 20 has no `await using`.
    const host = createPluginHost({
      identify: (request) => {
        watch.identified(request);
        return identifyAnonymously(request);
      },
      // One at a time: a request that left without freeing its place
      // would make the next one answer 503.
      maxConcurrentRequests: 1,
      onError: (error, context) => {
        watch.failed(error);
        const name = context.request.headers.get("x-case");
        if (name !== null) failures.set(name, error);
      },
    });
    let server;
    try {
      await host.installPlugin({ kind, module: moduleOf(kind) });
      server = await serve(host.fetch);
      const answers = new Map();
      // Every case runs, so a failure lists every case that differs.
      const differing = [];
      for (const item of HTTP_CASES) {
        const answer = await exchange(
          server.port,
          requestBytes(server.port, item),
        );
        answers.set(item.name, answer);
        try {
          check(item, answer, failures.get(item.name));
        } catch (error) {
          differing.push(`${item.name}: ${error.message}`);
        }
      }
      await checkAbortedBody(server.port, watch);
      return { answers, differing };
    } finally {
      await server?.close();
      await host.dispose();
    }
  }

  let baseline;
  /** The host plugin's answers, gathered once for every tier. */
  function baselineAnswers() {
    baseline ??= runTable(
      "host",
      (item, answer, failure) => assertExpected(item, "host", answer, failure),
    );
    return baseline;
  }

  test("a host plugin answers the HTTP semantics table as each case expects", async () => {
    assert.deepEqual((await baselineAnswers()).differing, []);
  });

  for (const tier of tiers) {
    test(`a plugin on the ${tier} tier answers the HTTP semantics table as the same handler does as a host plugin`, async () => {
      const expected = (await baselineAnswers()).answers;
      const { differing } = await runTable(tier, (item, answer, failure) => {
        assertExpected(item, tier, answer, failure);
        if (item.byKind === undefined) {
          assert.deepEqual(
            observable(answer),
            observable(expected.get(item.name)),
            `${item.name} on ${tier}`,
          );
        }
      });
      assert.deepEqual(differing, []);
    });
  }

  /**
   * A client that sends part of a body and leaves: the host stays up, the
   * failure reaches onError as an unreadable body (not after the body's
   * deadline), and the request's place is free again.
   */
  async function checkAbortedBody(port, watch) {
    const socket = net.connect(port, "127.0.0.1");
    socket.on("error", () => {});
    socket.write(
      `POST /plugins/${PLUGIN_ID}/body-at-limit HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n${ABORT_HEADER}: 1\r\ncontent-length: 5000\r\n\r\n` +
        "x".repeat(100),
    );
    // Leaving once the host has the request is a client's abort mid-body.
    await watch.arrived;
    socket.destroy();
    const error = await watch.failure;
    assert.equal(error.code, "BRIDGE_MARSHAL_FAILED");
    assert.equal(error.cause?.reason, "body-unreadable");
    const next = await exchange(
      port,
      requestBytes(port, HTTP_CASES.find((item) => item.name === "method-get")),
    );
    assert.equal(next.status, 200, new TextDecoder().decode(next.body));
  }
}

/** Marks the request the abort check sends. */
const ABORT_HEADER = "x-abort-check";

/**
 * What the host reports of the abort check's request: `arrived` settles
 * when the host identifies it, `failure` with the first error reported
 * after that.
 */
function hostWatch() {
  let arrive;
  let fail;
  let waiting = false;
  const arrived = new Promise((resolve) => arrive = resolve);
  const failure = new Promise((resolve) => fail = resolve);
  return {
    arrived,
    failure,
    identified(request) {
      if (request.headers.get(ABORT_HEADER) === null) return;
      waiting = true;
      arrive();
    },
    failed(error) {
      if (waiting) fail(error);
    },
  };
}
