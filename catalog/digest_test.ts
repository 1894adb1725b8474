import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import process from "node:process";
import { DigestSchema, ModuleIdSchema } from "../protocol/mod.ts";
import {
  moduleIdFor,
  parseReprDigest,
  sha256Digest,
  toReprDigest,
} from "./digest.ts";

function nodeSri(data: string | Uint8Array): string {
  return `sha256-${createHash("sha256").update(data).digest("base64")}`;
}

Deno.test("sha256Digest() equals an independent SHA-256 of strings and bytes", async () => {
  const text = "export const π = 3.14;\n// ünïcödé 🎉\n";
  assert.equal(await sha256Digest(text), nodeSri(text));
  const bytes = crypto.getRandomValues(new Uint8Array(4096));
  assert.equal(await sha256Digest(bytes), nodeSri(bytes));
  assert.equal(await sha256Digest(bytes.buffer), nodeSri(bytes));
  assert.equal(DigestSchema.safeParse(await sha256Digest(bytes)).success, true);
});

Deno.test("sha256Digest() digests only the bytes a view covers", async () => {
  const whole = new TextEncoder().encode("abcdef");
  assert.equal(await sha256Digest(whole.subarray(2, 4)), nodeSri("cd"));
});

Deno.test("sha256Digest() refuses bytes whose buffer was transferred with BYTES_DETACHED, where it gave the digest of no bytes", async () => {
  const view = new TextEncoder().encode("export default 1;");
  const empty = view.subarray(0, 0);
  structuredClone(view.buffer, { transfer: [view.buffer] });
  const buffer = new TextEncoder().encode("export default 1;").buffer;
  buffer.transfer();
  for (const data of [view, buffer, empty]) {
    await assert.rejects(sha256Digest(data), {
      name: "CordonError",
      code: "BYTES_DETACHED",
      message:
        "Cannot compute a digest: the bytes' ArrayBuffer was transferred or detached, so it holds no bytes; pass the bytes before transferring their buffer, or a copy",
    });
  }
  assert.equal(await sha256Digest(new Uint8Array(0)), nodeSri(""));
});

Deno.test("sha256Digest() digests the bytes of a view onto a shared or resizable buffer", async () => {
  const bytes = new TextEncoder().encode("export default 1;");
  const shared = new SharedArrayBuffer(bytes.length);
  new Uint8Array(shared).set(bytes);
  const resizable = new ArrayBuffer(bytes.length, { maxByteLength: 64 });
  new Uint8Array(resizable).set(bytes);
  for (const data of [new Uint8Array(shared), new Uint8Array(resizable)]) {
    assert.equal(await sha256Digest(data), nodeSri(bytes));
  }
});

Deno.test("sha256Digest() refuses a view of another kind than Uint8Array with a TypeError, where it digested no bytes or each element's low byte", async () => {
  const buffer = new TextEncoder().encode("abcd").buffer;
  for (const data of [new DataView(buffer), new Uint16Array(buffer)]) {
    await assert.rejects(sha256Digest(data as unknown as Uint8Array), {
      name: "TypeError",
      message:
        "Cannot compute a digest: pass a Uint8Array, an ArrayBuffer or a string; wrap another view's bytes with new Uint8Array(view.buffer, view.byteOffset, view.byteLength)",
    });
  }
});

Deno.test("toReprDigest() writes the RFC 9530 form and rejects other input", () => {
  const sri = nodeSri("hello");
  const base64 = sri.slice("sha256-".length);
  assert.equal(toReprDigest(sri), `sha-256=:${base64}:`);
  assert.throws(() => toReprDigest(`sha384-${base64}`), TypeError);
  assert.throws(() => toReprDigest("sha256-short="), TypeError);
});

Deno.test("parseReprDigest() reads the sha-256 member among others", () => {
  const sri = nodeSri("hello");
  const base64 = sri.slice("sha256-".length);
  assert.equal(parseReprDigest(toReprDigest(sri)), sri);
  assert.equal(
    parseReprDigest(`sha-512=:AAAA:, unixsum=:BBBB:,sha-256=:${base64}:`),
    sri,
  );
  assert.equal(parseReprDigest(`  sha-256=:${base64}:;p=1  `), sri);
});

Deno.test("parseReprDigest() lets the last sha-256 member win", () => {
  const first = nodeSri("a");
  const last = nodeSri("b");
  const header = `${toReprDigest(first)}, ${toReprDigest(last)}`;
  assert.equal(parseReprDigest(header), last);
});

Deno.test("parseReprDigest() returns undefined without a well-formed sha-256 member", () => {
  const base64 = nodeSri("x").slice("sha256-".length);
  for (
    const header of [
      null,
      undefined,
      "",
      "sha-512=:AAAA:",
      `SHA-256=:${base64}:`,
      "sha-256",
      "sha-256=:AAAA:",
      `sha-256=${base64}`,
      `sha-256=:${base64}`,
      "sha-256=:!!!!:",
      `sha-256=:${base64}:, sha-256=:bad:`,
    ]
  ) {
    assert.equal(parseReprDigest(header), undefined, String(header));
  }
});

Deno.test("moduleIdFor() is a truncated base64url SHA-256 of name, version and path", async () => {
  const id = await moduleIdFor("@acme/math", "1.2.0", "./lib/round.js");
  const expected = createHash("sha256")
    .update("@acme/math@1.2.0:./lib/round.js")
    .digest("base64url")
    .slice(0, 22);
  assert.equal(id, expected);
  assert.equal(ModuleIdSchema.safeParse(id).success, true);
  assert.doesNotMatch(id, /round|lib|\./);
});

Deno.test("moduleIdFor() is stable and differs per name, version and path", async () => {
  const ids = new Set([
    await moduleIdFor("math", "1.0.0", "./index.js"),
    await moduleIdFor("math", "1.0.0", "./index.js"),
    await moduleIdFor("math", "1.0.1", "./index.js"),
    await moduleIdFor("maths", "1.0.0", "./index.js"),
    await moduleIdFor("math", "1.0.0", "./trig.js"),
  ]);
  assert.equal(ids.size, 4);
});

Deno.test("sha256Digest() hashes with the update and digest of import time: a host that replaced them, or createHash, later gets the digest of the bytes or a rejection, never the digest it forged", async () => {
  const crypto = process.getBuiltinModule("node:crypto");
  const bytes = new TextEncoder().encode("tampered module");
  const honest = await sha256Digest(bytes);
  const forged = new Uint8Array(32);
  const hashPrototype = Object.getPrototypeOf(crypto.createHash("sha256"));
  const saved = {
    createHash: crypto.createHash,
    update: hashPrototype.update,
    digest: hashPrototype.digest,
  };
  const answers: unknown[] = [];
  try {
    hashPrototype.update = function () {
      return this;
    };
    hashPrototype.digest = () => forged;
    answers.push(await sha256Digest(bytes));
    crypto.createHash = (() => ({
      update() {
        return this;
      },
      digest: () => forged,
    })) as unknown as typeof crypto.createHash;
    answers.push(await sha256Digest(bytes).catch(() => "rejected"));
  } finally {
    crypto.createHash = saved.createHash;
    hashPrototype.update = saved.update;
    hashPrototype.digest = saved.digest;
  }
  assert.equal(answers[0], honest);
  assert.ok(
    answers[1] === honest || answers[1] === "rejected",
    `${answers[1]}`,
  );
});
