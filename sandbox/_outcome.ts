/**
 * Turns what a guest realm or a dead child reports into the failures of a
 * `SandboxResult`, the same way for both tiers. Everything a child sends is
 * untrusted: a realm outcome is checked field by field, and a realm may
 * only claim the codes a realm can produce.
 *
 * @module
 */

import { thrownSummary } from "../protocol/error_name.ts";
import { hasOwnKey } from "../protocol/host_fields.ts";
import type { FailureDetail } from "../protocol/run_result.ts";
import { runFailures } from "../protocol/run_result.ts";
import type { JsonValue } from "../protocol/sandbox_result.ts";
import type { RealmFailureCode, RealmOutcome } from "./_guest_realm.ts";

const REALM_CODES: ReadonlySet<string> = new Set<RealmFailureCode>([
  "GUEST_ERROR",
  "GUEST_SYNTAX_ERROR",
  "RESULT_NOT_SERIALIZABLE",
  "SANDBOX_CRASHED",
  "STACK_OVERFLOW",
]);

const MAX_DETAIL = 8192;

/**
 * Reads a realm outcome sent by a child.
 *
 * @param data The decoded message field.
 * @returns The outcome, or `undefined` when it is not a valid one.
 */
export function readRealmOutcome(data: unknown): RealmOutcome | undefined {
  if (typeof data !== "object" || data === null) return undefined;
  const outcome = data as Record<string, unknown>;
  if (outcome.ok === true && hasOwnKey(outcome, "value")) {
    return { ok: true, value: outcome.value as JsonValue };
  }
  if (
    outcome.ok === false && typeof outcome.code === "string" &&
    REALM_CODES.has(outcome.code) && typeof outcome.name === "string" &&
    typeof outcome.message === "string"
  ) {
    return {
      ok: false,
      code: outcome.code as RealmFailureCode,
      name: outcome.name,
      message: outcome.message,
    };
  }
  return undefined;
}

// The realm's label at the end of the first line. Its leading space is
// found by a look behind one character, as `\s+at` would start again at
// each space of a long run (V8 quotes a regular expression's source in its
// message) and cost the caller's thread time quadratic in the run; `trim()`
// drops the spaces.
const TRAILING_POSITION = /(?<=\s)at guest:\d+:\d+$/;

/**
 * Shortens an engine's syntax error to one line with its position, without
 * the label the realm puts in place of the module's URL (`at guest:1:16`):
 * `Unexpected token '}' at line 1, column 16`.
 *
 * @param raw The engine's message.
 * @returns The detail for {@linkcode guestSyntaxError}.
 */
export function syntaxErrorDetail(raw: string): string {
  // The position is the last one given: a code frame above it may quote
  // guest text that looks like one.
  const position = [...raw.matchAll(/\bguest:(\d+):(\d+)/g)].at(-1);
  let first = (raw.split("\n")[0] ?? "").replace(/^SyntaxError: /, "")
    .replace(TRAILING_POSITION, "").trim();
  if (first.length > MAX_DETAIL) first = first.slice(0, MAX_DETAIL) + "…";
  if (first === "") first = "the source could not be parsed";
  return position === undefined
    ? first
    : `${first} at line ${position[1]}, column ${position[2]}`;
}

/**
 * The failure of guest source that does not parse or link.
 *
 * @param detail What is wrong and where.
 * @returns The failure, code `GUEST_SYNTAX_ERROR`.
 */
export function guestSyntaxError(detail: string): FailureDetail {
  return {
    code: "GUEST_SYNTAX_ERROR",
    name: "SyntaxError",
    message:
      `The guest source is not a valid ES module: ${detail}; fix the syntax error`,
  };
}

/**
 * The failure a realm reported, with engine-specific forms made common:
 * syntax errors get the shared message, and V8's stack exhaustion (which
 * the realm told by identity) the message of `STACK_OVERFLOW`, as the
 * QuickJS tier reports it.
 *
 * @param outcome A failed realm outcome.
 * @returns The failure.
 */
export function realmFailure(
  outcome: Extract<RealmOutcome, { ok: false }>,
): FailureDetail {
  if (outcome.code === "GUEST_SYNTAX_ERROR") {
    return guestSyntaxError(syntaxErrorDetail(outcome.message));
  }
  if (outcome.code === "STACK_OVERFLOW") return runFailures.stackOverflow();
  return { code: outcome.code, name: outcome.name, message: outcome.message };
}

/**
 * The failure of a sandbox that ended without an answer.
 *
 * @param why What happened, starting lowercase.
 * @returns The failure, code `SANDBOX_CRASHED`.
 */
export function crashFailure(why: string): FailureDetail {
  return {
    code: "SANDBOX_CRASHED",
    name: "SandboxCrashedError",
    message:
      `The sandbox ended without an answer: ${why}; check the exit code and logs, the guest may have exhausted a limit`,
  };
}

