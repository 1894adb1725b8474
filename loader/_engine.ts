// This module is browser compatible.

/**
 * One QuickJS WebAssembly module with one hardened runtime and context, and
 * a copy of its memory taken right after hardening. Every run starts from
 * that copy: {@linkcode Engine.restore} writes it back, so a run sees a
 * context no code has touched yet, without paying for a new context, the
 * hardening script and the freeze each time.
 *
 * Only the bytes that hold state are copied: the static data and the heap.
 * The C stack between them holds nothing between calls, so it is skipped.
 *
 * The memory limit is held here, not by QuickJS: built with Emscripten,
 * QuickJS charges every allocation a flat 8 bytes (its
 * `js_def_malloc_usable_size` returns 0), so its own limit only refuses a
 * single allocation larger than the limit. An engine's WebAssembly memory
 * therefore has a maximum, and before each run a reserve block is taken
 * from the top of the heap so that exactly the run's limit is left above
 * it: once the guest has used that, `malloc` fails and QuickJS throws
 * `out of memory`, whatever the allocation pattern.
 *
 * @module
 */

import {
  type JSModuleLoadResult,
  type JSModuleNormalizeResult,
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSContext,
  type QuickJSHandle,
  type QuickJSRuntime,
  type QuickJSSyncVariant,
  type QuickJSWASMModule,
} from "quickjs-emscripten-core";
import { alteredRealmCode } from "../realm/realm_source.ts";
import { evaluateSetup } from "./_hardening.ts";
import {
  digestFork,
  type HardenedImage,
  hardenedImageFor,
  viewRanges,
} from "./_hardened_image.ts";
import { DEFAULT_LIMITS } from "./_limits.ts";
import { unsupportedVariant } from "./_variant_support.ts";
import {
  allocatorReach,
  currentHeapEnd,
  findTopField,
  heapEnd,
  moreMemoryFailed,
} from "./dlmalloc_state.ts";
import {
  cappedMemory,
  type EmscriptenAllocator,
  guardHostCopies,
  QUICKJS_INITIAL_BYTES,
  QUICKJS_MAX_BYTES,
  WASM_PAGE_BYTES,
  watchGrowth,
} from "./memory_growth.ts";

/** What the engine's callbacks do during one run. */
export interface RunHooks {
  /** Returns a module's source, or an error, for QuickJS's module loader. */
  load(name: string): JSModuleLoadResult;
  /** Resolves a specifier against the importing module's name. */
  normalize(base: string, requested: string): JSModuleNormalizeResult;
  /** Whether running code must stop now. */
  interrupt(): boolean;
  /**
   * Receives a console line of guest or pack code; answers whether the run
   * keeps more lines, so the realm stops formatting them once it does not.
   */
  log(level: string, text: string): boolean;
}

/** A byte range `[start, end)` of WebAssembly memory. */
export interface MemoryRange {
  readonly start: number;
  readonly end: number;
}

