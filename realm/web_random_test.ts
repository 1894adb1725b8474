import assert from "node:assert/strict";
import { createCipheriv } from "node:crypto";
import { createWebRandom } from "./web_random.ts";
import { createWebText } from "./web_text.ts";

const { DOMException: RealmDOMException } = createWebText();

/** ChaCha20's keystream for `key` with a zero nonce, from OpenSSL. */
function keystream(key: Uint8Array, length: number): Uint8Array {
  const cipher = createCipheriv("chacha20", key, new Uint8Array(16));
  return new Uint8Array(cipher.update(new Uint8Array(length)));
}

function wordsOf(key: Uint8Array): number[] {
  return Array.from(new Uint32Array(key.buffer.slice(0)));
}

Deno.test("getRandomValues() draws ChaCha20's keystream for the key the host gave, across block boundaries", () => {
  for (let round = 0; round < 8; round++) {
    const key = crypto.getRandomValues(new Uint8Array(32));
    const random = createWebRandom(RealmDOMException);
    random.rekey(wordsOf(key));
    const drawn: number[] = [];
    for (const size of [1, 7, 64, 3, 200, 1000, 5]) {
      drawn.push(...random.crypto.getRandomValues(new Uint8Array(size)));
    }
    assert.deepEqual(Uint8Array.from(drawn), keystream(key, drawn.length));
  }
});

Deno.test("rekey() starts a new stream and drops bytes left over from the last one", () => {
  const random = createWebRandom(RealmDOMException);
  const key = crypto.getRandomValues(new Uint8Array(32));
  random.rekey(wordsOf(key));
  random.crypto.getRandomValues(new Uint8Array(10));
  random.rekey(wordsOf(key));
  assert.deepEqual(
    random.crypto.getRandomValues(new Uint8Array(100)),
    keystream(key, 100),
  );
});

Deno.test("getRandomValues() fills every integer array in place and refuses others as browsers do", () => {
  const random = createWebRandom(RealmDOMException);
  random.rekey(wordsOf(crypto.getRandomValues(new Uint8Array(32))));
  const arrays = [
    new Int8Array(64),
    new Uint8ClampedArray(64),
    new Int16Array(64),
    new Uint32Array(64),
    new BigInt64Array(16),
    new BigUint64Array(16),
  ];
  for (const array of arrays) {
    assert.equal(random.crypto.getRandomValues(array), array);
    assert.ok(
      Array.from(array as ArrayLike<number | bigint>).some((n) => n != 0),
    );
  }
  const window = new Uint8Array(16);
  random.crypto.getRandomValues(window.subarray(4, 8));
  assert.deepEqual(
    [...window.subarray(0, 4), ...window.subarray(8)],
    new Array(12).fill(0),
  );
  assert.equal(
    random.crypto.getRandomValues(new Uint8Array(65536)).length,
    65536,
  );
  for (
    const [value, name] of [
      [new Float64Array(2), "TypeMismatchError"],
      [new DataView(new ArrayBuffer(2)), "TypeMismatchError"],
      [[1, 2], "TypeMismatchError"],
      [null, "TypeMismatchError"],
      [new Uint8Array(65537), "QuotaExceededError"],
    ] as const
  ) {
    assert.throws(
      () => random.crypto.getRandomValues(value as never),
      (error: Error) =>
        error instanceof RealmDOMException && error.name === name,
    );
  }
});

Deno.test("randomUUID() gives version 4 UUIDs from the stream", () => {
  const random = createWebRandom(RealmDOMException);
  random.rekey([1, 2, 3, 4, 5, 6, 7, 8]);
  const uuids = new Set(
    Array.from({ length: 500 }, () => random.crypto.randomUUID()),
  );
  assert.equal(uuids.size, 500);
  for (const uuid of uuids) {
    assert.match(
      uuid,
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
  }
});

/** `view` with own properties that shadow its prototype's getters. */
function lying<T extends object>(view: T, props: Record<string, unknown>): T {
  for (const [key, value] of Object.entries(props)) {
    Object.defineProperty(view, key, { value });
  }
  return view;
}

Deno.test("getRandomValues() reads an array's own slots, so properties that lie neither pass the quota nor choose the bytes", () => {
  const random = createWebRandom(RealmDOMException);
  random.rekey([1, 2, 3, 4, 5, 6, 7, 8]);
  assert.throws(
    () =>
      random.crypto.getRandomValues(
        lying(new Uint8Array(65537), { byteLength: 8 }),
      ),
    (error: Error) => error.name === "QuotaExceededError",
  );
  const elsewhere = new Uint8Array(8);
  const array = lying(new Uint8Array(8), {
    buffer: elsewhere.buffer,
    byteOffset: 4,
    byteLength: 2,
  });
  random.crypto.getRandomValues(array);
  assert.deepEqual(elsewhere, new Uint8Array(8));
  assert.equal(array.filter((byte) => byte !== 0).length > 4, true);
});

Deno.test("getRandomValues() without an argument is a TypeError, and a detached array comes back as Deno's does", () => {
  const random = createWebRandom(RealmDOMException);
  random.rekey([1, 2, 3, 4, 5, 6, 7, 8]);
  assert.throws(
    () => (random.crypto.getRandomValues as () => unknown)(),
    (error: Error) => error.constructor === TypeError,
  );
  const buffer = new ArrayBuffer(8);
  const detached = new Uint8Array(buffer);
  buffer.transfer();
  assert.equal(random.crypto.getRandomValues(detached), detached);
  assert.equal(crypto.getRandomValues(detached), detached);
});

Deno.test("rekey() refuses a key that is not eight numbers, so crypto is never keyed with zeros", () => {
  const random = createWebRandom(RealmDOMException);
  for (
    const key of [
      [],
      [1, 2, 3],
      [1, 2, 3, 4, 5, 6, 7, "8"],
      new Array(9).fill(1),
    ]
  ) {
    assert.throws(
      () => random.rekey(key as number[]),
      /Cannot key crypto: pass eight 32-bit words/,
    );
  }
});
