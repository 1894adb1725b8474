/**
 * The routes of the browser leg's page servers, written once for both:
 * `e2e/server.ts` serves them with `Deno.serve` and `e2e/node_server.mjs`
 * with `node:http` through `toNodeListener`, each over the delivery handler
 * of its own runtime, so a page gets the same answers from either. Web
 * standards only (plain JavaScript, which Node runs as it is); the server
 * hands in how to read a file.
 *
 * Besides the delivery routes: the test page at `/`, the same page under a
 * strict Content-Security-Policy at `/csp.html`, under one that forbids
 * WebAssembly at `/csp-no-wasm.html`, under one that forbids workers at
 * `/csp-no-worker.html` and under one that requires Trusted Types at
 * `/csp-trusted-types.html`, sandboxed (an opaque origin) at
 * `/sandboxed.html`, cross-origin isolated (`Cross-Origin-Embedder-Policy:
 * require-corp`) at `/isolated.html`, their script at `/page.js`, a
 * dedicated worker's script that hosts the bundle at `/worker-host.js`, the browser bundle at
 * `/dist/cordon.js`, the bundle of the pool's runner at
 * `/dist/cordon-runner.js` (and under the policy without WebAssembly at
 * `/dist/no-wasm/cordon-runner.js`, with the cross-origin isolated page's
 * headers at `/dist/isolated/cordon-runner.js`, and as `text/plain` at
 * `/dist/wrong-type/cordon-runner.js`), which the pages start as Web
 * Workers, the policy's violation reports at `/csp-report`, the delivery
 * routes without CORS headers under `/no-cors` and without
 * `Access-Control-Expose-Headers` under `/no-expose`, redirected there on
 * another origin from `/redirect-to-no-cors`, and under
 * `/once-rewritten/<run>` with each module's first answer rewritten.
 *
 * @module
 */

const ROOT = new URL("../", import.meta.url);

/** Where browsers send the violation reports of {@linkcode STRICT_CSP}. */
const CSP_REPORT_PATH = "/csp-report";

/**
 * The strict policy of `/csp.html`, the least one cordon needs (see
 * docs/loader.md): nothing by default, and only the page's own scripts and
 * workers (`worker-src` falls back to `script-src`), WebAssembly
 * compilation and fetches to the page's origin; no inline script, no
 * `eval`, no `blob:`. Violations are reported to
 * {@linkcode CSP_REPORT_PATH}, the one channel that also hears a worker's.
 */
const STRICT_CSP = "default-src 'none'; " +
  "script-src 'self' 'wasm-unsafe-eval'; " +
  `connect-src 'self'; report-uri ${CSP_REPORT_PATH}`;

/**
 * {@linkcode STRICT_CSP} without `'wasm-unsafe-eval'`, of `/csp-no-wasm.html`
 * and of the runner bundle at `/dist/no-wasm/cordon-runner.js`: neither the
 * page nor the pool's workers may compile WebAssembly.
 */
const NO_WASM_CSP = STRICT_CSP.replace(" 'wasm-unsafe-eval'", "");

/** {@linkcode STRICT_CSP} with `worker-src 'none'`, of `/csp-no-worker.html`. */
const NO_WORKER_CSP = `${STRICT_CSP}; worker-src 'none'`;

/**
 * {@linkcode STRICT_CSP} that also requires Trusted Types for every script
 * sink, of `/csp-trusted-types.html`: `new Worker` takes only a
 * `TrustedScriptURL` there.
 */
const TRUSTED_TYPES_CSP = `${STRICT_CSP}; require-trusted-types-for 'script'`;

/**
 * The policy of `/sandboxed.html`: the document is sandboxed with scripts
 * allowed and no `allow-same-origin`, so its origin is opaque, as a page
 * in `<iframe sandbox="allow-scripts">` is.
 */
const SANDBOXED_CSP = "sandbox allow-scripts";

/**
 * One file the page server answers besides the delivery routes.
 *
 * @typedef {object} StaticEntry
 * @property {URL} file The file.
 * @property {string} type Its `Content-Type`.
 * @property {string} [csp] The response's `Content-Security-Policy`, if any.
 * @property {boolean} [isolated] Whether it is sent with
 * `Cross-Origin-Embedder-Policy: require-corp` and
 * `Cross-Origin-Opener-Policy: same-origin`, which make a page cross-origin
 * isolated.
 * @property {boolean} [cors] Whether it is sent with
 * `Access-Control-Allow-Origin: *`: a page of an opaque origin loads module
 * scripts only so.
 */

const HTML = "text/html; charset=utf-8";
const JAVASCRIPT = "text/javascript; charset=utf-8";

/**
 * The files the page server answers besides the delivery routes. The
 * runner bundle carries the strict policy too: a dedicated worker obeys
 * the policy of its own script's response, not its page's, so this is how
 * a site that sends the policy everywhere starts the pool's workers. (A
 * module script imported by a page ignores its own response's policy, so
 * `/` stays unrestricted.)
 *
 * @type {Readonly<Record<string, StaticEntry>>}
 */