/** A hardened QuickJS runtime and context that every run starts from. */
export interface Engine {
  readonly runtime: QuickJSRuntime;
  readonly context: QuickJSContext;
  /** `run(namespace, contextJson, maxResultChars)` of the hardening script. */
  readonly runFn: QuickJSHandle;
  /** `describe(thrown)` of the hardening script. */
  readonly describeFn: QuickJSHandle;
  /** `reseed(a, b, c, d)` of the hardening script's `Math.random`. */
  readonly reseedFn: QuickJSHandle;
  /** The module's memory. */
  readonly memory: WebAssembly.Memory;
  /** The ranges of memory the snapshot holds. */
  readonly ranges: readonly MemoryRange[];
  /** The copy of the freshly hardened context. */
  readonly base: Snapshot;
  /**
   * Whether the context's hardening was restored from the hardened image
   * rather than evaluated here.
   */
  readonly restored: boolean;
  /** The callbacks of the run under way; {@linkcode IDLE_HOOKS} between runs. */
  hooks: RunHooks;
  /**
   * Set when a host-level fault left the memory in an unknown state, or a
   * run grew the memory by {@linkcode RECLAIM_BYTES} or half its limit
   * (whichever is more): the engine is then
   * replaced, so its memory goes back to the host.
   */
  broken: boolean;
  /**
   * The largest run limit this engine's memory can hold, in bytes. An
   * engine whose memory may grow to WebAssembly's 2 GiB holds every limit,
   * since no engine holds more: a run whose limit is above what that
   * memory leaves ends a little short of it.
   */
  readonly capacityBytes: number;
  /**
   * Writes a snapshot back into memory: the base one by default. First
   * zeroes what the code run since the last restore, after taking its
   * reserve, may have left above the snapshot: up to where the allocator
   * reached, but for the reserve's own pages, which nothing writes.
   */
  restore(snapshot?: Snapshot): void;
  /**
   * Copies the memory as it is now, or `null` when the engine cannot tell
   * where its heap ends or when the allocator's state records a failed
   * request for more memory (see {@linkcode Engine.limitMet}): every run
   * restored from such a copy would start with that record, which hides
   * its own failed request, and with an allocator that no longer grows its
   * heap in one piece. Take it between runs' code only, with no reserve
   * taken: the copy then starts every run that restores it.
   */
  capture(): Snapshot | null;
  /**
   * Leaves exactly `limitBytes` of heap for the run to come, less what the
   * restored snapshot holds above the base one. Call it right after
   * {@linkcode Engine.restore}.
   *
   * @returns `false` when the snapshot alone holds more than `limitBytes`.
   */
  reserve(limitBytes: number): boolean;
  /**
   * Leaves at least `bytes` free for the run, so a failed run's error can
   * be described within them: when the memory as it is has less room
   * above the heap, gives that much of the reserve back. Guest getters
   * run while the error is described, and must not reach the rest of the
   * engine's memory.
   */
  makeRoom(bytes: number): void;
  /**
   * Whether the run has used up its limit: the heap cannot give 1/16 of it
   * more (at least 64 KiB, at most 1 MiB).
   */
  exhausted(): boolean;
  /**
   * Whether, the last time the heap needed more memory since the reserve
   * was taken, the memory's maximum refused it: an allocation did not fit
   * under the run's limit. Unlike {@linkcode Engine.exhausted} it still
   * tells once what the failed code was building has been freed.
   */
  growthRefused(): boolean;
  /**
   * Whether the memory's maximum refused `MAX_REFUSED_GROWTHS` growths
   * since the reserve was taken: a guest that caught "out of memory" asks
   * again and again for more than is left, though the heap may still have
   * room for small blocks. From then on QuickJS refuses every allocation
   * of the run, so the guest reaches its next interrupt check at once.
   */
  refusedTooOften(): boolean;
  /**
   * Whether the run met its memory limit since the reserve was taken, as
   * the engine itself saw it: the memory's maximum refused a growth (even
   * one a later growth followed), the allocator's state says a request for
   * more memory failed (one too large to ask the memory for), or a host
   * copy did not fit. Guest code
   * can throw an error worded as QuickJS's "out of memory", but cannot
   * make the memory refuse a growth without asking for more than is left.
   */
  limitMet(): boolean;
  /**
   * Whether a block the host copies into the memory (module source, the
   * context's JSON, a string a host function answers) did not fit since
   * the reserve was taken: a `HostCopyRefusedError` was
   * thrown instead of a write at address 0.
   */
  hostAllocationRefused(): boolean;
  /**
   * Whether the last run grew the memory by {@linkcode RECLAIM_BYTES} or by
   * half its limit, whichever is more.
   */
  grown(): boolean;
  /** Whether the memory grew by {@linkcode RECLAIM_BYTES} or more past `bytes`. */
  grownSince(bytes: number): boolean;
}

/** A copy of an engine's memory that runs start from. */
export interface Snapshot {
  /** The ranges it holds. */
  readonly ranges: readonly MemoryRange[];
  /** Their bytes, one array per range. */
  readonly bytes: readonly Uint8Array[];
  /** The size of the copy, in bytes. */
  readonly byteLength: number;
}

/** Refuses everything: no code runs between runs. */
export const IDLE_HOOKS: RunHooks = Object.freeze({
  load: (name: string) => ({ error: new Error(`Cannot load ${name}`) }),
  normalize: () => ({ error: new Error("No run is under way") }),
  interrupt: () => true,
  log: () => false,
});

