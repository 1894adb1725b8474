import assert from "node:assert/strict";
import { answerWaitPolicy, hostFileSide } from "./_realm_transport.ts";
import { type FileCells, LOOK_FRAME } from "./_file_channel.ts";

Deno.test("answerWaitPolicy() forgives one wait that runs out, then skips twice as many lone calls after each further miss until one is answered in time", () => {
  const policy = answerWaitPolicy();
  const wanted = (n: number) =>
    Array.from({ length: n }, () => policy.wanted());

  assert.deepEqual(wanted(3), [true, true, true]);
  // A single miss between answers in time skips nothing.
  policy.record(false);
  assert.deepEqual(wanted(1), [true]);
  policy.record(true);
  policy.record(false);
  assert.deepEqual(wanted(1), [true]);
  // Misses in a row: skip 1, 2, then 4 calls.
  policy.record(false);
  assert.deepEqual(wanted(2), [false, true]);
  policy.record(false);
  assert.deepEqual(wanted(3), [false, false, true]);
  policy.record(false);
  assert.deepEqual(wanted(5), [false, false, false, false, true]);
  // An answer in time forgives everything.
  policy.record(true);
  policy.record(false);
  assert.deepEqual(wanted(1), [true]);
  policy.record(false);
  assert.deepEqual(wanted(2), [false, true]);
});

Deno.test("answerWaitPolicy() skips at most 1,024 lone calls after a miss", () => {
  const policy = answerWaitPolicy();
  for (let miss = 0; miss < 20; miss++) {
    while (!policy.wanted());
    policy.record(false);
  }
  let skipped = 0;
  while (!policy.wanted()) skipped++;
  assert.equal(skipped, 1024);
});

/**
 * The host's view of a shared file, in memory, with a script for what the
 * realm's cells read: each read of the realm's cells takes the next entry
 * (the last one stays), so a test can have the realm stop polling, or its
 * batch arrive, between two reads.
 */
function scriptedCells(realmReads: [batches: number, polling: number][]) {
  const hostCells = new Int32Array(3);
  const realmCells = new Int32Array(2);
  const slots: string[] = ["", ""];
  const log: string[] = [];
  let read = 0;
  const cells: FileCells = {
    hostCells: () => hostCells,
    realmCells() {
      const [batches, polling] =
        realmReads[Math.min(read++, realmReads.length - 1)]!;
      realmCells[0] = batches;
      realmCells[1] = polling;
      return realmCells;
    },
    writeHostCalls(count, polling) {
      hostCells[0] = count;
      hostCells[1] = polling;
      log.push(`calls ${count} polling ${polling}`);
    },
    writeHostPolling(polling) {
      hostCells[1] = polling;
      log.push(`polling ${polling}`);
    },
    writePipeSent(bytes) {
      hostCells[2] = bytes;
    },
    writeRealmBatches: () => {},
    writeRealmPolling: () => {},
    put(slot, text) {
      slots[slot] = text;
      return text.length <= 100;
    },
    take: (slot) => slots[slot]!,
  };
  return { cells, hostCells, slots, log };
}

function hostSide(realmReads: [number, number][]) {
  const file = scriptedCells(realmReads);
  const piped: string[] = [];
  const delivered: string[] = [];
  const side = hostFileSide(
    file.cells,
    (text) => piped.push(text),
    (kind, id, _name, json) => delivered.push(`${kind}${id} ${json}`),
  );
  return { ...file, side, piped, delivered };
}

Deno.test("hostFileSide() sends a lone call through stdin while the realm does not poll the file", () => {
  const host = hostSide([[0, 0]]);
  assert.equal(host.side.sendLone("J1\tf\t1\n"), false);
  assert.deepEqual(host.log, []);
});

Deno.test("hostFileSide() puts a lone call in the file and takes the answer while it waits", () => {
  // Polling before and after the put, then the answer is there.
  const host = hostSide([[0, 1], [0, 1], [1, 1]]);
  host.slots[1] = "R1\t\t2\n";
  assert.equal(host.side.sendLone("J1\tf\t1\n"), true);
  assert.equal(host.slots[0], "J1\tf\t1\n");
  assert.deepEqual(host.log, ["calls 1 polling 1"]);
  assert.deepEqual(host.delivered, ["R1 2"]);
  assert.deepEqual(host.piped, []);
  // A look frame for a batch already taken delivers nothing again.
  host.side.look();
  assert.deepEqual(host.delivered, ["R1 2"]);
});

Deno.test("hostFileSide() writes a look frame when the realm stopped polling as the call went in", () => {
  const host = hostSide([[0, 1], [0, 0], [0, 0]]);
  assert.equal(host.side.sendLone("J1\tf\t1\n"), true);
  assert.deepEqual(host.piped, [LOOK_FRAME]);
  // The wait ran out: the host says it stopped polling, then looks again.
  assert.deepEqual(host.log, ["calls 1 polling 1", "polling 0"]);
  assert.deepEqual(host.delivered, []);
});

Deno.test("hostFileSide() takes an answer that came just as its wait ran out, and one that comes later on a look frame", () => {
  // The answer shows only once the host said it stopped polling.
  const host = hostSide([[0, 1]]);
  host.cells.realmCells = () =>
    new Int32Array([host.log.includes("polling 0") ? 1 : 0, 1]);
  host.slots[1] = "R1\t\t1\n";
  assert.equal(host.side.sendLone("J1\tf\t1\n"), true);
  assert.deepEqual(host.log, ["calls 1 polling 1", "polling 0"]);
  assert.deepEqual(host.delivered, ["R1 1"]);

  // The next call finds no answer at all; a later look frame brings it.
  const late = hostSide([[0, 1], [0, 1], [0, 1]]);
  late.slots[1] = "R1\t\t1\n";
  late.side.sendLone("J1\tf\t1\n");
  assert.deepEqual(late.delivered, []);
  // While its batch is out, the next lone call goes through stdin.
  assert.equal(late.side.sendLone("J2\tf\t2\n"), false);
  late.cells.realmCells = () => new Int32Array([1, 1]);
  late.side.look();
  assert.deepEqual(late.delivered, ["R1 1"]);
});

Deno.test("hostFileSide() stops waiting after two late answers in a row and tells the realm so", () => {
  let batches = 0;
  const host = hostSide([[0, 1]]);
  host.cells.realmCells = () => new Int32Array([batches, 1]);
  const call = (n: number) => {
    host.slots[1] = `R${n}\t\t${n}\n`;
    assert.equal(host.side.sendLone(`J${n}\tf\t${n}\n`), true);
    batches++;
    host.side.look();
  };
  call(1);
  call(2);
  call(3);
  assert.deepEqual(host.log, [
    "calls 1 polling 1",
    "polling 0",
    "calls 2 polling 1",
    "polling 0",
    "calls 3 polling 0",
  ]);
  assert.deepEqual(host.delivered, ["R1 1", "R2 2", "R3 3"]);
});

Deno.test("hostFileSide() counts what it wrote to stdin in UTF-8 bytes, and sends what does not fit the slot through stdin", () => {
  const host = hostSide([[0, 1]]);
  host.side.wrotePipe('I1\tf\t"é€😀"\n');
  assert.equal(host.hostCells[2], 6 + 2 + 3 + 4 + 2);
  assert.equal(host.side.sendLone("J2\tf\t" + "x".repeat(100) + "\n"), false);
  assert.deepEqual(host.log, []);
});
