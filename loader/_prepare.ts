// This module is browser compatible.

/**
 * What every QuickJS run does on the caller's side before any code runs:
 * reading the run's options, checking the declaration, prefetching and
 * resolving its packs, and asking the entitlement policy. The in-thread
 * loader and the pool share it, so both refuse the same runs the same way.
 *
 * @module
 */

import { EMPTY_CATALOG } from "../catalog/empty_catalog.ts";
import type {
  ExecutionResolution,
  SandboxModuleCatalog,
} from "../catalog/types.ts";
import { CordonError } from "../protocol/cordon_error.ts";
import { readContextJson } from "../protocol/context_json.ts";
import type { Declaration } from "../protocol/declaration.ts";
import type { Requester } from "../protocol/delivery.ts";
import { isErrorCode } from "../protocol/error_codes.ts";
import { type FailureDetail, runFailures } from "../protocol/run_result.ts";
import { readOptions } from "../protocol/options.ts";
import { readRequester } from "../protocol/requester.ts";
import {
  readRunInputBounds,
  RUN_INPUT_BOUND_KEYS,
  type RunInputBounds,
  sourceOverBound,
} from "../protocol/run_inputs.ts";
import { settleUnlessAborted } from "../protocol/deadline.ts";
import { LIMIT_KEYS, readLimits, type RunLimits } from "./_limits.ts";
import { deliveryAnswerFault, resolutionFault } from "./_catalog_answers.ts";

/** The options of one run, checked. */
export interface RunSettings {
  limits: RunLimits;
  signal: AbortSignal | undefined;
  /**
   * Whether whoever waits for the run is gone, checked with the signal
   * while guest code runs: a runner's host that died cannot abort it.
   */
  abandoned?: () => boolean;
  /** The context value as JSON text: `null` when the caller gave none. */
  contextJson: string;
  /**
   * The most bytes of UTF-8 the JSON text of the guest's value may hold:
   * the guest stops writing it past as many characters, and the engine's
   * host counts its bytes before it parses it.
   */
  maxResultBytes: number;
  /** Who the run is for; `undefined` when the caller named no one. */
  requester: Requester | undefined;
  /**
   * The bounds on the run's source and context, checked on the caller's
   * side: a runner gets a run already checked and has none.
   */
  bounds?: RunInputBounds;
  /** Why the context is refused, when it is past its bound. */
  contextRefused?: FailureDetail;
}

/** A declaration ready to run: checked, its packs resolved and granted. */
export interface PreparedRun {
  declaration: Declaration;
  resolution: ExecutionResolution;
}

/** What {@linkcode readRunSettings} reads from a run's options. */
export interface RunOptionsInput
  extends Partial<Record<keyof RunLimits | keyof RunInputBounds, unknown>> {
  context?: unknown;
  signal?: unknown;
  requester?: unknown;
}

function isAbortSignal(value: unknown): value is AbortSignal {
  return typeof AbortSignal === "function" && value instanceof AbortSignal;
}

const RUN_OPTION_KEYS = {
  ...LIMIT_KEYS,
  ...RUN_INPUT_BOUND_KEYS,
  context: true,
  signal: true,
  requester: true,
} as const;

/**
 * Checks a run's options against the loader's defaults.
 *
 * @throws {TypeError} When an option has the wrong type or is unknown.
 * @throws {RangeError} When a limit is out of range.
 */
