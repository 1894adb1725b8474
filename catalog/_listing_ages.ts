// This module is browser compatible.

/**
 * When the remote catalog last had each pack name listed by its server, so
 * a listing younger than `maxAgeMs` is not asked for again. A name the
 * server did not list is remembered only while it keeps that answer fresh:
 * guest code may import any number of names no server has, and each would
 * otherwise stay for the catalog's life.
 */
export class ListingAges {
  readonly #maxAgeMs: number;
  readonly #listedAt = new Map<string, number>();
  /**
   * Whether a stale name was forgotten since every pack was last listed:
   * it would have kept the whole listing stale, and still does.
   */
  #forgotStale = false;

  constructor(maxAgeMs: number) {
    this.#maxAgeMs = maxAgeMs;
  }

  /** How many names are remembered. */
  get size(): number {
    return this.#listedAt.size;
  }

  /** Whether each of `names` was listed within `maxAgeMs` before `now`. */
  areFresh(names: readonly string[], now: number): boolean {
    return names.every((name) => this.#isFresh(name, now));
  }

  /** Whether every remembered name is fresh, and there is one at least. */
  areAllFresh(now: number): boolean {
    return !this.#forgotStale && this.#listedAt.size > 0 &&
      [...this.#listedAt.keys()].every((name) => this.#isFresh(name, now));
  }

  /** A listing of every pack answered at `now`: it names all there are. */
  listedAll(names: readonly string[], now: number): void {
    this.#listedAt.clear();
    this.#forgotStale = false;
    this.listed(names, now);
  }

  /** A listing of `names` answered at `now`. */
  listed(names: readonly string[], now: number): void {
    for (const name of names) this.#listedAt.set(name, now);
  }

  /**
   * Forgets the stale names for which `isHeld` is false, the ones the
   * server did not list: forgetting them only lists them again, as their
   * age would, and the listed ones are as many as the server holds.
   */
  forgetStale(now: number, isHeld: (name: string) => boolean): void {
    for (const name of this.#listedAt.keys()) {
      if (!this.#isFresh(name, now) && !isHeld(name)) {
        this.#listedAt.delete(name);
        this.#forgotStale = true;
      }
    }
  }

  #isFresh(name: string, now: number): boolean {
    return now - (this.#listedAt.get(name) ?? -Infinity) < this.#maxAgeMs;
  }
}
