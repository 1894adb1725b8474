/**
 * Starts the Deno subprocesses both tiers use, and reads their output.
 *
 * @module
 */

import {
  GUEST_CHILD_FLAGS,
  hostTimeZone,
  SELF_CONTAINED_FLAGS,
} from "../protocol/host_environment.ts";
import type { FailureDetail } from "../protocol/run_result.ts";
import { unavailableFailure } from "./_outcome.ts";
import { dyingWithParent, SETPRIV } from "./parent_death.ts";
import { withCpuLimit } from "./_cpu_limit.ts";
import { systemRefusedMessage } from "./system_helper.ts";

/**
 * Flags every sandbox child gets: those of every child that runs guest
 * code (no prompts, no V8 code cache), and no config, no remote code.
 */
export const BASE_FLAGS: readonly string[] = Object.freeze([
  "run",
  ...GUEST_CHILD_FLAGS,
  ...SELF_CONTAINED_FLAGS,
]);

/**
 * A started child and whether the kernel holds its CPU limit (see
 * `withCpuLimit`), or why it could not start.
 */
export type Spawned =
  | { ok: true; child: Deno.ChildProcess; cpuLimited: boolean }
  | { ok: false; failure: FailureDetail };

/** Where a child starts, and the run it serves alone. */
export interface SpawnOptions {
  /** The child's working folder (default: this process's). */
  cwd?: string;
  /**
   * The time limit of the one run the child serves: the kernel then ends
   * it after a CPU time derived from it, where `prlimit` may run.
   */
  timeoutMs?: number;
}

/** The options of a child that starts in this process's working folder. */
const NO_SPAWN_OPTIONS: SpawnOptions = Object.freeze(Object.create(null));

/**
 * Starts `deno` with piped stdio and an environment made only of `env`.
 *
 * On Linux the child dies with the thread that starts it (see
 * `dyingWithParent`), so a guest stuck in a loop does not outlive this
 * process. A child that serves one run (`timeoutMs`) also gets a CPU time
 * limit the kernel holds, which ends a guest stuck in a loop while this
 * process's event loop does not turn.
 *
 * @param args The arguments after the executable.
 * @param env The child's whole environment.
 * @param what The sandbox's name, for messages.
 * @param options Where the child starts, and the run it serves alone.
 * @returns The child, or a `SANDBOX_UNAVAILABLE` failure when this process
 * may not start subprocesses, or its working folder is gone.
 */
export function spawnDeno(
  args: string[],
  env: Record<string, string>,
  what: string,
  options: SpawnOptions = NO_SPAWN_OPTIONS,
): Spawned {
  const executable = Deno.execPath();
  // Own properties only: a cwd or timeoutMs a dependency of the host put on
  // Object.prototype would start the child elsewhere, or end a long-lived
  // worker host after some seconds of CPU.
  const cwd = Object.hasOwn(options, "cwd") ? options.cwd : undefined;
  const timeoutMs = Object.hasOwn(options, "timeoutMs")
    ? options.timeoutMs
    : undefined;
  const limited = timeoutMs === undefined
    ? null
    : withCpuLimit(executable, args, timeoutMs);
  const [command, commandArgs] = dyingWithParent(
    ...(limited ?? [executable, args]),
  );
  try {
    // No prototype: Deno reads cwd, uid, gid and the rest of the options
    // as plain properties, and one a dependency of the host put on
    // Object.prototype (a cwd) would start the child elsewhere, where its
    // relative grants name other files.
    const child = new Deno.Command(command, {
      __proto__: null,
      args: commandArgs,
      ...(cwd === undefined ? {} : { cwd }),
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      clearEnv: true,
      env: { NO_COLOR: "1", ...hostTimeZone(), ...env },
    } as Deno.CommandOptions).spawn();
    return { ok: true, child, cpuLimited: limited !== null };
  } catch (error) {
    if (cwd === undefined && workingFolderGone()) {
      return {
        ok: false,
        failure: unavailableFailure(
          `Cannot start the ${what}: this process's working folder no longer exists, and the ${what}'s Deno subprocess starts in it (relative paths it is granted name files there); change this process's working folder (Deno.chdir) to one that exists`,
        ),
      };
    }
    const refusal = systemRefusal(error);
    if (refusal !== null) {
      return {
        ok: false,
        failure: unavailableFailure(
          systemRefusedMessage(what, "Deno", refusal, "run again"),
        ),
      };
    }
    const detail = error instanceof Error ? error.message : String(error);
    return {
      ok: false,
      failure: unavailableFailure(
        `Cannot start the ${what}: it runs guest code in a Deno subprocess, which this process may not start (${detail}); grant --allow-run=${executable}${
          Deno.build.os === "linux" ? `,${SETPRIV}` : ""
        } (on Linux, setpriv stops guests when this process dies) or run with -A`,
      ),
    };
  }
}

