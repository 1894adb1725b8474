// The plugin host attacked from the client's side: raw HTTP requests that
// browsers and fetch() never send, written once. plugin/hostile_client_test.ts
// registers them with Deno.test and Deno.serve,
// plugin/node_test/hostile_client.test.mjs with node:test and Node's http
// server through toNodeListener(). Each request is answered with the same
// status and code on both, and reaches no plugin it was not routed to. This
// file is JavaScript so that Node runs it as is.

import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import net from "node:net";

/**
 * Sends `head` (and no body, or a byte every `dripMs` when set) on a new
 * connection and reads the first final answer (a `100 Continue` before it
 * is skipped).
 *
 * @returns `{ status, headers, body }`, or `{ status: 0 }` when no answer
 * came within `timeoutMs`.
 */
function exchange(port, head, timeoutMs = 5000, dripMs = 0) {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    let received = Buffer.alloc(0);
    // A client sending its body a byte at a time, without end.
    const drip = dripMs > 0
      ? setInterval(() => socket.write("x"), dripMs)
      : undefined;
    const finish = (answer) => {
      clearTimeout(timer);
      clearInterval(drip);
      socket.destroy();
      resolve(answer);
    };
    const timer = setTimeout(() => finish({ status: 0 }), timeoutMs);
    socket.on("error", () => finish({ status: 0 }));
    socket.on("data", (chunk) => {
      received = Buffer.concat([received, chunk]);
      let text = received.toString("latin1");
      while (/^HTTP\/1\.1 1\d\d [^\r]*\r\n\r\n/.test(text)) {
        text = text.slice(text.indexOf("\r\n\r\n") + 4);
      }
      const end = text.indexOf("\r\n\r\n");
      if (end === -1) return;
      const [statusLine, ...lines] = text.slice(0, end).split("\r\n");
      const headers = Object.fromEntries(lines.map((line) => {
        const colon = line.indexOf(":");
        return [
          line.slice(0, colon).toLowerCase(),
          line.slice(colon + 1).trim(),
        ];
      }));
      let body = text.slice(end + 4);
      if (headers["transfer-encoding"] === "chunked") {
        if (!body.endsWith("0\r\n\r\n")) return;
        let plain = "";
        for (let at = 0;;) {
          const size = parseInt(body.slice(at), 16);
          if (!(size > 0)) break;
          const start = body.indexOf("\r\n", at) + 2;
          plain += body.slice(start, start + size);
          at = start + size + 2;
        }
        body = plain;
      } else if (body.length < Number(headers["content-length"] ?? 0)) {
        return;
      }
      finish({ status: Number(statusLine.split(" ")[1]), headers, body });
    });
    socket.write(head);
  });
}

/**
 * Sends `bytes` (pipelined requests, the last with `Connection: close`) on
 * a new connection and reads until the server closes it.
 *
 * @returns The status of each answer, in order; those that came before
 * `timeoutMs` when the server kept the connection open.
 */
function exchangeAll(port, bytes, timeoutMs = 5000) {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    let received = "";
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(
        // A status line follows the previous body directly.
        [...received.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map(([, status]) =>
          Number(status)
        ),
      );
    };
    const timer = setTimeout(finish, timeoutMs);
    socket.on("error", finish);
    socket.on("close", finish);
    socket.on("data", (chunk) => received += chunk.toString("latin1"));
    socket.write(bytes);
  });
}

/**
 * Registers the shared cases of a hostile client.
 *
 * @param api `createPluginHost`, `createHostPluginModule`,
 * `identifyAnonymously` of the build under test, and `serve(handler)`, which
 * serves a fetch handler on 127.0.0.1 and resolves to `{ port, close() }`.
 * @param test Registers one test: `test(name, fn)`.
 */