export function readRunSettings(
  given: RunOptionsInput,
  defaults: Readonly<RunLimits>,
  defaultBounds: Readonly<RunInputBounds>,
): RunSettings {
  const options = readOptions("run the declaration", given, RUN_OPTION_KEYS);
  const limits = readLimits("run the declaration", options, defaults);
  const bounds = readRunInputBounds(
    "run the declaration",
    options,
    defaultBounds,
  );
  const { signal } = options;
  if (signal !== undefined && !isAbortSignal(signal)) {
    throw new TypeError(
      "Cannot run the declaration: signal must be an AbortSignal",
    );
  }
  // No context is `null`, as on the worker and process tiers, so a guest
  // sees the same argument on every tier.
  const context = readContextJson(
    "run the declaration",
    options.context,
    bounds.maxContextBytes,
  );
  return {
    limits,
    signal,
    contextJson: context.ok ? context.json : "null",
    maxResultBytes: bounds.maxResultBytes,
    requester: readRequester("run the declaration", options.requester),
    bounds,
    ...(context.ok ? {} : { contextRefused: context.error }),
  };
}

/**
 * Why a run's inputs are refused before any work on them: a source, then a
 * context, past its bound.
 *
 * @returns The failure, or `null` when both are within their bounds.
 */
export function inputRefusal(
  declaration: Declaration,
  settings: RunSettings,
): FailureDetail | null {
  const { bounds, contextRefused } = settings;
  if (bounds === undefined) return null;
  return sourceOverBound(declaration.source, bounds.maxSourceBytes) ??
    contextRefused ?? null;
}

function fromError(error: CordonError): FailureDetail {
  return { code: error.code, name: error.name, message: error.message };
}

/** The longest part of a catalog's thrown text a failure repeats. */
const MAX_THROWN_CHARS = 1024;

/** What a catalog threw, as text, whatever it threw. */
function describeThrown(thrown: unknown): string {
  let text: string;
  try {
    text = thrown instanceof Error
      ? `${thrown.name}: ${thrown.message}`
      : `it threw ${String(thrown)}`;
  } catch {
    text = "it threw a value that cannot be read";
  }
  return text.length > MAX_THROWN_CHARS
    ? `${text.slice(0, MAX_THROWN_CHARS)}…`
    : text;
}

/** The failure of a run whose catalog failed, and how. */
function catalogFault(detail: string): FailureDetail {
  return {
    code: "CATALOG_FAILED",
    name: "CatalogError",
    message:
      `The catalog failed while preparing the run: ${detail}; fix the catalog, which must implement SandboxModuleCatalog`,
  };
}

/**
 * A catalog that threw something other than a `CordonError`, or answered
 * a wrong shape that made reading it throw: the run fails with a code of
 * its own, so a broken catalog cannot reject a run with any value at all.
 */
function catalogFailed(thrown: unknown): FailureDetail {
  return catalogFault(describeThrown(thrown));
}

/**
 * Thrown where a catalog's answer has the wrong shape, so the run fails
 * with `CATALOG_FAILED` and what is wrong.
 */
class WrongShape {
  constructor(readonly detail: string) {}
}

/**
 * The failure of a run whose catalog threw or rejected: a `CordonError`
 * keeps its code, anything else is `CATALOG_FAILED`.
 */
function failureOf(thrown: unknown): FailureDetail {
  try {
    if (thrown instanceof WrongShape) return catalogFault(thrown.detail);
    if (thrown instanceof CordonError) return fromError(thrown);
  } catch {
    // A proxy's traps may throw even when asked for its prototype, and
    // nothing a catalog throws may reject the run.
  }
  return catalogFailed(thrown);
}

/**
 * The names of the declared packs the catalog has installed, resolved or
 * not (a pin that does not match), each with one of its module ids, which
 * stands for the pack when the policy is asked: the policy decides by
 * pack.
 */
function installedDeclared(
  catalog: SandboxModuleCatalog,
  resolution: ExecutionResolution,
): Map<string, string | undefined> {
  const installed = new Map<string, string | undefined>();
  let summaries: ReturnType<SandboxModuleCatalog["summaries"]> | undefined;
  for (const status of resolution.statuses) {
    if (status.status === "ok") {
      const pack = resolution.packs[status.name];
      installed.set(status.name, Object.values(pack?.files ?? {})[0]);
    } else if (
      status.status === "version-mismatch" ||
      status.status === "digest-mismatch"
    ) {
      // Read only when a pin did not match: a large catalog lists many packs.
      summaries ??= catalog.summaries();
      const pack = summaries.find((summary) => summary.name === status.name);
      installed.set(status.name, pack?.modules[0]?.id);
    }
  }
  return installed;
}

