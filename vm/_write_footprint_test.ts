import assert from "node:assert/strict";
import { WRITE_BLOCK_BYTES, WriteFootprint } from "./_write_footprint.ts";

const LIMIT = 10 * WRITE_BLOCK_BYTES;

/** Whether `bytes` more fit in a path not written yet, given back at once. */
function fits(footprint: WriteFootprint, bytes: number): boolean {
  const share = footprint.take("/probe", bytes);
  share?.end(false);
  return share !== null;
}

Deno.test("WriteFootprint counts a path at its last write once its writes ended one after another", () => {
  const footprint = new WriteFootprint(LIMIT);
  footprint.take("/a", 8 * WRITE_BLOCK_BYTES)!.end(true);
  assert.equal(fits(footprint, 3 * WRITE_BLOCK_BYTES), false);
  footprint.take("/a", 10)!.end(true);
  assert.equal(fits(footprint, 9 * WRITE_BLOCK_BYTES), true);
  assert.equal(fits(footprint, 9 * WRITE_BLOCK_BYTES + 1), false);
});

Deno.test("WriteFootprint counts a path written by writes at once at the largest of them, whichever ends last", () => {
  // Both truncate before either writes, the long one writes, then the
  // short one over its start: the file holds the long text's length
  // although the short write ends last.
  const footprint = new WriteFootprint(LIMIT);
  const long = footprint.take("/a", 8 * WRITE_BLOCK_BYTES)!;
  const short = footprint.take("/a", 10)!;
  long.end(true);
  short.end(true);
  assert.equal(fits(footprint, 2 * WRITE_BLOCK_BYTES), true);
  assert.equal(fits(footprint, 3 * WRITE_BLOCK_BYTES), false);
  // A write alone afterwards replaces the file: its share is the path's.
  footprint.take("/a", 10)!.end(true);
  assert.equal(fits(footprint, 9 * WRITE_BLOCK_BYTES), true);
});

Deno.test("WriteFootprint gives back the share of a write that changed nothing, and keeps what the path held", () => {
  const footprint = new WriteFootprint(LIMIT);
  footprint.take("/a", 4 * WRITE_BLOCK_BYTES)!.end(true);
  const failed = footprint.take("/a", 6 * WRITE_BLOCK_BYTES)!;
  const other = footprint.take("/a", 10)!;
  failed.end(false);
  other.end(false);
  assert.equal(fits(footprint, 6 * WRITE_BLOCK_BYTES), true);
  assert.equal(fits(footprint, 6 * WRITE_BLOCK_BYTES + 1), false);
  assert.equal(footprint.take("/b", LIMIT), null);
});
