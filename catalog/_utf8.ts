// This module is browser compatible.

/**
 * The catalogs' one UTF-8 decoding of module and index bytes: strict, so
 * bytes that are not UTF-8 fail, and keeping a byte order mark, so a
 * caller sees it (JSON that starts with one is no JSON).
 *
 * @module
 */

/**
 * Decodes UTF-8 strictly, keeping a byte order mark. Bound when this
 * module loads: the text a digest check passes must be the verified
 * bytes' own, whatever a page script later puts in
 * `TextDecoder.prototype.decode`.
 *
 * @throws {TypeError} When the bytes are not UTF-8.
 */
export const decodeUtf8: (bytes: Uint8Array) => string = TextDecoder.prototype
  .decode.bind(new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }));
