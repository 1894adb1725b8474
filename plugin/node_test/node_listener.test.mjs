import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { test } from "node:test";
import { plugin, serve } from "./_helpers.mjs";

/**
 * How long a test waits for the abort or cancel it expects before it
 * calls the wait a hang: far past what a loaded machine takes, so only an
 * event that never comes reaches it.
 */
const HANG_MS = 120_000;

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
      new Promise((done) => timer = setTimeout(done, HANG_MS, "waited")),
    ]);
    clearTimeout(timer);
    assert.equal(outcome, "cancelled");
  } finally {
    client.destroy();
    server.closeAllConnections();
    await new Promise((done) => server.close(done));
  }
});

test("toNodeListener() cancels an answer's body that runs past the Content-Length its handler set, as Deno.serve does", async () => {
  let resolve;
  const cancelled = new Promise((done) => resolve = done);
  const server = http.createServer(plugin.toNodeListener(() =>
    new Response(
      new ReadableStream({
        // A source that never ends: only a cancel stops it.
        pull: (controller) => controller.enqueue(new Uint8Array(16)),
        cancel: () => resolve(),
      }),
      { headers: { "content-length": "5" } },
    )
  ));
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  const client = net.connect(server.address().port, "127.0.0.1");
  try {
    client.on("error", () => {});
    client.resume();
    // Node refuses the write past the length and ends the connection.
    const closed = new Promise((done) => client.once("close", done));
    client.write("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    await closed;
    let timer;
    const outcome = await Promise.race([
      cancelled.then(() => "cancelled"),
      new Promise((done) => timer = setTimeout(done, HANG_MS, "waited")),
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

/** Sends `head` on a new connection and reads until the server closes it. */
function rawRequest(port, head) {
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

/**
 * A request head of `count` header fields, the last one `x-last`; short
 * fields, so a thousand of them stay well within Node's 16 KiB head.
 */
function headOf(count) {
  const fields = ["Host: 127.0.0.1", "Connection: close"];
  while (fields.length < count - 1) fields.push(`f${fields.length}: a`);
  fields.push("x-last: kept");
  return `GET / HTTP/1.1\r\n${fields.join("\r\n")}\r\n\r\n`;
}

test("toNodeListener() refuses a head of more fields than Deno.serve takes, which Node would cut short without a word", async () => {
  const seen = [];
  const { port, close } = await serve((request) => {
    seen.push(request.headers.get("x-last"));
    return new Response("served");
  });
  try {
    assert.match(await rawRequest(port, headOf(128)), /^HTTP\/1\.1 200 /);
    for (const count of [129, 1000]) {
      const answer = await rawRequest(port, headOf(count));
      assert.match(answer, /^HTTP\/1\.1 431 /, `${count} fields`);
      assert.match(answer, /"code":"REQUEST_INVALID"/);
      assert.match(answer, /more than 128 header fields/);
    }
    // Past a thousand fields Node 20 hands on only the first of them, which
    // the listener refuses as above, and Node 22 and later refuse the head
    // themselves with a 431 of their own and no body.
    assert.match(await rawRequest(port, headOf(1100)), /^HTTP\/1\.1 431 /);
    assert.deepEqual(seen, ["kept"]);
  } finally {
    await close();
  }
});

test("toNodeListener() answers HEAD without reading the answer's body, which Node would not send", async () => {
  let pulled = 0;
  let cancelled = false;
  const { port, close } = await serve(() =>
    new Response(
      new ReadableStream({
        // Node takes every write of a HEAD answer at once and drops it, so
        // a listener reading this body would go on without ever waiting
        // for the socket: an endless body held the process until it ran
        // out of memory. Bounded here so that the test ends either way.
        pull: (controller) => {
          pulled += 1;
          if (pulled === 10_000) controller.close();
          else controller.enqueue(new Uint8Array(1024));
        },
        cancel: () => {
          cancelled = true;
        },
      }),
      { headers: { "x-kept": "yes" } },
    )
  );
  try {
    const answer = await rawRequest(
      port,
      "HEAD / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    );
    assert.match(answer, /^HTTP\/1\.1 200 /);
    assert.match(answer, /\r\nx-kept: yes\r\n/);
    assert.ok(answer.endsWith("\r\n\r\n"), "no body after the head");
    assert.equal(cancelled, true);
    assert.ok(pulled < 10_000, `${pulled} chunks read`);
  } finally {
    await close();
  }
});
/**
 * The answers in `text`, each read where the one before it ends, by its
 * Content-Length or its chunks, or `null` when the bytes there are not an
 * answer: a body longer or shorter than its length makes the client read
 * the next answer's bytes as body, or body as an answer.
 */
function framedAnswers(text) {
  const answers = [];
  let at = 0;
  while (at < text.length) {
    if (!text.startsWith("HTTP/1.1 ", at)) return null;
    const end = text.indexOf("\r\n\r\n", at);
    if (end === -1) return null;
    const head = text.slice(at, end);
    at = end + 4;
    const length = /\r\ncontent-length: (\d+)/i.exec(head);
    let body = "";
    if (length !== null) {
      body = text.slice(at, at + Number(length[1]));
      at += Number(length[1]);
    } else if (/\r\ntransfer-encoding: chunked/i.test(head)) {
      for (;;) {
        const lineEnd = text.indexOf("\r\n", at);
        const size = parseInt(text.slice(at, lineEnd), 16);
        at = lineEnd + 2;
        if (size === 0) break;
        body += text.slice(at, at + size);
        at += size + 2;
      }
      at += 2;
    }
    answers.push({ head, body });
  }
  return answers;
}

test("toNodeListener() never frames an answer by a Content-Length its body does not match", async () => {
  const { port, close } = await serve((request) => {
    const { pathname } = new URL(request.url);
    if (pathname === "/next") return new Response("next");
    const body = pathname === "/longer" ? "hello world" : "hello";
    return new Response(body, {
      headers: { "content-length": pathname === "/longer" ? "3" : "11" },
    });
  });
  try {
    for (const path of ["/longer", "/shorter"]) {
      const text = await rawRequest(
        port,
        `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n` +
          "GET /next HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
      );
      const answers = framedAnswers(text);
      // Deno.serve sends a string body's real length whatever the handler
      // set; either way the next answer, when one is sent, must start where
      // the client looks for it.
      assert.notEqual(answers, null, `${path}: ${JSON.stringify(text)}`);
      for (const { head, body } of answers.slice(1)) {
        assert.match(head, /^HTTP\/1\.1 200 /);
        assert.equal(body, "next");
      }
    }
  } finally {
    await close();
  }
});
test("toNodeListener() frames an answer itself whatever Transfer-Encoding its handler set, as Deno.serve does", async () => {
  const framings = {
    "/chunked-and-length": {
      "transfer-encoding": "chunked",
      "content-length": "5",
    },
    "/gzip": { "transfer-encoding": "gzip" },
    "/gzip-and-length": { "transfer-encoding": "gzip", "content-length": "5" },
  };
  const { port, close } = await serve((request) => {
    const { pathname } = new URL(request.url);
    if (pathname === "/next") return new Response("next");
    if (pathname === "/empty") {
      return new Response(null, {
        headers: { "transfer-encoding": "chunked" },
      });
    }
    return new Response("hello", { headers: framings[pathname] });
  });
  try {
    for (const path of [...Object.keys(framings), "/empty"]) {
      const text = await rawRequest(
        port,
        `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n` +
          "GET /next HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
      );
      // A client that reads Content-Length first, as a proxy may, finds
      // both answers where they start.
      const answers = framedAnswers(text);
      assert.notEqual(answers, null, `${path}: ${JSON.stringify(text)}`);
      assert.deepEqual(
        answers.map(({ body }) => body),
        [path === "/empty" ? "" : "hello", "next"],
        path,
      );
      const [{ head }] = answers;
      assert.doesNotMatch(head, /\r\ntransfer-encoding: (?!chunked\r?$)/im);
      assert.ok(
        !(/\r\ncontent-length:/i.test(head) &&
          /\r\ntransfer-encoding:/i.test(head)),
        head,
      );
    }
  } finally {
    await close();
  }
});

test("toNodeListener() frames an answer without a body by Content-Length: 0, as Deno.serve does, where it sent an empty chunked body", async () => {
  const { port, close } = await serve((request) => {
    const status = Number(new URL(request.url).searchParams.get("status"));
    const headers = status === 302 ? { location: "/elsewhere" } : undefined;
    return new Response(null, { status, headers });
  });
  try {
    for (const status of [200, 302, 404]) {
      for (const method of ["GET", "HEAD"]) {
        const text = await rawRequest(
          port,
          `${method} /?status=${status} HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
            "Connection: close\r\n\r\n",
        );
        const head = text.slice(0, text.indexOf("\r\n\r\n")).toLowerCase();
        const label = `${method} ${status}: ${JSON.stringify(text)}`;
        assert.match(head, /\r\ncontent-length: 0(\r\n|$)/, label);
        assert.doesNotMatch(head, /transfer-encoding/, label);
      }
    }
    // No framing at all where the status has no body, as Deno.serve sends.
    const text = await rawRequest(
      port,
      "GET /?status=204 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    );
    assert.doesNotMatch(text.toLowerCase(), /content-length|transfer-encoding/);
  } finally {
    await close();
  }
});

test("toNodeListener() refuses a request with two Host fields, as Deno.serve does, before the handler runs", async () => {
  const seen = [];
  const { port, close } = await serve((request) => {
    seen.push([request.url, request.headers.get("host")]);
    return new Response("served");
  });
  try {
    const answer = await rawRequest(
      port,
      "GET /a HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: elsewhere.example\r\nConnection: close\r\n\r\n",
    );
    assert.match(answer, /^HTTP\/1\.1 400 /);
    assert.match(answer, /"code":"REQUEST_INVALID"/);
    assert.deepEqual(seen, []);
  } finally {
    await close();
  }
});

test("toNodeListener() answers the requests pipelined on one connection one at a time, as Deno.serve does", async () => {
  let active = 0;
  let mostAtOnce = 0;
  const { port, close } = await serve(async (request) => {
    active++;
    mostAtOnce = Math.max(mostAtOnce, active);
    // A turn of the event loop, in which Node hands on every request it
    // has parsed: a plugin host would count them all against the plugin's
    // maxConcurrentRequests, so one connection could take every slot.
    await new Promise((resolve) => setImmediate(resolve));
    active--;
    return new Response(new URL(request.url).pathname);
  });
  try {
    const paths = ["/1", "/2", "/3", "/4", "/5"];
    const text = await rawRequest(
      port,
      paths.map((path, i) =>
        `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${
          i === paths.length - 1 ? "Connection: close\r\n" : ""
        }\r\n`
      ).join(""),
    );
    const answers = framedAnswers(text);
    assert.deepEqual(answers.map(({ body }) => body), paths);
    assert.equal(mostAtOnce, 1);
  } finally {
    await close();
  }
});

test("toNodeListener() does not hand on the requests pipelined behind an answer whose client left, as Deno.serve would not read them", async () => {
  const seen = [];
  let started;
  const slowStarted = new Promise((resolve) => started = resolve);
  let release;
  const gate = new Promise((resolve) => release = resolve);
  // Pulled or cancelled only once the listener sends /slow's answer: from
  // then on, what it hands on next is up to its queue.
  let sending;
  const slowSent = new Promise((resolve) => sending = resolve);
  const slowBody = new ReadableStream({
    pull(controller) {
      sending();
      controller.enqueue(new TextEncoder().encode("/slow"));
      controller.close();
    },
    cancel: () => sending(),
  }, { highWaterMark: 0 });
  const server = http.createServer(plugin.toNodeListener(async (request) => {
    const { pathname } = new URL(request.url);
    seen.push(pathname);
    if (pathname === "/slow") {
      started();
      await gate;
      return new Response(slowBody);
    }
    return new Response(pathname);
  }));
  let serverSide;
  server.once("connection", (socket) => serverSide = socket);
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  const client = net.connect(server.address().port, "127.0.0.1");
  try {
    client.on("error", () => {});
    client.write(
      "GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" +
        "GET /behind HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    );
    await slowStarted;
    const closed = new Promise((done) => serverSide.once("close", done));
    client.destroy();
    await closed;
    release();
    await slowSent;
    // The answer to /slow ends within these turns, after which the
    // listener would hand on /behind.
    await new Promise((done) => setImmediate(done));
    await new Promise((done) => setImmediate(done));
    assert.deepEqual(seen, ["/slow"]);
  } finally {
    client.destroy();
    server.closeAllConnections();
    await new Promise((done) => server.close(done));
  }
});

test("toNodeListener() with abortOnDisconnect frees the place of a client that left while identify() was under way", async () => {
  // identify() never settles while the identity backend is out.
  let outage = true;
  let called;
  const identifying = new Promise((resolve) => called = resolve);
  const host = plugin.createPluginHost({
    identify: (request) => {
      if (!outage) return plugin.identifyAnonymously(request);
      called();
      return new Promise(() => {});
    },
    // Only the client's leaving can end this wait.
    identifyTimeoutMs: 3_600_000,
    maxConcurrentRequests: 1,
  });
  await host.installPlugin({
    kind: "host",
    module: plugin.createHostPluginModule({
      manifest: { id: "hello", version: "1.0.0" },
      plugin: {
        routes: () => [{ method: "GET", path: "/" }],
        handleRequest: () => ({ status: 200, headers: [], body: "hi" }),
      },
    }),
  });
  let firstAnswer;
  const answered = new Promise((resolve) => firstAnswer = resolve);
  const server = http.createServer(plugin.toNodeListener(async (request) => {
    const response = await host.fetch(request);
    firstAnswer(response.clone());
    return response;
  }, { abortOnDisconnect: true }));
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  const client = net.connect(server.address().port, "127.0.0.1");
  try {
    client.on("error", () => {});
    client.write(
      "GET /plugins/hello/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    );
    await identifying;
    client.destroy();
    const abandoned = await answered;
    assert.equal(abandoned.status, 502);
    assert.equal((await abandoned.json()).code, "ABORTED");
    outage = false;
    const response = await fetch(
      `http://127.0.0.1:${server.address().port}/plugins/hello/`,
    );
    assert.equal(response.status, 200);
    assert.equal(await response.text(), "hi");
  } finally {
    client.destroy();
    server.closeAllConnections();
    await new Promise((done) => server.close(done));
    await host.dispose();
  }
});

test("toNodeListener() hands its headers to a writeHead that middleware wrapped, as Express's compression does", async () => {
  const listener = plugin.toNodeListener(() =>
    new Response("ok", { headers: { "x-cordon": "kept" } })
  );
  const server = http.createServer((incoming, outgoing) => {
    // As on-headers (under compression) wraps it: Node's signature,
    // writeHead(status[, statusMessage][, headers]).
    const writeHead = outgoing.writeHead.bind(outgoing);
    outgoing.writeHead = (status, ...rest) => {
      const named = typeof rest[0] === "string";
      for (
        const [name, value] of Object.entries((named ? rest[1] : rest[0]) ?? {})
      ) {
        outgoing.setHeader(name, value);
      }
      return named ? writeHead(status, rest[0]) : writeHead(status);
    };
    listener(incoming, outgoing);
  });
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  try {
    const response = await fetch(`http://127.0.0.1:${server.address().port}/`);
    assert.equal(await response.text(), "ok");
    assert.equal(response.headers.get("x-cordon"), "kept");
  } finally {
    server.closeAllConnections();
    await new Promise((done) => server.close(done));
  }
});

test("toNodeListener() hands the plugin host a body a framework's parser already read as used: 400 BRIDGE_MARSHAL_FAILED", async () => {
  const errors = [];
  const host = plugin.createPluginHost({
    identify: plugin.identifyAnonymously,
    onError: (error) => errors.push(error),
  });
  await host.installPlugin({
    kind: "host",
    module: plugin.createHostPluginModule({
      manifest: { id: "echo", version: "1.0.0" },
      plugin: {
        routes: () => [{ method: "POST", path: "/" }],
        handleRequest: (req) => ({
          status: 200,
          headers: [],
          body: req.bodyBase64,
        }),
      },
    }),
  });
  const listener = plugin.toNodeListener(host.fetch);
  const server = http.createServer(async (incoming, outgoing) => {
    // A body parser ahead of the listener (express.json(), Fastify's).
    for await (const _chunk of incoming);
    listener(incoming, outgoing);
  });
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  try {
    const response = await fetch(
      `http://127.0.0.1:${server.address().port}/plugins/echo/`,
      {
        method: "POST",
        body: '{"a":1}',
      },
    );
    assert.equal(response.status, 400);
    assert.equal(
      response.headers.get("content-type"),
      "application/problem+json",
    );
    assert.equal((await response.json()).code, "BRIDGE_MARSHAL_FAILED");
    assert.match(errors[0].message, /already read/);
  } finally {
    server.closeAllConnections();
    await new Promise((done) => server.close(done));
    await host.dispose();
  }
});
