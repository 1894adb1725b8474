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
 * The host's own copies into that memory (a module's source, a context's
 * JSON, a request's text) go through the module's `_malloc` too, which
 * quickjs-emscripten does not check: {@linkcode guardHostCopies} makes a
 * copy that does not fit throw instead of landing at address 0.
 *
 * @module
 */

import type { QuickJSWASMModule } from "quickjs-emscripten-core";

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
  /**
   * Whether any growth was refused since the last reset, even when a
   * later one was not: the engine's own record that an allocation did not
   * fit, which no code inside the memory can write.
   */
  readonly refusedAny: boolean;
  /** Whether {@linkcode MAX_REFUSED_GROWTHS} were refused since the last reset. */
  tooOften(): boolean;
  /** Counts anew: a run, or a stretch of plugin code, starts. */
  reset(): void;
  /**
   * Runs `allocate`, during which a growth past `maximumBytes` grows to it
   * instead of being refused: the allocator asks for whole steps of the
   * memory's length, never just what it needs, so an allocation that fits
   * below the maximum could otherwise not grow the memory at all.
   */
  growWithin(maximumBytes: number, allocate: () => void): void;
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
 * assert.equal(watch.refusedAny, true);
 * assert.equal(watch.tooOften(), true);
 * watch.reset();
 * assert.equal(watch.tooOften(), false);
 * assert.equal(watch.refusedAny, false);
 * ```
 */
export function watchGrowth(
  memory: WebAssembly.Memory,
  giveUp: () => void = () => {},
): GrowthWatch {
  const grow = memory.grow.bind(memory);
  let refused = false;
  let refusals = 0;
  let ceilingBytes = Infinity;
  memory.grow = (delta: number) => {
    const left = (ceilingBytes - memory.buffer.byteLength) / WASM_PAGE_BYTES;
    try {
      const pages = grow(Math.min(delta, left));
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
    get refusedAny() {
      return refusals > 0;
    },
    tooOften: () => refusals >= MAX_REFUSED_GROWTHS,
    reset() {
      refused = false;
      refusals = 0;
    },
    growWithin(maximumBytes, allocate) {
      ceilingBytes = maximumBytes;
      try {
        allocate();
      } finally {
        ceilingBytes = Infinity;
      }
    },
  };
}

/** The allocator of the Emscripten module under a `QuickJSWASMModule`. */
export interface EmscriptenAllocator {
  /** A block of `bytes`, or 0 when it does not fit. */
  _malloc(bytes: number): number;
  /** Frees a block `_malloc` gave. */
  _free(pointer: number): void;
}

/** A module's own allocator, and the host's copies it could not take. */
export interface HostCopies {
  /** The allocator as the module built it: `_malloc` answers 0 when full. */
  readonly raw: EmscriptenAllocator;
  /** How many of the host's copies did not fit, so far. */
  readonly refusals: number;
}

/**
 * Thrown where quickjs-emscripten would have written into the memory at
 * address 0: it copies the strings the host hands QuickJS into a block
 * from `_malloc` and never checks for the 0 a block that does not fit
 * answers, so the text overwrote the engine's own state from its first
 * byte until the engine trapped.
 */
export class HostCopyRefusedError extends Error {
  /** @param bytes The size of the copy that did not fit. */
  constructor(bytes: number) {
    super(`Cannot copy ${bytes} bytes into QuickJS's memory: it is full`);
    this.name = "HostCopyRefusedError";
  }
}

const GUARDED = new WeakMap<object, HostCopies>();

/**
 * Makes `module`'s `_malloc`, which quickjs-emscripten calls for every
 * block the host writes into (QuickJS's own allocations never go through
 * it), throw {@linkcode HostCopyRefusedError} rather than answer 0, after
 * calling `onRefused`. Guarding a module again returns what the first call
 * did.
 *
 * @example
 * ```ts
 * import {
 *   cappedMemory,
 *   guardHostCopies,
 *   HostCopyRefusedError,
 * } from "./memory_growth.ts";
 * import {
 *   newQuickJSWASMModuleFromVariant,
 *   newVariant,
 *   type QuickJSSyncVariant,
 * } from "quickjs-emscripten-core";
 * import variant from "@jitl/quickjs-singlefile-browser-release-sync";
 * import assert from "node:assert/strict";
 *
 * // At most 1 MiB above the build's 16 MiB start.
 * const { memory } = cappedMemory(1024 * 1024);
 * const module = await newQuickJSWASMModuleFromVariant(
 *   newVariant(variant as unknown as QuickJSSyncVariant, { wasmMemory: memory }),
 * );
 * const copies = guardHostCopies(module)!;
 * const context = module.newContext();
 * assert.throws(
 *   () => context.newString("x".repeat(32 * 1024 * 1024)),
 *   HostCopyRefusedError,
 * );
 * assert.equal(copies.refusals, 1);
 * context.dispose();
 * ```
 *
 * @param module The QuickJS module whose copies to guard.
 * @param onRefused Called when a copy does not fit, before the throw.
 * @returns The module's own allocator and the count of refused copies, or
 * `null` when the module does not expose its allocator.
 */
export function guardHostCopies(
  module: QuickJSWASMModule,
  onRefused: () => void = () => {},
): HostCopies | null {
  const inner = (module as unknown as { module?: Partial<EmscriptenAllocator> })
    .module;
  if (
    inner === undefined || typeof inner._malloc !== "function" ||
    typeof inner._free !== "function"
  ) return null;
  const known = GUARDED.get(inner);
  if (known !== undefined) return known;
  const raw = { _malloc: inner._malloc, _free: inner._free };
  let refusals = 0;
  inner._malloc = (bytes: number): number => {
    const pointer = raw._malloc(bytes);
    if (pointer !== 0 || bytes === 0) return pointer;
    refusals++;
    onRefused();
    throw new HostCopyRefusedError(bytes);
  };
  const copies: HostCopies = {
    raw,
    get refusals() {
      return refusals;
    },
  };
  GUARDED.set(inner, copies);
  return copies;
}
