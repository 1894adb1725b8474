import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  FILE_CHANNEL_BYTES,
  FILE_SLOT_BYTES,
  fileCells,
  fileChannel,
  LOOK_FRAME,
  type PipeIo,
} from "./_file_channel.ts";
import { encodeFrame, frameDecoder } from "./_line_codec.ts";

/** A shared file, seen by the host and by the realm through two descriptors. */
function sharedFile(slotBytes = FILE_SLOT_BYTES) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cordon-test-"));
  const file = path.join(dir, "channel");
  const hostFd = fs.openSync(file, "wx+", 0o600);
  fs.ftruncateSync(hostFd, 64 + 2 * (4 + slotBytes));
  const realmFd = fs.openSync(file, "r+");
  return {
    host: fileCells(fs, hostFd, slotBytes),
    realm: fileCells(fs, realmFd, slotBytes),
    [Symbol.dispose]() {
      fs.closeSync(hostFd);
      fs.closeSync(realmFd);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Stdin and stdout in memory. A read with nothing to read throws: the
 * channel must never block where the host sent nothing.
 */
function memoryPipes() {
  const encoder = new TextEncoder();
  let stdin = new Uint8Array(0);
  const written: string[] = [];
  const decoder = new TextDecoder();
  const readInto = (into: Uint8Array): number => {
    if (stdin.length === 0) throw new Error("the read would block");
    const n = Math.min(into.length, stdin.length);
    into.set(stdin.subarray(0, n));
    stdin = stdin.subarray(n);
    return n;
  };
  const io: PipeIo = {
    readSync: readInto,
    read: (into) => Promise.resolve(readInto(into)),
    writeAll: (bytes) => void written.push(decoder.decode(bytes)),
  };
  return {
    io,
    written,
    /** Queues host bytes on stdin; gives their UTF-8 length. */
    hostWrites(text: string): number {
      const bytes = encoder.encode(text);
      const next = new Uint8Array(stdin.length + bytes.length);
      next.set(stdin);
      next.set(bytes, stdin.length);
      stdin = next;
      return bytes.length;
    },
  };
}

/** A realm channel over a shared file and memory pipes, and what it got. */
function realmEnd(spinMs = 5) {
  const file = sharedFile();
  const pipes = memoryPipes();
  const channel = fileChannel({
    io: pipes.io,
    cells: file.realm,
    encodeFrame,
    frameDecoder,
    spinMs,
  });
  const frames: string[] = [];
  const onFrame = (kind: string, id: number, name: string, json: string) =>
    void frames.push(`${kind}${id} ${name} ${json}`);
  const hostAnswers = () => {
    const texts: string[] = [];
    frameDecoder((kind, id, _name, json) => texts.push(`${kind}${id} ${json}`))(
      file.host.take(1) ?? "",
    );
    return texts;
  };
  /** The host puts its `count`th call in the file, polling or not. */
  const hostPuts = (text: string, count: number, polling = 1) => {
    file.host.put(0, text);
    file.host.writeHostCalls(count, polling);
  };
  return { file, pipes, channel, frames, onFrame, hostAnswers, hostPuts };
}

Deno.test("fileCells() carries text through either slot and refuses text that does not fit", () => {
  using file = sharedFile(64);
  assert.equal(file.host.put(0, 'J1\tf\t"é€😀"\n'), true);
  assert.equal(file.realm.take(0), 'J1\tf\t"é€😀"\n');
  assert.equal(file.realm.put(1, "R1\t\t" + "x".repeat(58) + "\n"), true);
  assert.equal(file.host.take(1), "R1\t\t" + "x".repeat(58) + "\n");
  // 65 bytes, and 22 characters that take 66 bytes.
  assert.equal(file.realm.put(1, "y".repeat(65)), false);
  assert.equal(file.realm.put(1, "€".repeat(22)), false);
  assert.equal(file.host.take(1), "R1\t\t" + "x".repeat(58) + "\n");
});

Deno.test("fileCells() reads a slot longer than its first read, and no slot from a length out of range", () => {
  using file = sharedFile();
  const long = "R1\t\t" + "é".repeat(20_000) + "\n";
  assert.equal(file.realm.put(1, long), true);
  assert.equal(file.host.take(1), long);
  const fd = fs.openSync(
    path.join(os.tmpdir(), "cordon-length-check"),
    "w+",
  );
  try {
    fs.ftruncateSync(fd, FILE_CHANNEL_BYTES);
    fs.writeSync(
      fd,
      new Uint8Array(new Int32Array([FILE_SLOT_BYTES + 1]).buffer),
      0,
      4,
      64,
    );
    assert.equal(fileCells(fs, fd, FILE_SLOT_BYTES).take(0), null);
    fs.writeSync(fd, new Uint8Array(new Int32Array([-1]).buffer), 0, 4, 64);
    assert.equal(fileCells(fs, fd, FILE_SLOT_BYTES).take(0), null);
  } finally {
    fs.closeSync(fd);
    fs.rmSync(path.join(os.tmpdir(), "cordon-length-check"));
  }
});

Deno.test("fileCells() keeps each side's cells apart", () => {
  using file = sharedFile();
  file.host.writeHostCalls(7, 1);
  file.host.writePipeSent(-5);
  file.realm.writeRealmBatches(3);
  file.realm.writeRealmPolling(1);
  assert.deepEqual([...file.realm.hostCells()], [7, 1, -5]);
  assert.deepEqual([...file.host.realmCells()], [3, 1]);
  file.host.writeHostPolling(0);
  file.realm.writeRealmPolling(0);
  assert.deepEqual([...file.realm.hostCells()], [7, 0, -5]);
  assert.deepEqual([...file.host.realmCells()], [3, 0]);
});

Deno.test("fileChannel() takes a call from the file while it polls, and answers through the file without a look frame to a host that polls", () => {
  const realm = realmEnd();
  using _file = realm.file;
  // Nothing came: the poll gives null and the realm says it polls.
  assert.equal(realm.channel.receive(realm.onFrame, true, true), null);
  assert.equal(realm.file.host.realmCells()[1], 1);
  realm.hostPuts(encodeFrame("J", 1, "f", "[1]"), 1);
  assert.equal(realm.channel.receive(realm.onFrame, true, true), true);
  assert.deepEqual(realm.frames, ["J1 f [1]"]);
  realm.channel.send("R", 1, "", "2");
  realm.channel.flush();
  assert.deepEqual(realm.file.host.realmCells()[0], 1);
  assert.deepEqual(realm.hostAnswers(), ["R1 2"]);
  assert.deepEqual(realm.pipes.written, []);
  // Later batches go through stdout.
  realm.channel.send("L", 0, "info", '"late"');
  realm.channel.flush();
  assert.deepEqual(realm.pipes.written, ['L0\tinfo\t"late"\n']);
  assert.equal(realm.file.host.realmCells()[0], 1);
});

Deno.test("fileChannel() writes a look frame after its answer when the host no longer polls", () => {
  const realm = realmEnd();
  using _file = realm.file;
  realm.channel.receive(realm.onFrame, true, true);
  realm.hostPuts("J1\tf\t1\n", 1, 0);
  assert.equal(realm.channel.receive(realm.onFrame, true, true), true);
  realm.channel.send("R", 1, "", "1");
  realm.channel.flush();
  assert.deepEqual(realm.pipes.written, [LOOK_FRAME]);
  assert.deepEqual(realm.hostAnswers(), ["R1 1"]);
});

Deno.test("fileChannel() looks at the file a last time when it stops polling, before it reads stdin", () => {
  const realm = realmEnd();
  using _file = realm.file;
  realm.channel.receive(realm.onFrame, true, true);
  // The host saw the realm polling and put a call just as it stopped.
  realm.hostPuts("J1\tf\t1\n", 1);
  assert.equal(realm.channel.receive(realm.onFrame, true, false), true);
  assert.deepEqual(realm.frames, ["J1 f 1"]);
  assert.equal(realm.file.host.realmCells()[1], 0);
  // Not polling, it reads stdin; a look frame there takes the file's call.
  realm.hostPuts("J2\tf\t2\n", 2);
  realm.pipes.hostWrites("I3\tg\t3\n" + LOOK_FRAME);
  assert.equal(realm.channel.receive(realm.onFrame, true, false), true);
  assert.deepEqual(realm.frames, ["J1 f 1", "I3 g 3", "J2 f 2"]);
  // A look frame for a call already taken changes nothing.
  realm.pipes.hostWrites(LOOK_FRAME);
  assert.equal(realm.channel.receive(realm.onFrame, true, false), true);
  assert.equal(realm.frames.length, 3);
});

Deno.test("fileChannel() reads stdin while it polls only when the host wrote more than it read", () => {
  const realm = realmEnd();
  using _file = realm.file;
  realm.channel.receive(realm.onFrame, true, true);
  const sent = realm.pipes.hostWrites("I1\tf\t1\n");
  realm.file.host.writePipeSent(sent);
  assert.equal(realm.channel.receive(realm.onFrame, true, true), true);
  assert.deepEqual(realm.frames, ["I1 f 1"]);
  // A count that lags behind what the realm read: a read would block (the
  // memory pipe throws then), so the poll must end with null instead.
  const next = realm.pipes.hostWrites("I2\tf\t2\n");
  assert.equal(realm.channel.receive(realm.onFrame, true, false), true);
  realm.file.host.writePipeSent(sent);
  assert.equal(realm.channel.receive(realm.onFrame, true, true), null);
  realm.file.host.writePipeSent(sent + next);
  assert.equal(realm.channel.receive(realm.onFrame, true, true), null);
  assert.deepEqual(realm.frames, ["I1 f 1", "I2 f 2"]);
});

Deno.test("fileChannel() sends an answer that does not fit the slot through stdout", () => {
  const realm = realmEnd();
  using _file = realm.file;
  realm.channel.receive(realm.onFrame, true, true);
  realm.hostPuts("J1\tf\t1\n", 1);
  realm.channel.receive(realm.onFrame, true, true);
  const big = JSON.stringify("é".repeat(FILE_SLOT_BYTES));
  realm.channel.send("R", 1, "", big);
  realm.channel.flush();
  assert.deepEqual(realm.pipes.written, [`R1\t\t${big}\n`]);
  assert.equal(realm.file.host.realmCells()[0], 0);
});

Deno.test("fileChannel() without a file reads stdin for every wait", () => {
  const pipes = memoryPipes();
  const channel = fileChannel({
    io: pipes.io,
    cells: null,
    encodeFrame,
    frameDecoder,
    spinMs: 5,
  });
  const frames: string[] = [];
  pipes.hostWrites("J1\tf\t1\n");
  assert.equal(
    channel.receive((kind, id) => frames.push(kind + id), true, true),
    true,
  );
  channel.send("R", 1, "", "1");
  channel.flush();
  assert.deepEqual(frames, ["J1"]);
  assert.deepEqual(pipes.written, ["R1\t\t1\n"]);
});
