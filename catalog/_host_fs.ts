/**
 * The file system calls on-disk discovery and delivery make, behind one
 * small seam: on Deno, Deno's own calls, exactly as the disk catalog made
 * them (they cost a fraction of `node:fs`'s inside Deno); on Node, the
 * same calls over `node:fs`. Opening a file is `node:fs`'s on both, as
 * only it opens without waiting on a named pipe. The runtime is chosen on
 * first use, never at import, so a bundle that holds this module loads on
 * either.
 *
 * The statuses are cordon's own {@linkcode HostFileInfo}, the fields of
 * Deno's `FileInfo` the catalog reads, so Deno's objects pass as they are;
 * a failure is sorted by {@linkcode HostFs.errorKind}, not by the class
 * one runtime throws.
 *
 * @module
 */

import fs from "node:fs";
import fsPromises from "node:fs/promises";

/** What the disk catalog reads of a file's status. */
export interface HostFileInfo {
  readonly isFile: boolean;
  readonly isDirectory: boolean;
  readonly isSymlink: boolean;
  readonly size: number;
  readonly mtime: Date | null;
  readonly ctime: Date | null;
  readonly dev: number;
  /** `null` where the platform has no inodes. */
  readonly ino: number | null;
}

/** One entry of a folder, its kind not following a link. */
export interface HostDirEntry {
  readonly name: string;
  readonly isFile: boolean;
  readonly isDirectory: boolean;
  readonly isSymlink: boolean;
}

/** A file opened for reading synchronously. */
export interface HostSyncFile {
  /** The opened file's status. */
  statSync(): HostFileInfo;
  /** Fills `into` from the file; 0 or `null` at its end. */
  readSync(into: Uint8Array): number | null;
  close(): void;
}

/** A file opened for reading asynchronously. */
export interface HostAsyncFile {
  /** The opened file's status. */
  stat(): Promise<HostFileInfo>;
  /** Fills `into` from the file; `null` at its end. */
  read(into: Uint8Array): Promise<number | null>;
  close(): void | Promise<void>;
}

/**
 * Why a call failed, as the catalog tells its user: nothing at the path,
 * the file system refused (its permissions), the runtime refused (Deno's
 * `--allow-read`, Node's permission model), or anything else.
 */
export type HostErrorKind = "not-found" | "denied" | "not-capable" | "other";

/** The file system calls of on-disk discovery and delivery. */
export interface HostFs {
  /** The flag that lets the runtime read a path, for remedies. */
  readonly readFlag: string;
  realPath(path: string): Promise<string>;
  realPathSync(path: string): string;
  /** Follows links. */
  statSync(path: string): HostFileInfo;
  lstatSync(path: string): HostFileInfo;
  /** Follows links. */
  stat(path: string): Promise<HostFileInfo>;
  lstat(path: string): Promise<HostFileInfo>;
  readDirSync(path: string): Iterable<HostDirEntry>;
  readDir(path: string): AsyncIterable<HostDirEntry>;
  /**
   * Opens for reading, following links, without waiting for a writer when
   * the path names a named pipe: check the opened file's status before
   * reading it.
   */
  openSync(path: string): HostSyncFile;
  /** Opens as {@linkcode HostFs.openSync} does. */
  open(path: string): Promise<HostAsyncFile>;
  /** Removes a file. */
  remove(path: string): Promise<void>;
  /**
   * Whether the runtime lets this process read `path` without asking
   * (Deno's permissions; on Node, its permission model when it is on).
   */
  mayRead(path: string): boolean;
  errorKind(error: unknown): HostErrorKind;
  /**
   * The identity of the folder or file `path` leads to (following links):
   * device, inode and birth time, so one renamed over it reads as another.
   */
  identitySync(path: string): string;
}

let chosen: HostFs | undefined;

/**
 * The host's file system calls: Deno's where the Deno namespace is,
 * otherwise `node:fs`'s. Chosen on the first call and kept.
 */
export function hostFs(): HostFs {
  return chosen ??= pickHostFs();
}

function pickHostFs(): HostFs {
  const { Deno: deno } = globalThis as { Deno?: typeof Deno };
  return deno === undefined ? nodeFs() : denoFs(deno);
}

