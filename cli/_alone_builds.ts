/**
 * Joins the build the entries of a pack share with the builds of entries
 * bundled alone. Each lone build goes into a folder of its own
 * (`alone-1/`, `alone-2/`, in subpath order, passing over a folder the
 * shared build has), so no file of one build takes another's path and the
 * relative imports inside each build still hold.
 *
 * @module
 */

import { type BundleOutput, entryModuleName } from "./_npm_bundle.ts";
import type { EntryPoint } from "./_npm_entries.ts";

/** The build of no entry, for a pack whose entries are all bundled alone. */
export function emptyBuild(): BundleOutput {
  return { files: new Map(), entryFiles: new Map() };
}

/**
 * The entries with each one whose module the bundler would name as it
 * names an earlier entry's (`a:b.js` and `a_b.js` both as `a_b.js`) marked
 * to be bundled alone, with a note: one bundler run refuses two outputs
 * at one path, which failed the whole package.
 */
export function aloneWhereNamedAlike(
  entries: readonly EntryPoint[],
): EntryPoint[] {
  const first = new Map<string, EntryPoint>();
  return entries.map((entry) => {
    if (entry.alone === true) return entry;
    const name = entryModuleName(entry.file);
    const earlier = first.get(name);
    if (earlier === undefined) first.set(name, entry);
    if (earlier === undefined || earlier.file === entry.file) return entry;
    return {
      ...entry,
      alone: true,
      notes: [
        ...entry.notes,
        `bundled alone: the bundler names its module ${name}, as it names the module of ${earlier.subpath} (./${earlier.file}), and one build cannot hold two modules at one path; its module instances are not shared with the pack's other entries`,
      ],
    };
  });
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
