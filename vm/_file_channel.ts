/**
 * The channel between the host and a realm in a child process: the child's
 * stdin and stdout pipes, and a small shared file that both sides read and
 * write at fixed offsets with positioned reads and writes.
 *
 * Why a file: neither Deno nor Node can read a child's pipe synchronously,
 * so every answer that comes through a pipe costs the host a turn of its
 * event loop, a sleep and a wake-up, and the realm's blocking read costs a
 * wake-up on the other side. A call the host waits for alone (a `J` frame)
 * instead goes in the file's host slot while the realm polls the file, and
 * the first batch the realm sends after it took such a call goes in the
 * realm slot while the host polls for it, for up to a tenth of a
 * millisecond. Neither side sleeps, and no byte of such a call goes through
 * the pipes.
 *
 * Everything else uses the pipes, and the pipes wake a side that stopped
 * polling:
 * - the host puts a call in the file only while the realm says it polls,
 *   and looks again after it wrote it; the realm says it stopped polling
 *   before it looks at the file a last time and blocks on stdin. Whichever
 *   side moved second sees the other, so when the realm may have missed
 *   the call the host also writes a `W` frame ("look at the file") to
 *   stdin;
 * - in the same way the realm writes a `W` frame to stdout when the host
 *   no longer polls for the batch it put in the file. A `W` frame takes its
 *   place among the frames of the pipe, so batches keep their order;
 * - while the realm polls, it also watches how many bytes the host wrote
 *   to stdin, and reads them when there are more than it read.
 *
 * Each side writes only its own cells. A counter is compared with a count
 * its reader keeps, never taken from the file, so a read that catches half
 * a write at most finds a batch a poll early: the slot is written before
 * its counter. One batch per slot is in flight at a time: the host puts
 * the next call in the file only once it took the realm's batch for the
 * last one.
 *
 * The functions are self-contained: the realm gets their source text.
 *
 * @module
 */

import { encodeFrame, type FrameHandler } from "./_line_codec.ts";
import type { RealmChannel } from "./_realm_channel.ts";

/** The size of each of the file's two slots, in bytes. */
export const FILE_SLOT_BYTES = 64 * 1024;

/** The size of the shared file, in bytes. */
export const FILE_CHANNEL_BYTES: number = 64 + 2 * (4 + FILE_SLOT_BYTES);

/**
 * How long a realm's thread looks for the next message before it blocks,
 * after answering a call the host waited for alone.
 */
export const REALM_SPIN_MS = 0.5;

/** The frame that tells the other side to look at the file. */
export const LOOK_FRAME: string = encodeFrame("W", 0, "", "");

/** The positioned reads and writes of `node:fs` that the file needs. */
export interface PositionedIo {
  readSync(
    fd: number,
    into: Uint8Array,
    offset: number,
    length: number,
    position: number,
  ): number;
  writeSync(
    fd: number,
    bytes: Uint8Array,
    offset: number,
    length: number,
    position: number,
  ): number;
}

/** The cells and slots of the shared file, for one side. */
export interface FileCells {
  /**
   * Reads the host's cells: the count of calls the host put in its slot,
   * whether the host polls for the realm's batch (1) and the bytes the host
   * wrote to stdin (modulo 2³²).
   */
  hostCells(): Int32Array;
  /**
   * Reads the realm's cells: the count of batches the realm put in its
   * slot, and whether the realm polls for calls (1).
   */
  realmCells(): Int32Array;
  /** Host: writes its call count and whether it polls. */
  writeHostCalls(count: number, polling: number): void;
  /** Host: writes whether it polls. */
  writeHostPolling(polling: number): void;
  /** Host: writes the bytes it wrote to stdin so far (modulo 2³²). */
  writePipeSent(bytes: number): void;
  /** Realm: writes its batch count. */
  writeRealmBatches(count: number): void;
  /** Realm: writes whether it polls. */
  writeRealmPolling(polling: number): void;
  /** Puts text in a slot (0: the host's, 1: the realm's); `false` if it does not fit. */
  put(slot: number, text: string): boolean;
  /** Reads the text of a slot; `null` when its length is not valid. */
  take(slot: number): string | null;
}

