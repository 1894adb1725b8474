/**
 * The bytes of host-call answers one sandbox holds on the host, as its host
 * counts them against `limits.maxProxyAnswerBytesInFlight`.
 *
 * @module
 */

/** The bytes one host call's answer holds, taken as they arrive. */
export interface AnswerShare {
  /**
   * Takes `bytes` more for this call, or returns `false` when the sandbox's
   * answers in flight would pass the limit (nothing is taken then). A share
   * that ended takes nothing more.
   */
  take(bytes: number): boolean;
  /** Gives back all this call took; ending twice is harmless. */
  end(): void;
}

/**
 * The answers in flight of one sandbox's host calls: each call takes its
 * answer's bytes as the host reads them and gives them back once the answer
 * is handed to the realm or the call failed, so the calls in flight at once
 * cannot together make the host hold more than the limit for one plugin.
 */
export class AnswersInFlight {
  readonly #limit: number;
  #held = 0;
  #peak = 0;

  constructor(limit: number) {
    this.#limit = limit;
  }

  /** The limit, in bytes. */
  get limit(): number {
    return this.#limit;
  }

  /** The bytes held now. */
  get held(): number {
    return this.#held;
  }

  /** The most bytes held at once so far. */
  get peak(): number {
    return this.#peak;
  }

  /** A new call's share, empty. */
  open(): AnswerShare {
    let taken = 0;
    let ended = false;
    return {
      take: (bytes) => {
        if (ended || this.#held + bytes > this.#limit) return false;
        taken += bytes;
        this.#held += bytes;
        if (this.#held > this.#peak) this.#peak = this.#held;
        return true;
      },
      end: () => {
        if (ended) return;
        ended = true;
        this.#held -= taken;
      },
    };
  }
}
