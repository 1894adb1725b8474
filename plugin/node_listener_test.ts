import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { toNodeListener } from "./node_listener.ts";

async function listen(server: http.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

async function close(server: http.Server): Promise<void> {
  await new Promise<void>((resolve) => server.close(() => resolve()));
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
      new Promise((resolve) => timer = setTimeout(resolve, 5000, "waited")),
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
