/**
 * The child of the sandbox benchmark's bare stdio echo: writes back each
 * piece of stdin it reads, as the worker host reads its requests and
 * writes its answers, so the echo's round trip is what crossing to a child
 * process and back costs without any sandbox work.
 *
 * @module
 */

const chunk = new Uint8Array(64 * 1024);
for (;;) {
  const read = await Deno.stdin.read(chunk);
  if (read === null) break;
  for (let sent = 0; sent < read;) {
    sent += Deno.stdout.writeSync(chunk.subarray(sent, read));
  }
}