/** Static data may end past its last non-zero byte by this much (bss). */
const STATIC_DATA_MARGIN_BYTES = 64 * 1024;
/**
 * Room above a run's limit: for describing the error of a run that hit its
 * limit, and for the probe that finds the heap's end, which allocates as
 * much as the memory holds at the start.
 */
const ENGINE_HEADROOM_BYTES = QUICKJS_INITIAL_BYTES + 4 * 1024 * 1024;
/**
 * A heap that cannot give 1/16 of the run's limit more, between 64 KiB and
 * 1 MiB, is used up: the guest's own allocations are larger than what is
 * left, whatever it catches.
 */
function probeBytesFor(limitBytes: number): number {
  return Math.min(1024 * 1024, Math.max(64 * 1024, limitBytes / 16));
}
/**
 * A run that grows the memory by this much, or by half its limit if that
 * is more, leaves its engine to be replaced: WebAssembly memory never
 * shrinks, so only dropping the module gives the host its memory back.
 * Replacing it also drops its warm graphs, so a bound below what a large
 * library's calls use (mathjs's `simplify()` grew it by over 8 MiB every
 * run) made each of its runs evaluate the library again, for a second
 * instead of milliseconds; memory up to half a run's limit is what the
 * next run of that limit is likely to need again. Emscripten grows memory
 * by up to 20% at a time and no step may pass the maximum, so a run that
 * uses all of a 16 MiB limit grows it by a little less than 16 MiB: the
 * least bound is below.
 */
const RECLAIM_BYTES = 8 * 1024 * 1024;

/** The growth that leaves an engine to be replaced after a run of `limitBytes`. */
function reclaimBytesFor(limitBytes: number): number {
  return Math.max(RECLAIM_BYTES, limitBytes / 2);
}

/** The module's own allocator, its `_malloc` unguarded. */
function allocatorOf(module: QuickJSWASMModule): EmscriptenAllocator | null {
  return guardHostCopies(module)?.raw ?? null;
}

/**
 * The ranges that hold state: `[0, staticEnd)` and `[stackPointer, heapEnd)`.
 * Emscripten lays memory out as static data, then the C stack (growing
 * down), then the heap. `stackPointer` is an address inside a live frame
 * near the top of the stack, seen by a host function; below it, between
 * calls, the stack holds nothing. Falls back to all of memory when the
 * layout is not the expected one.
 */
export function stateRanges(
  module: QuickJSWASMModule,
  memory: WebAssembly.Memory,
  stackPointer: number,
): MemoryRange[] {
  const whole = [{ start: 0, end: memory.buffer.byteLength }];
  const allocator = allocatorOf(module);
  if (allocator === null) return whole;
  const end = heapEnd(allocator, memory);
  if (end === null || end <= stackPointer) return whole;
  const dataEnd = lastStaticByte(memory, stackPointer);
  if (dataEnd === null) return whole;
  const staticEnd =
    Math.ceil((dataEnd + 1) / WASM_PAGE_BYTES) * WASM_PAGE_BYTES +
    STATIC_DATA_MARGIN_BYTES;
  if (staticEnd >= stackPointer) return whole;
  return [{ start: 0, end: staticEnd }, { start: stackPointer, end }];
}

/**
 * The last non-zero byte of static data: the last one before the first
 * page of zeros, since the C stack above the static data is still zero
 * below its deepest frame so far. Compilers put zero-filled data in bss,
 * so static data itself has no page of zeros; the engine's tests check
 * that the bytes from the end found here to the stack's reach are zero
 * and stay so.
 */
function lastStaticByte(
  memory: WebAssembly.Memory,
  below: number,
): number | null {
  const words = new Uint32Array(memory.buffer, 0, Math.floor(below / 4));
  const wordsPerPage = WASM_PAGE_BYTES / 4;
  let last = -1;
  for (let i = 0; i < words.length; i++) {
    if (words[i] !== 0) {
      last = i;
    } else if (i - last >= wordsPerPage) {
      return last * 4 + 3;
    }
  }
  return null;
}

function copyRanges(
  memory: WebAssembly.Memory,
  ranges: readonly MemoryRange[],
): Snapshot {
  const bytes = new Uint8Array(memory.buffer);
  const copies = ranges.map(({ start, end }) => bytes.slice(start, end));
  const byteLength = copies.reduce((sum, copy) => sum + copy.byteLength, 0);
  return { ranges, bytes: copies, byteLength };
}

