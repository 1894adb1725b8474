import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { serveDelivery } from "./serve.ts";

// A delivery client written in Python from the docs and schemas alone: what
// docs/delivery.md promises must be what the server does, as a client on
// another platform reads it (statuses, headers, problem documents, ETag and
// If-None-Match, If-Match, gzip negotiation, CORS, ?packs=).
const CLIENT = fileURLToPath(
  new URL("./testdata/py_delivery_client.py", import.meta.url),
);
const PACKS = fileURLToPath(new URL("../fixtures/packs/", import.meta.url));

async function runClient(origin: string, prefix: string): Promise<void> {
  const { code, stdout, stderr } = await new Deno.Command("python3", {
    args: [CLIENT, origin, prefix],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const report = new TextDecoder().decode(stdout) +
    new TextDecoder().decode(stderr);
  assert.equal(code, 0, report);
  assert.match(report, /^CHECKED \d+ FAILED 0$/m);
}

Deno.test("serveDelivery() keeps the documented contract a Python client written from the docs checks, under the default prefix", async () => {
  await using server = await serveDelivery({ packsDir: PACKS, port: 0 });
  await runClient(
    `http://127.0.0.1:${server.addr.port}`,
    "/api/sandbox-modules",
  );
});

Deno.test("serveDelivery() keeps the documented contract a Python client written from the docs checks, under an empty prefix without the connection guard", async () => {
  await using server = await serveDelivery({
    packsDir: PACKS,
    port: 0,
    prefix: "",
    connectionGuard: false,
  });
  await runClient(`http://127.0.0.1:${server.addr.port}`, "");
});
