/**
 * Gunzips an npm tarball as npm reads it: npm's unpacker is zlib, which
 * reads gzip members one after another as one stream (RFC 1952 §2.2) and
 * stops at a byte after the last member that is zero (early npm versions
 * padded tarballs with zeros). `node:zlib` is the same zlib, so cordon
 * reads what npm reads; the web platform's `DecompressionStream` refuses
 * any byte after the first member without saying where it ended.
 *
 * @module
 */

import { constants } from "node:buffer";
import { gunzip } from "node:zlib";

/** An archive that unpacks to more than it may: no shorter stream is tried. */
export class UnpackedTooLarge extends Error {}

const REMEDY = "pack another version, or report it to the package's authors";

/** The first two bytes of every gzip member (RFC 1952 §2.3.1). */
const GZIP_MAGIC = [0x1f, 0x8b] as const;

/**
 * Gunzips a tarball made of one gzip member or several, within `maxBytes`
 * across all its members.
 *
 * @param bytes The `.tgz` bytes.
 * @param maxBytes The largest unpacked size accepted, for all members.
 * @returns The bytes of every member, unpacked and joined.
 * @throws {UnpackedTooLarge} When it unpacks to more than `maxBytes`.
 * @throws {Error} When it is not gzip, is damaged or truncated, or has
 * bytes after its last member that are neither zero nor another member.
 */
export function gunzipMembers(
  bytes: Uint8Array<ArrayBuffer>,
  maxBytes: number,
): Promise<Uint8Array<ArrayBuffer>> {
  if (bytes[0] !== GZIP_MAGIC[0] || bytes[1] !== GZIP_MAGIC[1]) {
    return Promise.reject(new Error(`it is not gzip; ${REMEDY}`));
  }
  // zlib takes a bound from 1 byte to the largest buffer; the result is
  // held to maxBytes itself below.
  const maxOutputLength = Math.min(Math.max(1, maxBytes), constants.MAX_LENGTH);
  return new Promise((resolve, reject) => {
    gunzip(bytes, { maxOutputLength }, (error, out) => {
      if (error !== null) {
        reject(refusal(error as Error & { code?: string }, maxBytes));
      } else if (out.byteLength > maxBytes) {
        reject(tooLarge(maxBytes));
      } else {
        resolve(
          new Uint8Array(
            out.buffer as ArrayBuffer,
            out.byteOffset,
            out.byteLength,
          ),
        );
      }
    });
  });
}

function tooLarge(maxBytes: number): UnpackedTooLarge {
  return new UnpackedTooLarge(`it unpacks to over ${maxBytes} bytes`);
}

/** What zlib's failure means for a tarball, in the packer's words. */
function refusal(error: Error & { code?: string }, maxBytes: number): Error {
  switch (error.code) {
    case "ERR_BUFFER_TOO_LARGE":
      return tooLarge(maxBytes);
    case "Z_BUF_ERROR":
      return new Error(`its gzip stream is truncated; ${REMEDY}`);
    case "Z_DATA_ERROR":
      // The first member's header was checked above: a header that zlib
      // refuses is one after it.
      return new Error(
        error.message === "incorrect header check"
          ? `it has bytes after its gzip stream that are neither another gzip member nor zero padding; ${REMEDY}`
          : `its gzip stream is damaged (${error.message}); ${REMEDY}`,
      );
    default:
      return error;
  }
}
