/**
 * The delivery server behind Debian's nginx (`apt-get install -y nginx`),
 * configured as operators write it, driven by the remote catalog and a
 * QuickJS loader: every outcome is the module delivered and verified, or a
 * clear error with a stable code that names the cause.
 *
 * @module
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { createRemoteCatalog } from "../catalog/remote_catalog.ts";
import { createQuickJSLoader } from "../loader/quickjs_loader.ts";
import { serveDelivery } from "./serve.ts";
import { copyTree } from "./_test_copy_tree_test.ts";

const NGINX = Deno.env.get("CORDON_NGINX") ?? "/usr/sbin/nginx";
const FIXTURE_PACKS = fileURLToPath(
  new URL("../fixtures/packs/", import.meta.url),
);
const GREET_RUN = {
  source: 'import { greet } from "greet";\nexport default greet("Ada");',
  packages: ["greet"],
};

/** A running nginx in front of an upstream. */
interface Proxy extends AsyncDisposable {
  /** Its origin, `http://127.0.0.1:<port>`. */
  origin: string;
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  return port;
}

function nginxConfig(dir: string, port: number, server: string): string {
  return `daemon off;
master_process off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  proxy_cache_path ${dir}/cache levels=1 keys_zone=listing:1m;
  server {
    listen 127.0.0.1:${port};
${server}
  }
}
`;
}

