import assert from "node:assert/strict";
import { encodeFrame, frameDecoder, type FrameHandler } from "./_line_codec.ts";

type Message = [string, number, string, string];

function collect(): { messages: Message[]; handler: FrameHandler } {
  const messages: Message[] = [];
  return {
    messages,
    handler: (kind, id, name, json) => messages.push([kind, id, name, json]),
  };
}

Deno.test("encodeFrame() writes the fixed fields, then the JSON text unescaped", () => {
  const json = JSON.stringify({ body: 'say "hi"\n\tthere', n: [1, 2] });
  const line = encodeFrame("I", 7, "handleRequest", json);
  assert.equal(line, `I7\thandleRequest\t${json}\n`);
  assert.equal(line.split("\n").length, 2);
});

Deno.test("frameDecoder() gives back each message's fields", () => {
  const { messages, handler } = collect();
  const decode = frameDecoder(handler);
  const json = JSON.stringify({ text: 'tab\tnewline\nquote"', list: [null] });
  decode(
    encodeFrame("R", 1, "", json) +
      encodeFrame("L", 0, "info", JSON.stringify("a\tb\nc")) +
      encodeFrame("Y", 0, "", ""),
  );
  assert.deepEqual(messages, [
    ["R", 1, "", json],
    ["L", 0, "info", '"a\\tb\\nc"'],
    ["Y", 0, "", ""],
  ]);
});

Deno.test("frameDecoder() reads frames cut anywhere across chunks", () => {
  const json = JSON.stringify({ s: "é€😀\t", n: 12345678901 });
  const text = encodeFrame("I", 1, "a", json) + encodeFrame("I", 2, "b", "[]") +
    encodeFrame("S", 9007199254740991, "", "null");
  for (let cut = 0; cut <= text.length; cut++) {
    const { messages, handler } = collect();
    const decode = frameDecoder(handler);
    decode(text.slice(0, cut));
    decode(text.slice(cut));
    assert.deepEqual(messages, [
      ["I", 1, "a", json],
      ["I", 2, "b", "[]"],
      ["S", 9007199254740991, "", "null"],
    ], `cut at ${cut}`);
  }
});

Deno.test("encodeFrame() keeps names and JSON text that would break the framing", () => {
  const { messages, handler } = collect();
  const decode = frameDecoder(handler);
  const pretty = JSON.stringify({ a: [1, "x\ny"], b: {} }, null, 2);
  for (const name of ["tab\there", "new\nline", '"quoted"', "", "fs.readDir"]) {
    decode(encodeFrame("C", 3, name, pretty));
  }
  assert.deepEqual(
    messages.map(([, , name]) => name),
    ["tab\there", "new\nline", '"quoted"', "", "fs.readDir"],
  );
  for (const [, , , json] of messages) {
    assert.deepEqual(JSON.parse(json), { a: [1, "x\ny"], b: {} });
  }
});

Deno.test("frameDecoder() skips lines that do not have the frame's shape", () => {
  const { messages, handler } = collect();
  const decode = frameDecoder(handler);
  decode(
    [
      "garbage",
      "R\t\tnull",
      "Rx1\t\tnull",
      "R1\tno second tab",
      "R-1\t\tnull",
      "R99999999999999999\t\tnull",
      'C2\t"unterminated\tnull',
      "C2\t[1]\tnull",
      "",
      "R5\t\ttrue",
    ].join("\n") + "\n",
  );
  assert.deepEqual(messages, [["C", 2, "[1]", "null"], ["R", 5, "", "true"]]);
});

Deno.test("frameDecoder() keeps the frames after one whose handler throws", () => {
  const seen: number[] = [];
  const decode = frameDecoder((_kind, id) => {
    seen.push(id);
    if (id === 1) throw new Error("handler failed");
  });
  assert.throws(
    () => decode(encodeFrame("R", 1, "", "1") + encodeFrame("R", 2, "", "2")),
    /handler failed/,
  );
  decode(encodeFrame("R", 3, "", "3"));
  assert.deepEqual(seen, [1, 2, 3]);
});

Deno.test("frameDecoder() reports a line over maxLineChars once, holds none of it and decodes nothing after it", () => {
  const seen: number[] = [];
  let overflows = 0;
  const decode = frameDecoder((_kind, id) => seen.push(id), {
    maxLineChars: 16,
    onOverflow: () => overflows++,
  });
  decode(encodeFrame("R", 1, "", '"ok"'));
  // A long line in pieces without a newline, then one that ends it.
  decode("R2\t\t" + "x".repeat(10));
  decode("x".repeat(10));
  decode("x\n" + encodeFrame("R", 3, "", "3"));
  assert.deepEqual([seen, overflows], [[1], 1]);
  // A long line that arrives whole.
  const whole: number[] = [];
  let wholeOverflows = 0;
  const decodeWhole = frameDecoder((_kind, id) => whole.push(id), {
    maxLineChars: 16,
    onOverflow: () => wholeOverflows++,
  });
  decodeWhole(encodeFrame("R", 4, "", `"${"y".repeat(40)}"`));
  assert.deepEqual([whole, wholeOverflows], [[], 1]);
});
