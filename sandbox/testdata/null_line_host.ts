// A worker host that breaks its protocol on purpose: when given a run it
// reports it as started, writes a line of JSON that is not an object, and
// keeps running without ever answering. Used by
// worker_host_broken_line_test.ts only.

const encoder = new TextEncoder();
const write = (line: string) => Deno.stdout.writeSync(encoder.encode(line));
const decoder = new TextDecoder();
let pending = "";
const chunk = new Uint8Array(64 * 1024);
for (;;) {
  const read = await Deno.stdin.read(chunk);
  if (read === null) break;
  pending += decoder.decode(chunk.subarray(0, read), { stream: true });
  let newline = pending.indexOf("\n");
  while (newline >= 0) {
    const message = JSON.parse(pending.slice(0, newline));
    pending = pending.slice(newline + 1);
    if (message.t === "run") {
      write(`{"t":"started","id":${JSON.stringify(message.id)}}\nnull\n`);
    }
    newline = pending.indexOf("\n");
  }
}
