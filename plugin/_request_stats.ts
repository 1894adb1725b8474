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

/**
 * Counts requests and failures, and times them. A request is counted by
 * `begin()` and `end()` around its work rather than by wrapping it in a
 * closure, which would add a promise per request.
 */
export class RequestStats {
  #requests = 0;
  #failures = 0;
  #totalMs = 0;
  #maxMs = 0;

  /**
   * Counts a request that starts now.
   *
   * @returns Its start time, for `end()`.
   */
  begin(): number {
    this.#requests++;
    return performance.now();
  }

  /**
   * Records the end of a request.
   *
   * @param started What `begin()` returned.
   * @param failed Whether it failed.
   */
  end(started: number, failed: boolean): void {
    const duration = performance.now() - started;
    if (failed) this.#failures++;
    this.#totalMs += duration;
    if (duration > this.#maxMs) this.#maxMs = duration;
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
