/**
 * The two threads of a realm in a child process, and how they share its
 * pipes.
 *
 * Why two: on an idle machine the two ends of a pipe usually sit on
 * different cores, and waking a parked thread on another core costs tens
 * of microseconds each way. When the host waits for one call alone (its
 * frame starts with "J", see `_realm_session.ts`), the realm's thread hands
 * the read of stdin to a relay thread and spins for what it brings. The
 * relay is woken by the host's write, so it runs where the host ran; it
 * puts what it read in shared memory, waits for the answer and writes it
 * itself, then goes back to its read, so the host wakes on that same core.
 * During a stream of such calls neither crossing wakes a parked core.
 *
 * Under concurrent load (frames starting with "I") the relay hands the read
 * back after one read, and the realm's thread reads stdin itself and parks
 * between batches, leaving the cores to the host.
 *
 * One cell says who reads stdin and one who writes the next batch, so bytes
 * are read and batches leave in order. The relay writes only an answer the
 * realm hands it while it waits; the realm writes every other batch (proxy
 * calls and logs, answers that came too late or do not fit). Only UTF-8
 * bytes cross; no object is shared.
 *
 * The functions are self-contained: the realm gets their source text.
 *
 * @module
 */

import type { FrameHandler } from "./_line_codec.ts";
import type { RealmChannel } from "./_realm_main.ts";

/** The size of the buffer `relayPipes` and `relayedChannel` share. */
export const RELAY_BUFFER_BYTES: number = 64 + 2 * 64 * 1024;

/** How long a realm thread spins for the next message before it parks. */
export const REALM_SPIN_MS = 0.5;

/**
 * How long the relay waits for the realm's thread to take a call's bytes
 * before it stops waiting for the answer: a thread that is spinning takes
 * them within a microsecond, and one that is parked wakes within about 50
 * µs.
 */
export const RELAY_TAKE_MS = 0.1;

/** The cells and slots of the buffer the relay and the realm share. */
export interface RelayLayout {
  /** The cells, indexed by the names below. */
  cells: Int32Array;
  /** The size of each slot, in bytes. */
  capacity: number;
  /** Bytes the relay read, for the realm. */
  inSlot: Uint8Array;
  /** An answer the realm hands to the relay. */
  outSlot: Uint8Array;
  /** Cell: who writes the next batch (`REALM_WRITES`, `RELAY_WAITS`, `HANDED`). */
  WRITER: number;
  /** Cell: 1 once stdin has ended. */
  ENDED: number;
  /** Cell: bumped whenever the relay put bytes in `inSlot`. */
  BELL: number;
  /** Cell: how many bytes `inSlot` holds (0: it is free). */
  IN_LENGTH: number;
  /** Cell: how many bytes of `outSlot` are handed over. */
  OUT_LENGTH: number;
  /** Cell: who reads stdin (`REALM_READS`, `RELAY_READS`). */
  READER: number;
  REALM_WRITES: number;
  RELAY_WAITS: number;
  HANDED: number;
  REALM_READS: number;
  RELAY_READS: number;
}

/**
 * Names the parts of the shared buffer.
 *
 * @param buffer The buffer, `RELAY_BUFFER_BYTES` long, zeroed.
 * @returns Its cells and slots.
 */
export function relayLayout(buffer: SharedArrayBuffer): RelayLayout {
  const capacity = (buffer.byteLength - 64) >> 1;
  return {
    cells: new Int32Array(buffer, 0, 8),
    capacity,
    inSlot: new Uint8Array(buffer, 64, capacity),
    outSlot: new Uint8Array(buffer, 64 + capacity, capacity),
    WRITER: 0,
    ENDED: 1,
    BELL: 2,
    IN_LENGTH: 3,
    OUT_LENGTH: 4,
    READER: 5,
    REALM_WRITES: 0,
    RELAY_WAITS: 1,
    HANDED: 2,
    REALM_READS: 0,
    RELAY_READS: 1,
  };
}

/** `spinWait` of `_shared_mailbox.ts`. */
export type SpinWait = (
  cells: Int32Array,
  index: number,
  value: number,
  spinMs: number,
  timeoutMs?: number,
) => boolean;

/** What both ends of the relay are given besides the buffer. */
export interface RelayParts {
  /** Stdin and stdout. */
  io: PipeIo;
  /** `relayLayout` (passed, as the functions are self-contained). */
  relayLayout: (buffer: SharedArrayBuffer) => RelayLayout;
  /** `spinWait` of `_shared_mailbox.ts`. */
  spinWait: SpinWait;
  /** How long to spin before parking, in milliseconds. */
  spinMs: number;
}

/** Access to the process's stdin and stdout. */
export interface PipeIo {
  /** Reads stdin into `into`: the byte count, or `null` at the end. */
  readSync(into: Uint8Array): number | null;
  /** Reads stdin without blocking the thread. */
  read(into: Uint8Array): Promise<number | null>;
  /** Writes every byte to stdout. */
  writeAll(bytes: Uint8Array): void;
}

