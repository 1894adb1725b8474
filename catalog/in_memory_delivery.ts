// This module is browser compatible.

/**
 * The private seam between a catalog that holds its modules in memory (the
 * on-disk catalog) and the delivery handler. It is internal to this
 * package: neither `deno.json` `exports` nor `catalog/mod.ts` lists it, so
 * users cannot import it, and the public {@linkcode SandboxModuleCatalog}
 * stays two questions.
 *
 * A catalog registers here how it answers a delivery request at once, and
 * the bytes it read at discovery behind each delivery it hands out. The
 * handler asks here first: a registered catalog answers without a turn of
 * the event loop, and its bytes are sent as read, under the digest
 * discovery computed over them. Any other catalog is asked through
 * `authorizeDelivery`, and its content is encoded and checked by the
 * handler.
 *
 * @module
 */

import type {
  AuthorizedDelivery,
  DeliveryRefusal,
  Requester,
} from "../protocol/mod.ts";
import type { SandboxModuleCatalog } from "./types.ts";

/** What a catalog answers to one delivery request. */
export type DeliveryAnswer = AuthorizedDelivery | DeliveryRefusal;

/**
 * Answers what `authorizeDelivery` answers, with the same entitlement
 * check, as a plain value when it needs no wait. Reports faults as a
 * refusal or a rejected promise, never by throwing.
 */
export type AuthorizeNow = (
  moduleId: string,
  requester?: Requester,
) => DeliveryAnswer | Promise<DeliveryAnswer>;

const authorizers = new WeakMap<SandboxModuleCatalog, AuthorizeNow>();
const discovered = new WeakMap<AuthorizedDelivery, Uint8Array<ArrayBuffer>>();

/**
 * Registers how a catalog answers delivery requests from memory.
 *
 * @param catalog The catalog, as the handler will be given it.
 * @param authorizeNow Its synchronous-when-it-can answer.
 */
export function answerFromMemory(
  catalog: SandboxModuleCatalog,
  authorizeNow: AuthorizeNow,
): void {
  authorizers.set(catalog, authorizeNow);
}

/**
 * How to ask a catalog for deliveries: its in-memory answer when it
 * registered one, else its public `authorizeDelivery`. Resolve it once and
 * call it per request.
 *
 * @param catalog The catalog.
 * @returns A function that answers at once when the catalog can, or a
 * promise when it must wait.
 */
export function deliveryAuthorizer(
  catalog: SandboxModuleCatalog,
): AuthorizeNow {
  return authorizers.get(catalog) ??
    ((moduleId, requester) => catalog.authorizeDelivery(moduleId, requester));
}

/**
 * Records the bytes behind a delivery: the file as discovery read it, whose
 * SHA-256 is `delivery.digest` and whose UTF-8 text is `delivery.content`.
 *
 * @param delivery A frozen delivery the catalog hands out.
 * @param bytes Its bytes; nobody may change them afterwards.
 */
export function attachBytes(
  delivery: AuthorizedDelivery,
  bytes: Uint8Array<ArrayBuffer>,
): void {
  discovered.set(delivery, bytes);
}

/**
 * The bytes a catalog recorded behind a delivery, if it did.
 *
 * @param delivery A delivery.
 * @returns Bytes whose digest is `delivery.digest`, or `undefined`.
 */
export function bytesOf(
  delivery: AuthorizedDelivery,
): Uint8Array<ArrayBuffer> | undefined {
  return discovered.get(delivery);
}
