/**
 * The one way cordon replaces a file so that a power loss leaves the old
 * file or the new one, whole: the new bytes go to a temporary file beside
 * it, which is synced to the disk, renamed over the file, and the folder
 * synced so the rename itself is on the disk. Without the first sync a
 * file system may put the rename on the disk before the data, so the file
 * comes back empty after a power loss; without the second the rename may
 * be lost while the caller took the write for done.
 *
 * Written with `node:fs`, so the same code runs on Deno and on Node (the
 * vm tier's hosts). Not for browsers.
 *
 * @module
 */

import fsPromises, { type FileHandle } from "node:fs/promises";
import os from "node:os";
import path from "node:path";

/** What {@linkcode replaceFile} needs besides the file and its bytes. */
export interface ReplaceFileOptions {
  /**
   * How the temporary file's name begins: its folder's other files tell
   * it by this (a random UUID and `.tmp` follow).
   * @default {"."}
   */
  temporaryPrefix?: string;
  /**
   * Called once the temporary file is whole and synced, just before the
   * rename: from there on the file at `name` may be the new one.
   */
  renaming?: () => void;
}

/**
 * Replaces the file `name` in `folder` whole: `write` writes the new bytes
 * to a new temporary file beside it (made as a new file is, 0666 less the
 * umask), which is synced, renamed over `name`, and the folder synced (see
 * {@linkcode syncFolder}). A failure before the rename removes the
 * temporary file and leaves the old file as it was; a failure of the
 * folder's sync after it leaves the new file in place, and still rejects,
 * since the rename may not survive a power loss.
 *
 * @param folder The folder of the file (a path the runtime opens).
 * @param name The file's name in `folder`.
 * @param write Writes the new bytes to the open temporary file; it must
 * not close it.
 * @param options The temporary file's prefix, and a hook for the rename.
 * @returns When the file is replaced and both syncs are done.
 * @throws What opening, writing, syncing or renaming threw (a Node-style
 * error with its POSIX `code`, such as `ENOSPC` or `EROFS`).
 *
 * @example
 * ```ts
 * import { replaceFile } from "./replace_file.ts";
 * import assert from "node:assert/strict";
 *
 * const dir = await Deno.makeTempDir();
 * try {
 *   await replaceFile(dir, "a.txt", (file) => file.writeFile("new text"));
 *   assert.equal(await Deno.readTextFile(`${dir}/a.txt`), "new text");
 * } finally {
 *   await Deno.remove(dir, { recursive: true });
 * }
 * ```
 */
export async function replaceFile(
  folder: string,
  name: string,
  write: (file: FileHandle) => Promise<void>,
  options: ReplaceFileOptions = {},
): Promise<void> {
  const { temporaryPrefix = ".", renaming } = options;
  const temporary = path.join(
    folder,
    `${temporaryPrefix}${crypto.randomUUID()}.tmp`,
  );
  // "wx": created here, so no link or other file can already be at it.
  const file = await fsPromises.open(temporary, "wx", 0o666);
  try {
    try {
      await write(file);
      await file.sync();
    } finally {
      await file.close();
    }
    renaming?.();
    await fsPromises.rename(temporary, path.join(folder, name));
  } catch (error) {
    await fsPromises.unlink(temporary).catch(() => {});
    throw error;
  }
  await syncFolder(folder);
}

/** What {@linkcode writeFileSynced} needs besides the file and its bytes. */
export interface WriteFileSyncedOptions {
  /**
   * Whether the file must be new: when anything (a file, a folder, a link)
   * is at its path, opening fails with `EEXIST` and nothing is written.
   * @default {false}
   */
  createNew?: boolean;
}

/**
 * Writes `bytes` to a new or emptied file at `file` and syncs it to the
 * disk, for a tree whose files must all be on the disk before the rename
 * or index that makes them reachable.
 *
 * @param file The file's path.
 * @param bytes Its bytes.
 * @param options Whether the file must be new.
 * @returns When the bytes are on the disk.
 * @throws What opening, writing or syncing threw (a Node-style error with
 * its POSIX `code`; `EEXIST` with `createNew` when anything is at `file`).
 *
 * @example
 * ```ts
 * import { writeFileSynced } from "./replace_file.ts";
 * import assert from "node:assert/strict";
 *
 * const dir = await Deno.makeTempDir();
 * try {
 *   const bytes = new TextEncoder().encode("a");
 *   await writeFileSynced(`${dir}/a.txt`, bytes, { createNew: true });
 *   assert.equal(await Deno.readTextFile(`${dir}/a.txt`), "a");
 *   await assert.rejects(
 *     writeFileSynced(`${dir}/a.txt`, bytes, { createNew: true }),
 *     { code: "EEXIST" },
 *   );
 * } finally {
 *   await Deno.remove(dir, { recursive: true });
 * }
 * ```
 */
