// Shared helpers of the vm tier's Node tests. They import the Node build
// (`deno task build:node` writes it to dist/node/).

import { readFileSync } from "node:fs";

export const vm = await import("../../dist/node/vm/mod.js");

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
