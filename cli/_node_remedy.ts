/**
 * What the pack report tells a packer to do about an entry that needs Node
 * (a built-in it imports or requires, a Node global it reads), from what
 * the pack knows of the package: whether the file packed is the package's
 * own build for browsers, and whether the package lets any of its files be
 * packed alone (it has no `exports`).
 *
 * @module
 */

import type { EntryPoint } from "./_npm_entries.ts";

/** How many of the package's other modules a remedy names. */
const MODULES_NAMED = 3;

const SCRIPT = /\.(?:js|mjs|cjs)$/;

/** What the pack knows of the package, beside its entries. */
export interface RemedyFacts {
  /** Whether the package has an `exports` field, which limits its subpaths. */
  hasExports: boolean;
  /** The package's files, `/`-separated, without `./`. */
  files: readonly string[];
}

/**
 * The remedy of each entry, by subpath: one clause, with no leading
 * separator, that says what the package offers and the next step.
 *
 * @param entries The pack's entries, with the file each one packs.
 * @param facts What the pack knows of the package.
 * @returns A function from an entry's subpath to its remedy.
 */
export function nodeRemedies(
  entries: readonly EntryPoint[],
  facts: RemedyFacts,
): (subpath: string) => string {
  const bySubpath = new Map(entries.map((entry) => [entry.subpath, entry]));
  return (subpath) => {
    const entry = bySubpath.get(subpath);
    if (entry !== undefined && entry.browserFiles.length > 0) {
      return entry.browserFiles.includes(entry.file)
        ? "this is already the package's build for browsers, so it needs Node"
        : `the package's build of it for browsers, ./${
          entry.browserFiles[0]
        }, was tried first and cannot work either, so it needs Node`;
    }
    if (facts.hasExports) {
      return "the package offers no build of it for browsers, so it needs Node";
    }
    const others = facts.files.filter((file) =>
      SCRIPT.test(file) && file !== entry?.file &&
      !/(?:^|\/)node_modules\//.test(file)
    ).sort();
    if (others.length === 0) {
      return "the package offers no build for browsers and no other module, so it needs Node";
    }
    const named = others.slice(0, MODULES_NAMED).map((file) => `./${file}`);
    if (others.length > MODULES_NAMED) {
      named.push(`${others.length - MODULES_NAMED} more`);
    }
    return `the package offers no build for browsers: --subpaths packs one of its other modules alone (${
      named.join(", ")
    }), which works if that module does not need Node`;
  };
}
