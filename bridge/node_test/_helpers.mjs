// Shared helpers of the bridge's Node tests. They import the Node build of
// the bridge (`deno task build:node` writes it to dist/bridge/).

import { readFileSync } from "node:fs";

export const bridge = await import("../../dist/bridge/mod.js");
export const testing = await import("../../dist/bridge/testing.js");

export const ECHO_SOURCE = readFileSync(
  new URL("../../fixtures/plugins/echo_plugin.js", import.meta.url),
  "utf8",
);

/** The host-side twin of the example plugin's fingerprint. */
export function fingerprint(text) {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, "0");
}

/** CPU time (user + system) this process has used, in clock ticks. */
export function cpuTicks() {
  const stat = readFileSync("/proc/self/stat", "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]);
}

export function hasProc() {
  try {
    readFileSync("/proc/self/stat");
    return true;
  } catch {
    return false;
  }
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