/**
 * Asks the catalog's entitlement policy, once per declared pack it has
 * installed, whether the requester may have the pack. `ended` tells the
 * catalog when the run stops waiting for it.
 *
 * @returns The names of the packs it refused, or the failure of a policy
 * that could not decide.
 */
async function refusedPacks(
  catalog: SandboxModuleCatalog,
  resolution: ExecutionResolution,
  requester: Requester,
  ended: AbortSignal,
): Promise<Set<string> | FailureDetail> {
  const asks = [...installedDeclared(catalog, resolution)].map(
    async ([name, moduleId]) => {
      if (moduleId === undefined) return null;
      const answer = await catalog.authorizeDelivery(moduleId, requester, {
        signal: ended,
      });
      const fault = deliveryAnswerFault(answer);
      if (fault !== null) {
        throw new WrongShape(`its delivery answer ${fault}`);
      }
      if (answer.ok) return null;
      if (answer.reason === "forbidden") return name;
      return {
        code: isErrorCode(answer.code) ? answer.code : "DELIVERY_UNAVAILABLE",
        name: "PackResolutionError",
        message: answer.message,
      } satisfies FailureDetail;
    },
  );
  const refused = new Set<string>();
  for (const answer of await Promise.all(asks)) {
    if (typeof answer === "string") refused.add(answer);
    else if (answer !== null) return answer;
  }
  return refused;
}

/**
 * What a run with a requester is told of the catalog beyond the packs it
 * declared: a declared pack discovery rejected resolves as a pack no one
 * installed, word for word as cordon's catalogs answer one, since why
 * discovery rejected a folder is for the operator, who reads the catalog's
 * diagnostics; and no pack outside the declaration is named as installed,
 * so an undeclared import reads alike for every pack.
 */
function requesterView(resolution: ExecutionResolution): ExecutionResolution {
  const statuses = resolution.statuses.map((status) =>
    status.status === "not-installed"
      ? EMPTY_CATALOG.resolveForExecution({
        source: "",
        packages: [status.name],
      }).statuses[0]!
      : status
  );
  return {
    ...resolution,
    statuses,
    installed: Object.keys(resolution.packs),
  };
}

/**
 * The refusal of a declared pack the policy refuses to the requester. It
 * names the pack and nothing more, whatever the declaration pins, so a pin
 * that does not match never tells the requester the installed version or
 * graph digest.
 */
function packForbidden(name: string): FailureDetail {
  return {
    code: "PACK_FORBIDDEN",
    name: "PackResolutionError",
    message:
      `Cannot run with pack "${name}": the entitlement policy refused this requester; grant the requester the pack, or declare another pack`,
  };
}

/**
 * The first declared pack, in declaration order, that refuses the run: one
 * the policy refused the requester, or one that did not resolve. A refused
 * pack's pin is not compared, so only a requester the policy allows learns
 * what version or graph digest is installed.
 */
function firstRefusal(
  resolution: ExecutionResolution,
  refused: ReadonlySet<string>,
): FailureDetail | null {
  for (const status of resolution.statuses) {
    if (refused.has(status.name)) return packForbidden(status.name);
    if (status.status !== "ok") {
      return {
        code: isErrorCode(status.code) ? status.code : "PACK_NOT_INSTALLED",
        name: "PackResolutionError",
        message: status.message,
      };
    }
  }
  return null;
}

/**
 * Settles as `work` does, or rejects with the signal's reason once `ended`
 * aborts first: a catalog may ignore the signal it is given and never
 * settle, and the run must end at its deadline or abort all the same.
 */
