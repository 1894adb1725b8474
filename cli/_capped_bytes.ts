/**
 * Reads a stream of bytes whole, up to a cap: what the npm fetch and the
 * tarball reader both need of a body that may be larger than it says.
 *
 * @module
 */

/**
 * Collects the chunks into one array, throwing `tooLarge()` as soon as
 * they pass `maxBytes`; leaving the loop then cancels the stream.
 */
export async function collectCapped(
  chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  maxBytes: number,
  tooLarge: () => Error,
): Promise<Uint8Array<ArrayBuffer>> {
  const held: Uint8Array[] = [];
  let length = 0;
  for await (const chunk of chunks) {
    length += chunk.byteLength;
    if (length > maxBytes) throw tooLarge();
    held.push(chunk);
  }
  const bytes = new Uint8Array(length);
  let offset = 0;
  for (const chunk of held) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}
