/**
 * Gunzips an npm tarball as npm reads it, with the web platform's
 * `DecompressionStream`: gzip members one after another are one stream
 * (RFC 1952 §2.2), and zero bytes after the last member, which early npm
 * versions wrote, are ignored. Any other byte after the last member is
 * refused with a message that says so.
 *
 * `DecompressionStream` reads one member and refuses any byte after it
 * without saying where the member ended, so a tarball that is not one
 * member and nothing else is read member by member: each member's end is
 * found by writing its bytes to a fresh stream, in blocks and then, in
 * the block that failed, byte by byte, and the member is then gunzipped
 * alone. A tarball that is one member is gunzipped once, as before.
 *
 * @module
 */

import { collectCapped } from "./_capped_bytes.ts";

/** An archive that unpacks to more than it may: no shorter stream is tried. */
export class UnpackedTooLarge extends Error {}

/**
 * The most gzip members a tarball may hold. npm packs one; finding where a
 * member ends costs up to {@linkcode BLOCK_BYTES} writes of one byte each,
 * so a tarball of millions of tiny members would keep the packer busy for
 * minutes.
 */
export const MAX_GZIP_MEMBERS = 64;

/** The bytes written at once while looking for a member's end. */
const BLOCK_BYTES = 4096;

/** The first two bytes of every gzip member. */
const GZIP_MAGIC = [0x1f, 0x8b] as const;

/**
 * Gunzips `bytes` whole, as one gzip member.
 *
 * @throws {UnpackedTooLarge} When it unpacks to more than `maxBytes`.
 * @throws {TypeError} When it is not one whole gzip member.
 */
async function gunzipOne(
  bytes: Uint8Array<ArrayBuffer>,
  maxBytes: number,
): Promise<Uint8Array<ArrayBuffer>> {
  const stream = new Blob([bytes]).stream().pipeThrough(
    new DecompressionStream("gzip"),
  );
  return await collectCapped(stream, maxBytes, () => tooLarge(maxBytes));
}

function tooLarge(maxBytes: number): UnpackedTooLarge {
  return new UnpackedTooLarge(`it unpacks to over ${maxBytes} bytes`);
}

/**
 * Gunzips a tarball made of one gzip member or several, followed by
 * nothing or by zero bytes, within `maxBytes` across all its members.
 *
 * @param bytes The `.tgz` bytes.
 * @param maxBytes The largest unpacked size accepted, for all members.
 * @returns The bytes of every member, unpacked and joined.
 * @throws {UnpackedTooLarge} When it unpacks to more than `maxBytes`.
 * @throws {Error} When it is not gzip, is damaged or truncated, holds
 * over {@linkcode MAX_GZIP_MEMBERS} members or has bytes after its last
 * member that are not zero.
 */
export async function gunzipMembers(
  bytes: Uint8Array<ArrayBuffer>,
  maxBytes: number,
): Promise<Uint8Array<ArrayBuffer>> {
  try {
    return await gunzipOne(bytes, maxBytes);
  } catch (error) {
    if (error instanceof UnpackedTooLarge) throw error;
  }
  const members: Uint8Array[] = [];
  let unpacked = 0;
  for (let start = 0; start < bytes.length && !onlyZeros(bytes, start);) {
    if (start > 0 && !startsMember(bytes, start)) {
      throw new Error(
        `it has ${
          bytes.length - start
        } bytes after its gzip stream that are neither another gzip member nor zero padding; pack another version, or report it to the package's authors`,
      );
    }
    if (members.length === MAX_GZIP_MEMBERS) {
      throw new Error(
        `it is made of over ${MAX_GZIP_MEMBERS} gzip members, where npm packs one; pack another version, or report it to the package's authors`,
      );
    }
    const member = await nextMember(bytes, start, maxBytes - unpacked).catch(
      (error) => {
        throw error instanceof UnpackedTooLarge ? tooLarge(maxBytes) : error;
      },
    );
    members.push(member.bytes);
    unpacked += member.bytes.byteLength;
    start = member.end;
  }
  return joined(members, unpacked);
}