function untilEnded<T>(work: Promise<T>, ended: AbortSignal): Promise<T> {
  if (ended.aborted) return Promise.reject(ended.reason);
  return settleUnlessAborted(work, ended, () => {
    throw ended.reason;
  });
}

/** Prefetches, resolves and asks the entitlement policy, in that order. */
async function resolveAndGrant(
  catalog: SandboxModuleCatalog,
  prefetch: SandboxModuleCatalog["prefetch"],
  declaration: Declaration,
  requester: Requester | undefined,
  ended: AbortSignal,
): Promise<PreparedRun | FailureDetail> {
  if (prefetch !== undefined) {
    await prefetch.call(catalog, declaration, { signal: ended });
  }
  const resolved = catalog.resolveForExecution(declaration);
  const fault = resolutionFault(declaration, resolved);
  if (fault !== null) throw new WrongShape(`its resolution ${fault}`);
  // Asked only for a named requester: a remote catalog speaks for the one
  // requester its server authenticates, and would fetch on every run. Asked
  // before a pin is compared, so a refused requester learns no version.
  if (requester === undefined) {
    return firstRefusal(resolved, new Set()) ??
      { declaration, resolution: resolved };
  }
  const refused = await refusedPacks(catalog, resolved, requester, ended);
  if (!(refused instanceof Set)) return refused;
  const resolution = requesterView(resolved);
  return firstRefusal(resolution, refused) ?? { declaration, resolution };
}

/**
 * Prefetches and resolves a checked declaration's packs, and asks the
 * entitlement policy for each, in that order, so no code runs for a
 * declaration that any step refuses (the run read and checked the
 * declaration first, with `readDeclaration`). The run's `timeoutMs` also bounds the
 * prefetch and the entitlement check, and the caller's signal ends them,
 * even when the catalog never settles: the run then fails with `TIMEOUT` or
 * `ABORTED`.
 *
 * @returns The run, or the failure that refuses it: what the catalog throws
 * that is not a {@linkcode CordonError} is `CATALOG_FAILED`.
 */
export async function prepareRun(
  catalog: SandboxModuleCatalog,
  checked: Declaration,
  settings: RunSettings,
): Promise<PreparedRun | FailureDetail> {
  const { signal, limits, requester } = settings;
  // Read once: a catalog whose getter answers no prefetch now and one
  // later would otherwise be awaited with no deadline.
  let prefetch: SandboxModuleCatalog["prefetch"];
  try {
    prefetch = catalog.prefetch;
  } catch (error) {
    return catalogFailed(error);
  }
  // Without a prefetch or an entitlement check nothing is awaited, so
  // there is nothing to bound. Otherwise a timer of its own, cleared when
  // the preparation ends: a timeout signal would keep each run's timer, and
  // what it holds, until timeoutMs passed.
  const waits = prefetch !== undefined || requester !== undefined;
  const deadline = new AbortController();
  const timer = waits
    ? setTimeout(
      () =>
        deadline.abort(
          new DOMException(
            `The run's preparation did not end within timeoutMs (${limits.timeoutMs} ms)`,
            "TimeoutError",
          ),
        ),
      limits.timeoutMs,
    )
    : undefined;
  const ended = signal === undefined || !waits
    ? deadline.signal
    : AbortSignal.any([signal, deadline.signal]);
  try {
    const work = resolveAndGrant(catalog, prefetch, checked, requester, ended);
    return await (waits ? untilEnded(work, ended) : work);
  } catch (error) {
    if (signal?.aborted) return runFailures.aborted();
    if (deadline.signal.aborted) {
      return runFailures.preparationTimeout(limits.timeoutMs);
    }
    // A check that failed the run leaves the other packs' checks under
    // way: the catalog is told nothing waits for them any more.
    deadline.abort(preparationEnded());
    return failureOf(error);
  } finally {
    clearTimeout(timer);
  }
}

function preparationEnded(): DOMException {
  return new DOMException(
    "The run no longer waits for this answer: its preparation ended",
    "AbortError",
  );
}
