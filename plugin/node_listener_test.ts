import assert from "node:assert/strict";
import http from "node:http";
import net, { type AddressInfo } from "node:net";
import { toNodeListener } from "./node_listener.ts";
import { createPluginHost, identifyAnonymously } from "./plugin_host.ts";

/**
 * How long a test waits for the abort or cancel it expects before it
 * calls the wait a hang: far past what a loaded machine takes, so only an
 * event that never comes reaches it.
 */
const HANG_MS = 120_000;

async function listen(server: http.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

async function close(server: http.Server): Promise<void> {
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** Sends `head` on a new connection and reads until the server closes it. */
function rawRequest(port: number, head: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    let text = "";
    socket.setEncoding("latin1");
    socket.on("data", (chunk) => text += chunk);
    socket.on("error", reject);
    socket.on("close", () => resolve(text));
    socket.write(head);
  });
}

Deno.test("toNodeListener() serves a fetch handler with Node's http server", async () => {
  const server = http.createServer(toNodeListener(async (request) => {
    const url = new URL(request.url);
    const headers = new Headers({ "x-method": request.method });
    headers.append("set-cookie", "a=1");
    headers.append("set-cookie", "b=2");
    return new Response(
      JSON.stringify({
        path: url.pathname + url.search,
        body: request.method === "POST" ? await request.text() : null,
        header: request.headers.get("x-test"),
      }),
      { status: 201, headers },
    );
  }));
  const port = await listen(server);
  try {
    const response = await fetch(`http://127.0.0.1:${port}/a/b?c=1`, {
      method: "POST",
      headers: { "x-test": "yes" },
      body: "payload",
    });
    assert.equal(response.status, 201);
    assert.equal(response.headers.get("x-method"), "POST");
    assert.deepEqual(response.headers.getSetCookie(), ["a=1", "b=2"]);
    assert.deepEqual(await response.json(), {
      path: "/a/b?c=1",
      body: "payload",
      header: "yes",
    });
  } finally {
    await close(server);
  }
});

Deno.test("toNodeListener() answers 500 with a problem document when the handler throws", async () => {
  const server = http.createServer(toNodeListener(() => {
    throw new Error("secret /srv/path");
  }));
  const port = await listen(server);
  try {
    const response = await fetch(`http://127.0.0.1:${port}/`);
    assert.equal(response.status, 500);
    const text = await response.text();
    assert.match(text, /BRIDGE_HANDLER_REJECTED/);
    assert.doesNotMatch(text, /secret|\/srv/);
  } finally {
    await close(server);
  }
});

Deno.test("toNodeListener() refuses a handler that is not a function, such as the plugin host itself", async () => {
  const host = createPluginHost({ identify: identifyAnonymously });
  try {
    for (const handler of [host, undefined, "fetch"]) {
      assert.throws(
        () => toNodeListener(handler as unknown as () => Response),
        {
          name: "TypeError",
          message:
            "Cannot serve with toNodeListener(): pass a fetch handler such as host.fetch, not the host",
        },
      );
    }
  } finally {
    await host.dispose();
  }
});

Deno.test("toNodeListener() aborts the request's signal when the client leaves, with abortOnDisconnect", async () => {
  let aborted: Promise<unknown> | undefined;
  const reached = Promise.withResolvers<void>();
  const server = http.createServer(toNodeListener((request) => {
    aborted = new Promise((resolve) =>
      request.signal.addEventListener("abort", resolve, { once: true })
    );
    reached.resolve();
    return new Promise<Response>(() => {});
  }, { abortOnDisconnect: true }));
  const port = await listen(server);
  try {
    const client = new AbortController();
    const sent = fetch(`http://127.0.0.1:${port}/`, { signal: client.signal })
      .catch(() => {});
    await reached.promise;
    client.abort();
    await sent;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const outcome = await Promise.race([
      aborted!.then(() => "aborted"),
      new Promise((resolve) => timer = setTimeout(resolve, HANG_MS, "waited")),
    ]);
    clearTimeout(timer);
    assert.equal(outcome, "aborted");
  } finally {
    server.closeAllConnections();
    await close(server);
  }
});

