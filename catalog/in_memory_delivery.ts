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
 * A catalog also registers here how it tells whether a requester may have
 * a pack, so the listing shows each requester only the packs it may fetch,
 * or that its policy allows everyone everything, so the listing is the
 * same for all. Any other catalog is asked through `authorizeDelivery` for
 * one module of each pack, as the loaders ask it before a run.
 *
 * A call through `authorizeDelivery` is given a signal, read from the
 * caller's {@linkcode WaitSignal} at the call. An answer from memory has
 * no work of its own to stop, but the catalog's entitlement policy may
 * wait: it is given options whose `signal` is read from the
 * {@linkcode WaitSignal} only when the policy reads it, so a policy that
 * answers at once makes the caller set up no signal.
 *
 * @module
 */

import type {
  AuthorizedDelivery,
  DeliveryRefusal,
  PackSummary,
  Requester,
} from "../protocol/mod.ts";
import { ignoreRejection } from "../protocol/hook_calls.ts";
import type { EntitlementOptions, SandboxModuleCatalog } from "./types.ts";

/** What a catalog answers to one delivery request. */
export type DeliveryAnswer = AuthorizedDelivery | DeliveryRefusal;

/**
 * Where a call that waits finds the signal that aborts once its caller
 * stops waiting. Read only by a call through `authorizeDelivery`, so the
 * caller may create the signal when it is first read.
 */
export interface WaitSignal {
  /** Aborts, with why, once the caller stops waiting. */
  readonly signal: AbortSignal;
}

/**
 * Answers what `authorizeDelivery` answers, with the same entitlement
 * check, as a plain value when it needs no wait. Reports faults as a
 * refusal or a rejected promise, never by throwing.
 */
export type AuthorizeNow = (
  moduleId: string,
  requester?: Requester,
  waiting?: WaitSignal,
) => DeliveryAnswer | Promise<DeliveryAnswer>;

/**
 * Answers what `summaries` answers, without a copy: a frozen list that the
 * catalog replaces, and never changes, when what it lists changes. The
 * list itself is the catalog's version token: while a call returns the
 * same list, nothing listed changed.
 */
export type ListNow = () => readonly PackSummary[];

/**
 * Whether a requester may have a listed pack's modules: `true` only when
 * `authorizeDelivery` would deliver them, `false` when the policy refuses,
 * fails or the pack is gone. Never throws; a promise only when the policy
 * waits.
 */
export type EntitledNow = (
  pack: PackSummary,
  requester: Requester,
  waiting?: WaitSignal,
) => boolean | Promise<boolean>;

/** What a catalog registers when its policy allows every requester everything. */
export const EVERYONE = "everyone";

const authorizers = new WeakMap<SandboxModuleCatalog, AuthorizeNow>();
const entitlers = new WeakMap<
  SandboxModuleCatalog,
  EntitledNow | typeof EVERYONE
>();
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
    ((moduleId, requester, waiting) =>
      catalog.authorizeDelivery(moduleId, requester, signalOf(waiting)));
}

/**
 * `authorizeDelivery`'s options for a caller that may stop waiting: a new
 * object, so the catalog sees nothing else of the caller.
 */
function signalOf(
  waiting: WaitSignal | undefined,
): { signal: AbortSignal } | undefined {
  return waiting === undefined ? undefined : { signal: waiting.signal };
}

/**
 * What a policy is told when its caller gave no signal: no prototype, so
 * its signal is not one a dependency of the host put on Object.prototype.
 */
const NO_SIGNAL: EntitlementOptions = Object.freeze(Object.create(null));

/**
 * A policy's options whose `signal` is read from the caller only when the
 * policy reads it. A class, so a request makes one small object and no
 * getter of its own: an object literal with a getter, frozen, cost about
 * 0.3 µs a request, against a delivery that answers in about 10.
 */
class LazySignalOptions implements EntitlementOptions {
  readonly #waiting: WaitSignal;

  constructor(waiting: WaitSignal) {
    this.#waiting = waiting;
  }

  /** The caller's signal, which aborts once it stops waiting. */
  get signal(): AbortSignal {
    return this.#waiting.signal;
  }
}
Object.freeze(LazySignalOptions.prototype);

/**
 * An entitlement policy's options for a caller that may stop waiting: a
 * new object, so the policy sees nothing else of the caller, whose
 * `signal` reads the caller's only when the policy reads it.
 *
 * @param waiting Where the caller's signal is found, if it has one.
 * @returns The options to pass the policy.
 */
export function entitlementOptions(
  waiting: WaitSignal | undefined,
): EntitlementOptions {
  return waiting === undefined ? NO_SIGNAL : new LazySignalOptions(waiting);
}

/**
 * Registers how a catalog tells whether a requester may have a pack.
 *
 * @param catalog The catalog, as the handler will be given it.
 * @param entitledNow Its answer, or {@linkcode EVERYONE} when every
 * requester may have every pack.
 */
export function entitleFromMemory(
  catalog: SandboxModuleCatalog,
  entitledNow: EntitledNow | typeof EVERYONE,
): void {
  entitlers.set(catalog, entitledNow);
}

/**
 * How to ask a catalog whether a requester may have a pack: its registered
 * answer, else whether `authorizeDelivery` delivers the pack's first
 * module (the policy decides by pack, so one module stands for all).
 * Resolve it once and call it per pack.
 *
 * @param catalog The catalog.
 * @returns The answer per pack, or `undefined` when the catalog
 * registered that every requester may have every pack.
 */
export function packEntitlement(
  catalog: SandboxModuleCatalog,
): EntitledNow | undefined {
  const registered = entitlers.get(catalog);
  if (registered === EVERYONE) return undefined;
  return registered ?? ((pack, requester, waiting) => {
    const moduleId = pack.modules[0]?.id;
    // A pack with no module has nothing the policy could be asked about.
    if (moduleId === undefined) return false;
    try {
      // Read as `await` reads it: a thenable of the platform's that calls
      // back twice, or after it threw, answers once.
      return Promise.resolve(catalog.authorizeDelivery(
        moduleId,
        requester,
        signalOf(waiting),
      )).then(
        (answer) => answer?.ok === true,
        () => false,
      );
    } catch {
      return false;
    }
  });
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
  return listers.get(catalog) ?? (() => {
    const summaries = catalog.summaries();
    // A method written async answers a promise, which the listing refuses
    // as no list: its rejection, which nobody waits for, is dropped.
    if (!Array.isArray(summaries)) ignoreRejection(summaries);
    return summaries;
  });
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
