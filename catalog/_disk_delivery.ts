/**
 * What the disk catalog answers at delivery time, apart from its caches: a
 * module's bytes read again from its pack, handed out only when they match
 * the digest discovery listed, and the refusals and pack statuses it
 * answers when a module cannot be delivered or loaded.
 *
 * @module
 */

import fs from "node:fs";
import type {
  DeliveryRefusal,
  ModuleSummary,
  PackRef,
} from "../protocol/mod.ts";
import type { PackStatus } from "./types.ts";
import { sha256DigestNow } from "./_sha256.ts";
import { remedy } from "./_pack_status.ts";
import { join, SEP } from "./_host_path.ts";
import { refusal } from "./_delivery_answer.ts";
import type { InstalledPack } from "./_pack_folder.ts";
import { readCapped } from "./_pack_files.ts";
import { hostFs } from "./_host_fs.ts";

/**
 * How a module's file is opened at delivery: read only, without waiting on
 * a pipe (a pipe put in its place would block the server's only thread, so
 * every client, until something writes to it) and without following a link
 * at its last component. A flag the platform lacks is 0.
 */
const OPEN_FLAGS = fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0) |
  (fs.constants.O_NOFOLLOW ?? 0);

/** Codes of an open refused because a link is at the path (EMLINK: FreeBSD). */
const LINK_CODES = new Set(["ELOOP", "EMLINK"]);

/** What {@linkcode readRegular} finds when a link is at the path. */
const AT_LINK = Symbol("a link at the path");

/**
 * Reads a module's file now, or `undefined` when it is not the listed one.
 * The file is opened once and read through that handle, so what the
 * checks saw is what is read: a pipe, socket, device or folder is never
 * read (nor waited on), nor a file over `maxBytes`, nor one whose real
 * path left the pack (a link put in place of one of its folders). A file
 * discovery listed through a link inside the pack is read at its real
 * path, which must still be inside the pack.
 */
export function readListedBytes(
  root: string,
  pack: InstalledPack,
  module: ModuleSummary,
  maxBytes: number,
): Uint8Array<ArrayBuffer> | undefined {
  try {
    const packPath = join(root, pack.rel);
    const path = join(packPath, module.path);
    const inside = hostFs().realPathSync(packPath) + SEP;
    let bytes = readRegular(path, inside, maxBytes);
    if (bytes === AT_LINK) bytes = readThroughLink(inside, path, maxBytes);
    if (bytes === undefined || bytes === AT_LINK) return undefined;
    // The digest, not the path, decides: only the listed bytes go out.
    return sha256DigestNow(bytes) === module.digest ? bytes : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Reads the real path of a file reached through a link, when it is inside
 * the pack, as discovery lists such a file; {@linkcode AT_LINK} when a link
 * is at the real path too (put there since it was resolved).
 */
function readThroughLink(
  inside: string,
  path: string,
  maxBytes: number,
): Uint8Array<ArrayBuffer> | typeof AT_LINK | undefined {
  // Checked before the open too: nothing outside the pack is opened.
  const real = hostFs().realPathSync(path);
  if (!real.startsWith(inside)) return undefined;
  return readRegular(real, inside, maxBytes);
}

/**
 * Opens `path` with {@linkcode OPEN_FLAGS} and reads it when the handle is
 * a regular file of at most `maxBytes` that is still at the path itself.
 * Deno 2.9.6 honours the no-follow flag only with every permission; under
 * `--allow-read` it opens a link's target, so the path's own status
 * (not followed) must be the opened file, or it was a link. The flag
 * guards the last component only: a folder of the path may have become a
 * link out of the pack, so the real path, taken after the open, must be
 * under `inside` (the pack's real path and a separator).
 *
 * @returns The bytes, {@linkcode AT_LINK} when a link is at the path, or
 * `undefined` when the path holds no regular file of at most `maxBytes`
 * inside the pack.
 */
function readRegular(
  path: string,
  inside: string,
  maxBytes: number,
): Uint8Array<ArrayBuffer> | typeof AT_LINK | undefined {
  let fd: number;
  try {
    fd = fs.openSync(path, OPEN_FLAGS);
  } catch (error) {
    if (LINK_CODES.has((error as { code?: unknown } | null)?.code as string)) {
      return AT_LINK;
    }
    throw error;
  }
  try {
    const opened = fs.fstatSync(fd);
    if (!opened.isFile() || opened.size > maxBytes) return undefined;
    // Deno's own lstat costs a fifth of node:fs's; node:fs fills in an
    // inode the platform lacks (null) as 0.
    const host = hostFs();
    const atPath = host.lstatSync(path);
    if (atPath.isSymlink) return AT_LINK;
    if (atPath.dev !== opened.dev || (atPath.ino || 0) !== opened.ino) {
      return undefined;
    }
    if (!host.realPathSync(path).startsWith(inside)) return undefined;
    const bytes = readCapped(
      (into) => fs.readSync(fd, into),
      opened.size,
      maxBytes,
    );
    // It grew past the cap since its status was taken.
    return bytes.byteLength > maxBytes ? undefined : bytes;
  } finally {
    fs.closeSync(fd);
  }
}

/** The refusal when the entitlement policy itself failed. */
export function policyFailed(pack: string): DeliveryRefusal {
  return refusal(
    "unavailable",
    "DELIVERY_UNAVAILABLE",
    `Cannot deliver a module of pack "${pack}": the entitlement policy failed; ${
      remedy("DELIVERY_UNAVAILABLE")
    }`,
  );
}

/** The refusal of a module whose pack changed since it was listed. */
export function changedRefusal(pack: PackRef): DeliveryRefusal {
  return refusal(
    "unavailable",
    "PACK_FILE_CHANGED",
    `Cannot deliver a module of pack "${pack.name}": its file changed on disk since discovery listed it; ${
      remedy("PACK_FILE_CHANGED")
    }`,
  );
}

/** The status of a pack that changed since it was listed. */
export function changedStatus(name: string): PackStatus {
  return {
    name,
    status: "unavailable",
    code: "PACK_FILE_CHANGED",
    message:
      `Pack "${name}" cannot be loaded: a file of it changed on disk since discovery listed it; ${
        remedy("PACK_FILE_CHANGED")
      }`,
  };
}

/** The refusal of an id no pack lists. */
export const NOT_FOUND: DeliveryRefusal = Object.freeze(refusal(
  "not-found",
  "MODULE_NOT_FOUND",
  `No installed module has this id: ${remedy("MODULE_NOT_FOUND")}`,
));
