import assert from "node:assert/strict";
import { readBounded } from "./_bounded.ts";

Deno.test("readBounded() refuses a body whose Content-Length announces more than the cap", async () => {
  const response = new Response(new Uint8Array(10), {
    headers: { "content-length": "11" },
  });
  assert.equal(await readBounded(response, 10), null);
});

Deno.test("readBounded() counts the decoded bytes of a compressed body, not its Content-Length, which counts the compressed ones", async () => {
  // fetch decodes a gzip body but keeps the header's compressed length,
  // which for bytes that do not compress is longer than the bytes.
  const decoded = new Uint8Array(10).fill(7);
  const response = new Response(decoded, {
    headers: { "content-encoding": "gzip", "content-length": "40" },
  });
  assert.deepEqual(await readBounded(response, 10), decoded);
  const longer = new Response(new Uint8Array(11), {
    headers: { "content-encoding": "gzip", "content-length": "5" },
  });
  assert.equal(await readBounded(longer, 10), null);
});