/**
 * Builds blocking stdin and stdout access on Deno or Node.
 *
 * @param deno `globalThis.Deno`, or `undefined` on Node.
 * @param fs `node:fs`.
 * @returns The access.
 */
export function pipeIo(
  deno:
    | {
      stdin: {
        readSync(into: Uint8Array): number | null;
        read(into: Uint8Array): Promise<number | null>;
      };
      stdout: { writeSync(bytes: Uint8Array): number };
    }
    | undefined,
  fs: {
    readSync(fd: number, into: Uint8Array): number;
    read(
      fd: number,
      into: Uint8Array,
      offset: number,
      length: number,
      position: null,
      done: (error: Error | null, n: number) => void,
    ): void;
    writeSync(fd: number, bytes: Uint8Array): number;
  },
): PipeIo {
  if (deno !== undefined) {
    return {
      readSync: (into) => deno.stdin.readSync(into),
      read: (into) => deno.stdin.read(into),
      writeAll(bytes) {
        while (bytes.length > 0) {
          bytes = bytes.subarray(deno.stdout.writeSync(bytes));
        }
      },
    };
  }
  // Node may find a pipe that another owner made non-blocking: nap, retry.
  const nap = new Int32Array(new SharedArrayBuffer(4));
  const retrying = (step: () => number): number => {
    for (;;) {
      try {
        return step();
      } catch (error) {
        if ((error as { code?: unknown }).code !== "EAGAIN") throw error;
        Atomics.wait(nap, 0, 0, 1);
      }
    }
  };
  return {
    readSync: (into) => retrying(() => fs.readSync(0, into)) || null,
    read: (into) =>
      new Promise((resolve, reject) =>
        fs.read(0, into, 0, into.length, null, (error, n) => {
          if (error === null) resolve(n || null);
          else reject(error);
        })
      ),
    writeAll(bytes) {
      while (bytes.length > 0) {
        bytes = bytes.subarray(retrying(() => fs.writeSync(1, bytes)));
      }
    },
  };
}

/** What the relay thread is given besides the buffer. */
export interface RelayThreadParts extends RelayParts {
  /** How long to wait for the realm's thread to take a call's bytes. */
  takeMs: number;
}

/**
 * The relay thread's loop. Whenever the realm hands it the read (after
 * answering a call the host waited for alone), it reads stdin, hands what
 * came to the realm's thread and, for another such call, waits to write the
 * answer itself; any other read hands the read back to the realm. At the
 * end of stdin (or a broken pipe) it marks the end and wakes the realm.
 *
 * @param buffer The shared buffer, `RELAY_BUFFER_BYTES` long, zeroed.
 * @param parts Stdin and stdout, the layout, and how long to wait for the
 * realm's thread to take a call and to answer it before giving the write
 * back.
 */
export function relayPipes(
  buffer: SharedArrayBuffer,
  parts: RelayThreadParts,
): void {
  const { io, spinWait, spinMs, takeMs } = parts;
  const {
    cells,
    inSlot,
    outSlot,
    WRITER,
    ENDED,
    BELL,
    IN_LENGTH,
    OUT_LENGTH,
    READER,
    REALM_WRITES,
    RELAY_WAITS,
    REALM_READS,
  } = parts.relayLayout(buffer);
  try {
    for (;;) {
      Atomics.wait(cells, READER, REALM_READS);
      if (Atomics.load(cells, READER) === REALM_READS) continue;
      for (let n; (n = Atomics.load(cells, IN_LENGTH)) !== 0;) {
        Atomics.wait(cells, IN_LENGTH, n);
      }
      const n = io.readSync(inSlot);
      if (n === null) return;
      // Only a call the host waits for alone (its frame starts with "J")
      // keeps the read here and waits for its answer: a host with other
      // work needs this core, and the realm reads faster itself then.
      const lone = n > 0 && inSlot[0] === 74 && inSlot[n - 1] === 10;
      if (lone) Atomics.store(cells, WRITER, RELAY_WAITS);
      Atomics.store(cells, IN_LENGTH, n);
      // The data is visible before the read goes back, so a realm that
      // sees the read is its own has already seen what the relay read.
      if (!lone) Atomics.store(cells, READER, REALM_READS);
      Atomics.add(cells, BELL, 1);
      Atomics.notify(cells, BELL);
      if (!lone) continue;
      // A realm thread that does not take the bytes at once is not running
      // (parked, or preempted, perhaps on this very core): spinning for its
      // answer would only keep a core from it or from the host.
      if (
        !(spinWait(cells, IN_LENGTH, n, takeMs, 0) &&
          spinWait(cells, WRITER, RELAY_WAITS, spinMs, 0)) &&
        Atomics.compareExchange(cells, WRITER, RELAY_WAITS, REALM_WRITES) ===
          RELAY_WAITS
      ) continue;
      io.writeAll(outSlot.subarray(0, Atomics.load(cells, OUT_LENGTH)));
      Atomics.store(cells, WRITER, REALM_WRITES);
      Atomics.notify(cells, WRITER);
    }
  } catch {
    // A pipe that broke ends the realm as the end of stdin does.
  } finally {
    Atomics.store(cells, ENDED, 1);
    Atomics.store(cells, WRITER, REALM_WRITES);
    Atomics.notify(cells, WRITER);
    Atomics.add(cells, BELL, 1);
    Atomics.notify(cells, BELL);
  }
}

