/**
 * The child of the sandbox benchmark's "worker started ahead, behind a
 * process hop" baseline: the least a pooled worker sandbox can do. It reads
 * lines from stdin: `fresh` replaces its worker with one started ahead and
 * warmed up, then answers `ready`; any other line is a guest source (as
 * JSON), which the worker imports, and the child writes the default export
 * back as a JSON line.
 *
 * @module
 */

const workerUrl = new URL("./_bare_worker.ts", import.meta.url);
let worker: Worker | undefined;

function ask(source: string): Promise<unknown> {
  return new Promise((resolve) => {
    worker!.onmessage = (event) => resolve(event.data);
    worker!.postMessage(source);
  });
}

const encoder = new TextEncoder();
function write(line: string): void {
  const bytes = encoder.encode(`${line}\n`);
  for (let sent = 0; sent < bytes.length;) {
    sent += Deno.stdout.writeSync(bytes.subarray(sent));
  }
}

let buffered = "";
for await (
  const text of Deno.stdin.readable.pipeThrough(new TextDecoderStream())
) {
  buffered += text;
  let newline: number;
  while ((newline = buffered.indexOf("\n")) >= 0) {
    const line = buffered.slice(0, newline);
    buffered = buffered.slice(newline + 1);
    if (line === "fresh") {
      worker?.terminate();
      worker = new Worker(workerUrl, { type: "module" });
      await ask("export default 0;");
      write("ready");
    } else {
      write(JSON.stringify(await ask(JSON.parse(line))));
    }
  }
}
worker?.terminate();
