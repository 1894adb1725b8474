// This module is browser compatible.

/**
 * Where dlmalloc, Emscripten's default allocator, keeps its state in a
 * QuickJS engine's WebAssembly memory, and what that state tells: for the
 * loader's engines and the vm tier's QuickJS realm. The state
 * (`malloc_state`, dlmalloc 2.8.6 on 32-bit WebAssembly, without locks) is
 * found by its `top` field, the address of the top chunk, the free space
 * above every block in use; every other field is read at a fixed offset
 * from it.
 *
 * @example
 * ```ts
 * import {
 *   findAllocatorState,
 *   moreMemoryFailed,
 * } from "./dlmalloc_state.ts";
 * import { cappedMemory, guardHostCopies } from "./memory_growth.ts";
 * import {
 *   newQuickJSWASMModuleFromVariant,
 *   newVariant,
 *   type QuickJSSyncVariant,
 * } from "quickjs-emscripten-core";
 * import variant from "@jitl/quickjs-singlefile-browser-release-sync";
 * import assert from "node:assert/strict";
 *
 * const { memory } = cappedMemory(8 * 1024 * 1024);
 * const module = await newQuickJSWASMModuleFromVariant(
 *   newVariant(variant as unknown as QuickJSSyncVariant, { wasmMemory: memory }),
 * );
 * const allocator = guardHostCopies(module)!.raw;
 * const topField = findAllocatorState(allocator, memory)!;
 * assert.equal(moreMemoryFailed(memory, topField), false);
 * // 2 GiB is more than the memory can be asked for.
 * assert.equal(allocator._malloc(2 ** 31 - 1), 0);
 * assert.equal(moreMemoryFailed(memory, topField), true);
 * ```
 *
 * @module
 */

import type { EmscriptenAllocator } from "./memory_growth.ts";

/**
 * Where the heap's state ends. A block larger than all memory cannot come
 * from a free list, so the allocator carves it from the top of the heap,
 * above every block in use; freed, it returns to the top chunk, whose size
 * dlmalloc keeps in its own state and in the header just below the block.
 * `null` when the block's header is not dlmalloc's (size, in use, previous
 * in use), since then where the allocator keeps its state is unknown.
 *
 * @param allocator The module's own allocator, unguarded.
 * @param memory The module's memory.
 * @param bytes The block to carve: more than any free chunk can hold.
 * @returns The user address of the top chunk, or `null`.
 */
export function heapEnd(
  allocator: EmscriptenAllocator,
  memory: WebAssembly.Memory,
  bytes: number = memory.buffer.byteLength,
): number | null {
  const pointer = allocator._malloc(bytes);
  if (pointer === 0) return null;
  const header = new DataView(memory.buffer).getUint32(pointer - 4, true);
  allocator._free(pointer);
  const inUse = 0b11;
  return (header & inUse) === inUse && (header & ~7) >= bytes ? pointer : null;
}

/**
 * Where dlmalloc keeps the address of its top chunk: the `top` field of
 * its state, which holds `topsize` three words before it. Found once,
 * right after {@linkcode heapEnd} freed its block back into the top chunk,
 * as the one place below `searchEnd` where both values appear in that
 * order.
 *
 * @param memory The module's memory.
 * @param searchEnd Where the search stops: past the static data that holds
 * the state (the loader's engines stop at its end).
 * @param heapEnd What {@linkcode heapEnd} answered just now.
 * @returns The field's address, or `null` when there is not exactly one.
 */
export function findTopField(
  memory: WebAssembly.Memory,
  searchEnd: number,
  heapEnd: number,
): number | null {
  const words = new Uint32Array(memory.buffer, 0, Math.floor(searchEnd / 4));
  const top = heapEnd - 8;
  const topSize = new DataView(memory.buffer).getUint32(heapEnd - 4, true) & ~7;
  let found: number | null = null;
  for (let i = words.indexOf(top, 3); i >= 0; i = words.indexOf(top, i + 1)) {
    if (words[i - 3] !== topSize) continue;
    if (found !== null) return null;
    found = i * 4;
  }
  return found;
}

/**
 * Where dlmalloc's state keeps what bounds its memory, in bytes from its
 * `top` field (dlmalloc 2.8.6 on 32-bit WebAssembly, without locks):
 * `topsize` three words and `least_addr` two words before it;
 * `footprint`, `max_footprint` and the segment's base, size and next link
 * after the bins.
 */
const TOP_SIZE_OFFSET = -12;
const LEAST_ADDR_OFFSET = -8;
const FOOTPRINT_OFFSET = 408;
const MAX_FOOTPRINT_OFFSET = 412;
const SEGMENT_BASE_OFFSET = 424;
const SEGMENT_SIZE_OFFSET = 428;
const SEGMENT_NEXT_OFFSET = 432;
/**
 * dlmalloc's `mflags`, and its bit that says a request for more memory
 * failed: every failed growth of the heap sets it (`disable_contiguous`),
 * also for a block too large for the memory to be asked at all (2 GiB and
 * over), which leaves no refused growth behind.
 */
const MFLAGS_OFFSET = 420;
const NONCONTIGUOUS_BIT = 4;
/** The most dlmalloc keeps between its top chunk and its segment's end. */
const TOP_FOOT_MAX_BYTES = 64;

