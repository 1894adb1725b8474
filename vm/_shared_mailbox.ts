/**
 * A mailbox in shared memory between the host and a realm on a worker
 * thread: one slot per direction for a batch of frames (see
 * `_line_codec.ts`) as UTF-8, and a counter per direction that the writer
 * bumps after each batch and the reader waits on (`Atomics.wait` in the
 * realm, `Atomics.waitAsync` on the host). A batch crosses as bytes copied
 * into the slot and decoded by the reader, so no object is shared.
 *
 * A batch that does not fit, or that would overtake one not yet read,
 * goes through a `MessagePort` instead. The writer uses the slot only when
 * the reader has taken every earlier batch, and the reader empties the slot
 * before the port, so batches are read in the order they were sent.
 *
 * The function is self-contained: the realm gets its source text.
 *
 * @module
 */

/** The size of the shared buffer of one mailbox, in bytes. */
export const MAILBOX_BYTES: number = 64 + 2 * 64 * 1024;

/** One side of a mailbox. */
export interface SharedMailbox {
  /** The counters; the reader waits on `cells[inboundBell]`. */
  readonly cells: Int32Array;
  /** The index of the counter bumped for this side's inbound batches. */
  readonly inboundBell: number;
  /** Sends one batch of frames and wakes the other side. */
  send(text: string): void;
  /**
   * Hands every batch that has arrived to `feed`, in order.
   *
   * @returns Whether there was any.
   */
  take(feed: (text: string) => void): boolean;
  /** Wakes this side's own reader, for example to make it notice an end. */
  wakeReader(): void;
}

/**
 * Opens one side of a mailbox.
 *
 * @param buffer The shared buffer, `MAILBOX_BYTES` long, zeroed.
 * @param outbound 0 for the host (it writes the first slot), 1 for the realm.
 * @param postOverflow Sends a batch that does not go through the slot.
 * @param receiveOverflow Takes the next such batch of the other side, or
 * gives `undefined` (`receiveMessageOnPort` on the matching port).
 * @returns The mailbox.
 */
export function sharedMailbox(
  buffer: SharedArrayBuffer,
  outbound: number,
  postOverflow: (text: string) => void,
  receiveOverflow: () => { message: unknown } | undefined,
): SharedMailbox {
  // Cells, per direction d: 3d is the bell, 3d + 1 the length of the batch
  // in the slot (0: empty), 3d + 2 how many batches the reader has taken.
  const HEADER_BYTES = 64;
  const cells = new Int32Array(buffer, 0, 6);
  const capacity = (buffer.byteLength - HEADER_BYTES) >> 1;
  const areas = [
    new Uint8Array(buffer, HEADER_BYTES, capacity),
    new Uint8Array(buffer, HEADER_BYTES + capacity, capacity),
  ];
  const inbound = 1 - outbound;
  const outArea = areas[outbound]!;
  const inArea = areas[inbound]!;
  const outBell = outbound * 3;
  const outLength = outBell + 1;
  const outTaken = outBell + 2;
  const inBell = inbound * 3;
  const inLength = inBell + 1;
  const inTaken = inBell + 2;
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  let sent = 0;

  return {
    cells,
    inboundBell: inBell,
    send(text: string): void {
      const before = sent;
      sent = (sent + 1) | 0;
      // UTF-8 takes at most three bytes per UTF-16 unit.
      if (
        text.length > 0 && text.length * 3 <= capacity &&
        Atomics.load(cells, outLength) === 0 &&
        Atomics.load(cells, outTaken) === before
      ) {
        const { written } = encoder.encodeInto(text, outArea);
        Atomics.store(cells, outLength, written);
      } else {
        postOverflow(text);
      }
      Atomics.add(cells, outBell, 1);
      Atomics.notify(cells, outBell);
    },
    take(feed: (text: string) => void): boolean {
      let got = false;
      const length = Atomics.load(cells, inLength);
      if (length > 0) {
        const text = decoder.decode(
          inArea.subarray(0, Math.min(length, capacity)),
        );
        Atomics.store(cells, inLength, 0);
        Atomics.add(cells, inTaken, 1);
        got = true;
        feed(text);
      }
      for (
        let entry = receiveOverflow();
        entry !== undefined;
        entry = receiveOverflow()
      ) {
        Atomics.add(cells, inTaken, 1);
        got = true;
        if (typeof entry.message === "string") feed(entry.message);
      }
      return got;
    },
    wakeReader(): void {
      Atomics.notify(cells, inBell);
    },
  };
}

/**
 * Blocks the thread until `cells[index]` is no longer `value`, for at most
 * `spinMs` + `timeoutMs`. It checks the cell for up to `spinMs` before it
 * parks, so a change that comes soon never has to wake a parked thread on
 * another core (see `docs/bridge.md`). A thread that must not park, such
 * as a host's main thread, passes a `timeoutMs` of 0: it then only spins.
 *
 * The function is self-contained: realms get its source text.
 *
 * @param cells Shared cells.
 * @param index The cell to watch.
 * @param value The value to wait out.
 * @param spinMs How long to check before parking, in milliseconds.
 * @param timeoutMs How long to park, in milliseconds.
 * @returns Whether the cell changed.
 */
export function spinWait(
  cells: Int32Array,
  index: number,
  value: number,
  spinMs: number,
  timeoutMs: number = Infinity,
): boolean {
  if (spinMs > 0) {
    const until = performance.now() + spinMs;
    do {
      for (let i = 0; i < 256; i++) {
        if (Atomics.load(cells, index) !== value) return true;
      }
    } while (performance.now() < until);
  }
  Atomics.wait(cells, index, value, timeoutMs);
  return Atomics.load(cells, index) !== value;
}

/**
 * Waits without blocking the thread until `cells[index]` is no longer
 * `value` (or may no longer be: where `Atomics.waitAsync` is missing it
 * settles after a millisecond), and keeps the event loop alive meanwhile,
 * which a pending `Atomics.waitAsync` does not.
 *
 * The function is self-contained: realms get its source text.
 *
 * @param cells Shared cells.
 * @param index The cell to watch.
 * @param value The value to wait out.
 * @returns Settles once the caller should look again.
 */
export function waitForChange(
  cells: Int32Array,
  index: number,
  value: number,
): Promise<void> {
  const keepAlive = setInterval(() => {}, 1 << 30);
  const waiting: Promise<unknown> = typeof Atomics.waitAsync === "function"
    ? Promise.resolve(Atomics.waitAsync(cells, index, value).value)
    : new Promise((resolve) => setTimeout(resolve, 1));
  return waiting.then(() => clearInterval(keepAlive));
}
