import assert from "node:assert/strict";
import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSSyncVariant,
} from "quickjs-emscripten-core";
import variant from "@jitl/quickjs-singlefile-browser-release-sync";
import {
  allocatorReach,
  findAllocatorState,
  moreMemoryFailed,
} from "./dlmalloc_state.ts";
import { cappedMemory, guardHostCopies } from "./memory_growth.ts";

async function freshModule() {
  const { memory } = cappedMemory(8 * 1024 * 1024);
  const module = await newQuickJSWASMModuleFromVariant(
    newVariant(variant as unknown as QuickJSSyncVariant, {
      wasmMemory: memory,
    }),
  );
  return { memory, allocator: guardHostCopies(module)!.raw };
}

Deno.test("findAllocatorState() finds dlmalloc's state in a fresh module without growing its memory", async () => {
  const { memory, allocator } = await freshModule();
  const length = memory.buffer.byteLength;
  const topField = findAllocatorState(allocator, memory);
  assert.notEqual(topField, null);
  assert.equal(memory.buffer.byteLength, length);
  assert.notEqual(allocatorReach(memory, topField!), null);
});

Deno.test("moreMemoryFailed() tells a block too large for the memory to be asked, which no growth records", async () => {
  const { memory, allocator } = await freshModule();
  const topField = findAllocatorState(allocator, memory)!;
  const small = allocator._malloc(1024 * 1024);
  assert.notEqual(small, 0);
  allocator._free(small);
  assert.equal(moreMemoryFailed(memory, topField), false);
  const length = memory.buffer.byteLength;
  assert.equal(allocator._malloc(2 ** 31 - 1), 0);
  assert.equal(memory.buffer.byteLength, length);
  assert.equal(moreMemoryFailed(memory, topField), true);
});

Deno.test("findAllocatorState() answers null for an allocator whose blocks are not dlmalloc's", () => {
  const memory = new WebAssembly.Memory({ initial: 32 });
  // Blocks at a fixed address, with no chunk header below them.
  const allocator = { _malloc: () => 65536, _free: () => {} };
  assert.equal(findAllocatorState(allocator, memory), null);
});