/** What `relayedChannel` needs besides the buffer. */
export interface RelayedChannelParts extends RelayParts {
  /** `encodeFrame` of `_line_codec.ts`. */
  encodeFrame(kind: string, id: number, name: string, json: string): string;
  /** `frameDecoder` of `_line_codec.ts`. */
  frameDecoder(handler: FrameHandler): (chunk: string) => void;
  /** `waitForChange` of `_shared_mailbox.ts`. */
  waitForChange(cells: Int32Array, index: number, value: number): Promise<void>;
}

/**
 * The realm thread's end of the relay. The realm reads stdin itself, as
 * the fastest path under load; a `receive` with `spin` hands the read to
 * the relay and spins for what it brings.
 *
 * @param buffer The buffer shared with `relayPipes`.
 * @param parts Stdin and stdout, the codec and the wait.
 * @returns The channel.
 */
export function relayedChannel(
  buffer: SharedArrayBuffer,
  parts: RelayedChannelParts,
): Omit<RealmChannel, "pause"> {
  const {
    cells,
    capacity,
    inSlot,
    outSlot,
    WRITER,
    ENDED,
    BELL,
    IN_LENGTH,
    OUT_LENGTH,
    READER,
    RELAY_WAITS,
    HANDED,
    RELAY_READS,
  } = parts.relayLayout(buffer);
  const input = new Uint8Array(capacity);
  const encoder = new TextEncoder();
  // One decoder for both sources: a character may straddle two reads.
  const decoder = new TextDecoder();
  let outbox = "";
  let feed: ((chunk: string) => void) | null = null;
  let seen = 0;
  const decode = (bytes: Uint8Array) => decoder.decode(bytes, { stream: true });
  const deliver = (text: string, onFrame: FrameHandler): void => {
    feed ??= parts.frameDecoder(onFrame);
    feed(text);
  };
  /** Hands what the relay read to `onFrame`, if anything. */
  const take = (onFrame: FrameHandler): boolean => {
    seen = Atomics.load(cells, BELL);
    const n = Atomics.load(cells, IN_LENGTH);
    if (n === 0) return false;
    const text = decode(inSlot.subarray(0, n));
    Atomics.store(cells, IN_LENGTH, 0);
    Atomics.notify(cells, IN_LENGTH);
    deliver(text, onFrame);
    return true;
  };
  const readHere = (n: number | null, onFrame: FrameHandler): boolean => {
    if (n === null) return false;
    deliver(decode(input.subarray(0, n)), onFrame);
    return true;
  };
  const open = () => Atomics.load(cells, ENDED) === 0;
  const relayReads = () => Atomics.load(cells, READER) === RELAY_READS;
  /** Hands `length` bytes of the slot to a waiting relay. */
  const handOver = (length: number): boolean => {
    Atomics.store(cells, OUT_LENGTH, length);
    return Atomics.compareExchange(cells, WRITER, RELAY_WAITS, HANDED) ===
      RELAY_WAITS;
  };
  return {
    send(kind, id, name, json) {
      outbox += parts.encodeFrame(kind, id, name, json);
    },
    flush() {
      if (outbox === "") return;
      const text = outbox;
      outbox = "";
      // The relay may still write an earlier answer from the slot.
      while (Atomics.load(cells, WRITER) === HANDED) {
        Atomics.wait(cells, WRITER, HANDED);
      }
      // UTF-8 takes at most three bytes per UTF-16 unit.
      if (text.length * 3 > capacity) {
        parts.io.writeAll(encoder.encode(text));
        return;
      }
      const { written } = encoder.encodeInto(text, outSlot);
      if (Atomics.load(cells, WRITER) === RELAY_WAITS && handOver(written)) {
        return;
      }
      parts.io.writeAll(outSlot.subarray(0, written));
    },
    receive(onFrame, block, spin) {
      if (take(onFrame)) return true;
      if (!open()) return false;
      if (!relayReads()) {
        // The relay gave the read back after handing over its last read.
        if (take(onFrame)) return true;
        if (!block) {
          return parts.io.read(input).then((n) => readHere(n, onFrame));
        }
        if (!spin) return readHere(parts.io.readSync(input), onFrame);
        Atomics.store(cells, READER, RELAY_READS);
        Atomics.notify(cells, READER);
      }
      if (block) {
        if (spin && !parts.spinWait(cells, BELL, seen, parts.spinMs, 0)) {
          return null;
        }
        parts.spinWait(cells, BELL, seen, 0);
        return take(onFrame) || open();
      }
      return parts.waitForChange(cells, BELL, seen).then(() =>
        take(onFrame) || open()
      );
    },
  };
}
