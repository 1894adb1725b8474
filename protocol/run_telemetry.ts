// This module is browser compatible.

/**
 * Spans and metrics of sandbox runs on every tier (the QuickJS loader and
 * pool, the worker and process sandboxes, the vm tier's calls), through
 * `@opentelemetry/api`. Without a registered SDK (or `OTEL_DENO=true` in
 * Deno) every call is a cheap no-op. Attributes carry the tier and the
 * outcome code only: never the guest's source, context, value, logs or
 * messages. A run's span is a child of the span active where the run was
 * asked for.
 *
 * @module
 */

import {
  type Attributes,
  type Counter,
  createNoopMeter,
  type Histogram,
  type Meter,
  metrics,
  ProxyTracerProvider,
  type Span,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import type { SandboxResult, Tier } from "../protocol/sandbox_result.ts";

/** The instrumentation scope name. */
export const INSTRUMENTATION_SCOPE = "@cordon/cordon/sandbox";
/** The span of one run. */
export const SPAN_NAME = "cordon.sandbox.run";
/** The counter of runs. */
export const COUNTER_NAME = "cordon.sandbox.runs";
/** The histogram of run durations, in milliseconds. */
export const HISTOGRAM_NAME = "cordon.sandbox.duration";
/** The attribute that names the tier. */
export const TIER_ATTRIBUTE = "cordon.tier";
/** The attribute that names the outcome: `ok` or the error code. */
export const OUTCOME_ATTRIBUTE = "cordon.outcome";

let instruments:
  | { meter: Meter; counter: Counter; histogram: Histogram }
  | undefined;

function currentInstruments(): { counter: Counter; histogram: Histogram } {
  const meter = metrics.getMeter(INSTRUMENTATION_SCOPE);
  if (instruments?.meter !== meter) {
    instruments = {
      meter,
      counter: meter.createCounter(COUNTER_NAME, {
        description: "Sandbox runs, by tier and outcome",
      }),
      histogram: meter.createHistogram(HISTOGRAM_NAME, {
        description: "Wall time of a sandbox run, from run() to its answer",
        unit: "ms",
      }),
    };
  }
  return instruments;
}

/**
 * The no-op provider the API's tracer proxy falls back to while no SDK is
 * registered (the API does not export it).
 */
const NO_TRACER_PROVIDER = new ProxyTracerProvider().getDelegate();

/**
 * Whether neither a tracer nor a meter provider is registered. Then a run
 * records nothing and skips the no-op span and instruments, which cost
 * about 2 µs of a trivial QuickJS run of about 130 µs (measured side by
 * side). A provider registered through another copy of the API is not
 * this copy's proxy, so it counts as registered. The server telemetry
 * skips its span on the same test.
 *
 * @returns `true` while no tracer or meter provider is registered.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nothingRegistered } from "./run_telemetry.ts";
 *
 * assert.equal(typeof nothingRegistered(), "boolean");
 * ```
 */
export function nothingRegistered(): boolean {
  const provider = trace.getTracerProvider();
  return provider instanceof ProxyTracerProvider &&
    provider.getDelegate() === NO_TRACER_PROVIDER &&
    metrics.getMeter(INSTRUMENTATION_SCOPE) === createNoopMeter();
}

/** The telemetry of one run, started by {@linkcode startRunTelemetry}. */
export interface RunTelemetry {
  /** Ends the span and records the run's metrics. */
  end(result: SandboxResult): SandboxResult;
  /**
   * Ends the span of a run that threw instead of answering (a host-side
   * fault): status `ERROR` with the error's name, no outcome, no metrics.
   */
  endThrown(error: unknown): void;
}

/** A run's telemetry while nothing is registered. */
const UNRECORDED: RunTelemetry = Object.freeze({
  end: (result: SandboxResult) => result,
  endThrown: () => {},
});

/**
 * Starts the span of one run, as a child of the caller's active span.
 *
 * @param tier Where the run happens.
 * @returns The run's telemetry; call `end` exactly once.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { startRunTelemetry } from "./run_telemetry.ts";
 *
 * const telemetry = startRunTelemetry("quickjs");
 * const result = telemetry.end({
 *   ok: true,
 *   value: 2,
 *   logs: [],
 *   logsTruncated: false,
 *   metrics: { tier: "quickjs", durationMs: 1 },
 * });
 * assert.equal(result.ok, true);
 * ```
 */
export function startRunTelemetry(tier: Tier): RunTelemetry {
  if (nothingRegistered()) return UNRECORDED;
  const span: Span = trace.getTracer(INSTRUMENTATION_SCOPE).startSpan(
    SPAN_NAME,
    { attributes: { [TIER_ATTRIBUTE]: tier } },
  );
  return {
    end(result) {
      const outcome = result.ok ? "ok" : result.error.code;
      const attributes: Attributes = {
        [TIER_ATTRIBUTE]: tier,
        [OUTCOME_ATTRIBUTE]: outcome,
      };
      if (span.isRecording()) {
        span.setAttribute(OUTCOME_ATTRIBUTE, outcome);
        if (!result.ok) {
          span.setStatus({ code: SpanStatusCode.ERROR, message: outcome });
        }
      }
      span.end();
      const { counter, histogram } = currentInstruments();
      counter.add(1, attributes);
      histogram.record(result.metrics.durationMs, attributes);
      return result;
    },
    endThrown(error) {
      // The name only: a host fault's message may name paths.
      const name = error instanceof Error ? error.name : typeof error;
      span.setStatus({ code: SpanStatusCode.ERROR, message: name });
      span.end();
    },
  };
}