/** Zeroes `[start, end)` of `memory`, but for `spared`. */
function zeroAround(
  memory: WebAssembly.Memory,
  { start, end }: MemoryRange,
  spared: MemoryRange | null,
): void {
  const bytes = new Uint8Array(memory.buffer);
  if (spared === null || spared.start >= end || spared.end <= start) {
    bytes.fill(0, start, end);
    return;
  }
  bytes.fill(0, start, Math.max(start, spared.start));
  bytes.fill(0, Math.min(end, spared.end), end);
}

/**
 * What dlmalloc may ask beyond a request when it extends its segment: a
 * 64 KiB page of granularity and its top chunk's foot, with room to spare.
 */
const SEGMENT_GROWTH_SLACK_BYTES = 256 * 1024;

/**
 * How many bytes the heap can surely hand out from its top chunk without
 * growing the memory: up to the memory's end, less what extending its
 * segment may take beyond the request. `0` when the top chunk's fields do
 * not check out.
 */
function roomAboveTop(memory: WebAssembly.Memory, topField: number): number {
  const end = currentHeapEnd(memory, topField);
  if (end === null) return 0;
  return Math.max(
    0,
    memory.buffer.byteLength - end - SEGMENT_GROWTH_SLACK_BYTES,
  );
}

/** The address of a live stack frame: a host function's argument slot. */
function probeStackPointer(context: QuickJSContext): number {
  let pointer = -1;
  const probe = context.newFunction("probe", (argument) => {
    pointer = argument.value as unknown as number;
  });
  try {
    context.setProp(context.global, "cordonProbe", probe);
    context.unwrapResult(context.evalCode("cordonProbe(0)")).dispose();
    context.unwrapResult(
      context.evalCode("delete globalThis.cordonProbe"),
    ).dispose();
  } finally {
    probe.dispose();
  }
  return pointer;
}

/**
 * The reserve of one engine: a block taken from the top of the heap before
 * each run, so that only the run's limit is left above it. Restoring the
 * snapshot forgets the block, so it is taken again every run, which is one
 * split of dlmalloc's top chunk; its pages are never written, so they cost
 * address space, not resident memory.
 */
interface Reserve {
  readonly capacityBytes: number;
  take(limitBytes: number): boolean;
  makeRoom(bytes: number): void;
  /**
   * Lets go of the reserve, as the memory is written back: `null` when none
   * was taken since the last call, so no run's code ran; else the part of
   * it nothing wrote since it was taken, or `null` for that part when none
   * is known.
   */
  release(): { untouched: MemoryRange | null } | null;
  exhausted(): boolean;
  growthRefused(): boolean;
  refusedTooOften(): boolean;
  refusedAny(): boolean;
  grown(): boolean;
  grownSince(bytes: number): boolean;
}

/**
 * The least Emscripten grows the memory by, as a part of its length: it
 * asks for 20%, then 10%, then 5% more, never for just what the allocation
 * needs, and a step past the maximum is refused. So the last 1/21 of the
 * maximum may be out of a run's reach.
 */
const SMALLEST_GROWTH = 0.05;

/**
 * Whether the part of `memory` Emscripten's steps may leave out of reach
 * is more than a quarter of the room left to its maximum: a run whose
 * limit is small beside its engine (2 MiB on the default engine, 8 MiB on
 * one sized for 1 GiB) could otherwise grow the memory not at all.
 */
function roomOutOfReach(
  memory: WebAssembly.Memory,
  maximumBytes: number,
): boolean {
  const room = maximumBytes - memory.buffer.byteLength;
  const outOfReach = maximumBytes - maximumBytes / (1 + SMALLEST_GROWTH);
  return room > 0 && outOfReach > room / 4;
}

/**
 * Bytes at either end of a reserve block that dlmalloc may write: a free
 * chunk's links and footer, the next chunk's header.
 */
const BLOCK_EDGE_BYTES = 64;

/** The part of a block of `bytes` at `pointer` that dlmalloc never writes while it is in use. */
function interiorOf(pointer: number, bytes: number): MemoryRange | null {
  const start = pointer + BLOCK_EDGE_BYTES;
  const end = pointer + bytes - BLOCK_EDGE_BYTES;
  return pointer !== 0 && end > start ? { start, end } : null;
}

