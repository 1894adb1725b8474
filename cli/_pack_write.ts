/**
 * Writes the pack command's files to disk: the package tree laid out in
 * the work folder for the bundler, a pack's files below a folder, and a
 * finished pack swapped whole into the packs folder.
 *
 * @module
 */

import { CordonError } from "../protocol/cordon_error.ts";
import {
  foldersOf,
  syncFolder,
  writeFileSynced,
} from "../protocol/replace_file.ts";
import {
  manifestForBundler,
  reachableBuiltinNames,
} from "./_builtin_named_dependencies.ts";
import { withJsonRequiresNamed } from "./_json_requires.ts";
import type { PackageTree } from "./_npm_fetch.ts";

/**
 * Writes files by their paths below `root`, making the folders they need;
 * an abort of `signal` stops before the next file, with its reason.
 */
export async function writeFiles(
  root: string,
  files: Iterable<[string, Uint8Array]>,
  signal?: AbortSignal,
): Promise<void> {
  await writeTree(root, files, Deno.writeFile, signal);
}

/**
 * Writes files by their paths below `root` with `write`, making the
 * folders they need; returns those folders, `root` first.
 */
async function writeTree(
  root: string,
  files: Iterable<[string, Uint8Array]>,
  write: (path: string, bytes: Uint8Array) => Promise<void>,
  signal?: AbortSignal,
): Promise<string[]> {
  signal?.throwIfAborted();
  const entries = [...files];
  const folders = foldersOf(entries.map(([path]) => path));
  await Deno.mkdir(root, { recursive: true });
  for (const folder of folders) {
    await Deno.mkdir(`${root}/${folder}`, { recursive: true });
  }
  for (const [path, bytes] of entries) {
    signal?.throwIfAborted();
    await write(`${root}/${path}`, bytes);
  }
  return [root, ...folders.map((folder) => `${root}/${folder}`)];
}

const BYTE_ORDER_MARK = [0xef, 0xbb, 0xbf];

/**
 * A `package.json` without the UTF-8 byte order mark it may open with:
 * npm reads such a file, the bundler calls it malformed.
 */
function withoutByteOrderMark(bytes: Uint8Array): Uint8Array {
  return BYTE_ORDER_MARK.every((byte, i) => bytes[i] === byte)
    ? bytes.subarray(BYTE_ORDER_MARK.length)
    : bytes;
}

/**
 * Writes the package tree into the work folder, for the bundler to read;
 * an abort of `signal` stops before the next package, with its reason.
 */
export async function layOut(
  work: string,
  tree: PackageTree,
  signal?: AbortSignal,
): Promise<void> {
  await Deno.writeTextFile(`${work}/package.json`, '{"private":true}\n');
  for (const [dir, pkg] of tree.placed) {
    signal?.throwIfAborted();
    try {
      const manifest = manifestForBundler(
        pkg.manifest,
        reachableBuiltinNames(dir, tree.placed.keys()),
      );
      await writeFiles(
        `${work}/${dir}`,
        withJsonRequiresNamed(pkg.files, { dir, placed: tree.placed }).map((
          file,
        ) => [
          file.path,
          file.path !== "package.json"
            ? file.bytes
            : manifest !== null
            ? new TextEncoder().encode(manifest)
            : withoutByteOrderMark(file.bytes),
        ]),
      );
    } catch (error) {
      // The file system's message names the work folder: say what failed,
      // and keep the error (and its path) out of the cause.
      throw new CordonError(
        "NPM_PACKAGE_INVALID",
        `Cannot unpack ${pkg.name}@${pkg.version}: its files cannot be written to disk (${
          (error as { code?: string }).code ?? (error as Error).name
        }); check the package's file names`,
      );
    }
  }
}

/**
 * How many times a swap is tried when another run of the command puts the
 * same pack in place between its two renames.
 */
const SWAP_ATTEMPTS = 8;

/**
 * Moves `from` to the pack's place. An installed pack is renamed aside
 * first and removed only once the new one is in place, so a kill or a
 * failure leaves one whole pack (or the old one under a hidden name, which
 * discovery skips) where removing it first could leave none, or half.
 * Another run writing the same pack at once may put its own in place
 * between the two renames: that one is set aside in turn and the swap
 * tried again, so the later pack wins, as when the runs follow each other.
 */
