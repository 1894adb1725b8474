/**
 * What a process-tier run holds once its child is spawned, and the one
 * place that lets it all go.
 *
 * @module
 */

import { killChild } from "./_spawn.ts";

/**
 * What one run holds once its child is spawned (timers, the memory watch,
 * the abort listener, the child's pipes and the child itself), released
 * on every path out of the run, a throw included.
 */
export class HeldSteps {
  #child: Deno.ChildProcess;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #undo: (() => void)[] = [];
  #reading: Promise<unknown> | undefined;
  #exited = false;

  /** @param child The run's child, which the caller has just spawned. */
  constructor(child: Deno.ChildProcess) {
    this.#child = child;
  }

  /** Starts the run's one timer, in place of any before it. */
  setTimer(onTime: () => void, ms: number): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(onTime, ms);
  }

  /** Stops the run's timer, if one is pending. */
  clearTimer(): void {
    clearTimeout(this.#timer);
  }

  /** Adds a step to undo on release, before those added earlier. */
  undo(step: () => void): void {
    this.#undo.push(step);
  }

  /**
   * Waits for the child's exit and the ends of its pipes' readers.
   *
   * @returns The child's exit status.
   */
  async read(
    parts: [Promise<Deno.CommandStatus>, Promise<void>, Promise<void>],
  ): Promise<Deno.CommandStatus> {
    this.#reading = Promise.allSettled(parts);
    const [status] = await Promise.all(parts);
    this.#exited = true;
    return status;
  }

  /**
   * Kills a child still running, waits until it has exited and its pipes
   * are read or cancelled, then undoes the steps recorded. A step that
   * throws (a caller's signal whose removeEventListener throws) does so
   * once every other is undone.
   */
  async release(): Promise<void> {
    clearTimeout(this.#timer);
    const child = this.#child;
    if (!this.#exited) killChild(child);
    if (this.#reading === undefined) {
      // Nothing reads the pipes: cancelling them lets Deno close them.
      child.stdout.cancel().catch(() => {});
      child.stderr.cancel().catch(() => {});
      if (!child.stdin.locked) child.stdin.close().catch(() => {});
    }
    await Promise.allSettled([this.#reading, child.status]);
    const failures: unknown[] = [];
    for (const step of this.#undo.toReversed()) {
      try {
        step();
      } catch (error) {
        failures.push(error);
      }
    }
    if (failures.length > 0) throw failures[0];
  }
}