function overlap(
  a: MemoryRange | null,
  b: MemoryRange | null,
): MemoryRange | null {
  if (a === null || b === null) return null;
  const start = Math.max(a.start, b.start);
  const end = Math.min(a.end, b.end);
  return end > start ? { start, end } : null;
}

function createReserve(
  allocator: EmscriptenAllocator,
  memory: WebAssembly.Memory,
  maximumBytes: number,
  heapEnd: number,
  giveUp: () => void,
  roomLeft: () => number,
): Reserve {
  const headroom = ENGINE_HEADROOM_BYTES - QUICKJS_INITIAL_BYTES;
  const growth = watchGrowth(memory, giveUp);
  let block = 0;
  let blockBytes = 0;
  let taken = false;
  let untouched: MemoryRange | null = null;
  let probeBytes = probeBytesFor(0);
  let lengthAtStart = memory.buffer.byteLength;
  let reclaimBytes = RECLAIM_BYTES;
  // Grown through Emscripten's own allocator, which then renews its views
  // of the memory: grown behind its back, the memory would leave them
  // reading a detached buffer.
  function growToMaximum(): void {
    const room = maximumBytes - memory.buffer.byteLength;
    growth.growWithin(maximumBytes, () => {
      const filler = allocator._malloc(room - WASM_PAGE_BYTES);
      if (filler !== 0) allocator._free(filler);
    });
  }
  return {
    // Asking for a larger engine would give one no larger: the run of a
    // limit above what this one leaves would wait for it for ever.
    capacityBytes: maximumBytes >= QUICKJS_MAX_BYTES
      ? QUICKJS_MAX_BYTES
      : Math.max(0, maximumBytes - heapEnd - headroom),
    take(limitBytes) {
      // Sized from the base snapshot's heap end: what a restored snapshot
      // holds above it counts against the run's limit, as if the run had
      // allocated it, so a block that no longer fits means over the limit.
      // It is never smaller than the headroom, which a failed run's error
      // is described in, even when the limit is above what memory leaves.
      const size = Math.max(maximumBytes - heapEnd - limitBytes, headroom);
      block = allocator._malloc(size);
      blockBytes = block === 0 ? 0 : size;
      taken = block !== 0;
      untouched = interiorOf(block, blockBytes);
      if (roomOutOfReach(memory, maximumBytes)) growToMaximum();
      probeBytes = probeBytesFor(limitBytes);
      reclaimBytes = reclaimBytesFor(limitBytes);
      // Taking the block may grow the memory, but leaves those pages
      // untouched: the run's own growth counts from here.
      lengthAtStart = memory.buffer.byteLength;
      growth.reset();
      return block !== 0;
    },
    makeRoom(bytes) {
      // Room enough already: the reserve's untouched pages stay untouched,
      // so they are still spared when the memory is cleared.
      if (block === 0 || roomLeft() >= bytes) return;
      // Freed and taken again smaller, wherever dlmalloc puts the smaller
      // block (where the old one was, or a free chunk that fits it better),
      // what is free grows by `bytes` alone; the freed block always has
      // room for it, so the second malloc does not fail.
      allocator._free(block);
      const kept = blockBytes - bytes;
      block = kept > 0 ? allocator._malloc(kept) : 0;
      blockBytes = block === 0 ? 0 : kept;
      // Only what both blocks cover is still unwritten: the freed block
      // was free memory meanwhile, and the new one may be a chunk the run
      // freed.
      untouched = overlap(untouched, interiorOf(block, blockBytes));
    },
    release() {
      const run = taken ? { untouched } : null;
      taken = false;
      untouched = null;
      return run;
    },
    exhausted() {
      // Room the memory already has is read, not probed: a probe that
      // grows the heap reaches memory the run never wrote, and what a run
      // reached is cleared after it.
      if (roomLeft() >= probeBytes) return false;
      const probe = allocator._malloc(probeBytes);
      if (probe === 0) return true;
      allocator._free(probe);
      return false;
    },
    growthRefused: () => growth.refused,
    refusedTooOften: () => growth.tooOften(),
    refusedAny: () => growth.refusedAny,
    grown: () => memory.buffer.byteLength - lengthAtStart >= reclaimBytes,
    grownSince: (bytes) => memory.buffer.byteLength - bytes >= RECLAIM_BYTES,
  };
}