Deno.test("toNodeListener() closes the connection after answering before the whole body was read", async () => {
  const server = http.createServer(toNodeListener(async (request) => {
    if (request.body === null) return new Response("read");
    // Reads one chunk and refuses the rest, as a body limit does.
    const reader = request.body.getReader();
    await reader.read();
    await reader.cancel();
    return new Response("too large", { status: 400 });
  }));
  const port = await listen(server);
  try {
    const refused = await fetch(`http://127.0.0.1:${port}/`, {
      method: "POST",
      body: "x".repeat(1024 * 1024),
    });
    assert.equal(refused.status, 400);
    assert.equal(refused.headers.get("connection"), "close");
    await refused.body?.cancel();
    const read = await fetch(`http://127.0.0.1:${port}/`, {
      method: "POST",
      body: "small",
    });
    assert.equal(read.headers.get("connection"), "keep-alive");
    await read.body?.cancel();
  } finally {
    await close(server);
  }
});

Deno.test("toNodeListener() cancels the answer's body when the client leaves before it is sent", async () => {
  const cancelled = Promise.withResolvers<void>();
  const server = http.createServer(toNodeListener(() =>
    new Response(
      new ReadableStream({
        // More than the socket takes before the client reads: the listener
        // waits for it to drain, which a client that left never does.
        pull: (controller) => controller.enqueue(new Uint8Array(65536)),
        cancel: () => cancelled.resolve(),
      }),
    )
  ));
  const port = await listen(server);
  const client = net.connect(port, "127.0.0.1");
  try {
    client.on("error", () => {});
    client.write("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    await new Promise((resolve) => client.once("data", resolve));
    client.pause();
    client.destroy();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const outcome = await Promise.race([
      cancelled.promise.then(() => "cancelled"),
      new Promise((resolve) => timer = setTimeout(resolve, HANG_MS, "waited")),
    ]);
    clearTimeout(timer);
    assert.equal(outcome, "cancelled");
  } finally {
    client.destroy();
    server.closeAllConnections();
    await close(server);
  }
});

Deno.test("toNodeListener() cancels an answer's body that runs past the Content-Length its handler set, as Deno.serve does", async () => {
  const cancelled = Promise.withResolvers<void>();
  const server = http.createServer(toNodeListener(() =>
    new Response(
      new ReadableStream({
        // A source that never ends: only a cancel stops it.
        pull: (controller) => controller.enqueue(new Uint8Array(16)),
        cancel: () => cancelled.resolve(),
      }),
      { headers: { "content-length": "5" } },
    )
  ));
  const port = await listen(server);
  try {
    // Node refuses the write past the length and ends the connection.
    await rawRequest(port, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    let timer: ReturnType<typeof setTimeout> | undefined;
    const outcome = await Promise.race([
      cancelled.promise.then(() => "cancelled"),
      new Promise((resolve) => timer = setTimeout(resolve, HANG_MS, "waited")),
    ]);
    clearTimeout(timer);
    assert.equal(outcome, "cancelled");
  } finally {
    server.closeAllConnections();
    await close(server);
  }
});

Deno.test("toNodeListener() frames an answer itself whatever Transfer-Encoding its handler set, as Deno.serve does", async () => {
  const framings: Record<string, Record<string, string>> = {
    "/chunked-and-length": {
      "transfer-encoding": "chunked",
      "content-length": "5",
    },
    "/gzip": { "transfer-encoding": "gzip" },
  };
  const server = http.createServer(
    toNodeListener((request) =>
      new Response("hello", {
        headers: framings[new URL(request.url).pathname],
      })
    ),
  );
  const port = await listen(server);
  try {
    for (const path of Object.keys(framings)) {
      const text = await rawRequest(
        port,
        `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`,
      );
      const end = text.indexOf("\r\n\r\n");
      const head = text.slice(0, end).toLowerCase();
      // One framing, the listener's: Node chunks a body of no length.
      assert.match(head, /\r\ntransfer-encoding: chunked(\r|$)/, path);
      assert.doesNotMatch(head, /\r\ncontent-length:|gzip/, path);
      assert.equal(text.slice(end + 4), "5\r\nhello\r\n0\r\n\r\n", path);
    }
  } finally {
    await close(server);
  }
});

Deno.test("toNodeListener() answers 400 REQUEST_INVALID for a request a web Request cannot carry", async () => {
  let reached = 0;
  const server = http.createServer(toNodeListener(() => {
    reached++;
    return new Response("served");
  }));
  const port = await listen(server);
  try {
    for (
      const head of [
        "TRACE / HTTP/1.1\r\nHost: 127.0.0.1\r\n",
        "GET / HTTP/1.1\r\nHost: 127.0.0.1:99999\r\n",
      ]
    ) {
      const answer = await rawRequest(port, `${head}Connection: close\r\n\r\n`);
      assert.match(answer, /^HTTP\/1\.1 400 /, head);
      assert.match(answer, /"code":"REQUEST_INVALID"/, head);
    }
    assert.equal(reached, 0);
  } finally {
    await close(server);
  }
});

Deno.test("toNodeListener() builds the URLs Deno.serve builds for OPTIONS * and for a request without a Host", async () => {
  const urls: string[] = [];
  const server = http.createServer(toNodeListener((request) => {
    urls.push(`${request.method} ${request.url}`);
    return new Response("served");
  }));
  const port = await listen(server);
  try {
    for (
      const head of [
        "OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n",
        "GET /a HTTP/1.0\r\n",
      ]
    ) {
      const answer = await rawRequest(port, `${head}\r\n`);
      assert.match(answer, /^HTTP\/1\.1 200 /, head);
    }
    assert.deepEqual(urls, [
      "OPTIONS http://127.0.0.1/*",
      `GET http://localhost:${port}/a`,
    ]);
  } finally {
    await close(server);
  }
});

Deno.test("toNodeListener() refuses a misspelt option and an abortOnDisconnect that is not a boolean", () => {
  const handler = () => new Response("ok");
  assert.throws(
    () => toNodeListener(handler, { abortOnDisconect: true } as never),
    {
      name: "TypeError",
      message:
        "Cannot serve with toNodeListener(): unknown option abortOnDisconect; did you mean abortOnDisconnect?",
    },
  );
  assert.throws(
    () => toNodeListener(handler, { abortOnDisconnect: "yes" as never }),
    {
      name: "TypeError",
      message:
        "Cannot serve with toNodeListener(): abortOnDisconnect must be true or false",
    },
  );
});

Deno.test("toNodeListener() hands its status and headers to a writeHead that middleware wrapped, as Express's compression does", async () => {
  const listener = toNodeListener(() =>
    new Response("served", {
      status: 201,
      headers: { "content-type": "text/plain", "x-cordon": "kept" },
    })
  );
  const server = http.createServer((incoming, outgoing) => {
    // Middleware that sees the head before it goes out (compression, access
    // logs, through on-headers) wraps writeHead and reads its arguments by
    // Node's signature, writeHead(status[, statusMessage][, headers]): a
    // statusMessage given as undefined leaves the headers where none are.
    const writeHead = outgoing.writeHead.bind(outgoing);
    outgoing.writeHead = function (status: number, ...rest: unknown[]) {
      const named = typeof rest[0] === "string";
      const headers = (named ? rest[1] : rest[0]) as
        | Record<string, string>
        | undefined;
      for (const [name, value] of Object.entries(headers ?? {})) {
        outgoing.setHeader(name, value);
      }
      return named ? writeHead(status, rest[0] as string) : writeHead(status);
    } as typeof outgoing.writeHead;
    listener(incoming, outgoing);
  });
  const port = await listen(server);
  try {
    const response = await fetch(`http://127.0.0.1:${port}/`);
    assert.equal(response.status, 201);
    assert.equal(response.statusText, "Created");
    assert.equal(response.headers.get("content-type"), "text/plain");
    assert.equal(response.headers.get("x-cordon"), "kept");
    assert.equal(await response.text(), "served");
  } finally {
    await close(server);
  }
});

Deno.test("toNodeListener() hands on a body a framework's parser already read as a used body, not as an empty one or a bad URL", async () => {
  const seen: { used: boolean; body: string | null }[] = [];
  const listener = toNodeListener(async (request) => {
    const used = request.bodyUsed;
    seen.push({ used, body: used ? null : await request.text() });
    return new Response("served");
  });
  const server = http.createServer(async (incoming, outgoing) => {
    // A body parser ahead of the listener (express.json(), Fastify's).
    if (incoming.headers["x-parse"] !== undefined) {
      for await (const _chunk of incoming);
    }
    listener(incoming, outgoing);
  });
  const port = await listen(server);
  try {
    for (const parse of [true, false]) {
      const response = await fetch(`http://127.0.0.1:${port}/`, {
        method: "POST",
        headers: parse ? { "x-parse": "1" } : {},
        body: '{"a":1}',
      });
      assert.equal(response.status, 200);
      await response.body?.cancel();
    }
    assert.deepEqual(seen, [
      { used: true, body: null },
      { used: false, body: '{"a":1}' },
    ]);
  } finally {
    // Deno's node:http close() waits 90 s for a keep-alive connection that
    // served two requests.
    server.closeAllConnections();
    await close(server);
  }
});