/** Waits until nginx answers anything, or rejects when it exits first. */
async function untilServing(
  child: Deno.ChildProcess,
  origin: string,
  dir: string,
): Promise<void> {
  let exited = false;
  child.status.then(() => exited = true);
  // Two minutes of attempts: only an nginx that never listens uses them up.
  for (let attempt = 0; attempt < 2400 && !exited; attempt++) {
    try {
      const response = await fetch(`${origin}/nginx-ready`);
      await response.body?.cancel();
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  const log = await Deno.readTextFile(`${dir}/error.log`).catch(() => "");
  throw new Error(`nginx did not start: ${log.trim()}`);
}

/**
 * Starts nginx with one `server` block's directives (its `listen` is
 * added). The caller owns it and must dispose it.
 */
async function startProxy(server: string): Promise<Proxy> {
  const dir = await Deno.makeTempDir({ prefix: "cordon_proxy_" });
  const port = freePort();
  await Deno.writeTextFile(
    `${dir}/nginx.conf`,
    nginxConfig(dir, port, server),
  );
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(NGINX, {
      args: ["-p", dir, "-c", `${dir}/nginx.conf`, "-e", `${dir}/error.log`],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
  } catch (error) {
    await Deno.remove(dir, { recursive: true });
    throw new Error(
      `Cannot start ${NGINX}: install nginx (apt-get install -y nginx) or set CORDON_NGINX`,
      { cause: error },
    );
  }
  const origin = `http://127.0.0.1:${port}`;
  const stop = async () => {
    try {
      child.kill("SIGQUIT");
    } catch {
      // Already exited.
    }
    await child.status;
    await Deno.remove(dir, { recursive: true });
  };
  try {
    await untilServing(child, origin, dir);
  } catch (error) {
    await stop();
    throw error;
  }
  return { origin, [Symbol.asyncDispose]: stop };
}

Deno.test("a remote catalog runs a guest through nginx's location /cordon/ rewritten to the delivery prefix, which redirects /cordon to /cordon/", async () => {
  await using server = await serveDelivery({
    packsDir: FIXTURE_PACKS,
    port: 0,
  });
  await using proxy = await startProxy(`
    location /cordon/ {
      proxy_pass http://127.0.0.1:${server.addr.port}/api/sandbox-modules/;
    }`);
  const catalog = createRemoteCatalog({
    baseUrl: proxy.origin,
    prefix: "/cordon",
  });
  using loader = await createQuickJSLoader({ catalog });
  const result = await loader.run(GREET_RUN);
  assert.deepEqual(
    result.ok ? result.value : result.error,
    "Hello, Ada!",
  );
});

Deno.test("a listing a caching proxy keeps past a pack's upgrade fails the run with FETCH_FAILED naming the stale listing, never another version", async () => {
  const root = await Deno.makeTempDir({ prefix: "cordon_proxy_packs_" });
  try {
    await copyTree(FIXTURE_PACKS, root);
    await using server = await serveDelivery({ packsDir: root, port: 0 });
    const upstream = `http://127.0.0.1:${server.addr.port}`;
    // An operator's cache that overrides the listing's no-cache.
    await using proxy = await startProxy(`
    location = /api/sandbox-modules {
      proxy_pass ${upstream};
      proxy_cache listing;
      proxy_cache_valid 200 10m;
      proxy_ignore_headers Cache-Control Expires;
    }
    location / { proxy_pass ${upstream}; }`);
    {
      using loader = await createQuickJSLoader({
        catalog: createRemoteCatalog({ baseUrl: proxy.origin }),
      });
      const warm = await loader.run(GREET_RUN);
      assert.deepEqual(warm.ok && warm.value, "Hello, Ada!");
    }
    const manifest = `${root}/greet/package.json`;
    await Deno.writeTextFile(
      manifest,
      (await Deno.readTextFile(manifest)).replace("1.0.0", "1.1.0"),
    );
    await Deno.writeTextFile(
      `${root}/greet/index.js`,
      "export function greet(name) {\n  return `Hi, ${name}!`;\n}\n",
    );
    await server.rescan();
    using loader = await createQuickJSLoader({
      catalog: createRemoteCatalog({ baseUrl: proxy.origin }),
    });
    const result = await loader.run(GREET_RUN);
    assert.equal(result.ok, false);
    assert.equal(!result.ok && result.error.code, "FETCH_FAILED");
    assert.match(
      !result.ok ? result.error.message : "",
      /of pack "greet" .*404 MODULE_NOT_FOUND: the server no longer has the version the catalog listing gives: the listing is stale, .*Cache-Control: no-cache/,
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("nginx's 502 for a delivery server that is down fails the run with FETCH_FAILED naming the proxy in front", async () => {
  await using proxy = await startProxy(`
    location / { proxy_pass http://127.0.0.1:${freePort()}; }`);
  using loader = await createQuickJSLoader({
    catalog: createRemoteCatalog({ baseUrl: proxy.origin }),
  });
  const result = await loader.run(GREET_RUN);
  assert.equal(!result.ok && result.error.code, "FETCH_FAILED");
  assert.match(
    !result.ok ? result.error.message : "",
    /the server answered 502 without a problem document: a proxy or gateway answered, as it could not reach the server behind it or did not get its answer in time; check that the delivery server is running, and the proxy's upstream address and timeouts/,
  );
});

Deno.test("a remote catalog given headers names nginx's redirect of /cordon to /cordon/ and the location that avoids it, and runs once the listing has its own location", async () => {
  await using server = await serveDelivery({
    packsDir: FIXTURE_PACKS,
    port: 0,
  });
  const upstream = `http://127.0.0.1:${server.addr.port}/api/sandbox-modules`;
  const options = {
    prefix: "/cordon",
    headers: { Authorization: "Bearer t" },
  };
  {
    await using proxy = await startProxy(`
    location /cordon/ { proxy_pass ${upstream}/; }`);
    using loader = await createQuickJSLoader({
      catalog: createRemoteCatalog({ baseUrl: proxy.origin, ...options }),
    });
    const result = await loader.run(GREET_RUN);
    assert.equal(!result.ok && result.error.code, "FETCH_FAILED");
    assert.match(
      !result.ok ? result.error.message : "",
      /redirect \(301\).*; the host redirects \/cordon to \/cordon\/, as nginx does for location \/cordon\/; give that path its own location \(nginx: location = \/cordon\)/,
    );
  }
  await using proxy = await startProxy(`
    location = /cordon { proxy_pass ${upstream}; }
    location /cordon/ { proxy_pass ${upstream}/; }`);
  using loader = await createQuickJSLoader({
    catalog: createRemoteCatalog({ baseUrl: proxy.origin, ...options }),
  });
  const result = await loader.run(GREET_RUN);
  assert.deepEqual(result.ok ? result.value : result.error, "Hello, Ada!");
});