function installHooks(runtime: QuickJSRuntime, engine: { hooks: RunHooks }) {
  runtime.setInterruptHandler(() => engine.hooks.interrupt());
  runtime.setModuleLoader(
    (name) => engine.hooks.load(name),
    (base, requested) => engine.hooks.normalize(base, requested),
  );
}

/**
 * The console's sink: a host function the hardening script captures. It
 * is given each line as JSON text (see setupContext).
 */
function newHostLog(
  context: QuickJSContext,
  engine: { hooks: RunHooks },
): QuickJSHandle {
  return context.newFunction("log", (level, lineJson) => {
    if (context.typeof(level) !== "string") return;
    if (context.typeof(lineJson) !== "string") return;
    const more = engine.hooks.log(
      context.getString(level),
      lineOfJson(context.getString(lineJson)),
    );
    return more ? context.true : context.false;
  });
}

/** The line a console call sent as JSON text, or `""` for other text. */
function lineOfJson(json: string): string {
  try {
    const line: unknown = JSON.parse(json);
    return typeof line === "string" ? line : "";
  } catch {
    return "";
  }
}

/**
 * Evaluates the hardening scripts and keeps what they return on `holder`,
 * an object only the host reaches, so the host finds it the same way
 * whether the context was hardened here or restored from an image.
 */
function harden(
  context: QuickJSContext,
  hostLog: QuickJSHandle,
  holder: QuickJSHandle,
): void {
  try {
    const setup = evaluateSetup(context);
    const helpers = context.unwrapResult(
      context.callFunction(setup, context.undefined, hostLog),
    );
    context.setProp(holder, "helpers", helpers);
    for (const handle of [helpers, setup]) handle.dispose();
  } catch (error) {
    throw alteredRealmCode(error, "start the QuickJS engine") ?? error;
  }
}

/**
 * The run, describe and reseed functions the hardening left on `holder`;
 * lets go of the holder and of the console's host function, which the
 * console's closure keeps alive in QuickJS.
 */
function readHelpers(
  context: QuickJSContext,
  holder: QuickJSHandle,
  hostLog: QuickJSHandle,
): {
  runFn: QuickJSHandle;
  describeFn: QuickJSHandle;
  reseedFn: QuickJSHandle;
} {
  const helpers = context.getProp(holder, "helpers");
  const handles = {
    runFn: context.getProp(helpers, "run"),
    describeFn: context.getProp(helpers, "describe"),
    reseedFn: context.getProp(helpers, "reseed"),
  };
  for (const handle of [helpers, holder, hostLog]) handle.dispose();
  for (const handle of Object.values(handles)) {
    if (context.typeof(handle) !== "function") {
      throw new Error("The hardened context lacks its run functions");
    }
  }
  return handles;
}

/**
 * Typed arrays' `set`, taken when this module loads: the image's bytes are
 * written with it, whatever a page script later puts in its place.
 */
const typedArraySet = Object.getPrototypeOf(Uint8Array.prototype).set as (
  this: Uint8Array,
  source: ArrayLike<number>,
  offset: number,
) => void;

/**
 * Writes what the hardening changed into memory when this engine is where
 * the image's maker was at the fork point: same memory size, same stack
 * pointer, same digest of the image's ranges. Returns whether it did.
 */
async function restoreImage(
  memory: WebAssembly.Memory,
  image: HardenedImage,
  stackPointer: number,
): Promise<boolean> {
  if (memory.buffer.byteLength !== image.memoryBytes) return false;
  if (image.ranges.length !== 2 || image.ranges[1]!.start !== stackPointer) {
    return false;
  }
  const parts = viewRanges(memory, image.ranges);
  if (parts === null) return false;
  const digest = await digestFork(
    image.memoryBytes,
    image.ranges,
    parts,
    image.volatileWords,
  );
  if (digest === null || digest !== image.forkDigest) return false;
  const bytes = new Uint8Array(memory.buffer);
  for (const run of image.runs) {
    Reflect.apply(typedArraySet, bytes, [run.bytes, run.start]);
  }
  return true;
}