/**
 * The failure of a run whose child's output this process could not read:
 * its own code threw on what the child wrote. The child is not trusted
 * with more; what was thrown is named, so the fault can be found.
 *
 * @param who The child, for the message: `worker host`, `process`.
 * @param error What the reading code threw.
 * @returns The failure, code `SANDBOX_CRASHED`.
 */
export function unreadOutputFailure(
  who: string,
  error: unknown,
): FailureDetail {
  return {
    code: "SANDBOX_CRASHED",
    name: "SandboxCrashedError",
    message:
      `The sandbox ended without an answer: reading the ${who}'s output failed in this process (${
        thrownSummary(error)
      }); this is a fault of cordon, not of the guest: report it with this message`,
  };
}

/**
 * The failure of a tier that cannot start here.
 *
 * @param message The whole message, saying what to do.
 * @returns The failure, code `SANDBOX_UNAVAILABLE`.
 */
export function unavailableFailure(message: string): FailureDetail {
  return { code: "SANDBOX_UNAVAILABLE", name: "NotSupportedError", message };
}

/**
 * Whether a child's last stderr output is V8's report of an exhausted heap.
 *
 * @param stderrTail The end of the child's stderr.
 * @returns `true` for a heap exhaustion report.
 */
export function isOutOfMemoryReport(stderrTail: string): boolean {
  return /Fatal JavaScript out of memory|JavaScript heap out of memory|Reached heap limit/i
    .test(stderrTail);
}

// Rust's report on a thread that ran out of stack, its first line naming
// the thread: `thread 'tokio-runtime-worker' (81) has overflowed its stack`.
const OVERFLOWED = String
  .raw`thread '[^'\n]*'(?: \(\d+\))? has overflowed its stack`;

/** The first stderr line of Rust's report on a thread out of stack. */
export const RUST_STACK_REPORT_LINE: RegExp = new RegExp(`^${OVERFLOWED}$`);

// The whole report, as the last thing the process wrote before it aborted.
const RUST_STACK_REPORT = new RegExp(
  String.raw`${OVERFLOWED}\r?\nfatal runtime error: stack overflow[^\n]*\n?$`,
);

/**
 * Whether a child ended as Deno ends when its module loader runs out of
 * stack on guest source nested too deep: Rust's report on stderr, then
 * SIGABRT. Guest code may print the report, but cannot raise the signal:
 * it has no run permission, and the process tier's bootstrap refuses
 * `Deno.kill`, which Deno allows on the own process without it. Another
 * abort writes its own report after the guest's. Windows has no signals,
 * so there the crash stays `SANDBOX_CRASHED`.
 *
 * @param exit How the child ended and the end of its stderr.
 * @returns `true` for Deno's loader out of stack.
 */
export function isLoaderStackOverflow(
  exit: { signal: string | null; stderrTail: string },
): boolean {
  return exit.signal === "SIGABRT" && RUST_STACK_REPORT.test(exit.stderrTail);
}

/**
 * The failure of guest source Deno's module loader could not parse for
 * want of stack.
 *
 * @returns The failure, code `STACK_OVERFLOW`.
 */
export function deepSourceFailure(): FailureDetail {
  return {
    code: "STACK_OVERFLOW",
    name: "StackOverflowError",
    message:
      "The guest source is nested too deep for Deno's module loader, which ran out of stack parsing it: split the nested expression into named variables or functions",
  };
}

/** The exit code with which Deno ends a process that used an unstable API without its flag. */
export const UNSTABLE_EXIT_CODE = 70;

/**
 * Why a worker host ended during a run: a fault in reading its output is
 * this process's, exit code 70 is Deno refusing
 * permission-restricted workers, a heap report is the run's memory cap,
 * Rust's stack report and SIGABRT guest source too deep for Deno's module
 * loader, anything else a crash.
 *
 * @param exit How the host ended.
 * @param memoryLimitBytes The heap cap, for the message.
 * @returns The failure.
 */
export function hostExitFailure(
  exit: {
    code: number;
    signal: string | null;
    stderrTail: string;
    readFault?: { error: unknown };
  },
  memoryLimitBytes: number,
): FailureDetail {
  if (exit.readFault !== undefined) {
    return unreadOutputFailure("worker host", exit.readFault.error);
  }
  if (exit.code === UNSTABLE_EXIT_CODE) {
    return unavailableFailure(
      `Cannot run guest code in a worker: this Deno ended the worker host with exit code ${UNSTABLE_EXIT_CODE}, because workers with restricted permissions need --unstable-worker-options; add "unstable": ["worker-options"] to deno.json or pass --unstable-worker-options, with a Deno that supports it`,
    );
  }
  if (isOutOfMemoryReport(exit.stderrTail)) {
    return runFailures.outOfMemory(memoryLimitBytes);
  }
  if (isLoaderStackOverflow(exit)) return deepSourceFailure();
  return crashFailure(
    `the worker host exited with code ${exit.code}${
      exit.signal === null ? "" : ` (${exit.signal})`
    }`,
  );
}
