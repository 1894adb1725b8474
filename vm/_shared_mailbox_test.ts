import assert from "node:assert/strict";
import { MessageChannel, receiveMessageOnPort } from "node:worker_threads";
import { MAILBOX_BYTES, sharedMailbox, spinWait } from "./_shared_mailbox.ts";

/** Both sides of one mailbox in this thread, and what each side read. */
function pair(bytes = MAILBOX_BYTES) {
  const buffer = new SharedArrayBuffer(bytes);
  const toRealm = new MessageChannel();
  const fromRealm = new MessageChannel();
  const host = sharedMailbox(
    buffer,
    0,
    (text) => toRealm.port1.postMessage(text),
    () => receiveMessageOnPort(fromRealm.port2),
  );
  const realm = sharedMailbox(
    buffer,
    1,
    (text) => fromRealm.port1.postMessage(text),
    () => receiveMessageOnPort(toRealm.port2),
  );
  const read = (side: typeof host): string[] => {
    const texts: string[] = [];
    side.take((text) => texts.push(text));
    return texts;
  };
  return {
    host,
    realm,
    read,
    [Symbol.dispose]() {
      for (const port of [toRealm.port1, toRealm.port2]) port.close();
      for (const port of [fromRealm.port1, fromRealm.port2]) port.close();
    },
  };
}

Deno.test("sharedMailbox() delivers batches in the order they were sent, through the slot or the port", () => {
  using box = pair();
  // The first batch takes the slot; the next ones cannot overtake it.
  box.host.send("I1\ta\t1\n");
  box.host.send("I2\tb\t2\n");
  box.host.send("I3\tc\t3\n");
  assert.deepEqual(box.read(box.realm), [
    "I1\ta\t1\n",
    "I2\tb\t2\n",
    "I3\tc\t3\n",
  ]);
  assert.deepEqual(box.read(box.realm), []);
  // Everything was read, so the slot is used again.
  box.host.send("I4\td\t4\n");
  assert.equal(box.host.cells[1]! > 0, true);
  assert.deepEqual(box.read(box.realm), ["I4\td\t4\n"]);
  // The other direction is independent.
  box.realm.send('R1\t\t"é€😀"\n');
  box.realm.send("R2\t\tnull\n");
  assert.deepEqual(box.read(box.host), ['R1\t\t"é€😀"\n', "R2\t\tnull\n"]);
});

Deno.test("sharedMailbox() never lets a batch overtake one still waiting in the port", () => {
  using box = pair();
  box.host.send("I1\ta\t1\n");
  box.host.send("I2\tb\t2\n");
  const texts: string[] = [];
  // The realm reads the slot, then the port; the host sends again in
  // between, as it may from another thread.
  box.realm.take((text) => {
    texts.push(text);
    if (text.startsWith("I1")) {
      box.host.send("I3\tc\t3\n");
      box.host.send("I4\td\t4\n");
    }
  });
  box.realm.take((text) => texts.push(text));
  assert.deepEqual(texts.map((text) => text.slice(0, 2)), [
    "I1",
    "I2",
    "I3",
    "I4",
  ]);
});

Deno.test("sharedMailbox() sends a batch larger than its slot through the port, in order", () => {
  using box = pair(64 + 2 * 1024);
  const big = `I2\tbig\t"${"x".repeat(5000)}"\n`;
  box.host.send(big);
  box.host.send("I3\tsmall\t3\n");
  assert.deepEqual(box.read(box.realm), [big, "I3\tsmall\t3\n"]);
  box.host.send("I4\tsmall\t4\n");
  box.host.send(big);
  assert.deepEqual(box.read(box.realm), ["I4\tsmall\t4\n", big]);
});

Deno.test("sharedMailbox() bumps the reader's counter so Atomics.wait returns", () => {
  using box = pair();
  const { cells, inboundBell } = box.realm;
  const seen = Atomics.load(cells, inboundBell);
  box.host.send("I1\tf\tnull\n");
  // Without the bump this would wait for the whole timeout.
  assert.equal(Atomics.wait(cells, inboundBell, seen, 5000), "not-equal");
  assert.deepEqual(box.read(box.realm), ["I1\tf\tnull\n"]);
});

Deno.test("spinWait() returns at once for a changed cell and gives up after its spin and timeout", () => {
  const cells = new Int32Array(new SharedArrayBuffer(8));
  Atomics.store(cells, 1, 5);
  assert.equal(spinWait(cells, 1, 4, 10), true);
  assert.equal(spinWait(cells, 1, 4, 0), true);
  assert.equal(spinWait(cells, 0, 0, 0.2, 1), false);
});

Deno.test("spinWait() sees a change made by another thread while it spins or parks", () => {
  const buffer = new SharedArrayBuffer(8);
  const cells = new Int32Array(buffer);
  const worker = new Worker(
    `data:text/javascript,self.onmessage = (event) => {
      const cells = new Int32Array(event.data.buffer);
      Atomics.wait(cells, 1, 0);
      Atomics.store(cells, 0, 1);
      Atomics.notify(cells, 0);
    };`,
    { type: "module" },
  );
  try {
    worker.postMessage({ buffer });
    Atomics.store(cells, 1, 1);
    Atomics.notify(cells, 1);
    // Spins for 1 ms, then parks until the worker's notify.
    assert.equal(spinWait(cells, 0, 0, 1), true);
    assert.equal(Atomics.load(cells, 0), 1);
  } finally {
    worker.terminate();
  }
});