/**
 * Refuses a build whose C interface does not compare values, as
 * quickjs-ng's answers "not implemented": a run that ran out of memory is
 * told by comparing what QuickJS threw with `null`. Compares two values
 * that need no allocation, so the memory stays as hardened.
 */
function checkEquality(context: QuickJSContext): void {
  try {
    context.sameValue(context.null, context.undefined);
  } catch (error) {
    throw unsupportedVariant(
      "cannot compare QuickJS values (a quickjs-ng build, whose engine also gives guests other intrinsics and errors than QuickJS's)",
      error,
    );
  }
}

/** How {@linkcode createEngine} hardens its context. */
export interface EngineOptions {
  /**
   * The image to restore instead of evaluating the hardening script;
   * `null` to always evaluate it.
   *
   * @default {the shipped image, for the build it was made with}
   */
  image?: HardenedImage | null;
  /**
   * Takes what an image is made of: the engine then hardens its context
   * itself and hands a copy of its whole memory at the fork point and once
   * hardened to `onRecord`.
   */
  record?: (recording: Recording) => void;
}

/** An engine's memory at the fork point and once hardened. */
export interface Recording {
  /** The whole memory at the fork point. */
  readonly fork: Uint8Array;
  /** The whole memory once hardened. */
  readonly hardened: Uint8Array;
  /** The ranges that hold the hardened state, found right after the copy. */
  readonly ranges: readonly MemoryRange[];
}

/** How many engines of this process restored the hardened image. */
let restoredEngines = 0;

/**
 * How many engines this process created restored the hardened image rather
 * than hardening their contexts themselves: a private reading, through
 * `_restored_engines.ts`, for the tests that check that a build of cordon
 * restores its image.
 */
export function restoredEngineCount(): number {
  return restoredEngines;
}

/**
 * Instantiates a WebAssembly module whose memory holds runs of up to
 * `limitBytes`, hardens one context in it and takes the snapshot every run
 * starts from.
 */