export async function writeFileSynced(
  file: string,
  bytes: Uint8Array,
  options: WriteFileSyncedOptions = {},
): Promise<void> {
  // "wx" fails on anything at the path, a link too, so none is followed.
  const flags = options.createNew ? "wx" : "w";
  const handle = await fsPromises.open(file, flags, 0o666);
  try {
    await handle.writeFile(bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** What of the Deno namespace the permission check needs. */
interface DenoPermissions {
  permissions: {
    querySync(descriptor: { name: "read"; path: string }): { state: string };
  };
}

/**
 * Syncs the folder `folder` to the disk, so the names made, renamed or
 * removed in it stay after a power loss. Skipped where the platform cannot
 * open a folder to sync it (Windows), where the folder's file system has
 * no sync for folders (`EINVAL`), and, on Deno, where the process may not
 * read the folder: opening it would ask for the permission.
 *
 * @param folder The folder.
 * @returns When the folder's entries are on the disk, or at once when
 * skipped.
 * @throws What opening or syncing the folder threw.
 *
 * @example
 * ```ts
 * import { syncFolder } from "./replace_file.ts";
 *
 * const dir = await Deno.makeTempDir();
 * try {
 *   await Deno.writeTextFile(`${dir}/a.txt`, "a");
 *   await syncFolder(dir);
 * } finally {
 *   await Deno.remove(dir, { recursive: true });
 * }
 * ```
 */
export async function syncFolder(folder: string): Promise<void> {
  if (os.platform() === "win32" || !mayRead(folder)) return;
  const handle = await fsPromises.open(folder, "r");
  try {
    await handle.sync();
  } catch (error) {
    // EINVAL: a file system that has no sync for folders (some network and
    // user-space ones, /proc, /sys) says so; it keeps nothing more by it.
    if ((error as { code?: unknown }).code !== "EINVAL") throw error;
  } finally {
    await handle.close();
  }
}

// Read through the runtime's own global: on Node there is none, and a
// host's read of any path is allowed.
function mayRead(folder: string): boolean {
  const { Deno: deno } = globalThis as { Deno?: DenoPermissions };
  if (deno === undefined) return true;
  return deno.permissions.querySync({ name: "read", path: folder }).state ===
    "granted";
}

/**
 * Every folder below a tree's root that holds its `paths` (relative,
 * separated by `/`), those between included, parents first: the folders a
 * writer makes, and syncs once the tree's files are written.
 *
 * @param paths The tree's file paths.
 * @returns The folders, sorted, so a parent comes before its children.
 *
 * @example
 * ```ts
 * import { foldersOf } from "./replace_file.ts";
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(foldersOf(["packs/@a/b.json", "index.json"]), [
 *   "packs",
 *   "packs/@a",
 * ]);
 * ```
 */
export function foldersOf(paths: Iterable<string>): string[] {
  const folders = new Set<string>();
  for (const path of paths) addFoldersOf(path, folders);
  return [...folders].sort();
}

/**
 * Adds the folders a `/`-separated path makes to `folders`. From the
 * deepest folder up, stopping at one already there (whose own folders are
 * then there too): a path costs its length, where adding each of its
 * folders from the top cost its length times its depth.
 *
 * @param path The path, `a/b/c.js`.
 * @param folders The folders found so far, added to.
 *
 * @example
 * ```ts
 * import { addFoldersOf } from "./replace_file.ts";
 * import assert from "node:assert/strict";
 *
 * const folders = new Set(["a"]);
 * addFoldersOf("a/b/c.js", folders);
 * assert.deepEqual([...folders], ["a", "a/b"]);
 * ```
 */
export function addFoldersOf(path: string, folders: Set<string>): void {
  for (
    let cut = path.lastIndexOf("/");
    cut > 0;
    cut = path.lastIndexOf("/", cut - 1)
  ) {
    const folder = path.slice(0, cut);
    if (folders.has(folder)) break;
    folders.add(folder);
  }
}
