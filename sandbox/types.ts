/**
 * What every sandbox of this folder offers: `run()` and async disposal.
 *
 * @module
 */

import type { RunInputBoundOptions } from "../protocol/run_inputs.ts";
import type { DeclarationInput } from "../protocol/declaration.ts";
import type { JsonValue, SandboxResult } from "../protocol/sandbox_result.ts";

// The result types `run()` names, so this entry point documents them too.
export type {
  JsonValue,
  LogEntry,
  RunMetrics,
  SandboxError,
  SandboxFailure,
  SandboxResult,
  SandboxResultBase,
  SandboxSuccess,
  Tier,
} from "../protocol/sandbox_result.ts";

/** Per-run options of every sandbox tier. */
export interface SandboxRunOptions extends RunInputBoundOptions {
  /**
   * JSON data passed to a default-exported function.
   *
   * @default {null}
   */
  context?: JsonValue | undefined;
  /**
   * The guest's time limit in milliseconds, counted from the moment its
   * module starts to evaluate (process and worker start-up are not
   * counted). A run over it resolves with code `TIMEOUT` once the guest has
   * really stopped.
   *
   * @default {the sandbox's timeoutMs}
   */
  timeoutMs?: number | undefined;
  /** Aborts the run; it then resolves with code `ABORTED`. */
  signal?: AbortSignal | undefined;
  /**
   * The cap on captured console output, in bytes of UTF-8. Lines past it
   * are dropped and `logsTruncated` is `true`.
   *
   * @default {the sandbox's maxLogBytes}
   */
  maxLogBytes?: number | undefined;
}

/** A sandbox that runs guest ES modules and answers with data. */
export interface Sandbox extends AsyncDisposable {
  /** Where guest code runs. */
  readonly tier: "worker" | "process";
  /**
   * Runs one guest ES module. Its default export is the result; a function
   * is called with `context` and awaited, any other value is awaited.
   * Guest failures resolve as `{ ok: false, error: { code } }`, and so
   * does a declaration that cannot be used (`DECLARATION_INVALID`, as on
   * the QuickJS tier); the promise rejects only for a wrong option or a
   * disposed sandbox.
   *
   * @param declaration The guest module's source, or a declaration
   * `{ source, packages? }` as the QuickJS tier takes it. These tiers run
   * guest code without packs: the source may not import anything, and a
   * declaration that names packs fails with `DECLARATION_INVALID`.
   * @param options The context, limits and cancellation.
   * @returns The result.
   * @throws {TypeError} When an option has the wrong shape or is unknown, or
   * the context is not JSON data.
   * @throws {RangeError} When a limit is out of range.
   * @throws {CordonError} With code `SANDBOX_DISPOSED` after disposal.
   */
  run(
    declaration: DeclarationInput | string,
    options?: SandboxRunOptions,
  ): Promise<SandboxResult>;
}
