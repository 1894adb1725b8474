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
/** The most graphs remembered as not worth warming, or as fitting a limit. */
const MAX_REFUSED = 4096;

/** The most pairs of limits a graph is remembered to fit. */
const MAX_FITS_PER_GRAPH = 4;

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
 * The warm graphs of one engine, by key, least recently used first, and the
 * keys of graphs that cannot be kept warm on any engine.
 */
export class WarmGraphs {
  readonly #graphs = new RecentMap<string, WarmGraph>({
    maxEntries: MAX_WARM_GRAPHS,
    maxBytes: WARM_GRAPH_BUDGET_BYTES,
    sizeOf: (graph) => graph.snapshot.byteLength,
  });
  readonly #refused = new Set<string>();
  readonly #fits = new Map<string, readonly FitLimits[]>();

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
    return (this.#fits.get(key) ?? []).some((seen) =>
      seen.memoryLimitBytes <= limits.memoryLimitBytes &&
      seen.maxStackSizeBytes <= limits.maxStackSizeBytes
    );
  }

  /** Whether the top level of the graph under `key` ran to its end under any limits. */
  fitsSome(key: string): boolean {
    return this.#fits.has(key);
  }

  /** Remembers that the graph under `key` ran to its end under `limits`. */
  fits(key: string, limits: FitLimits): void {
    if (this.fitFor(key, limits)) return;
    const seen = { ...limits };
    const kept = (this.#fits.get(key) ?? []).filter((other) =>
      other.memoryLimitBytes < seen.memoryLimitBytes ||
      other.maxStackSizeBytes < seen.maxStackSizeBytes
    ).slice(-(MAX_FITS_PER_GRAPH - 1));
    if (this.#fits.size >= MAX_REFUSED) this.#fits.clear();
    this.#fits.set(key, [...kept, seen]);
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
   * Remembers that the graph under `key` cannot be kept warm (its top level
   * throws, leaves jobs pending, logs too much or grows the memory past the
   * bound that replaces an engine), so runs stop trying.
   */
  refuse(key: string): void {
    if (this.#refused.size >= MAX_REFUSED) this.#refused.clear();
    this.#refused.add(key);
  }

  /** Whether the graph under `key` was refused. */
  refused(key: string): boolean {
    return this.#refused.has(key);
  }
}
