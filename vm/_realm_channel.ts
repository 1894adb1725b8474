/**
 * The channel a realm thread or process speaks to its host through, as
 * the realm's main loop sees it; the shared file and the pipes implement it.
 *
 * @module
 */

import type { FrameHandler } from "./_line_codec.ts";

/**
 * How the realm talks to the host. Messages are frames (see
 * `_line_codec.ts`): a kind letter, a number, a name and JSON text that the
 * realm parses inside the context.
 */
export interface RealmChannel {
  /** Queues one message for the host; `flush()` sends the queue. */
  send(kind: string, id: number, name: string, json: string): void;
  /** Sends every queued message, in one write. */
  flush(): void;
  /**
   * Hands the host's next messages to `onFrame`: at once when some have
   * arrived, else once they do. With `block` the wait blocks the thread if
   * the channel can; otherwise it returns a promise. With `spin` a blocking
   * wait first looks for a while without blocking (spinning on the shared
   * mailbox, or polling the shared file of a realm process) and gives
   * `null` if nothing came: the realm is idle. Gives `false` once the host
   * is gone.
   */
  receive(
    onFrame: FrameHandler,
    block: boolean,
    spin: boolean,
  ): boolean | null | Promise<boolean>;
  /** Lets the event loop run one turn. */
  pause(): Promise<void>;
}
