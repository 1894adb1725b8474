// This module is browser compatible.

/**
 * A QuickJS engine's WebAssembly memory, for the loader's engines and the
 * vm tier's QuickJS realm: the cap that holds a guest's memory limit (under
 * Emscripten, QuickJS's own limit charges every allocation a flat 8 bytes),
 * and how that memory tells that guest code is out of memory.
 * Emscripten's allocator grows the memory through `grow()`, trying smaller
 * steps before it gives up, so a refusal that no later growth followed is
 * an allocation that did not fit; a failed allocation costs 3 to 6
 * refusals, so code that catches QuickJS's "out of memory" and asks again
 * for more than is left is out of memory after
 * {@linkcode MAX_REFUSED_GROWTHS}, though the heap may still have room for
 * small blocks and the memory never reaches its cap.
 *
 * @module
 */

/** The size of a WebAssembly page, in bytes. */
export const WASM_PAGE_BYTES = 64 * 1024;

/** The memory every quickjs-emscripten build starts with (`INITIAL_MEMORY`). */
export const QUICKJS_INITIAL_BYTES = 16 * 1024 * 1024;

/**
 * The most memory a quickjs-emscripten build declares and lets its heap
 * grow to (2 GiB): a memory whose maximum is larger fails to link.
 */
export const QUICKJS_MAX_BYTES = 2 * 1024 * 1024 * 1024;

/**
 * A memory for a QuickJS engine: it starts as the build does and grows by
 * at most `roomBytes` above that, in whole pages, and never past the most
 * the build declares.
 *
 * @param roomBytes The room above the build's start, in bytes.
 * @returns The memory, and its maximum in bytes.
 * @example
 * ```ts
 * import { cappedMemory, QUICKJS_MAX_BYTES } from "./memory_growth.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(cappedMemory(1).maximumBytes, 16 * 1024 * 1024 + 64 * 1024);
 * assert.equal(cappedMemory(2 ** 40).maximumBytes, QUICKJS_MAX_BYTES);
 * ```
 */
export function cappedMemory(
  roomBytes: number,
): { memory: WebAssembly.Memory; maximumBytes: number } {
  const pages = Math.ceil(
    (QUICKJS_INITIAL_BYTES + roomBytes) / WASM_PAGE_BYTES,
  );
  const maximumBytes = Math.min(QUICKJS_MAX_BYTES, pages * WASM_PAGE_BYTES);
  const memory = new WebAssembly.Memory({
    initial: QUICKJS_INITIAL_BYTES / WASM_PAGE_BYTES,
    maximum: maximumBytes / WASM_PAGE_BYTES,
  });
  return { memory, maximumBytes };
}

/** Refused growths after which guest code counts as out of memory. */
export const MAX_REFUSED_GROWTHS = 256;

/** What {@linkcode watchGrowth} sees of a memory's growths. */
export interface GrowthWatch {
  /** Whether the last growth asked for since the last reset was refused. */
  readonly refused: boolean;
  /** Whether {@linkcode MAX_REFUSED_GROWTHS} were refused since the last reset. */
  tooOften(): boolean;
  /** Counts anew: a run, or a stretch of plugin code, starts. */
  reset(): void;
}

/**
 * Watches the growths of `memory`, whose maximum is the cap that holds the
 * guest's memory limit.
 *
 * @param memory The engine's memory, before the engine is made with it.
 * @param giveUp Called once the growths refused reach
 * {@linkcode MAX_REFUSED_GROWTHS}, from inside the allocation.
 * @returns The watch.
 * @example
 * ```ts
 * import { MAX_REFUSED_GROWTHS, watchGrowth } from "./memory_growth.ts";
 * import assert from "node:assert/strict";
 *
 * const memory = new WebAssembly.Memory({ initial: 1, maximum: 1 });
 * const watch = watchGrowth(memory);
 * for (let i = 0; i < MAX_REFUSED_GROWTHS; i++) {
 *   assert.throws(() => memory.grow(1), RangeError);
 * }
 * assert.equal(watch.refused, true);
 * assert.equal(watch.tooOften(), true);
 * watch.reset();
 * assert.equal(watch.tooOften(), false);
 * ```
 */
export function watchGrowth(
  memory: WebAssembly.Memory,
  giveUp: () => void = () => {},
): GrowthWatch {
  const grow = memory.grow.bind(memory);
  let refused = false;
  let refusals = 0;
  memory.grow = (delta: number) => {
    try {
      const pages = grow(delta);
      refused = false;
      return pages;
    } catch (error) {
      refused = true;
      if (++refusals === MAX_REFUSED_GROWTHS) giveUp();
      throw error;
    }
  };
  return {
    get refused() {
      return refused;
    },
    tooOften: () => refusals >= MAX_REFUSED_GROWTHS,
    reset() {
      refused = false;
      refusals = 0;
    },
  };
}