/** Deno's own calls, each as the disk catalog made it before the seam. */
function denoFs(deno: typeof Deno): HostFs {
  return {
    readFlag: "--allow-read",
    realPath: (path) => deno.realPath(path),
    realPathSync: (path) => deno.realPathSync(path),
    statSync: (path) => deno.statSync(path),
    lstatSync: (path) => deno.lstatSync(path),
    stat: (path) => deno.stat(path),
    lstat: (path) => deno.lstat(path),
    readDirSync: (path) => deno.readDirSync(path),
    readDir: (path) => deno.readDir(path),
    // Deno's open has no O_NONBLOCK: a named pipe put in place of a
    // checked file between its status and its open would hold the open,
    // and with it discovery, until something writes to the pipe.
    openSync: nodeOpenSync,
    open: nodeOpen,
    remove: (path) => deno.remove(path),
    mayRead: (path) =>
      deno.permissions.querySync({ name: "read", path }).state === "granted",
    errorKind(error) {
      if (error instanceof deno.errors.NotFound) return "not-found";
      if (error instanceof deno.errors.PermissionDenied) return "denied";
      if (error instanceof deno.errors.NotCapable) return "not-capable";
      // Opening throws Node's errors, by their code.
      return nodeErrorKind(error);
    },
    identitySync(path) {
      const info = deno.statSync(path);
      return `${info.dev}:${info.ino}:${info.birthtime?.getTime()}`;
    },
  };
}

/**
 * How Node opens a file to read: read only and without waiting on a pipe
 * (a pipe put in place of a checked file would block the only thread). A
 * regular file reads the same either way. A flag the platform lacks is 0.
 */
const NODE_READ_FLAGS = fs.constants.O_RDONLY |
  (fs.constants.O_NONBLOCK ?? 0);

/** Node's error codes by the kind the catalog tells apart. */
const NODE_KINDS: Readonly<Record<string, HostErrorKind>> = {
  ENOENT: "not-found",
  EACCES: "denied",
  EPERM: "denied",
  ERR_ACCESS_DENIED: "not-capable",
};

/** The calls over `node:fs`, with its statuses as {@linkcode HostFileInfo}. */
function nodeFs(): HostFs {
  const { process } = globalThis as {
    process?: { permission?: { has(scope: string, path: string): boolean } };
  };
  return {
    readFlag: "--allow-fs-read",
    // The native call, realpath(3), as Deno's; the other walks each link
    // in JavaScript and caches what it saw.
    realPath: (path) => fsPromises.realpath(path),
    realPathSync: (path) => fs.realpathSync.native(path),
    statSync: (path) => nodeInfo(fs.statSync(path)),
    lstatSync: (path) => nodeInfo(fs.lstatSync(path)),
    stat: async (path) => nodeInfo(await fsPromises.stat(path)),
    lstat: async (path) => nodeInfo(await fsPromises.lstat(path)),
    readDirSync: (path) =>
      fs.readdirSync(path, { withFileTypes: true }).map(nodeEntry),
    readDir: nodeReadDir,
    openSync: nodeOpenSync,
    open: nodeOpen,
    remove: (path) => fsPromises.unlink(path),
    mayRead: (path) => process?.permission?.has("fs.read", path) ?? true,
    errorKind: nodeErrorKind,
    identitySync(path) {
      // Exact: a number loses the low bits of an inode past 2^53.
      const info = fs.statSync(path, { bigint: true });
      return `${info.dev}:${info.ino}:${info.birthtimeNs}`;
    },
  };
}

function nodeErrorKind(error: unknown): HostErrorKind {
  const code = (error as { code?: unknown } | null)?.code;
  return (typeof code === "string" && Object.hasOwn(NODE_KINDS, code))
    ? NODE_KINDS[code]!
    : "other";
}

function nodeInfo(stats: fs.Stats): HostFileInfo {
  return {
    isFile: stats.isFile(),
    isDirectory: stats.isDirectory(),
    isSymlink: stats.isSymbolicLink(),
    size: stats.size,
    mtime: stats.mtime,
    ctime: stats.ctime,
    dev: stats.dev,
    ino: stats.ino,
  };
}

function nodeEntry(entry: fs.Dirent): HostDirEntry {
  return {
    name: entry.name,
    isFile: entry.isFile(),
    isDirectory: entry.isDirectory(),
    isSymlink: entry.isSymbolicLink(),
  };
}

async function* nodeReadDir(path: string): AsyncGenerator<HostDirEntry> {
  for (const entry of await fsPromises.readdir(path, { withFileTypes: true })) {
    yield nodeEntry(entry);
  }
}

function nodeOpenSync(path: string): HostSyncFile {
  const fd = fs.openSync(path, NODE_READ_FLAGS);
  return {
    statSync: () => nodeInfo(fs.fstatSync(fd)),
    readSync: (into) => fs.readSync(fd, into),
    close: () => fs.closeSync(fd),
  };
}

async function nodeOpen(path: string): Promise<HostAsyncFile> {
  const handle = await fsPromises.open(path, NODE_READ_FLAGS);
  return {
    stat: async () => nodeInfo(await handle.stat()),
    async read(into) {
      const { bytesRead } = await handle.read(into, 0, into.length, null);
      return bytesRead === 0 && into.length > 0 ? null : bytesRead;
    },
    close: () => handle.close(),
  };
}
