// The Node server of docs/delivery.md ("On Node"), run as the guide says
// (`node server.mjs` beside a `./packs` folder, here the fixture packs, with
// `@cordon/cordon` the Node build), answers as the delivery handler did on
// Deno (recorded by tools/write_node_fixtures.ts in dist/fixtures/
// delivery.json): every plain request of the listing and of each module,
// and the requests a browser sends (gzip accepted, an Origin, revalidations,
// HEAD, a preflight, errors), with the same status, the same header fields
// and the same bytes, a gzip listing's once decompressed; and it stops at
// SIGTERM as the serve command does, with exit status 0. The browser leg
// runs the fixture table in Chromium against a Node server too.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import {
  mkdir,
  mkdtemp,
  readFile,
  rm,
  symlink,
  writeFile,
} from "node:fs/promises";
import { Agent, request } from "node:http";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import { once } from "node:events";
import { after, before, test } from "node:test";

const ROOT = new URL("../../", import.meta.url);
const BUILD = fileURLToPath(new URL("dist/node/", ROOT));
const FIXTURES = fileURLToPath(new URL("fixtures/", ROOT));
const RECORDED = new URL("dist/fixtures/delivery.json", ROOT);
const GUIDE = new URL("docs/delivery.md", ROOT);

/** The listen line of the guide's server, which the test moves to port 0. */
const LISTEN = 'server.listen(8000, "127.0.0.1");';

/** The grace the guide's server gives requests in flight after a signal. */
const GRACE = "10_000";

/** Longer than any stop takes here: past it, the server hangs. */
const HANG_MS = 60_000;

/**
 * Header fields node:http adds to every answer on its own, which the
 * handler's answers on Deno, recorded in-process, do not hold.
 */
const TRANSPORT_FIELDS = new Set(["date", "connection", "keep-alive"]);

/** The first `ts ignore` block of the guide's "On Node" section. */
async function guideServerSource() {
  const guide = await readFile(GUIDE, "utf8");
  const section = guide.slice(guide.indexOf("\n### On Node\n"));
  const block = section.match(/```ts ignore\n([\s\S]*?)```/)?.[1];
  assert.ok(block, 'docs/delivery.md has a code block under "On Node"');
  assert.ok(block.includes("createDiskCatalog"), "it serves a packs folder");
  assert.ok(block.includes(LISTEN), `it listens with ${LISTEN}`);
  return block;
}

/**
 * Writes the guide's server into a folder where `@cordon/cordon` is the
 * Node build, listening on a free port that it prints.
 */
async function writeGuideServer(dir, { holdOpen = false } = {}) {
  let source = (await guideServerSource()).replace(
    LISTEN,
    'server.listen(0, "127.0.0.1", () => console.log(server.address().port));',
  );
  if (holdOpen) {
    // Only a signal may end a connection: no grace that runs out, and
    // none of Node's own timeouts of a request that never ends.
    assert.ok(source.includes(GRACE), `it gives requests ${GRACE} ms`);
    source = source.replace(GRACE, "2_147_483_647") +
      "server.headersTimeout = 0;\nserver.requestTimeout = 0;\n";
  }
  await mkdir(join(dir, "node_modules", "@cordon"), { recursive: true });
  await symlink(BUILD, join(dir, "node_modules", "@cordon", "cordon"));
  const file = join(dir, "server.mjs");
  await writeFile(file, source);
  return file;
}

/** Runs `file` with node in the fixtures folder; resolves to its port. */
function startServer(file) {
  const child = spawn(process.execPath, [file], {
    cwd: FIXTURES,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const port = new Promise((resolve, reject) => {
    let output = "";
    let errors = "";
    child.stderr.on("data", (chunk) => errors += chunk);
    child.stdout.on("data", (chunk) => {
      output += chunk;
      const line = output.match(/^(\d+)\n/);
      if (line) resolve(Number(line[1]));
    });
    child.once("exit", (code) => {
      reject(new Error(`The guide's server exited with ${code}: ${errors}`));
    });
  });
  return { child, port };
}

/** One raw exchange over node:http: no decoding, every header as sent. */
function exchange(port, method, path, headers = []) {
  return new Promise((resolve, reject) => {
    const outgoing = request({
      host: "127.0.0.1",
      port,
      method,
      path,
      headers: Object.fromEntries(headers),
      agent: false,
    }, (incoming) => {
      const chunks = [];
      incoming.on("data", (chunk) => chunks.push(chunk));
      incoming.on("end", () =>
        resolve({
          status: incoming.statusCode,
          headers: incoming.headers,
          body: Buffer.concat(chunks),
        }));
      incoming.on("error", reject);
    });
    outgoing.on("error", reject);
    outgoing.end();
  });
}

/** A response's header fields the handler set, by lower-case name. */
function handlerFields(headers) {
  return Object.fromEntries(
    Object.entries(headers).filter(([name]) => !TRANSPORT_FIELDS.has(name)),
  );
}

/** Checks one answer of the Node server against the one recorded on Deno. */
function assertSameAnswer(answer, recorded, label) {
  const expected = Object.fromEntries(recorded.headers);
  const body = Buffer.from(recorded.body, "base64");
  assert.equal(answer.status, recorded.status, label);
  const fields = handlerFields(answer.headers);
  if (expected["content-encoding"] === "gzip") {
    // Node's zlib and Deno's compressor write other bytes for the same
    // body: the length may differ, the decompressed body may not.
    const length = Number(fields["content-length"]);
    delete fields["content-length"];
    delete expected["content-length"];
    if (body.length === 0) assert.equal(answer.body.length, 0, label);
    else {
      assert.equal(length, answer.body.length, label);
      assert.deepEqual(gunzipSync(answer.body), gunzipSync(body), label);
    }
  } else {
    assert.equal(answer.body.toString("base64"), recorded.body, label);
  }
  assert.deepEqual(fields, expected, label);
}

let server;
let dir;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "cordon_node_guide_"));
  server = startServer(await writeGuideServer(dir));
  await server.port;
});