const STATIC = Object.freeze({
  "/": { file: new URL("e2e/index.html", ROOT), type: HTML },
  "/csp.html": {
    file: new URL("e2e/csp.html", ROOT),
    type: HTML,
    csp: STRICT_CSP,
  },
  "/csp-no-wasm.html": {
    file: new URL("e2e/csp.html", ROOT),
    type: HTML,
    csp: NO_WASM_CSP,
  },
  "/csp-no-worker.html": {
    file: new URL("e2e/csp.html", ROOT),
    type: HTML,
    csp: NO_WORKER_CSP,
  },
  "/csp-trusted-types.html": {
    file: new URL("e2e/csp.html", ROOT),
    type: HTML,
    csp: TRUSTED_TYPES_CSP,
  },
  "/isolated.html": {
    file: new URL("e2e/index.html", ROOT),
    type: HTML,
    isolated: true,
  },
  "/sandboxed.html": {
    file: new URL("e2e/csp.html", ROOT),
    type: HTML,
    csp: SANDBOXED_CSP,
  },
  "/worker-host.js": {
    file: new URL("e2e/worker_host.js", ROOT),
    type: JAVASCRIPT,
  },
  "/page.js": {
    file: new URL("e2e/page.js", ROOT),
    type: JAVASCRIPT,
    cors: true,
  },
  "/dist/cordon.js": {
    file: new URL("dist/cordon.js", ROOT),
    type: JAVASCRIPT,
    cors: true,
  },
  "/dist/cordon-runner.js": {
    file: new URL("dist/cordon-runner.js", ROOT),
    type: JAVASCRIPT,
    csp: STRICT_CSP,
  },
  "/dist/isolated/cordon-runner.js": {
    file: new URL("dist/cordon-runner.js", ROOT),
    type: JAVASCRIPT,
    isolated: true,
  },
  "/dist/wrong-type/cordon-runner.js": {
    file: new URL("dist/cordon-runner.js", ROOT),
    type: "text/plain; charset=utf-8",
  },
  "/dist/no-wasm/cordon-runner.js": {
    file: new URL("dist/cordon-runner.js", ROOT),
    type: JAVASCRIPT,
    csp: NO_WASM_CSP,
  },
});

/**
 * Where the delivery routes are answered without their CORS headers, as a
 * proxy that drops them would: a page of another origin may not read them.
 */
const NO_CORS_PREFIX = "/no-cors";

/**
 * Where the delivery routes are answered without
 * `Access-Control-Expose-Headers`, as a proxy or CDN that sets only
 * `Access-Control-Allow-Origin` does: a page of another origin reads the
 * bodies but none of the headers it needs, such as `Repr-Digest`.
 */
const NO_EXPOSE_PREFIX = "/no-expose";

/**
 * Where every request is redirected (302) to the same path under
 * {@linkcode NO_CORS_PREFIX} on the origin named `localhost`: a server
 * that sends the page to another origin, which answers without CORS.
 */
const REDIRECT_TO_NO_CORS_PREFIX = "/redirect-to-no-cors";

/**
 * Where the delivery routes answer each pinned module URL with rewritten
 * bytes the first time it is asked for, under its honest headers (which
 * let a browser keep it for a year), and honestly after: a proxy that
 * once served a bad copy. The path segment after the prefix names a run,
 * so each test starts with no module answered yet.
 */
const ONCE_REWRITTEN_PREFIX = "/once-rewritten/";

/** @typedef {(request: Request) => Promise<Response>} Handler */

/**
 * Answers a request under `prefix` as the delivery routes, without the
 * headers `dropped` names.
 *
 * @param {Handler} deliver
 * @param {Request} request
 * @param {string} prefix
 * @param {(name: string) => boolean} dropped
 * @returns {Promise<Response>}
 */
async function withoutHeaders(deliver, request, prefix, dropped) {
  const url = new URL(request.url);
  url.pathname = url.pathname.slice(prefix.length);
  // Method and headers only: the delivery routes read nothing else.
  const response = await deliver(
    new Request(url, { method: request.method, headers: request.headers }),
  );
  const headers = new Headers(response.headers);
  for (const name of [...headers.keys()]) {
    if (dropped(name)) headers.delete(name);
  }
  return new Response(response.body, { status: response.status, headers });
}

/**
 * @param {Request} request
 * @returns {Response}
 */
function redirectToNoCors(request) {
  const url = new URL(request.url);
  url.hostname = "localhost";
  url.pathname = NO_CORS_PREFIX +
    url.pathname.slice(REDIRECT_TO_NO_CORS_PREFIX.length);
  return new Response(null, {
    status: 302,
    headers: { location: url.href },
  });
}

/**
 * @param {Handler} deliver
 * @returns {Handler}
 */
