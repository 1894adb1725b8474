/**
 * How every plugin module kind passes a request to its plugin and the
 * answer back, and the request counters it reports through `metrics()`.
 *
 * @module
 */

import { performance } from "node:perf_hooks";
import type { SerializedRequest } from "../protocol/bridge_messages.ts";
import {
  requestLimits,
  responseFromSerialized,
  serializeRequest,
} from "./_http_marshal.ts";
import type { PluginRequestContext } from "./plugin_module.ts";
import type { ResponseHeaderPolicy } from "./response_headers.ts";

/** The request part of a plugin's metrics. */
export interface RequestFigures {
  requests: number;
  failures: number;
  meanDurationMs: number;
  maxDurationMs: number;
}

/** Passes requests to one plugin, and counts and times them. */
export class RequestExchange {
  readonly #pluginId: string;
  readonly #limits: ReturnType<typeof requestLimits>;
  readonly #allowHeader: ResponseHeaderPolicy;
  #requests = 0;
  #failures = 0;
  #totalMs = 0;
  #maxMs = 0;

  /**
   * @param pluginId The plugin, for messages.
   * @param options The largest body passed on and the headers left out.
   * @param allowHeader Which response headers the plugin may set.
   * @throws {RangeError} When `maxBodyBytes` is not a whole number of bytes.
   */
  constructor(
    pluginId: string,
    options: { maxBodyBytes?: number; redactHeaders?: readonly string[] },
    allowHeader: ResponseHeaderPolicy = () => true,
  ) {
    this.#pluginId = pluginId;
    this.#limits = requestLimits(options);
    this.#allowHeader = allowHeader;
  }

  /**
   * Serializes the request, hands it to `answer` and builds the response
   * from what it answers; the request counts as failed when any of that
   * throws.
   *
   * @param context The host's request context.
   * @param answer The plugin's answer to the serialized request, as data.
   * @returns The response.
   */
  async exchange(
    context: PluginRequestContext,
    answer: (request: SerializedRequest) => unknown,
  ): Promise<Response> {
    this.#requests++;
    const started = performance.now();
    let failed = true;
    try {
      const request = await serializeRequest(context, this.#limits);
      const response = responseFromSerialized(
        await answer(request),
        this.#pluginId,
        this.#allowHeader,
      );
      failed = false;
      return response;
    } finally {
      const duration = performance.now() - started;
      if (failed) this.#failures++;
      this.#totalMs += duration;
      if (duration > this.#maxMs) this.#maxMs = duration;
    }
  }

  /** The figures so far. */
  figures(): RequestFigures {
    return {
      requests: this.#requests,
      failures: this.#failures,
      meanDurationMs: this.#requests === 0 ? 0 : this.#totalMs / this.#requests,
      maxDurationMs: this.#maxMs,
    };
  }
}
