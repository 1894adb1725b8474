/**
 * A bare process hop for the plugin benchmark: a host plugin whose
 * `handleRequest()` sends the serialized request as one line to a child
 * Deno process running the same handler unsandboxed (`_hop_child.ts`), and
 * waits for its line back. No realm, no lockdown, no policy: what crossing
 * a process costs a request, to set beside the tiers that cross one.
 *
 * @module
 */

import { setImmediate } from "node:timers";
import { fileURLToPath } from "node:url";
import type {
  SerializedRequest,
  SerializedResponse,
} from "../protocol/bridge_messages.ts";
/** The hop's plugin, and how to end its child. */
export interface ProcessHop {
  plugin: {
    routes(): { method: "POST"; path: string }[];
    handleRequest(req: SerializedRequest): Promise<SerializedResponse>;
  };
  close(): Promise<void>;
}

/** Starts the child; frames sent in one pass of the event loop leave in one write, as the realm transport's do. */
export function startProcessHop(): ProcessHop {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      `--lock=${fileURLToPath(new URL("deno.lock", import.meta.url))}`,
      fileURLToPath(new URL("_hop_child.ts", import.meta.url)),
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const writer = child.stdin.getWriter();
  const encoder = new TextEncoder();
  const waiting = new Map<number, (answer: SerializedResponse) => void>();
  let nextId = 0;
  let outbox = "";
  const flush = () => {
    const text = outbox;
    outbox = "";
    writer.write(encoder.encode(text)).catch(() => {});
  };
  const reading = (async () => {
    let pending = "";
    for await (
      const text of child.stdout.pipeThrough(new TextDecoderStream())
    ) {
      pending += text;
      const lines = pending.split("\n");
      pending = lines.pop()!;
      for (const line of lines) {
        const tab = line.indexOf("\t");
        const id = Number(line.slice(0, tab));
        waiting.get(id)?.(JSON.parse(line.slice(tab + 1)));
        waiting.delete(id);
      }
    }
  })();
  return {
    plugin: {
      routes: () => [{ method: "POST", path: "/echo/:id" }],
      handleRequest(req) {
        const id = nextId++;
        if (outbox === "") setImmediate(flush);
        outbox += `${id}\t${JSON.stringify(req)}\n`;
        return new Promise((resolve) => waiting.set(id, resolve));
      },
    },
    async close() {
      await writer.close().catch(() => {});
      await reading;
      await child.status;
    },
  };
}
