import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { runScript } from "../tools/_script_run_test.ts";

// What serveDelivery() needs of its process's Deno permissions, run under
// exactly the flags an application would give it.

const DELIVERY_MOD = new URL("./mod.ts", import.meta.url).href;
const PACKS = fileURLToPath(new URL("../fixtures/packs", import.meta.url));

function freePort(): number {
  using listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  return listener.addr.port;
}

/** Serves the fixture packs under `flags`; "ok" and the listing's status, or the refusal. */
async function serveUnder(
  flags: string[],
  port: number,
  connectionGuard: boolean,
): Promise<string[]> {
  return await runScript(
    `import { serveDelivery } from ${JSON.stringify(DELIVERY_MOD)};
try {
  await using server = await serveDelivery({
    packsDir: ${JSON.stringify(PACKS)},
    port: ${port},
    connectionGuard: ${connectionGuard},
  });
  const answer = await fetch("http://127.0.0.1:${port}/api/sandbox-modules");
  await answer.body?.cancel();
  console.log(JSON.stringify(["ok", String(answer.status)]));
} catch (error) {
  console.log(JSON.stringify([String(error.code), error.message]));
}
`,
    { flags },
  ) as string[];
}

Deno.test("serveDelivery() with the connection guard refuses with DELIVERY_LISTEN_FAILED naming --allow-net=127.0.0.1 when only its own port is granted", async () => {
  const port = freePort();
  const [code, message] = await serveUnder(
    [`--allow-read=${PACKS}`, `--allow-net=127.0.0.1:${port}`],
    port,
    true,
  );
  assert.equal(code, "DELIVERY_LISTEN_FAILED", message);
  assert.match(message!, /--allow-net=127\.0\.0\.1[ ,;)]/);
  assert.match(message!, /connectionGuard: false/);
});

Deno.test("serveDelivery() without the connection guard serves with read on the packs folder and net on its own port only", async () => {
  const port = freePort();
  const answer = await serveUnder(
    [`--allow-read=${PACKS}`, `--allow-net=127.0.0.1:${port}`],
    port,
    false,
  );
  assert.deepEqual(answer, ["ok", "200"]);
});
