// This module is browser compatible.

/**
 * The two answers of `authorizeDelivery`, built one way by the disk, remote
 * and staged catalogs, so a delivery and a refusal have the same fields
 * whichever catalog gives them.
 *
 * @module
 */

import type {
  AuthorizedDelivery,
  DeliveryRefusal,
  ErrorCode,
  ModuleSummary,
  PackRef,
} from "../protocol/mod.ts";

/** A delivery refusal with its code and message. */
export function refusal(
  reason: DeliveryRefusal["reason"],
  code: ErrorCode,
  message: string,
): DeliveryRefusal {
  return { ok: false, reason, code, message };
}

/** The delivery of a listed module whose source was checked against it. */
export function authorizedDelivery(
  pack: PackRef,
  module: ModuleSummary,
  content: string,
): AuthorizedDelivery {
  return {
    ok: true,
    moduleId: module.id,
    content,
    mediaType: "text/javascript",
    digest: module.digest,
    graphDigest: module.graphDigest,
    dependencyIds: [...module.dependencyIds],
    pack: { name: pack.name, version: pack.version },
    path: module.path,
  };
}
