/**
 * The child of the plugin benchmark's bare process hop (`_process_hop.ts`):
 * runs the echo plugin's handler, unsandboxed, on each line of stdin
 * (`<id>\t<request JSON>`) and answers `<id>\t<response JSON>` on stdout,
 * one write per chunk read.
 *
 * @module
 */

import { importHostPlugin } from "./_echo_plugin.ts";

const plugin = await importHostPlugin();
const encoder = new TextEncoder();
const decoder = new TextDecoder();
let pending = "";
for await (const chunk of Deno.stdin.readable) {
  pending += decoder.decode(chunk, { stream: true });
  const lines = pending.split("\n");
  pending = lines.pop()!;
  let out = "";
  for (const line of lines) {
    const tab = line.indexOf("\t");
    const answer = plugin.handleRequest(JSON.parse(line.slice(tab + 1)));
    out += `${line.slice(0, tab)}\t${JSON.stringify(answer)}\n`;
  }
  const bytes = encoder.encode(out);
  for (let sent = 0; sent < bytes.length;) {
    sent += Deno.stdout.writeSync(bytes.subarray(sent));
  }
}