function createOnceRewritten(deliver) {
  /** @type {Set<string>} */
  const answered = new Set();
  return async (request) => {
    const url = new URL(request.url);
    const rest = url.pathname.slice(ONCE_REWRITTEN_PREFIX.length);
    url.pathname = rest.slice(rest.indexOf("/"));
    const response = await deliver(
      new Request(url, { method: request.method, headers: request.headers }),
    );
    const pinned = url.searchParams.has("digest") && response.status === 200;
    if (!pinned || answered.has(request.url)) return response;
    answered.add(request.url);
    const headers = new Headers(response.headers);
    headers.delete("content-length");
    const source = await response.text();
    return new Response(`console.log("rewritten code ran");\n${source}`, {
      headers,
    });
  };
}

/**
 * @param {StaticEntry} entry
 * @param {(file: URL) => Promise<Uint8Array>} readFile
 * @returns {Promise<Response>}
 */
async function serveStatic(entry, readFile) {
  const headers = new Headers({
    "content-type": entry.type,
    "cache-control": "no-store",
  });
  if (entry.csp !== undefined) {
    headers.set("content-security-policy", entry.csp);
  }
  if (entry.isolated) {
    headers.set("cross-origin-embedder-policy", "require-corp");
    headers.set("cross-origin-opener-policy", "same-origin");
  }
  if (entry.cors) headers.set("access-control-allow-origin", "*");
  let bytes;
  try {
    bytes = await readFile(entry.file);
  } catch {
    return new Response(
      'Not built yet: run "deno task bundle" first',
      { status: 404, headers: { "content-type": "text/plain" } },
    );
  }
  // Deno.serve sends a known length by itself; toNodeListener sends only
  // one the headers name, so the pages get the same head from either.
  headers.set("content-length", String(bytes.byteLength));
  return new Response(bytes, { headers });
}

/**
 * Keeps the violation reports browsers send: a `POST` adds one, a `GET`
 * answers every report since the last `GET` as a JSON array and forgets
 * them.
 *
 * @returns {Handler}
 */
function createReportInbox() {
  /** @type {unknown[]} */
  let reports = [];
  return async (request) => {
    if (request.method === "POST") {
      reports.push(await request.json().catch(() => "(unreadable report)"));
      return new Response(null, { status: 204 });
    }
    const taken = reports;
    reports = [];
    return Response.json(taken, { headers: { "cache-control": "no-store" } });
  };
}

/**
 * The page server's handler: the routes above, and every other request
 * handed to `deliver`, the delivery handler over the fixture packs.
 *
 * @param {Handler} deliver The delivery handler.
 * @param {(file: URL) => Promise<Uint8Array>} readFile Reads one of the
 * page's files (`Deno.readFile`, or `readFile` of `node:fs/promises`).
 * @returns {Handler} The handler, for `Deno.serve` or `toNodeListener`.
 */
export function createPageHandler(deliver, readFile) {
  const reportInbox = createReportInbox();
  const onceRewritten = createOnceRewritten(deliver);
  return (request) => {
    const path = new URL(request.url).pathname;
    if (path === CSP_REPORT_PATH) return reportInbox(request);
    // The pages have no icon; a 404 would be a console error of every page.
    if (path === "/favicon.ico") {
      return Promise.resolve(new Response(null, { status: 204 }));
    }
    const entry = STATIC[path];
    if (request.method === "GET" && entry !== undefined) {
      return serveStatic(entry, readFile);
    }
    if (path.startsWith(NO_CORS_PREFIX)) {
      return withoutHeaders(
        deliver,
        request,
        NO_CORS_PREFIX,
        (name) => name.startsWith("access-control-"),
      );
    }
    if (path.startsWith(NO_EXPOSE_PREFIX)) {
      return withoutHeaders(
        deliver,
        request,
        NO_EXPOSE_PREFIX,
        (name) => name === "access-control-expose-headers",
      );
    }
    if (path.startsWith(ONCE_REWRITTEN_PREFIX)) return onceRewritten(request);
    if (path.startsWith(REDIRECT_TO_NO_CORS_PREFIX)) {
      return Promise.resolve(redirectToNoCors(request));
    }
    return deliver(request);
  };
}

/**
 * The port and packs folder of a page server's command line:
 * `[--port 8719] [--packs DIR]`, each also as `--name=value`.
 *
 * @param {readonly string[]} args The arguments.
 * @param {number} defaultPort The port when none is given.
 * @returns {{ port: number, packs: string | undefined }} What they name.
 * @throws {RangeError} When the port is not one from 0 to 65535.
 */
export function readServerArgs(args, defaultPort) {
  /** @param {string} name */
  const option = (name) => {
    for (const [i, arg] of args.entries()) {
      if (arg === `--${name}`) return args[i + 1];
      if (arg.startsWith(`--${name}=`)) return arg.slice(name.length + 3);
    }
    return undefined;
  };
  const port = Number(option("port") ?? defaultPort);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new RangeError(`Cannot start the page server: bad --port ${port}`);
  }
  return { port, packs: option("packs") };
}
