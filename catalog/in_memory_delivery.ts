// This module is browser compatible.

/**
 * The private seam between a catalog that holds its modules in memory (the
 * on-disk catalog) and the delivery handler. It is internal to this
 * package: neither `deno.json` `exports` nor `catalog/mod.ts` lists it, so
 * users cannot import it, and the public {@linkcode SandboxModuleCatalog}
 * stays two questions.
 *
 * A catalog registers here how it answers a delivery request at once, the
 * bytes it read at discovery behind each delivery it hands out, and its
 * listing as one frozen list it replaces when it changes. The handler asks
 * here first: a registered catalog answers without a turn of the event
 * loop, its bytes are sent as read, under the digest discovery computed
 * over them, and its listing is known unchanged by the list's identity.
 * Any other catalog is asked through `authorizeDelivery` and `summaries`:
 * its content is encoded and checked by the handler, and its listing is
 * compared pack by pack.
 *
 * @module
 */

import type {
  AuthorizedDelivery,
  DeliveryRefusal,
  PackSummary,
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

/**
 * Answers what `summaries` answers, without a copy: a frozen list that the
 * catalog replaces, and never changes, when what it lists changes. The
 * list itself is the catalog's version token: while a call returns the
 * same list, nothing listed changed.
 */
export type ListNow = () => readonly PackSummary[];

const authorizers = new WeakMap<SandboxModuleCatalog, AuthorizeNow>();
const listers = new WeakMap<SandboxModuleCatalog, ListNow>();
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
 * Registers how a catalog lists its packs from memory.
 *
 * @param catalog The catalog, as the handler will be given it.
 * @param listNow Its frozen list, replaced whenever it changes.
 */
export function listFromMemory(
  catalog: SandboxModuleCatalog,
  listNow: ListNow,
): void {
  listers.set(catalog, listNow);
}

/**
 * How to ask a catalog for its listing: its frozen list when it registered
 * one, else a copy from its public `summaries`. Resolve it once and call it
 * per request.
 *
 * @param catalog The catalog.
 * @returns A function that answers the catalog's packs now.
 */
export function summariesReader(catalog: SandboxModuleCatalog): ListNow {
  return listers.get(catalog) ?? (() => catalog.summaries());
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
