import assert from "node:assert/strict";
import { createRemoteCatalog } from "../catalog/remote_catalog.ts";
import type { SandboxResult } from "../protocol/mod.ts";
import { createQuickJSLoader } from "./quickjs_loader.ts";
import { createQuickJSPool } from "./quickjs_pool.ts";

const DECLARATION = {
  source: 'import { greet } from "greet"; export default greet("Ada");',
  packages: ["greet"],
};

/** How a misbehaving delivery server treats every request. */
type Misbehaviour = "never answers" | "drips the listing";

interface StalledServer extends AsyncDisposable {
  url: string;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * A delivery server on 127.0.0.1 that accepts connections and then never
 * answers, or answers with headers and drips the body one byte per 100 ms.
 * Disposing it closes the listener and every connection and waits for
 * their handlers.
 */
function serveStalled(how: Misbehaviour): StalledServer {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const open = new Set<Deno.Conn>();
  const handlers: Promise<void>[] = [];
  let closing: Promise<void> | undefined;

  function close(conn: Deno.Conn): void {
    if (open.delete(conn)) conn.close();
  }

  async function handle(conn: Deno.Conn): Promise<void> {
    const buffer = new Uint8Array(16 * 1024);
    try {
      if (how === "never answers") {
        while (await conn.read(buffer) !== null) {
          // Take the request and answer nothing.
        }
        return;
      }
      await conn.read(buffer);
      await conn.write(new TextEncoder().encode(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000000\r\n\r\n{",
      ));
      for (;;) {
        await delay(100);
        await conn.write(new Uint8Array([0x20]));
      }
    } catch {
      // The client gave up or the server is closing.
    } finally {
      close(conn);
    }
  }

  const accepting = (async () => {
    try {
      for await (const conn of listener) {
        open.add(conn);
        handlers.push(handle(conn));
      }
    } catch {
      // The listener was closed.
    }
  })();

  return {
    url: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    [Symbol.asyncDispose]() {
      closing ??= (async () => {
        listener.close();
        for (const conn of [...open]) close(conn);
        await accepting;
        await Promise.allSettled(handlers);
      })();
      return closing;
    },
  };
}

async function timed(
  run: Promise<SandboxResult>,
): Promise<[SandboxResult, number]> {
  const started = performance.now();
  const result = await run;
  return [result, performance.now() - started];
}

for (const how of ["never answers", "drips the listing"] as const) {
  Deno.test(`run() fails with TIMEOUT at its timeoutMs when the remote catalog's server ${how}`, async () => {
    await using server = serveStalled(how);
    const catalog = createRemoteCatalog({ baseUrl: server.url });
    using loader = await createQuickJSLoader({ catalog });
    const [result, elapsed] = await timed(
      loader.run(DECLARATION, { timeoutMs: 1000 }),
    );
    assert.ok(elapsed < 1000 + 2000, `ended after ${elapsed} ms`);
    assert.equal(!result.ok && result.error.code, "TIMEOUT");
    assert.match(
      !result.ok ? result.error.message : "",
      /time limit of 1000 ms/,
    );
  });
}

Deno.test("run() fails with ABORTED when its signal aborts a prefetch the server never answers", async () => {
  await using server = serveStalled("never answers");
  const catalog = createRemoteCatalog({ baseUrl: server.url });
  using loader = await createQuickJSLoader({ catalog });
  const [result, elapsed] = await timed(
    loader.run(DECLARATION, {
      timeoutMs: 5000,
      signal: AbortSignal.timeout(300),
    }),
  );
  assert.ok(elapsed < 300 + 2000, `ended after ${elapsed} ms`);
  assert.equal(!result.ok && result.error.code, "ABORTED");
});

Deno.test("createQuickJSPool() run() fails with TIMEOUT at its timeoutMs when the remote catalog's server never answers", async () => {
  await using server = serveStalled("never answers");
  const catalog = createRemoteCatalog({ baseUrl: server.url });
  await using pool = await createQuickJSPool({ catalog, size: 1 });
  const [result, elapsed] = await timed(
    pool.run(DECLARATION, { timeoutMs: 1000 }),
  );
  assert.ok(elapsed < 1000 + 2000, `ended after ${elapsed} ms`);
  assert.equal(!result.ok && result.error.code, "TIMEOUT");
});
