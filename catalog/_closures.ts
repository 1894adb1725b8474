// This module is browser compatible.

/**
 * The dependency closures of a pack's modules, which its graph digests are
 * computed over, walked within a bound: the one home of that walk for the
 * graph builder and for the listing check of the remote and staged
 * catalogs. A chain of n modules has closures of n²/2 entries in all, so
 * without the bound a listing of 8,000 chained modules (1.6 MB) held the
 * event loop for 15 s, and one at the listing cap for hours.
 *
 * @module
 */

/**
 * The most imports followed while walking the closures of one pack's
 * modules, summed over every module. Real packages follow far fewer:
 * lodash-es 4.17.21 unbundled (644 modules) 40,404, date-fns 4.1.0
 * unbundled (1,426 modules) 12,362. A listing that needs just under this
 * many is checked in about 0.6 s.
 */
export const MAX_CLOSURE_STEPS = 1 << 20;

/**
 * Every module's dependency closure: the modules it reaches through its
 * imports, itself included (first).
 *
 * @param modules Every module of the pack.
 * @param importsOf The modules one module imports directly.
 * @returns Each module's closure, in the order given, or `undefined` when
 * walking them would follow more than {@linkcode MAX_CLOSURE_STEPS}
 * imports.
 */
export function boundedClosures<T>(
  modules: readonly T[],
  importsOf: (module: T) => readonly T[],
): Set<T>[] | undefined {
  const closures: Set<T>[] = [];
  let steps = 0;
  for (const start of modules) {
    const seen = new Set<T>([start]);
    const stack = [start];
    while (stack.length > 0) {
      const imports = importsOf(stack.pop()!);
      steps += imports.length;
      if (steps > MAX_CLOSURE_STEPS) return undefined;
      for (const next of imports) {
        if (!seen.has(next)) {
          seen.add(next);
          stack.push(next);
        }
      }
    }
    closures.push(seen);
  }
  return closures;
}
