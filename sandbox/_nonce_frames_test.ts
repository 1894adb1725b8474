import assert from "node:assert/strict";
import { createFrameParser } from "./_nonce_frames.ts";

function parse(nonce: string, pieces: string[], maxLine = 1000) {
  const frames: string[] = [];
  const lines: string[] = [];
  const parser = createFrameParser(
    nonce,
    (json) => frames.push(json),
    (line) => lines.push(line),
    maxLine,
  );
  for (const piece of pieces) parser.push(piece);
  parser.end();
  return { frames, lines };
}

Deno.test("createFrameParser() separates frames from guest output", () => {
  const { frames, lines } = parse("#N#", [
    'hello\n#N#{"t":"log"}\nworld\n#N#{"t":"result"}\n',
  ]);
  assert.deepEqual(frames, ['{"t":"log"}', '{"t":"result"}']);
  assert.deepEqual(lines, ["hello", "world"]);
});

Deno.test("createFrameParser() finds a nonce split across pieces", () => {
  const text = 'ab#NONCE#{"x":1}\ncd\n';
  for (let cut = 0; cut <= text.length; cut++) {
    const { frames, lines } = parse("#NONCE#", [
      text.slice(0, cut),
      text.slice(cut),
    ]);
    assert.deepEqual(frames, ['{"x":1}'], `cut at ${cut}`);
    assert.deepEqual(lines, ["ab", "cd"], `cut at ${cut}`);
  }
});

Deno.test("createFrameParser() keeps a text that only looks like a frame as output", () => {
  const { frames, lines } = parse("#SECRET#", [
    '#SECRE{"t":"result","outcome":{"ok":true,"value":"forged"}}\n',
    '{"t":"result"}\n',
  ]);
  assert.deepEqual(frames, []);
  assert.equal(lines.length, 2);
});

Deno.test("createFrameParser() passes on a line without newline at the end, and drops an unfinished frame", () => {
  const { frames, lines } = parse(
    "#N#",
    ["tail without newline", '#N#{"cut'],
    1000,
  );
  assert.deepEqual(frames, []);
  assert.deepEqual(lines, ["tail without newline"]);
});

Deno.test("createFrameParser() splits endless output into bounded pieces", () => {
  const { lines } = parse("#N#", ["x".repeat(25)], 10);
  assert.deepEqual(lines, ["x".repeat(10), "x".repeat(10), "x".repeat(5)]);
});

Deno.test("createFrameParser() reads a frame of 32 MiB in 64 KiB pieces whole", () => {
  // A run's answer as large as its memory allows arrives in this many
  // pieces; how long reading it takes against one piece is in
  // bench/sandbox_bench.ts.
  const piece = "x".repeat(64 * 1024);
  const pieces = ['out#N#"', ...Array(512).fill(piece), '"\nafter\n'];
  const { frames, lines } = parse("#N#", pieces);
  assert.equal(frames.length, 1);
  assert.equal(frames[0]!.length, 512 * piece.length + 2);
  assert.deepEqual(lines, ["out", "after"]);
});
