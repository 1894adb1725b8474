// This module is browser compatible.

import { settleUnlessAborted } from "../protocol/deadline.ts";
import { isDetached, isUint8Array } from "./_bytes.ts";

/**
 * Thrown by {@linkcode readBounded} for a body that is not bytes: a chunk
 * that is no `Uint8Array`, or one whose buffer was transferred before the
 * body was read in full. Only a body made in the caller's own code (a
 * catalog's `fetch` option) can give one; a network body never does.
 */
export class UnreadableBody extends TypeError {
  constructor() {
    super(
      "the body gave a chunk that is no Uint8Array, or one whose buffer was transferred before the body was read in full",
    );
  }
}

/**
 * Maps items through an async function with at most `limit` calls in
 * flight, keeping the input order. When a call throws (or `signal` aborts),
 * no new calls start; it waits for the running ones to settle, then throws
 * the first error, so nothing is left running behind the caller's back.
 */
export async function mapBounded<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
  signal?: AbortSignal,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let failed = false;
  async function worker(): Promise<void> {
    while (!failed && next < items.length) {
      const index = next++;
      try {
        signal?.throwIfAborted();
        results[index] = await fn(items[index]!, index);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  }
  const workers = Array.from(
    { length: Math.max(1, Math.min(limit, items.length)) },
    worker,
  );
  const settled = await Promise.allSettled(workers);
  for (const outcome of settled) {
    if (outcome.status === "rejected") throw outcome.reason;
  }
  return results;
}

/**
 * Reads a request's or response's body into one buffer, keeping at most
 * `maxBytes` of it. A body that announces (`Content-Length`, unless it is
 * compressed, when the header counts the compressed bytes) or streams
 * more is abandoned as soon as that is known: its reader is cancelled, so
 * the connection closes and no more bytes arrive, and the answer is
 * `null`. A network error or an abort of `signal` rejects, after
 * cancelling the reader too.
 *
 * @param message The request or response whose body to read; the body is
 * consumed.
 * @param maxBytes The most bytes kept.
 * @param options `signal`, the fetch's own: its abort ends a read that
 * the body leaves pending.
 * @returns The body, or `null` when it is longer than `maxBytes`.
 * @throws {UnreadableBody} When the body is not bytes.
 */
export async function readBounded(
  message: Request | Response,
  maxBytes: number,
  options: { signal?: AbortSignal } = {},
): Promise<Uint8Array<ArrayBuffer> | null> {
  const { signal } = options;
  const body = message.body;
  if (body === null) return new Uint8Array(0);
  // fetch decodes a compressed body but keeps the compressed length in
  // Content-Length: then only the decoded bytes read are counted.
  const encoded = (message.headers.get("content-encoding") ?? "identity")
    .trim().toLowerCase() !== "identity";
  const announced = encoded
    ? NaN
    : Number(message.headers.get("content-length") ?? NaN);
  if (announced > maxBytes) {
    await body.cancel().catch(() => {});
    return null;
  }
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let length = 0;
  let finished = false;
  try {
    for (;;) {
      // Node's fetch leaves some reads pending after its signal aborted (a
      // body it cannot decompress): the abort ends the wait, and the
      // reader's cancel below ends the read.
      const { done, value } = await settleUnlessAborted(
        reader.read(),
        signal,
        () => {
          throw signal!.reason;
        },
      );
      if (done) break;
      if (!isUint8Array(value)) throw new UnreadableBody();
      length += value.byteLength;
      if (length > maxBytes) return null;
      chunks.push(value);
    }
    finished = true;
  } finally {
    if (!finished) await reader.cancel().catch(() => {});
  }
  const bytes = new Uint8Array(length);
  let offset = 0;
  for (const chunk of chunks) {
    if (isDetached(chunk)) throw new UnreadableBody();
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}
