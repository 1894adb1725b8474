// This module is browser compatible.

/**
 * The warm pack graphs of one engine: copies of its memory taken right
 * after a guest's pack modules were linked and evaluated, so later runs
 * that import the same modules start from that copy instead of evaluating
 * them again. A run still starts from a copy no other run's code touched:
 * the copy is taken before any guest code runs, and written back whole.
 *
 * Bounded in bytes and in count; the least recently used graph goes first.
 *
 * @module
 */

import type { LogEntry } from "../protocol/sandbox_result.ts";
import type { Snapshot } from "./_engine.ts";
import { RecentMap } from "../protocol/recent.ts";

/** The most bytes of warm copies one engine keeps. */
export const WARM_GRAPH_BUDGET_BYTES = 32 * 1024 * 1024;
/** The most warm copies one engine keeps. */
const MAX_WARM_GRAPHS = 128;
/** The most graphs remembered as fitting limits, or as failing under them. */
const MAX_MARKED_GRAPHS = 4096;

/** The most pairs of limits a graph is remembered to fit, or to fail under. */
const MAX_MARKS_PER_GRAPH = 4;

/** The limits a graph's top level takes while it runs, in bytes. */
export interface FitLimits {
  readonly memoryLimitBytes: number;
  readonly maxStackSizeBytes: number;
}

/** One warm graph: the memory after its packs' top level, and their logs. */
export interface WarmGraph {
  /** The engine's memory right after the pack modules were evaluated. */
  readonly snapshot: Snapshot;
  /** What the packs' top-level code logged, replayed into every run. */
  readonly logs: readonly LogEntry[];
}

/**
 * Limits a graph was seen to run to its end under, or to fail under, for
 * each graph: a few pairs per graph, none that another pair kept covers.
 */
class LimitMarks {
  readonly #marks = new Map<string, readonly FitLimits[]>();
  readonly #covers: (seen: FitLimits, limits: FitLimits) => boolean;

  /** `covers(seen, limits)`: what was seen under `seen` holds under `limits`. */
  constructor(covers: (seen: FitLimits, limits: FitLimits) => boolean) {
    this.#covers = covers;
  }

  /** Whether a pair marked for `key` covers `limits`. */
  covered(key: string, limits: FitLimits): boolean {
    return (this.#marks.get(key) ?? []).some((seen) =>
      this.#covers(seen, limits)
    );
  }

  /** Marks `limits` for `key`, dropping the pairs they cover. */
  mark(key: string, limits: FitLimits): void {
    if (this.covered(key, limits)) return;
    const seen = {
      memoryLimitBytes: limits.memoryLimitBytes,
      maxStackSizeBytes: limits.maxStackSizeBytes,
    };
    const kept = (this.#marks.get(key) ?? []).filter((other) =>
      !this.#covers(seen, other)
    ).slice(-(MAX_MARKS_PER_GRAPH - 1));
    if (this.#marks.size >= MAX_MARKED_GRAPHS) this.#marks.clear();
    this.#marks.set(key, [...kept, seen]);
  }
}

/**
 * The warm graphs of one engine, by key, least recently used first, and
 * the limits under which graphs were seen to fit, or to fail so that they
 * cannot be kept warm, on any engine.
 */
export class WarmGraphs {
  readonly #graphs = new RecentMap<string, WarmGraph>({
    maxEntries: MAX_WARM_GRAPHS,
    maxBytes: WARM_GRAPH_BUDGET_BYTES,
    sizeOf: (graph) => graph.snapshot.byteLength,
  });
  // What fit smaller limits fits larger ones.
  readonly #fits = new LimitMarks((seen, limits) =>
    seen.memoryLimitBytes <= limits.memoryLimitBytes &&
    seen.maxStackSizeBytes <= limits.maxStackSizeBytes
  );
  // What failed under larger limits fails under smaller ones; a run with
  // larger limits tries again, so one run's small limits (another
  // caller's, on a pool) do not keep the graph cold for every run.
  readonly #refused = new LimitMarks((seen, limits) =>
    seen.memoryLimitBytes >= limits.memoryLimitBytes &&
    seen.maxStackSizeBytes >= limits.maxStackSizeBytes
  );

  /** The graph kept under `key`, marked as used now. */
  get(key: string): WarmGraph | undefined {
    return this.#graphs.get(key);
  }

  /** Keeps `graph` under `key`, dropping the least recently used beyond the bounds. */
  add(key: string, graph: WarmGraph): void {
    this.#graphs.set(key, graph);
  }

  /**
   * Whether the top level of the graph under `key` was seen to run to its
   * end under limits no larger than `limits`: with what it allocates and
   * lets go again, and the stack it takes, while it runs, which a copy
   * does not hold.
   */
  fitFor(key: string, limits: FitLimits): boolean {
    return this.#fits.covered(key, limits);
  }

  /** Remembers that the graph under `key` ran to its end under `limits`. */
  fits(key: string, limits: FitLimits): void {
    this.#fits.mark(key, limits);
  }

  /** Drops every graph kept, and keeps what was refused or seen to fit. */
  clear(): void {
    this.#graphs.clear();
  }

  /** How many graphs are kept, and their bytes. */
  get size(): { graphs: number; bytes: number } {
    return { graphs: this.#graphs.size, bytes: this.#graphs.bytes };
  }

  /**
   * Remembers that the graph under `key` cannot be kept warm for runs with
   * limits no larger than `limits` (its top level throws, leaves jobs
   * pending, logs too much or grows the memory past the bound that
   * replaces an engine), so those runs stop trying.
   */
  refuse(key: string, limits: FitLimits): void {
    this.#refused.mark(key, limits);
  }

  /**
   * Whether the graph under `key` was refused under limits at least
   * `limits`.
   */
  refusedFor(key: string, limits: FitLimits): boolean {
    return this.#refused.covered(key, limits);
  }
}
