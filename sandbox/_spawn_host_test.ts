/**
 * A test helper that starts a sandbox's child or worker host by hand, the
 * way the sandbox does, and sends it one message. Used by tests only; it
 * holds no tests, and its `_test.ts` name keeps it out of the published
 * package.
 *
 * @module
 */

import { BASE_FLAGS } from "./_spawn.ts";

/** A started host and the writer of its stdin, still open. */
export interface StartedHost {
  /** The process; the caller owns it and must await its status. */
  child: Deno.ChildProcess;
  /** Its stdin; the caller closes it when the test wants the end seen. */
  writer: WritableStreamDefaultWriter<Uint8Array>;
}

/**
 * Starts Deno with {@linkcode BASE_FLAGS} and `args`, a cleared environment
 * but `NO_COLOR=1`, and a piped stdin, and writes `message` to its stdin.
 *
 * @param args What follows the base flags: more flags and the entry URL.
 * @param message What to write first, newline included.
 * @param output Whether stdout and stderr are piped or dropped.
 * @returns The host and its stdin's writer.
 */
export async function startHost(
  args: readonly string[],
  message: string,
  output: { stdout: "piped" | "null"; stderr: "piped" | "null" },
): Promise<StartedHost> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [...BASE_FLAGS, ...args],
    stdin: "piped",
    ...output,
    clearEnv: true,
    env: { NO_COLOR: "1" },
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(message));
  return { child, writer };
}

/** Reads `stream` line by line, as text. */
export async function* lines(
  stream: ReadableStream<Uint8Array>,
): AsyncGenerator<string> {
  let rest = "";
  for await (const text of stream.pipeThrough(new TextDecoderStream())) {
    const parts = (rest + text).split("\n");
    rest = parts.pop()!;
    yield* parts;
  }
}