/**
 * The operating system's reason a spawn failed, without the path it names
 * (`Too many open files (os error 24)`), or `null` when the runtime refused
 * it (no permission) or the reason is not the system's.
 */
function systemRefusal(error: unknown): string | null {
  if (!(error instanceof Error) || error instanceof Deno.errors.NotCapable) {
    return null;
  }
  return /: ([^:'"/]*\(os error \d+\))$/.exec(error.message)?.[1] ?? null;
}

/** Whether this process's working folder was deleted under it. */
function workingFolderGone(): boolean {
  try {
    Deno.cwd();
    return false;
  } catch (error) {
    return error instanceof Deno.errors.NotFound;
  }
}

/**
 * Reads a byte stream to its end as text, passing each piece on. A stream
 * that fails (a killed child's pipe can end abruptly) ends the read with
 * what was read. A throw of `onText` is a fault of the code that reads the
 * child, not of the child: the stream is cancelled and the promise rejects
 * with what was thrown, so the caller ends the run and says why.
 *
 * @param stream The stream.
 * @param onText Receives decoded text in order.
 * @returns When the stream ended or failed.
 * @throws What `onText` threw.
 */
export async function readText(
  stream: ReadableStream<Uint8Array>,
  onText: (text: string) => void,
): Promise<void> {
  const decoder = new TextDecoder();
  // A reader rather than `for await`: the async iterator adds promise jobs
  // to every piece, and a pooled run's answer is one piece.
  const reader = stream.getReader();
  try {
    for (;;) {
      let piece: ReadableStreamReadResult<Uint8Array>;
      try {
        piece = await reader.read();
      } catch {
        reader.cancel().catch(() => {});
        break;
      }
      if (piece.done) break;
      const text = decoder.decode(piece.value, { stream: true });
      if (text !== "") onText(text);
    }
    const rest = decoder.decode();
    if (rest !== "") onText(rest);
  } catch (error) {
    reader.cancel().catch(() => {});
    throw error;
  }
}

/**
 * Splits text that arrives in pieces into lines. A long line (a run's
 * answer) arrives in many pieces, and only each new piece is searched for
 * its end, so reading a line takes time linear in its length.
 *
 * @param onLine Receives each line, without its newline.
 * @returns What receives the pieces of text, in order.
 */
export function splitLines(
  onLine: (line: string) => void,
): (text: string) => void {
  let pieces: string[] = [];
  return (text) => {
    let start = 0;
    let end = text.indexOf("\n");
    while (end >= 0) {
      pieces.push(text.slice(start, end));
      const line = pieces.join("");
      pieces = [];
      onLine(line);
      start = end + 1;
      end = text.indexOf("\n", start);
    }
    if (start < text.length) pieces.push(text.slice(start));
  };
}

/** Keeps the last characters of a stream of text. */
export class TextTail {
  #text = "";
  #limit: number;

  /**
   * Creates an empty tail.
   *
   * @param limit How many characters to keep.
   */
  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Adds text, dropping the oldest beyond the limit. */
  push(text: string): void {
    this.#text += text;
    if (this.#text.length > this.#limit * 2) {
      this.#text = this.#text.slice(-this.#limit);
    }
  }

  /** The kept text. */
  get text(): string {
    return this.#text.slice(-this.#limit);
  }
}

/**
 * Sends SIGKILL to a child, ignoring that it may have exited already.
 *
 * @param child The child.
 */
export function killChild(child: Deno.ChildProcess): void {
  try {
    child.kill("SIGKILL");
  } catch {
    // Already gone.
  }
}
