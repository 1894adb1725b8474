/**
 * The one way cordon's functions that read folders (the disk catalog,
 * staging) read a folder or file option: a path, or a `file:` URL as
 * Deno's own file APIs take one. Not for browsers (`node:url`'s
 * `fileURLToPath` decodes the URL): browser-safe modules take no paths.
 *
 * @module
 */

import { fileURLToPath } from "node:url";

/** What the option names, for its error: `create the disk catalog`, `packsDir`, `folder`. */
export interface LocalPathOption {
  /** The action, after "Cannot": `create the disk catalog`. */
  where: string;
  /** The option's name: `packsDir`. */
  name: string;
  /** What it names. */
  kind: "folder" | "file";
}

/**
 * A folder or file option as a path: a non-empty string as it is, a `file:`
 * URL decoded (`my%20projects` is `my projects`).
 *
 * @param value The option as given.
 * @param option Where it was given, for the error.
 * @returns The path.
 * @throws {TypeError} When the value is neither a non-empty string nor a
 * URL, a URL of another scheme, or a `file:` URL that names no local path
 * (a host, an encoded slash).
 *
 * @example
 * ```ts
 * import { localPath } from "./local_path.ts";
 * import assert from "node:assert/strict";
 *
 * const option = { where: "stage", name: "outDir", kind: "folder" } as const;
 * assert.equal(localPath(new URL("file:///srv/my%20packs"), option), "/srv/my packs");
 * assert.equal(localPath("./packs", option), "./packs");
 * ```
 */
export function localPath(value: unknown, option: LocalPathOption): string {
  const { where, name, kind } = option;
  if (typeof value === "string" && value !== "") return value;
  if (!(value instanceof URL)) {
    throw new TypeError(
      `Cannot ${where}: ${name} must be a non-empty ${kind} path or a file: URL`,
    );
  }
  if (value.protocol !== "file:") {
    throw new TypeError(
      `Cannot ${where}: ${name} must be a ${kind} path or a file: URL, not a ${value.protocol} URL`,
    );
  }
  try {
    return fileURLToPath(value);
  } catch (error) {
    throw new TypeError(
      `Cannot ${where}: ${name} is a file: URL that names no local ${kind}: ${
        (error as Error).message
      }`,
      { cause: error },
    );
  }
}