/**
 * Whether dlmalloc's state says a request for more memory failed. Nothing
 * clears the bit but a write of the state: it tells of every failure since
 * the state was made or last written back.
 *
 * @param memory The module's memory.
 * @param topField Where {@linkcode findTopField} found the state.
 * @returns Whether a request failed.
 */
export function moreMemoryFailed(
  memory: WebAssembly.Memory,
  topField: number,
): boolean {
  const flags = new DataView(memory.buffer).getUint32(
    topField + MFLAGS_OFFSET,
    true,
  );
  return (flags & NONCONTIGUOUS_BIT) !== 0;
}

/**
 * Clears dlmalloc's record that a request for more memory failed, so the
 * next {@linkcode moreMemoryFailed} tells of later failures only. dlmalloc
 * then extends its segment in place again, as it did before the failure:
 * Emscripten's memory grows at its end alone, so that path still holds.
 * Call it only between calls into the module.
 *
 * @param memory The module's memory.
 * @param topField Where {@linkcode findTopField} found the state.
 */
export function forgetFailedRequests(
  memory: WebAssembly.Memory,
  topField: number,
): void {
  const view = new DataView(memory.buffer);
  const flags = view.getUint32(topField + MFLAGS_OFFSET, true);
  view.setUint32(topField + MFLAGS_OFFSET, flags & ~NONCONTIGUOUS_BIT, true);
}

/**
 * Where the heap's state ends now, read from dlmalloc's state: the user
 * address of its top chunk, as {@linkcode heapEnd} gives it.
 *
 * @param memory The module's memory.
 * @param topField Where {@linkcode findTopField} found the state.
 * @returns The address, or `null` when the top chunk's header does not
 * match that state.
 */
export function currentHeapEnd(
  memory: WebAssembly.Memory,
  topField: number,
): number | null {
  const words = new Uint32Array(memory.buffer);
  const top = words[topField / 4]!;
  const topSize = words[(topField + TOP_SIZE_OFFSET) / 4]!;
  if (top % 8 !== 0 || top + topSize > memory.buffer.byteLength) return null;
  return (words[(top + 4) / 4]! & ~7) === topSize ? top + 8 : null;
}

/**
 * How far the allocator's memory ever reached since its state was last
 * written back: the base of its one segment plus `max_footprint`, the most
 * it ever obtained through `sbrk`. Every block it handed out lies below.
 * Emscripten's dlmalloc grows one contiguous segment and never gives
 * memory back (it cannot trim: its trim threshold is the largest size),
 * so this is where the segment ends, and since each run starts from a
 * restored copy of the state, it tells how far that run reached.
 *
 * @param memory The module's memory.
 * @param topField Where {@linkcode findTopField} found the state.
 * @returns The address, or `null` when the fields do not describe one
 * segment that ends just past the top chunk.
 */
export function allocatorReach(
  memory: WebAssembly.Memory,
  topField: number,
): number | null {
  const view = new DataView(memory.buffer);
  const at = (offset: number) => view.getUint32(topField + offset, true);
  const top = at(0);
  const topEnd = top + (at(TOP_SIZE_OFFSET) & ~7);
  const base = at(SEGMENT_BASE_OFFSET);
  const end = base + at(SEGMENT_SIZE_OFFSET);
  const maxEnd = base + at(MAX_FOOTPRINT_OFFSET);
  const oneSegment = at(SEGMENT_NEXT_OFFSET) === 0 &&
    base === at(LEAST_ADDR_OFFSET) &&
    at(SEGMENT_SIZE_OFFSET) === at(FOOTPRINT_OFFSET);
  const endsPastTop = end > topEnd && end - topEnd <= TOP_FOOT_MAX_BYTES;
  if (!oneSegment || !endsPastTop || top < base) return null;
  return maxEnd >= end && maxEnd <= memory.buffer.byteLength ? maxEnd : null;
}

/**
 * A block no free chunk of a module no QuickJS runtime has used yet can
 * hold, which its top chunk holds without growing the memory: the heap
 * then holds a few KiB, and the memory has megabytes above it.
 */
const FRESH_PROBE_BYTES = 1024 * 1024;

/**
 * Finds dlmalloc's state in the memory of a module no QuickJS runtime has
 * used yet, as the place {@linkcode findTopField} finds below the probe's
 * block, where {@linkcode allocatorReach} reads one segment, and whose
 * record of failed requests ({@linkcode moreMemoryFailed}) is still clear.
 *
 * @param allocator The module's own allocator, unguarded.
 * @param memory The module's memory.
 * @returns The `top` field's address, or `null` when the allocator is not
 * the dlmalloc these offsets describe.
 */
export function findAllocatorState(
  allocator: EmscriptenAllocator,
  memory: WebAssembly.Memory,
): number | null {
  const end = heapEnd(allocator, memory, FRESH_PROBE_BYTES);
  if (end === null) return null;
  const topField = findTopField(memory, end, end);
  if (topField === null || allocatorReach(memory, topField) === null) {
    return null;
  }
  return moreMemoryFailed(memory, topField) ? null : topField;
}
