import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { test } from "node:test";
import { plugin } from "./_helpers.mjs";

test("toNodeListener() cancels the answer's body when the client leaves before it is sent", async () => {
  let resolve;
  const cancelled = new Promise((done) => resolve = done);
  const server = http.createServer(plugin.toNodeListener(() =>
    new Response(
      new ReadableStream({
        // More than the socket takes before the client reads: the listener
        // waits for it to drain, which a client that left never does.
        pull: (controller) => controller.enqueue(new Uint8Array(65536)),
        cancel: () => resolve(),
      }),
    )
  ));
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  const client = net.connect(server.address().port, "127.0.0.1");
  try {
    client.on("error", () => {});
    client.write("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    await new Promise((done) => client.once("data", done));
    client.pause();
    client.destroy();
    let timer;
    const outcome = await Promise.race([
      cancelled.then(() => "cancelled"),
      new Promise((done) => timer = setTimeout(done, 5000, "waited")),
    ]);
    clearTimeout(timer);
    assert.equal(outcome, "cancelled");
  } finally {
    client.destroy();
    server.closeAllConnections();
    await new Promise((done) => server.close(done));
  }
});

test("toNodeListener() sends every header the answer carries, whatever its name", async () => {
  const server = http.createServer(
    plugin.toNodeListener(() =>
      new Response("ok", {
        // Pairs: in an object literal "__proto__" would set the prototype.
        headers: [["__proto__", "a"], ["constructor", "b"], ["x-plain", "c"]],
      })
    ),
  );
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  try {
    const response = await fetch(`http://127.0.0.1:${server.address().port}/`);
    assert.equal(await response.text(), "ok");
    assert.equal(response.headers.get("__proto__"), "a");
    assert.equal(response.headers.get("constructor"), "b");
    assert.equal(response.headers.get("x-plain"), "c");
  } finally {
    server.closeAllConnections();
    await new Promise((done) => server.close(done));
  }
});
