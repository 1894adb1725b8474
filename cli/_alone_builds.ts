/**
 * Joins the build the entries of a pack share with the builds of entries
 * bundled alone. Each lone build goes into a folder of its own
 * (`alone-1/`, `alone-2/`, in subpath order, passing over a folder the
 * shared build has), so no file of one build takes another's path and the
 * relative imports inside each build still hold.
 *
 * @module
 */

import type { BundleOutput } from "./_npm_bundle.ts";

/** The build of no entry, for a pack whose entries are all bundled alone. */
export function emptyBuild(): BundleOutput {
  return { files: new Map(), entryFiles: new Map() };
}

/** The top-level folders a build's files are in. */
function topFolders(build: BundleOutput): Set<string> {
  const folders = new Set<string>();
  for (const path of build.files.keys()) {
    const slash = path.indexOf("/");
    if (slash !== -1) folders.add(path.slice(0, slash));
  }
  return folders;
}

/**
 * One pack's build: the shared build's files where they are, and each
 * lone build's files in its own folder.
 *
 * @param shared The build the other entries share ({@linkcode emptyBuild}
 * when every entry is bundled alone).
 * @param alone Each lone entry's subpath and its build.
 * @param order The subpaths in the order the pack lists its entries.
 * @returns The joined build, its files sorted by path.
 */
export function joinBuilds(
  shared: BundleOutput,
  alone: ReadonlyMap<string, BundleOutput>,
  order: readonly string[],
): BundleOutput {
  const files = new Map(shared.files);
  const entryFiles = new Map(shared.entryFiles);
  const taken = topFolders(shared);
  let n = 0;
  for (const subpath of [...alone.keys()].sort()) {
    do n++; while (taken.has(`alone-${n}`));
    const folder = `alone-${n}`;
    const build = alone.get(subpath)!;
    for (const [path, bytes] of build.files) {
      files.set(`${folder}/${path}`, bytes);
    }
    entryFiles.set(subpath, `${folder}/${build.entryFiles.get(subpath)!}`);
  }
  return {
    files: new Map(
      [...files].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    ),
    entryFiles: new Map(
      order.filter((subpath) => entryFiles.has(subpath))
        .map((subpath) => [subpath, entryFiles.get(subpath)!]),
    ),
  };
}