export async function createEngine(
  variant: QuickJSSyncVariant,
  limitBytes: number = DEFAULT_LIMITS.memoryLimitBytes,
  options: EngineOptions = {},
): Promise<Engine> {
  const { record } = options;
  // Decoded while the WebAssembly module is instantiated.
  const image = record !== undefined
    ? Promise.resolve(null)
    : options.image === undefined
    ? hardenedImageFor(variant)
    : Promise.resolve(options.image);
  // Awaited below, once the module is ready: a decoding that fails before
  // then is handled there, not reported as a rejection no one handled.
  image.catch(() => {});
  // Room for a run of `limitBytes` and the engine's own state.
  const { memory: capped, maximumBytes } = cappedMemory(
    limitBytes + ENGINE_HEADROOM_BYTES,
  );
  const module = await newQuickJSWASMModuleFromVariant(
    newVariant(variant, { wasmMemory: capped }),
  );
  const memory = module.getWasmMemory();
  const runtime = module.newRuntime();
  runtime.setMaxStackSize(DEFAULT_LIMITS.maxStackSizeBytes);
  // Only cordon's own code runs while the engine is prepared.
  const state = { hooks: { ...IDLE_HOOKS, interrupt: () => false } };
  installHooks(runtime, state);
  const context = runtime.newContext();
  const stackPointer = probeStackPointer(context);
  // The fork point: an image's maker and every engine that restores it
  // made exactly these calls so far.
  const hostLog = newHostLog(context, state);
  const holder = context.newObject();
  const fork = record && new Uint8Array(memory.buffer).slice();
  const restoring = await image;
  const restored = restoring !== null &&
    await restoreImage(memory, restoring, stackPointer);
  if (restored) restoredEngines++;
  else harden(context, hostLog, holder);
  if (record !== undefined && fork !== undefined) {
    const hardened = new Uint8Array(memory.buffer).slice();
    // Finding where the heap ends changes the allocator's state, so it
    // comes after the copy; the helpers are read the same way after it.
    record({
      fork,
      hardened,
      ranges: stateRanges(module, memory, stackPointer),
    });
  }
  const { runFn, describeFn, reseedFn } = readHelpers(
    context,
    holder,
    hostLog,
  );
  checkEquality(context);
  const ranges = stateRanges(module, memory, stackPointer);
  const base = copyRanges(memory, ranges);
  const allocator = allocatorOf(module);
  const hostCopies = guardHostCopies(module);
  let refusalsAtReserve = 0;
  let failedAtReserve = false;
  const heap = ranges.length === 2 ? ranges[1]! : null;
  // Without the reserve QuickJS's own limit is all there is, and it counts
  // 8 bytes an allocation: such a build would run any guest past its limit.
  if (memory !== capped || allocator === null || heap === null) {
    throw unsupportedVariant(
      "keeps its heap where the loader cannot cap it (not in the WebAssembly memory the loader gives it, or not with Emscripten's dlmalloc), so no memory limit would hold",
    );
  }
  const topField = findTopField(memory, ranges[0]!.end, heap.end);
  // What a run leaves above the copy is cleared as far as the allocator
  // reached: without that bound another caller's values would stay there.
  if (topField === null || allocatorReach(memory, topField) === null) {
    throw unsupportedVariant(
      "keeps its allocator's state where the loader cannot read how far its memory reached, so what one run leaves in memory could not be cleared before the next",
    );
  }
  const reserve = createReserve(
    allocator,
    memory,
    maximumBytes,
    heap.end,
    // The limit lives in the memory, so the next run's restore and limits
    // undo it; an allocation made while QuickJS is inside the allocator
    // only reads it.
    () => runtime.setMemoryLimit(1),
    () => roomAboveTop(memory, topField),
  );
  /**
   * Zeroes what the run since the last restore may have written above
   * `snapshot`: from its end up to where the allocator reached, but for
   * the part of the reserve nothing wrote. The reach is read before the
   * copy writes its own allocator state back. A caller's code and context
   * only ever run with a reserve taken: without one, only the packs of a
   * warm copy ran, the same for every caller, so nothing is cleared.
   */
  const clearLastRun = (snapshot: Snapshot): void => {
    const run = reserve.release();
    if (run === null) return;
    const start = snapshot.ranges.at(-1)!.end;
    // A state no longer one segment (a flaw wrote over it): clear it all.
    const end = allocatorReach(memory, topField) ?? memory.buffer.byteLength;
    if (end > start) zeroAround(memory, { start, end }, run.untouched);
  };
  state.hooks = IDLE_HOOKS;
  const engine: Engine = {
    runtime,
    context,
    runFn,
    describeFn,
    reseedFn,
    memory,
    ranges,
    base,
    restored,
    get hooks() {
      return state.hooks;
    },
    set hooks(hooks: RunHooks) {
      state.hooks = hooks;
    },
    broken: false,
    capacityBytes: reserve.capacityBytes,
    restore(snapshot = base) {
      clearLastRun(snapshot);
      // Read each time: growing the memory replaces its buffer.
      const bytes = new Uint8Array(memory.buffer);
      for (let i = 0; i < snapshot.ranges.length; i++) {
        bytes.set(snapshot.bytes[i]!, snapshot.ranges[i]!.start);
      }
    },
    capture() {
      if (moreMemoryFailed(memory, topField)) return null;
      const end = currentHeapEnd(memory, topField);
      if (end === null || end <= heap.start) return null;
      return copyRanges(memory, [ranges[0]!, { start: heap.start, end }]);
    },
    reserve(bytes) {
      refusalsAtReserve = hostCopies?.refusals ?? 0;
      const taken = reserve.take(bytes);
      failedAtReserve = moreMemoryFailed(memory, topField);
      return taken;
    },
    makeRoom: (bytes) => reserve.makeRoom(bytes),
    exhausted: () => reserve.exhausted(),
    growthRefused: () => reserve.growthRefused(),
    refusedTooOften: () => reserve.refusedTooOften(),
    hostAllocationRefused: () =>
      (hostCopies?.refusals ?? 0) !== refusalsAtReserve,
    limitMet: () =>
      reserve.refusedAny() ||
      (hostCopies?.refusals ?? 0) !== refusalsAtReserve ||
      (!failedAtReserve && moreMemoryFailed(memory, topField)),
    grown: () => reserve.grown(),
    grownSince: (bytes) => reserve.grownSince(bytes),
  };
  return engine;
}
