/**
 * Spans and metrics of sandbox runs, through `@opentelemetry/api`. Without
 * a registered SDK (or `OTEL_DENO=true` in Deno) every call is a cheap
 * no-op. Attributes carry the tier and the outcome code only: never the
 * guest's source, context, value, logs or messages. Any tier can use it;
 * the QuickJS loader may share it.
 *
 * @module
 */

import {
  type Attributes,
  type Counter,
  type Histogram,
  type Meter,
  metrics,
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

/** The telemetry of one run, started by {@linkcode startRunTelemetry}. */
export interface RunTelemetry {
  /** Ends the span and records the run's metrics. */
  end(result: SandboxResult): SandboxResult;
}

/**
 * Starts the span of one run.
 *
 * @param tier Where the run happens.
 * @returns The run's telemetry; call `end` exactly once.
 */
export function startRunTelemetry(tier: Tier): RunTelemetry {
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
  };
}