/**
 * Reads and writes the shared file's cells and slots.
 *
 * Layout: the host's cells (call count, polling, stdin bytes) at 0, the
 * realm's (batch count, polling) at 16, then each slot as a length and
 * UTF-8 bytes: the host's at 64, the realm's after it.
 *
 * @param fs Positioned reads and writes (`node:fs`).
 * @param fd The file, open for reading and writing.
 * @param slotBytes The size of each slot (`FILE_SLOT_BYTES`).
 * @returns The cells and slots.
 */
export function fileCells(
  fs: PositionedIo,
  fd: number,
  slotBytes: number,
): FileCells {
  const host = new Int32Array(3);
  const realm = new Int32Array(2);
  const word = new Int32Array(2);
  const hostBytes = new Uint8Array(host.buffer);
  const realmBytes = new Uint8Array(realm.buffer);
  const wordBytes = new Uint8Array(word.buffer);
  const frame = new Uint8Array(4 + slotBytes);
  const frameLength = new Int32Array(frame.buffer, 0, 1);
  const slotAt = [64, 64 + 4 + slotBytes];
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  // A short first read covers most batches.
  const FIRST_READ = 4096;
  const readAt = (into: Uint8Array, position: number): number => {
    let got = 0;
    while (got < into.length) {
      const n = fs.readSync(fd, into, got, into.length - got, position + got);
      if (n === 0) break;
      got += n;
    }
    return got;
  };
  const writeAt = (bytes: Uint8Array, position: number): void => {
    let done = 0;
    while (done < bytes.length) {
      done += fs.writeSync(
        fd,
        bytes,
        done,
        bytes.length - done,
        position + done,
      );
    }
  };
  const writeWord = (position: number, value: number): void => {
    word[0] = value;
    writeAt(wordBytes.subarray(0, 4), position);
  };
  return {
    hostCells() {
      readAt(hostBytes, 0);
      return host;
    },
    realmCells() {
      readAt(realmBytes, 16);
      return realm;
    },
    writeHostCalls(count, polling) {
      word[0] = count;
      word[1] = polling;
      writeAt(wordBytes, 0);
    },
    writeHostPolling: (polling) => writeWord(4, polling),
    writePipeSent: (bytes) => writeWord(8, bytes),
    writeRealmBatches: (count) => writeWord(16, count),
    writeRealmPolling: (polling) => writeWord(20, polling),
    put(slot, text) {
      // Text longer than the slot stops the encoder when the slot is full.
      const { read, written } = encoder.encodeInto(text, frame.subarray(4));
      if (read < text.length) return false;
      frameLength[0] = written;
      writeAt(frame.subarray(0, 4 + written), slotAt[slot]!);
      return true;
    },
    take(slot) {
      const first = Math.min(frame.length, 4 + FIRST_READ);
      readAt(frame.subarray(0, first), slotAt[slot]!);
      const length = frameLength[0]!;
      if (length < 0 || length > slotBytes) return null;
      if (4 + length > first) {
        readAt(frame.subarray(first, 4 + length), slotAt[slot]! + first);
      }
      return decoder.decode(frame.subarray(4, 4 + length));
    },
  };
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

/** What `fileChannel` needs. */
export interface FileChannelParts {
  /** Stdin and stdout. */
  io: PipeIo;
  /** The shared file, or `null` to use the pipes alone. */
  cells: FileCells | null;
  /** `encodeFrame` of `_line_codec.ts`. */
  encodeFrame(kind: string, id: number, name: string, json: string): string;
  /** `frameDecoder` of `_line_codec.ts`. */
  frameDecoder(handler: FrameHandler): (chunk: string) => void;
  /** How long to look for the next message before blocking (`REALM_SPIN_MS`). */
  spinMs: number;
}

/**
 * The realm's end of the channel of a child process. A `receive` with
 * `spin` polls the file (and the count of bytes the host wrote to stdin)
 * for up to `spinMs`; any other blocking `receive` says the realm stopped
 * polling, looks at the file a last time and blocks on stdin.
 *
 * @param parts Stdin and stdout, the file and the codec.
 * @returns The channel.
 */
export function fileChannel(
  parts: FileChannelParts,
): Omit<RealmChannel, "pause"> {
  const { io, cells, spinMs } = parts;
  const input = new Uint8Array(64 * 1024);
  const encoder = new TextEncoder();
  const lookBytes = encoder.encode(parts.encodeFrame("W", 0, "", ""));
  // One decoder for stdin: a character may straddle two reads.
  const pipeDecoder = new TextDecoder();
  let outbox = "";
  let pipeFeed: ((chunk: string) => void) | null = null;
  let fileFeed: ((chunk: string) => void) | null = null;
  let pipeRead = 0;
  let callsTaken = 0;
  let batchesPut = 0;
  let polling = false;
  // The first batch after a call from the file answers through the file.
  let answerToFile = false;

  /** Hands the host's batch in the file to `onFrame`, if there is a new one. */
  const takeFile = (onFrame: FrameHandler): boolean => {
    if (cells === null || cells.hostCells()[0] === callsTaken) return false;
    callsTaken = (callsTaken + 1) | 0;
    answerToFile = true;
    const text = cells.take(0);
    if (text !== null) {
      fileFeed ??= parts.frameDecoder(onFrame);
      fileFeed(text);
    }
    return true;
  };
  const readHere = (n: number | null, onFrame: FrameHandler): boolean => {
    if (n === null) return false;
    pipeRead = (pipeRead + n) | 0;
    pipeFeed ??= parts.frameDecoder((kind, id, name, json) => {
      if (kind === "W") takeFile(onFrame);
      else onFrame(kind, id, name, json);
    });
    pipeFeed(pipeDecoder.decode(input.subarray(0, n), { stream: true }));
    return true;
  };
  /** Says the realm stopped polling, then looks at the file a last time. */
  const stopPolling = (onFrame: FrameHandler): boolean => {
    if (!polling || cells === null) return false;
    polling = false;
    cells.writeRealmPolling(0);
    return takeFile(onFrame);
  };
  const poll = (onFrame: FrameHandler, cells: FileCells): boolean | null => {
    if (!polling) {
      polling = true;
      cells.writeRealmPolling(1);
    }
    const until = performance.now() + spinMs;
    do {
      const host = cells.hostCells();
      if (host[0] !== callsTaken) return takeFile(onFrame);
      // The count may lag behind what the realm already read: only more
      // bytes than it read mean a read will not block.
      if (((host[2]! - pipeRead) | 0) > 0) {
        return readHere(io.readSync(input), onFrame);
      }
    } while (performance.now() < until);
    return null;
  };
  /** Puts an answer in the file; tells a host that stopped polling. */
  const answerThroughFile = (text: string, cells: FileCells): boolean => {
    if (!cells.put(1, text)) return false;
    batchesPut = (batchesPut + 1) | 0;
    cells.writeRealmBatches(batchesPut);
    if (cells.hostCells()[1] === 0) io.writeAll(lookBytes);
    return true;
  };
  return {
    send(kind, id, name, json) {
      outbox += parts.encodeFrame(kind, id, name, json);
    },
    flush() {
      if (outbox === "") return;
      const text = outbox;
      outbox = "";
      if (answerToFile && cells !== null) {
        answerToFile = false;
        if (answerThroughFile(text, cells)) return;
      }
      io.writeAll(encoder.encode(text));
    },
    receive(onFrame, block, spin) {
      if (!block) return io.read(input).then((n) => readHere(n, onFrame));
      if (spin && cells !== null) return poll(onFrame, cells);
      if (stopPolling(onFrame)) return true;
      return readHere(io.readSync(input), onFrame);
    },
  };
}
