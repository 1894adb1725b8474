// A test helper: how long the caller's event loop stops turning while work
// runs. A sanity check with generous bounds, not a timing assertion.

/** The longest gap between turns of the caller's event loop while it runs. */
export async function withLag<T>(
  work: () => Promise<T>,
): Promise<{ result: T; lagMs: number }> {
  let last = performance.now();
  let lagMs = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    lagMs = Math.max(lagMs, now - last);
    last = now;
  }, 10);
  try {
    const result = await work();
    lagMs = Math.max(lagMs, performance.now() - last);
    return { result, lagMs };
  } finally {
    clearInterval(timer);
  }
}