export function registerHostileClientCases(api, test) {
  const {
    createPluginHost,
    createHostPluginModule,
    identifyAnonymously,
    serve,
  } = api;

  /** A plugin that names itself and counts what reaches it. */
  function plugin(id, seen) {
    return createHostPluginModule({
      manifest: { id, version: "1.0.0" },
      maxBodyBytes: 1024,
      plugin: {
        routes: () => [
          { method: "GET", path: "/x/:p" },
          { method: "POST", path: "/in" },
        ],
        handleRequest: (req) => {
          seen.push(`${id} ${req.method} ${req.url}`);
          return { status: 200, headers: [], body: id };
        },
      },
    });
  }

  const request = (target, headers = "Host: 127.0.0.1\r\n", method = "GET") =>
    `${method} ${target} HTTP/1.1\r\n${headers}Connection: close\r\n\r\n`;

  // [what, the request, status, code, for a 400 the reason its detail gives]
  const cases = [
    [
      "a .. segment that would move the request to another plugin",
      request("/plugins/a/../b/x/1"),
      400,
      "REQUEST_INVALID",
      "its path holds . or .. segments",
    ],
    [
      "a %2e%2e segment, which the URL parser reads as ..",
      request("/plugins/a/%2e%2E/b/x/1"),
      400,
      "REQUEST_INVALID",
      "its path holds . or .. segments",
    ],
    [
      "a .. segment between backslashes, which the URL parser reads as slashes",
      request("/plugins/a\\..\\b/x/1"),
      400,
      "REQUEST_INVALID",
      "its path holds . or .. segments",
    ],
    [
      "a path starting with //, which names another host when resolved",
      request("//elsewhere/plugins/a/x/1"),
      404,
      "PLUGIN_NOT_FOUND",
    ],
    [
      "a Host header holding a path, which Deno joins to the URL",
      request("/x/1", "Host: 127.0.0.1/plugins/b\r\n"),
      400,
      "REQUEST_INVALID",
      "its Host header is not host[:port]",
    ],
    [
      "a Host header holding user info",
      request("/plugins/a/x/1", "Host: user:secret@127.0.0.1\r\n"),
      400,
      "REQUEST_INVALID",
      "its Host header is not host[:port]",
    ],
    [
      "a Host header whose port is out of range",
      request("/plugins/a/x/1", "Host: 127.0.0.1:99999\r\n"),
      400,
      "REQUEST_INVALID",
      "its URL cannot be read",
    ],
    [
      "a target in absolute form with a javascript: scheme",
      request("javascript://127.0.0.1/plugins/a/x/1"),
      400,
      "REQUEST_INVALID",
      "its target's scheme is not http or https",
    ],
    [
      "a target in absolute form with a ws: scheme",
      request("ws://127.0.0.1/plugins/a/x/1"),
      400,
      "REQUEST_INVALID",
      "its target's scheme is not http or https",
    ],
    [
      "a target in absolute form with a file: scheme",
      request("file://127.0.0.1/plugins/a/x/1"),
      400,
      "REQUEST_INVALID",
      "its target's scheme is not http or https",
    ],
    [
      "a target holding a fragment, which no client sends",
      request("/plugins/a/x/1#fragment"),
      400,
      "REQUEST_INVALID",
      "its target holds a fragment (#)",
    ],
    [
      "TRACE, which a web Request cannot carry",
      request("/plugins/a/x/1", undefined, "TRACE"),
      400,
      "REQUEST_INVALID",
      "its method is one a web Request cannot carry",
    ],
    [
      "OPTIONS *, which both runtimes read as the path /*",
      request("*", undefined, "OPTIONS"),
      404,
      "PLUGIN_NOT_FOUND",
    ],
    [
      "a declared body over the bound, waiting for 100 Continue",
      request(
        "/plugins/a/in",
        "Host: 127.0.0.1\r\nContent-Length: 1048576\r\nExpect: 100-continue\r\n",
        "POST",
      ),
      413,
      "BRIDGE_MARSHAL_FAILED",
    ],
    [
      "a declared body over the bound that never comes",
      request(
        "/plugins/a/in",
        "Host: 127.0.0.1\r\nContent-Length: 99999999\r\n",
        "POST",
      ),
      413,
      "BRIDGE_MARSHAL_FAILED",
    ],
  ];

  test("the plugin host answers hostile requests with a stable code and routes none of them to a plugin", async () => {
    const seen = [];
    const host = createPluginHost({ identify: identifyAnonymously });
    const server = await serve(host.fetch);
    try {
      await host.installPlugin({ kind: "host", module: plugin("a", seen) });
      await host.installPlugin({ kind: "host", module: plugin("b", seen) });
      for (const [what, head, status, code, reason] of cases) {
        const answer = await exchange(server.port, head);
        assert.equal(answer.status, status, what);
        assert.equal(
          answer.headers["content-type"],
          "application/problem+json",
          what,
        );
        const problem = JSON.parse(answer.body);
        assert.equal(problem.code, code, what);
        if (reason !== undefined) {
          assert.equal(
            problem.detail,
            `The request cannot be routed: ${reason}; send the path a URL parser resolves to, with a Host of host[:port]`,
            what,
          );
        }
        assert.doesNotMatch(problem.detail, /secret|elsewhere|\bat\b.*:\d+/);
      }
      assert.deepEqual(seen, []);
      // Both plugins still answer.
      for (const id of ["a", "b"]) {
        const answer = await exchange(
          server.port,
          request(`/plugins/${id}/x/1`),
        );
        assert.equal(answer.status, 200);
        assert.equal(answer.body, id);
      }
    } finally {
      await server.close();
      await host.dispose();
    }
  });

  test("the plugin host answers the requests pipelined after a 400 to a request without a body", async () => {
    const seen = [];
    const host = createPluginHost({ identify: identifyAnonymously });
    const server = await serve(host.fetch);
    try {
      await host.installPlugin({ kind: "host", module: plugin("a", seen) });
      const refused = [
        "GET /plugins/a/../b/x/1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        "GET /plugins/a/x/1 HTTP/1.1\r\nHost: user@127.0.0.1\r\n\r\n",
        "TRACE /plugins/a/x/1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
      ];
      for (const first of refused) {
        const statuses = await exchangeAll(
          server.port,
          first + request("/plugins/a/x/2"),
        );
        assert.deepEqual(statuses, [400, 200], first);
      }
      assert.deepEqual(
        seen,
        Array(3).fill("a GET http://127.0.0.1/plugins/a/x/2"),
      );
    } finally {
      await server.close();
      await host.dispose();
    }
  });

  test("the plugin host hands a plugin the URL in its parsed form, its body with it, and the port the request came in on when there is no Host", async () => {
    const seen = [];
    const host = createPluginHost({ identify: identifyAnonymously });
    const server = await serve(host.fetch);
    try {
      await host.installPlugin({ kind: "host", module: plugin("a", seen) });
      await host.installPlugin({
        kind: "host",
        module: createHostPluginModule({
          manifest: { id: "echo", version: "1.0.0" },
          plugin: {
            routes: () => [{ method: "POST", path: "/:p" }],
            handleRequest: (req) => ({
              status: 200,
              headers: [],
              body: `${req.url} ${atob(req.bodyBase64)}`,
            }),
          },
        }),
      });
      const answers = [
        await exchange(server.port, request('/plugins/a/x/q"<>`{}?b="<>')),
        await exchange(server.port, "GET /plugins/a/x/1 HTTP/1.0\r\n\r\n"),
        await exchange(
          server.port,
          request(
            "/plugins/echo/{p}",
            "Host: 127.0.0.1\r\nContent-Length: 4\r\n",
            "POST",
          ) + "body",
        ),
      ];
      assert.deepEqual(answers.map((answer) => answer.status), [200, 200, 200]);
      assert.deepEqual(seen, [
        "a GET http://127.0.0.1/plugins/a/x/q%22%3C%3E%60%7B%7D?b=%22%3C%3E",
        `a GET http://localhost:${server.port}/plugins/a/x/1`,
      ]);
      // The body moves with the request to its parsed URL.
      assert.equal(
        answers[2].body,
        "http://127.0.0.1/plugins/echo/%7Bp%7D body",
      );
    } finally {
      await server.close();
      await host.dispose();
    }
  });

  test("the plugin host refuses a request target that is not visible ASCII, as Node's parser does", async () => {
    const seen = [];
    const host = createPluginHost({ identify: identifyAnonymously });
    const server = await serve(host.fetch);
    try {
      await host.installPlugin({ kind: "host", module: plugin("a", seen) });
      // UTF-8 bytes on the wire, which Deno would read as Latin-1.
      const head = Buffer.from(request("/plugins/a/x/caf\u00e9"), "utf8");
      const answer = await exchange(server.port, head);
      assert.equal(answer.status, 400);
      assert.deepEqual(seen, []);
    } finally {
      await server.close();
      await host.dispose();
    }
  });

  test("the plugin host answers 408 to a body that stops or drips, within bodyTimeoutMs, and frees the plugin for the next request", async () => {
    const seen = [];
    const host = createPluginHost({
      identify: identifyAnonymously,
      maxConcurrentRequests: 1,
    });
    const server = await serve(host.fetch);
    try {
      await host.installPlugin({
        kind: "host",
        module: createHostPluginModule({
          manifest: { id: "slow", version: "1.0.0" },
          bodyTimeoutMs: 300,
          plugin: {
            routes: () => [{ method: "POST", path: "/in" }],
            handleRequest: (req) => {
              seen.push(req.method);
              return { status: 200, headers: [], body: "ok" };
            },
          },
        }),
      });
      const post = (length) =>
        `POST /plugins/slow/in HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: ${length}\r\n\r\n`;
      const stalled = await exchange(server.port, `${post(10)}abc`);
      const dripping = await exchange(server.port, post(100_000), 5000, 20);
      for (
        const [what, answer] of [["stalled", stalled], ["dripping", dripping]]
      ) {
        assert.equal(answer.status, 408, what);
        assert.equal(
          JSON.parse(answer.body).code,
          "BRIDGE_MARSHAL_FAILED",
          what,
        );
      }
      assert.deepEqual(seen, []);
      const whole = await exchange(
        server.port,
        `${post(2).replace("\r\n\r\n", "\r\nConnection: close\r\n\r\n")}ok`,
      );
      assert.equal(whole.status, 200);
      assert.deepEqual(seen, ["POST"]);
    } finally {
      await server.close();
      await host.dispose();
    }
  });
}
