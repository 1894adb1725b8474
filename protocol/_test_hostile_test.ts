/**
 * Values and probes the tests of hostile or careless callers share: a value
 * no code can read, a count of the listeners a signal holds at once, and a
 * host whose `Object.prototype` a dependency polluted.
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

/**
 * Runs `body` while `prototype` (by default `Object.prototype`) holds
 * `keys` as enumerable, writable data properties, as a merge of a JSON
 * body with a `__proto__` key leaves them, and removes them afterwards,
 * whether `body` settles or throws, restoring any it replaced.
 *
 * @returns What `body` answered.
 */
export async function withPollutedPrototype<T>(
  keys: Record<string, unknown>,
  body: () => T | Promise<T>,
  prototype: object = Object.prototype,
): Promise<T> {
  const before = new Map<string, PropertyDescriptor | undefined>();
  for (const key of Object.keys(keys)) {
    before.set(key, Object.getOwnPropertyDescriptor(prototype, key));
  }
  try {
    for (const [key, value] of Object.entries(keys)) {
      Object.defineProperty(prototype, key, {
        value,
        writable: true,
        enumerable: true,
        configurable: true,
      });
    }
    return await body();
  } finally {
    for (const [key, descriptor] of before) {
      if (descriptor === undefined) {
        delete (prototype as Record<string, unknown>)[key];
      } else {
        Object.defineProperty(prototype, key, descriptor);
      }
    }
  }
}
