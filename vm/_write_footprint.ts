/**
 * What a plugin's file writes hold on disk, as its host counts it against
 * `limits.maxWriteBytes`.
 *
 * @module
 */

/**
 * The least a written file counts: one block of most file systems, so that
 * empty files, which cost an inode each, are bounded too, and so that the
 * paths this count remembers are at most `limit / WRITE_BLOCK_BYTES`.
 */
export const WRITE_BLOCK_BYTES = 4096;

/** The share of one write, taken before anything is written. */
export interface WriteShare {
  /**
   * Ends the write. `held` is whether the file may now hold the text (the
   * write succeeded, or failed once the file was changed): then the text's
   * share replaces the file's; otherwise it is given back.
   */
  end(held: boolean): void;
}

/**
 * The footprint of one plugin's writes: for each path it wrote, the size of
 * its last write in bytes, at least {@linkcode WRITE_BLOCK_BYTES}. A write in
 * flight counts as well, so writes at once cannot together pass the limit;
 * writes of one path at once count that path once, at the largest of them,
 * and keep counting it so once they ended: each truncates the file and
 * then writes, so the file may hold the longest text whichever ends last.
 */
export class WriteFootprint {
  readonly #limit: number;
  /** Each path's share after its last write that ended. */
  readonly #held = new Map<string, number>();
  /** The shares of each path's writes in flight. */
  readonly #inFlight = new Map<string, number[]>();
  /**
   * The largest share among a path's writes that ended having written
   * while others of it were in flight: the path's held share once the last
   * of them ends.
   */
  readonly #overlapped = new Map<string, number>();
  /** The sum of every path's charge. */
  #total = 0;

  constructor(limit: number) {
    this.#limit = limit;
  }

  /** What `path` counts now: its held share or a larger one in flight. */
  #charge(path: string): number {
    return Math.max(
      this.#held.get(path) ?? 0,
      this.#overlapped.get(path) ?? 0,
      ...(this.#inFlight.get(path) ?? []),
    );
  }

  /**
   * Takes the share of a write of `bytes` to `path`, or returns `null` when
   * the footprint would pass the limit (nothing is taken then).
   */
  take(path: string, bytes: number): WriteShare | null {
    const share = Math.max(bytes, WRITE_BLOCK_BYTES);
    const before = this.#charge(path);
    const after = Math.max(before, share);
    if (this.#total - before + after > this.#limit) return null;
    this.#inFlight.set(path, [...(this.#inFlight.get(path) ?? []), share]);
    this.#total += after - before;
    let ended = false;
    return {
      end: (held) => {
        if (ended) return;
        ended = true;
        this.#end(path, share, held);
      },
    };
  }

  #end(path: string, share: number, held: boolean): void {
    const before = this.#charge(path);
    const rest = [...(this.#inFlight.get(path) ?? [])];
    rest.splice(rest.indexOf(share), 1);
    const wrote = held
      ? Math.max(share, this.#overlapped.get(path) ?? 0)
      : this.#overlapped.get(path);
    if (rest.length > 0) {
      this.#inFlight.set(path, rest);
      if (wrote !== undefined) this.#overlapped.set(path, wrote);
    } else {
      this.#inFlight.delete(path);
      this.#overlapped.delete(path);
      if (wrote !== undefined) this.#held.set(path, wrote);
    }
    this.#total += this.#charge(path) - before;
  }
}