after(async () => {
  server?.child.kill();
  await rm(dir, { recursive: true, force: true });
});

test("the guide's Node server answers every plain request of the listing and of each module as the handler did on Deno: status, header fields and bytes", async () => {
  const { responses } = JSON.parse(await readFile(RECORDED, "utf8"));
  const port = await server.port;
  for (const recorded of responses) {
    const answer = await exchange(port, "GET", recorded.path);
    assertSameAnswer(answer, recorded, recorded.path);
  }
});

test("the guide's Node server answers requests as Chromium sends them as the handler did on Deno: the gzip listing, 304s, 412, HEAD, the preflight, 405 and 404s", async () => {
  const { browser } = JSON.parse(await readFile(RECORDED, "utf8"));
  assert.ok(browser.length >= 15, "the browser's requests were recorded");
  const port = await server.port;
  const [listing] = browser;
  // The handler compresses the listing after the first request that
  // accepts gzip and sends the plain body until then, on either runtime.
  let encoding;
  for (let turn = 0; turn < 1000 && encoding !== "gzip"; turn++) {
    const answer = await exchange(
      port,
      "GET",
      listing.path,
      listing.requestHeaders,
    );
    encoding = answer.headers["content-encoding"];
  }
  assert.equal(encoding, "gzip", "the listing is sent compressed");
  for (const recorded of browser) {
    const { method, path, requestHeaders } = recorded;
    const answer = await exchange(port, method, path, requestHeaders);
    assertSameAnswer(answer, recorded, `${method} ${path}`);
  }
});

test("the guide's Node server stops at SIGTERM as the serve command does: it ends a kept-alive connection and exits 0", async () => {
  const own = await mkdtemp(join(tmpdir(), "cordon_node_guide_stop_"));
  const stopping = startServer(await writeGuideServer(own));
  const agent = new Agent({ keepAlive: true });
  try {
    const port = await stopping.port;
    const answer = await new Promise((resolve, reject) => {
      request({
        host: "127.0.0.1",
        port,
        path: "/api/sandbox-modules",
        agent,
      }, (incoming) => {
        incoming.resume();
        incoming.on("end", () => resolve(incoming.statusCode));
      }).on("error", reject).end();
    });
    assert.equal(answer, 200);
    const exited = once(stopping.child, "exit");
    stopping.child.kill("SIGTERM");
    const [code, signal] = await exited;
    assert.deepEqual({ code, signal }, { code: 0, signal: null });
  } finally {
    agent.destroy();
    stopping.child.kill("SIGKILL");
    await rm(own, { recursive: true, force: true });
  }
});

/**
 * Opens a connection that sends a request's first lines and never its
 * end: a request in flight for as long as the connection stays open.
 */
async function openUnfinished(port) {
  const socket = connect(port, "127.0.0.1");
  await once(socket, "connect");
  socket.on("error", () => {});
  socket.write("GET /api/sandbox-modules HTTP/1.1\r\nHost: x\r\n");
  return socket;
}

/** Resolves once a connection to `port` is refused. */
async function refused(port) {
  for (;;) {
    const socket = connect(port, "127.0.0.1");
    // once() rejects with the socket's error when it emits one first.
    const taken = await once(socket, "connect").then(() => true, () => false);
    socket.destroy();
    if (!taken) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

for (const [first, second] of [["SIGTERM", "SIGINT"], ["SIGTERM", "SIGTERM"]]) {
  test(`the guide's Node server cuts a request still in flight at ${second} after ${first} and exits 0, as the serve command does at a second signal`, async () => {
    const own = await mkdtemp(join(tmpdir(), "cordon_node_guide_cut_"));
    const stopping = startServer(
      await writeGuideServer(own, { holdOpen: true }),
    );
    let unfinished;
    let timer;
    try {
      const port = await stopping.port;
      unfinished = await openUnfinished(port);
      // Node takes connections in order: once a later one is answered, the
      // server holds the unfinished one.
      assert.equal(
        (await exchange(port, "GET", "/api/sandbox-modules")).status,
        200,
      );
      const exited = once(stopping.child, "exit");
      stopping.child.kill(first);
      await refused(port);
      stopping.child.kill(second);
      const hang = new Promise((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new Error(`the server still ran ${HANG_MS} ms after ${second}`),
            ),
          HANG_MS,
        );
      });
      const [code, signal] = await Promise.race([exited, hang]);
      assert.deepEqual({ code, signal }, { code: 0, signal: null });
    } finally {
      clearTimeout(timer);
      unfinished?.destroy();
      stopping.child.kill("SIGKILL");
      await rm(own, { recursive: true, force: true });
    }
  });
}
