/**
 * What the disk catalog answers at delivery time, apart from its caches: a
 * module's bytes read again from its pack, handed out only when they match
 * the digest discovery listed, and the refusals and pack statuses it
 * answers when a module cannot be delivered or loaded.
 *
 * @module
 */

import type {
  DeliveryRefusal,
  ModuleSummary,
  PackRef,
} from "../protocol/mod.ts";
import type { PackStatus } from "./types.ts";
import { sha256DigestNow } from "./_sha256.ts";
import { remedy } from "./_pack_status.ts";
import { join } from "./_host_path.ts";
import { refusal } from "./_delivery_answer.ts";
import type { InstalledPack } from "./_pack_folder.ts";

/** Reads a module's file now, or `undefined` when it is not the listed one. */
export function readListedBytes(
  root: string,
  pack: InstalledPack,
  module: ModuleSummary,
  maxBytes: number,
): Uint8Array<ArrayBuffer> | undefined {
  try {
    const path = join(join(root, pack.rel), module.path);
    const info = Deno.statSync(path);
    if (!info.isFile || info.size > maxBytes) return undefined;
    const bytes = Deno.readFileSync(path);
    if (bytes.byteLength > maxBytes) return undefined;
    // The digest, not the path, decides: only the listed bytes go out.
    return sha256DigestNow(bytes) === module.digest ? bytes : undefined;
  } catch {
    return undefined;
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
