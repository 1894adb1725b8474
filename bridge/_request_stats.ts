/**
 * Request counters every plugin module kind reports through `metrics()`.
 *
 * @module
 */

import { performance } from "node:perf_hooks";

/** The request part of a plugin's metrics. */
export interface RequestFigures {
  requests: number;
  failures: number;
  meanDurationMs: number;
  maxDurationMs: number;
}

/** Counts requests and failures, and times them. */
export class RequestStats {
  #requests = 0;
  #failures = 0;
  #totalMs = 0;
  #maxMs = 0;

  /** Runs one request's work, counting it, and its failure if it throws. */
  async time<T>(work: () => Promise<T>): Promise<T> {
    const started = performance.now();
    this.#requests++;
    try {
      return await work();
    } catch (error) {
      this.#failures++;
      throw error;
    } finally {
      const duration = performance.now() - started;
      this.#totalMs += duration;
      this.#maxMs = Math.max(this.#maxMs, duration);
    }
  }

  /** The figures so far. */
  figures(): RequestFigures {
    return {
      requests: this.#requests,
      failures: this.#failures,
      meanDurationMs: this.#requests === 0 ? 0 : this.#totalMs / this.#requests,
      maxDurationMs: this.#maxMs,
    };
  }
}