async function replaceFolder(outDir: string, name: string, from: string) {
  const target = `${outDir}/${name}`;
  const parent = target.slice(0, target.lastIndexOf("/"));
  const asides: string[] = [];
  try {
    for (let attempt = 1;; attempt++) {
      const aside = `${from}-${attempt}-replaced`;
      if (await renameIfThere(target, aside)) asides.push(aside);
      try {
        await Deno.rename(from, target);
        break;
      } catch (error) {
        if (!isTaken(error) || attempt === SWAP_ATTEMPTS) throw error;
      }
    }
  } catch (error) {
    await putBack(target, asides);
    throw error;
  }
  // Before the old pack goes: a power loss after its removal must find the
  // rename on the disk, or the pack's place would be empty. A scope's
  // folder may be new, so the packs folder that holds it is synced too.
  await syncFolder(parent);
  if (parent !== outDir) await syncFolder(outDir);
  // The new pack is in place: an old one that cannot be removed stays
  // under its hidden name, which discovery skips, and is safe to delete.
  await removeAll(asides);
}

/** Renames `from` to `to`; `false` when there is no `from`. */
async function renameIfThere(from: string, to: string): Promise<boolean> {
  try {
    await Deno.rename(from, to);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/** Whether a rename failed because a folder (not empty) is at its target. */
function isTaken(error: unknown): boolean {
  return error instanceof Deno.errors.AlreadyExists ||
    (error as { code?: unknown }).code === "ENOTEMPTY";
}

/**
 * After a failed swap, puts the pack set aside last back in its place. If
 * another run's pack took the place meanwhile, that one is whole and those
 * set aside go; if the place cannot be filled otherwise, they stay hidden.
 */
async function putBack(target: string, asides: string[]): Promise<void> {
  const last = asides.at(-1);
  if (last === undefined) return;
  try {
    await Deno.rename(last, target);
    await removeAll(asides.slice(0, -1));
  } catch (error) {
    if (isTaken(error)) await removeAll(asides);
  }
}

/** Removes folders, best effort: one that stays is hidden from discovery. */
async function removeAll(folders: string[]): Promise<void> {
  for (const folder of folders) {
    await Deno.remove(folder, { recursive: true }).catch(() => {});
  }
}

/**
 * Writes the pack into a hidden folder first, synced to the disk, then
 * swaps it in and syncs the packs folder, so neither a failure nor a power
 * loss leaves half a pack in its place. An abort of `signal` before the
 * swap begins leaves `outDir` as it was (the hidden folder removed) and
 * rejects with its reason; a swap once begun finishes, so the pack's place
 * never holds half of one.
 */
export async function writePackFolder(
  outDir: string,
  name: string,
  files: Iterable<[string, Uint8Array]>,
  signal?: AbortSignal,
): Promise<void> {
  signal?.throwIfAborted();
  await Deno.mkdir(outDir, { recursive: true });
  const temp = await makeHiddenFolder(outDir);
  try {
    // Every file and folder of the new pack is on the disk before the swap,
    // so a power loss after it finds the pack whole, not empty files.
    const folders = await writeTree(temp, files, writeFileSynced, signal);
    for (const folder of folders) await syncFolder(folder);
    signal?.throwIfAborted();
    if (name.includes("/")) {
      await Deno.mkdir(`${outDir}/${name.split("/")[0]}`, { recursive: true });
    }
    await replaceFolder(outDir, name, temp);
  } finally {
    await Deno.remove(temp, { recursive: true }).catch(() => {});
  }
}

/**
 * Makes a new hidden folder, `.pack-` and a random suffix, in `outDir`.
 * Made as any folder is (0777 less the umask), not as a temporary folder
 * (0700): it becomes the pack, which a server run as another user reads.
 */
async function makeHiddenFolder(outDir: string): Promise<string> {
  const folder = `${outDir}/.pack-${crypto.randomUUID().slice(0, 8)}`;
  await Deno.mkdir(folder);
  return folder;
}
