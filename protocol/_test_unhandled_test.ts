/**
 * Counts the promise rejections nobody handled while a test's work ran,
 * for the tests of operators' hooks: Deno ends the process at one, so a
 * hook written `async` that rejects must not leave one behind.
 *
 * @module
 */

/**
 * Runs `work` and waits until every rejection it left unhandled has been
 * reported (Deno reports them once the microtasks have run, before the
 * next macrotask), then returns their reasons.
 */
export async function unhandledDuring(
  work: () => unknown | Promise<unknown>,
): Promise<unknown[]> {
  const reported: unknown[] = [];
  const listener = (event: PromiseRejectionEvent) => {
    event.preventDefault();
    reported.push(event.reason);
  };
  globalThis.addEventListener("unhandledrejection", listener);
  try {
    await work();
    await new Promise((resolve) => setTimeout(resolve, 0));
  } finally {
    globalThis.removeEventListener("unhandledrejection", listener);
  }
  return reported;
}
