/**
 * A private entry of the vm sandbox for the host bridge: the payload is
 * JSON text that trusted host code made from plain data, so the sandbox
 * sends it as it is instead of copying the value first.
 *
 * @module
 */

import type { SandboxResult } from "../protocol/sandbox_result.ts";

/** The key of the entry on a vm sandbox made by `createVmSandbox()`. */
export const INVOKE_JSON: unique symbol = Symbol("cordon.vm.invokeJson");

/** A sandbox that has the entry. */
export interface JsonInvoker {
  /**
   * Runs an exported function with a payload given as JSON text.
   *
   * @param name The exported function.
   * @param payloadJson The payload, made by `JSON.stringify` from plain data.
   * @returns What `invoke()` resolves to.
   */
  [INVOKE_JSON](name: string, payloadJson: string): Promise<SandboxResult>;
}
