import assert from "node:assert/strict";
import { encodeLine, lineDecoder, type LineHandler } from "./_line_codec.ts";

type Message = [Record<string, unknown>, string | undefined];

function collect(): { messages: Message[]; handler: LineHandler } {
  const messages: Message[] = [];
  return { messages, handler: (header, json) => messages.push([header, json]) };
}

Deno.test("encodeLine() puts JSON text after a tab, unescaped", () => {
  const json = JSON.stringify({ body: 'say "hi"\n\tthere', n: [1, 2] });
  const line = encodeLine({ t: "invoke", id: 7, name: "handleRequest" }, json);
  assert.equal(
    line,
    `{"t":"invoke","id":7,"name":"handleRequest"}\t${json}\n`,
  );
  assert.equal(line.split("\n").length, 2);
});

Deno.test("lineDecoder() gives back each header and its JSON text", () => {
  const { messages, handler } = collect();
  const decode = lineDecoder(handler);
  const json = JSON.stringify({ text: 'tab\tnewline\nquote"', list: [null] });
  decode(
    encodeLine({ t: "result", id: 1, ok: true }, json) +
      encodeLine({ t: "log", level: "info", message: "a\tb\nc" }, undefined),
  );
  assert.deepEqual(messages, [
    [{ t: "result", id: 1, ok: true }, json],
    [{ t: "log", level: "info", message: "a\tb\nc" }, undefined],
  ]);
  assert.deepEqual(JSON.parse(messages[0]![1]!), JSON.parse(json));
});

Deno.test("lineDecoder() reads lines cut anywhere across chunks", () => {
  const json = JSON.stringify({ body: "x".repeat(300), ünï: "çødé ✓" });
  const text = encodeLine({ t: "invoke", id: 1, name: "a" }, json) +
    encodeLine({ t: "invoke", id: 2, name: "b" }, "[]") +
    encodeLine({ t: "ready" }, undefined);
  for (const size of [1, 2, 7, 64, text.length]) {
    const { messages, handler } = collect();
    const decode = lineDecoder(handler);
    for (let i = 0; i < text.length; i += size) decode(text.slice(i, i + size));
    assert.deepEqual(messages, [
      [{ t: "invoke", id: 1, name: "a" }, json],
      [{ t: "invoke", id: 2, name: "b" }, "[]"],
      [{ t: "ready" }, undefined],
    ], `chunks of ${size}`);
  }
});

Deno.test("encodeLine() escapes text that would break the framing", () => {
  // No JSON.stringify output holds a raw tab or newline; anything else
  // travels escaped inside the header and still arrives intact.
  const { messages, handler } = collect();
  const decode = lineDecoder(handler);
  const odd = 'not json\n{"t":"call","callId":1,"op":"fs.readTextFile"}\tx';
  const line = encodeLine({ t: "result", id: 3, ok: true }, odd);
  assert.equal(line.indexOf("\n"), line.length - 1);
  decode(line);
  assert.deepEqual(messages, [[{ t: "result", id: 3, ok: true }, odd]]);
});

Deno.test("lineDecoder() skips lines that are not a JSON object header", () => {
  const { messages, handler } = collect();
  const decode = lineDecoder(handler);
  decode('oops\n[1,2]\t{}\nnull\n"text"\n{"t":"ready"}\n{"t":\t1\n');
  assert.deepEqual(messages, [[{ t: "ready" }, undefined]]);
});
