/**
 * Collects the lines a CLI prints in-process, for the delivery tests that
 * wait for a log line.
 *
 * @module
 */

/** Lines printed so far, in order, that a test can wait for. */
export class PrintedLines {
  readonly lines: string[] = [];
  #wake: (() => void) | undefined;

  /** Takes one printed line (or several, joined by line breaks). */
  readonly print = (text: string): void => {
    this.lines.push(...text.split("\n"));
    this.#wake?.();
  };

  /**
   * Waits for a line, from line `from` on, that matches; fails after
   * `timeoutMs` with every line printed so far.
   */
  async waitFor(
    pattern: RegExp,
    { from = 0, timeoutMs = 120_000 }: { from?: number; timeoutMs?: number } =
      {},
  ): Promise<{ line: string; index: number }> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const index = this.lines.findIndex((line, i) =>
        i >= from && pattern.test(line)
      );
      if (index >= 0) return { line: this.lines[index]!, index };
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(
          `No line matched ${pattern} in ${timeoutMs} ms:\n${
            this.lines.join("\n")
          }`,
        );
      }
      const { promise, resolve } = Promise.withResolvers<void>();
      const timer = setTimeout(resolve, left);
      this.#wake = resolve;
      try {
        await promise;
      } finally {
        clearTimeout(timer);
        this.#wake = undefined;
      }
    }
  }
}
