/**
 * Values and probes the tests of hostile or careless callers share: a value
 * no code can read, and a count of the listeners a signal holds at once.
 *
 * @module
 */

/**
 * A value every read of which throws, as a hostile or broken hook, policy
 * or fetch option may throw or answer one: its class, keys, properties
 * and prototype all throw when asked.
 */
export function unreadable(): object {
  const refuse = () => {
    throw new Error("unreadable");
  };
  return new Proxy({}, {
    get: refuse,
    getPrototypeOf: refuse,
    getOwnPropertyDescriptor: refuse,
    has: refuse,
    ownKeys: refuse,
  });
}

/**
 * Counts the abort listeners on `signal` as they come and go, by wrapping
 * its own `addEventListener` and `removeEventListener`.
 *
 * @returns The most it held at once so far.
 */
export function countListeners(signal: AbortSignal): () => number {
  let listening = 0;
  let most = 0;
  const { addEventListener, removeEventListener } = signal;
  signal.addEventListener = function (
    ...args: Parameters<typeof addEventListener>
  ) {
    most = Math.max(most, ++listening);
    return addEventListener.apply(this, args);
  };
  signal.removeEventListener = function (
    ...args: Parameters<typeof removeEventListener>
  ) {
    listening--;
    return removeEventListener.apply(this, args);
  };
  return () => most;
}
