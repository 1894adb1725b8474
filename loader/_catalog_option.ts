// This module is browser compatible.

/**
 * The check of the `catalog` option the QuickJS loader and pool are created
 * with. A platform may write its own catalog, so what arrives may be
 * anything: a value that is no object, an object missing a method, or a
 * Proxy whose reads throw. Each is refused at creation with a `TypeError`
 * that names `catalog` and what is wrong, as every other bad option is,
 * where a read that threw escaped as whatever it threw.
 *
 * `prefetch` is optional and read once per run, where a fault of it fails
 * that run with `CATALOG_FAILED`; it is not read here, so a getter runs
 * once a run and not once more at creation.
 *
 * @module
 */

import type { SandboxModuleCatalog } from "../catalog/types.ts";
import { messageOf } from "../protocol/options.ts";

/** The methods every catalog has, in the order messages name them. */
const REQUIRED_METHODS = [
  "resolveForExecution",
  "authorizeDelivery",
  "summaries",
] as const;

/**
 * Checks that `catalog` is a `SandboxModuleCatalog`: an object whose
 * required methods are functions.
 *
 * @param where What was being done, for messages:
 * `"create the QuickJS loader"`.
 * @param catalog The value given as `catalog`.
 * @returns The catalog.
 * @throws {TypeError} When `catalog` is not an object, reading one of its
 * methods throws, or one of them is not a function.
 */
export function readCatalogOption(
  where: string,
  catalog: unknown,
): SandboxModuleCatalog {
  if (typeof catalog !== "object" || catalog === null) {
    throw new TypeError(
      `Cannot ${where}: catalog must be a SandboxModuleCatalog, an object with ${
        listed(REQUIRED_METHODS)
      } methods; got ${catalog === null ? "null" : typeof catalog}`,
    );
  }
  const missing = REQUIRED_METHODS.filter((name) =>
    typeof readMethod(where, catalog, name) !== "function"
  );
  if (missing.length > 0) {
    throw new TypeError(
      `Cannot ${where}: catalog must be a SandboxModuleCatalog: it has no ${
        listed(missing)
      } method${missing.length === 1 ? "" : "s"}; implement ${
        missing.length === 1 ? "it" : "them"
      }`,
    );
  }
  return catalog as SandboxModuleCatalog;
}

/** Reads one method of a catalog, turning a read that throws into a `TypeError`. */
function readMethod(where: string, catalog: object, name: string): unknown {
  try {
    return Reflect.get(catalog, name);
  } catch (error) {
    throw new TypeError(
      `Cannot ${where}: reading catalog.${name} threw: ${messageOf(error)}`,
      { cause: error },
    );
  }
}

/** Names as prose: `a`, `a and b`, `a, b and c`. */
function listed(names: readonly string[]): string {
  return names.length === 1
    ? names[0]!
    : `${names.slice(0, -1).join(", ")} and ${names.at(-1)}`;
}
