import assert from "node:assert/strict";
import http from "node:http";
import { test } from "node:test";
import { bridge, ECHO_SOURCE, fingerprint } from "./_helpers.mjs";

const {
  createPluginHost,
  createSandboxedVmPluginModule,
  createVmSandbox,
  toNodeListener,
} = bridge;

async function serve(listener) {
  const server = http.createServer(listener);
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: server.address().port,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

function vmPlugin(id, source, extra = {}) {
  return createSandboxedVmPluginModule({
    manifest: { id, version: "1.0.0", capabilities: ["config.get"] },
    sandbox: createVmSandbox({
      pluginId: id,
      pluginModule: { kind: "source", source, identifier: `${id}.js` },
      ...extra,
    }),
  });
}

async function installEcho(host, upstreamPort) {
  await host.installPlugin({
    kind: "vm",
    module: vmPlugin("echo", ECHO_SOURCE, {
      policy: {
        capabilities: ["config.get"],
        fetch: [`127.0.0.1:${upstreamPort}`],
      },
      proxies: {
        capabilities: {
          "config.get": () => ({
            upstreamUrl: `http://127.0.0.1:${upstreamPort}`,
          }),
        },
      },
      limits: { timeoutMs: 3000 },
    }),
  });
}

test("the plugin host on Node's http server serves the example vm plugin with sandbox-computed values", async () => {
  const upstream = await serve((req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ tenant: req.headers["x-tenant"], n: 7 }));
  });
  const host = createPluginHost();
  const server = await serve(toNodeListener(host.fetch));
  try {
    await installEcho(host, upstream.port);
    const base = `http://127.0.0.1:${server.port}/plugins/echo`;
    const identity = { "x-cordon-principal": "ada", "x-cordon-tenant": "acme" };

    const echoed = await fetch(`${base}/echo/hello`, { headers: identity });
    assert.equal(echoed.status, 200);
    assert.deepEqual(await echoed.json(), {
      principalId: "ada",
      tenantId: "acme",
      word: "hello",
      fingerprint: fingerprint("hello|ada|acme"),
      sandboxed: true,
      starts: 1,
    });

    const posted = await fetch(`${base}/echo`, {
      method: "POST",
      headers: identity,
      body: "naïve ☃",
    });
    const postedBody = await posted.json();
    assert.equal(postedBody.fingerprint, fingerprint("naïve ☃"));
    assert.equal(postedBody.reversed, "☃ evïan");

    const fetched = await fetch(`${base}/upstream`, { headers: identity });
    const fetchedBody = await fetched.json();
    assert.deepEqual(fetchedBody.upstream, { tenant: "acme", n: 7 });
    assert.equal(
      fetchedBody.fingerprint,
      fingerprint(JSON.stringify({ tenant: "acme", n: 7 })),
    );

    const denied = await fetch(`${base}/secret`, { headers: identity });
    assert.equal(denied.status, 403);
    assert.equal((await denied.json()).code, "PERMISSION_DENIED");

    const missing = await fetch(
      `http://127.0.0.1:${server.port}/plugins/none/x`,
    );
    assert.equal(missing.status, 404);
    assert.equal((await missing.json()).code, "PLUGIN_NOT_FOUND");
  } finally {
    await server.close();
    await host.dispose();
    await upstream.close();
  }
});

test("on Node a looping, a never-settling and a memory-hungry plugin do not stop the host serving others", async () => {
  const host = createPluginHost();
  const server = await serve(toNodeListener(host.fetch));
  try {
    await installEcho(host, 9);
    const bad = (body) => `
      export const routes = () => [{ method: "GET", path: "/" }];
      export async function handleRequest() { ${body} }`;
    const limits = { timeoutMs: 800, memoryLimitBytes: 48 * 1024 * 1024 };
    await host.installPlugin({
      kind: "vm",
      module: vmPlugin("looper", bad("for (;;) {}"), { limits }),
    });
    await host.installPlugin({
      kind: "vm",
      module: vmPlugin("waiter", bad("return new Promise(() => {});"), {
        limits,
      }),
    });
    await host.installPlugin({
      kind: "vm",
      module: vmPlugin(
        "hog",
        bad("const a = []; for (;;) a.push(new Array(1e5).fill(a.length));"),
        { limits: { ...limits, timeoutMs: 20_000 } },
      ),
    });
    const base = `http://127.0.0.1:${server.port}/plugins`;
    const get = async (path) => {
      const response = await fetch(`${base}${path}`, {
        headers: { "x-cordon-principal": "p", "x-cordon-tenant": "t" },
      });
      return { status: response.status, body: await response.json() };
    };
    const badOnes = Promise.all([
      get("/looper/"),
      get("/waiter/"),
      get("/hog/"),
    ]);
    let settled = false;
    badOnes.finally(() => (settled = true));
    const good = [];
    for (let i = 0; !settled; i++) {
      const answer = await get(`/echo/echo/w${i}`);
      good.push(answer.status);
      assert.equal(answer.body.fingerprint, fingerprint(`w${i}|p|t`));
    }
    const [looper, waiter, hog] = await badOnes;
    assert.ok(good.length >= 5, `only ${good.length} requests were answered`);
    assert.deepEqual(good, Array(good.length).fill(200));
    assert.deepEqual([looper.status, looper.body.code], [504, "TIMEOUT"]);
    assert.deepEqual([waiter.status, waiter.body.code], [504, "TIMEOUT"]);
    assert.deepEqual([hog.status, hog.body.code], [502, "OUT_OF_MEMORY"]);
    assert.equal((await get("/echo/echo/after")).status, 200);
  } finally {
    await server.close();
    await host.dispose();
  }
});
