/**
 * Run guest code where QuickJS is too slow or too small: in a Deno Web
 * Worker with every permission denied (`createWorkerSandbox`), or in a Deno
 * subprocess with no permissions and a real memory cap
 * (`createProcessSandbox`). Both take an ES module whose default export is
 * the result, refuse every import before the code runs, and answer with
 * the same `SandboxResult` data and error codes as the QuickJS tier.
 *
 * ```ts ignore
 * import { createProcessSandbox, createWorkerSandbox } from "@cordon/cordon/sandbox";
 * import assert from "node:assert/strict";
 *
 * const source = "export default ({ n }) => n * 2;";
 * await using worker = createWorkerSandbox();
 * await using process = createProcessSandbox();
 * const [a, b] = await Promise.all([
 *   worker.run(source, { context: { n: 21 } }),
 *   process.run({ source }, { context: { n: 21 } }),
 * ]);
 * assert.deepEqual([a.ok && a.value, b.ok && b.value], [42, 42]);
 * ```
 *
 * @module
 */

export * from "./types.ts";
export * from "./worker_sandbox.ts";
export * from "./process_sandbox.ts";
