// This module is browser compatible.

/**
 * Maps items through an async function with at most `limit` calls in
 * flight, keeping the input order. When a call throws (or `signal` aborts),
 * no new calls start; it waits for the running ones to settle, then throws
 * the first error, so nothing is left running behind the caller's back.
 */
export async function mapBounded<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
  signal?: AbortSignal,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let failed = false;
  async function worker(): Promise<void> {
    while (!failed && next < items.length) {
      const index = next++;
      try {
        signal?.throwIfAborted();
        results[index] = await fn(items[index]!, index);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  }
  const workers = Array.from(
    { length: Math.max(1, Math.min(limit, items.length)) },
    worker,
  );
  const settled = await Promise.allSettled(workers);
  for (const outcome of settled) {
    if (outcome.status === "rejected") throw outcome.reason;
  }
  return results;
}
