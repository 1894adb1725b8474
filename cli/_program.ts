/**
 * What every command does when its file is the main module: enter the
 * folder the task was started in, write its lines so that no write ends
 * it with a stack trace, and exit with its code.
 *
 * @module
 */

import { CordonError } from "../protocol/cordon_error.ts";
import {
  type CommandOutput,
  enterTaskStartDir,
  nameOf,
  pathErrorLine,
} from "./_flags.ts";

/** A command's lines, written to the process's standard output and error. */
export interface ProgramOutput extends CommandOutput {
  /** Whether a line could not be written to standard output. */
  readonly outputFailed: boolean;
}

/**
 * The line a command prints when its standard output cannot be written
 * (a full disk, a device that refuses writes).
 */
export function outputErrorLine(error: unknown): string {
  return pathErrorLine(
    `Cannot write to standard output: ${
      nameOf(error)
    }; check where it goes, such as a full disk`,
  );
}

/**
 * Lines for standard output and error that never throw. A reader that went
 * away (`| head -1`) takes the rest of the output with it, silently, as it
 * chose not to read it. Standard output that refuses a write for any other
 * reason is said once on standard error, and the lines after it are
 * dropped, so a partial result is not mistaken for a whole one. Standard
 * error that refuses a write leaves nowhere to say so: the line is lost
 * and the exit code still tells.
 */
export function programOutput(): ProgramOutput {
  let outputFailed = false;
  const printError = (line: string) => {
    try {
      console.error(line);
    } catch {
      // Nowhere is left to say it.
    }
  };
  const print = (line: string) => {
    if (outputFailed) return;
    try {
      console.log(line);
    } catch (error) {
      if (error instanceof Deno.errors.BrokenPipe) return;
      outputFailed = true;
      printError(outputErrorLine(error));
    }
  };
  return {
    print,
    printError,
    get outputFailed() {
      return outputFailed;
    },
  };
}

/**
 * Runs a command as a program and exits: with the command's code, or 1
 * when its code was 0 but its standard output could not be written, or 1
 * with one line naming an error nothing else caught (its kind only, as
 * its message may name a path of the machine).
 */
export async function runProgram(
  command: (args: readonly string[], output: CommandOutput) => Promise<number>,
): Promise<never> {
  const output = programOutput();
  let code: number;
  try {
    enterTaskStartDir(output.printError);
    const { print, printError } = output;
    code = await command(Deno.args, { print, printError });
  } catch (error) {
    output.printError(`error: Unexpected: ${nameOf(error)}`);
    code = 1;
  }
  Deno.exit(code === 0 && output.outputFailed ? 1 : code);
}

/** The exit code after each stop signal: 128 and the signal's number. */
export const STOP_EXIT_CODES: Readonly<Partial<Record<Deno.Signal, number>>> =
  Object.freeze({ SIGINT: 130, SIGTERM: 143 });

/** The signals that stop a command where the runtime can listen for them. */
function stopSignals(): Deno.Signal[] {
  return Deno.build.os === "windows" ? ["SIGINT"] : ["SIGINT", "SIGTERM"];
}

/** A command's stop: aborted by the first SIGINT or SIGTERM. */
export interface CommandStop extends Disposable {
  /** Aborts, with an `INTERRUPTED` error, at the first stop signal. */
  readonly signal: AbortSignal;
  /** The signal that stopped the command, if one did. */
  readonly stoppedBy: Deno.Signal | undefined;
}

/**
 * Listens for SIGINT and SIGTERM while a command works, for a command
 * that must clean up before it exits (a work folder, a runner process):
 * the first one aborts `signal`, and `stoppedBy` names it. While it
 * listens, the signals no longer end the process, so the command must
 * heed `signal` everywhere it waits. A second one ends the process at
 * once with its exit code, as the signal would have: a user who presses
 * Ctrl-C again is not kept waiting for the clean-up. Dispose it to stop
 * listening.
 */
export function listenForStop(command: string): CommandStop {
  const stop = new AbortController();
  let stoppedBy: Deno.Signal | undefined;
  const listeners = stopSignals().map((name) => {
    const listener = () => {
      if (stop.signal.aborted) Deno.exit(STOP_EXIT_CODES[name] ?? 1);
      stoppedBy = name;
      stop.abort(
        new CordonError(
          "INTERRUPTED",
          `The ${command} command was stopped by ${name}`,
        ),
      );
    };
    Deno.addSignalListener(name, listener);
    return [name, listener] as const;
  });
  return {
    signal: stop.signal,
    get stoppedBy() {
      return stoppedBy;
    },
    [Symbol.dispose]() {
      for (const [name, listener] of listeners) {
        Deno.removeSignalListener(name, listener);
      }
    },
  };
}
