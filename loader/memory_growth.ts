// This module is browser compatible.

/**
 * How a QuickJS engine's WebAssembly memory tells that guest code is out
 * of memory, for the loader's engines and the vm tier's QuickJS realm.
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