/**
 * The gzip member at `start`, unpacked, and where it ends. A member whose
 * end is not found (damaged or truncated) is taken to run to the end of
 * `bytes`, so its gunzip fails with what is wrong with it.
 *
 * @throws {UnpackedTooLarge} When it unpacks to over `maxBytes`.
 * @throws {TypeError} When it is damaged or truncated.
 */
async function nextMember(
  bytes: Uint8Array<ArrayBuffer>,
  start: number,
  maxBytes: number,
): Promise<{ bytes: Uint8Array<ArrayBuffer>; end: number }> {
  const end = await memberEnd(bytes, start, maxBytes) ?? bytes.length;
  return { bytes: await gunzipOne(bytes.subarray(start, end), maxBytes), end };
}

/** Whether every byte from `start` on is zero. */
function onlyZeros(bytes: Uint8Array, start: number): boolean {
  for (let i = start; i < bytes.length; i++) if (bytes[i] !== 0) return false;
  return true;
}

function startsMember(bytes: Uint8Array, start: number): boolean {
  return bytes[start] === GZIP_MAGIC[0] && bytes[start + 1] === GZIP_MAGIC[1];
}

/**
 * Where the gzip member at `start` ends: the first byte a fresh
 * `DecompressionStream` refuses once it has read a whole member. The
 * member's bytes are written in blocks until one is refused, then again up
 * to that block and through it byte by byte. `undefined` when no write is
 * refused before the bytes end. A byte refused where no whole member ends
 * (the member is damaged there) is returned as well: the gunzip of the
 * bytes before it then fails.
 *
 * @throws {UnpackedTooLarge} When the member unpacks to over `maxBytes`.
 */
async function memberEnd(
  bytes: Uint8Array<ArrayBuffer>,
  start: number,
  maxBytes: number,
): Promise<number | undefined> {
  const refusedBlock = await firstRefusedWrite(
    bytes,
    maxBytes,
    blocksFrom(start, bytes.length, BLOCK_BYTES),
  );
  if (refusedBlock === undefined) return undefined;
  const [blockStart, blockEnd] = refusedBlock;
  const writes: [number, number][] = blockStart > start
    ? [[start, blockStart]]
    : [];
  for (let i = blockStart; i < blockEnd; i++) writes.push([i, i + 1]);
  const refusedByte = await firstRefusedWrite(bytes, maxBytes, writes);
  return refusedByte?.[0];
}

/** `[start, end)` ranges that cut `[from, to)` into blocks of `size`. */
function blocksFrom(
  from: number,
  to: number,
  size: number,
): [number, number][] {
  const blocks: [number, number][] = [];
  for (let at = from; at < to; at += size) {
    blocks.push([at, Math.min(at + size, to)]);
  }
  return blocks;
}

/**
 * Writes the ranges of `bytes`, in order, to a fresh gzip
 * `DecompressionStream`, counting what it unpacks, and returns the first
 * range it refuses, or `undefined` when it takes them all.
 *
 * @throws {UnpackedTooLarge} When it unpacks to over `maxBytes`.
 */
async function firstRefusedWrite(
  bytes: Uint8Array<ArrayBuffer>,
  maxBytes: number,
  ranges: readonly [number, number][],
): Promise<[number, number] | undefined> {
  const stream = new DecompressionStream("gzip");
  const writer = stream.writable.getWriter();
  const reader = stream.readable.getReader();
  let unpacked = 0;
  let overflowed = false;
  const counting = (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      unpacked += value.byteLength;
      if (unpacked > maxBytes) {
        overflowed = true;
        await reader.cancel();
        return;
      }
    }
  })().catch(() => {});
  let refused: [number, number] | undefined;
  for (const range of ranges) {
    try {
      await writer.write(bytes.subarray(range[0], range[1]));
    } catch {
      refused = range;
      break;
    }
    if (overflowed) break;
  }
  if (refused === undefined && !overflowed) {
    await writer.close().catch(() => {});
  } else {
    await writer.abort().catch(() => {});
  }
  await counting;
  if (overflowed) throw tooLarge(maxBytes);
  return refused;
}

function joined(parts: Uint8Array[], length: number): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    bytes.set(part, offset);
    offset += part.byteLength;
  }
  return bytes;
}
