import assert from "node:assert/strict";
import { recordTelemetry } from "../protocol/_test_telemetry_test.ts";
import type { SandboxModuleCatalog } from "../catalog/types.ts";
import { createDeliveryHandler } from "./handler.ts";
import {
  COUNTER_NAME,
  HISTOGRAM_NAME,
  INSTRUMENTATION_SCOPE,
  SPAN_NAME,
} from "./_telemetry.ts";

const catalog: SandboxModuleCatalog = {
  resolveForExecution: () => ({
    statuses: [],
    packs: {},
    modules: {},
    installed: [],
  }),
  authorizeDelivery: (id) =>
    id === "boom"
      ? Promise.reject(new Error("Cannot open /srv/packs/math/index.js"))
      : Promise.resolve({
        ok: false,
        reason: "not-found",
        code: "MODULE_NOT_FOUND",
        message: "No module",
      }),
  summaries: () => [],
};

Deno.test("createDeliveryHandler() records one span and the request metrics per request, never the path", async () => {
  using recording = recordTelemetry();
  const { spans, points } = recording;
  const handle = createDeliveryHandler(catalog);
  const urls = [
    "http://localhost/api/sandbox-modules",
    "http://localhost/api/sandbox-modules/secret_name_1",
    "http://localhost/api/sandbox-modules/boom",
    "http://localhost/elsewhere/secret_dir",
  ];
  for (const url of urls) {
    await (await handle(new Request(url))).body?.cancel();
  }

  assert.equal(spans.length, 4);
  for (const span of spans) {
    assert.equal(span.scope, INSTRUMENTATION_SCOPE);
    assert.equal(span.name, SPAN_NAME);
    assert.ok(span.ended);
    const text = JSON.stringify(span);
    assert.ok(!text.includes("secret"), text);
    assert.ok(!text.includes("/srv/packs"), text);
  }
  assert.deepEqual(spans.map((s) => s.attributes), [
    {
      "http.request.method": "GET",
      "http.response.status_code": 200,
      "cordon.route": "listing",
      "http.route": "/api/sandbox-modules",
    },
    {
      "http.request.method": "GET",
      "http.response.status_code": 404,
      "cordon.route": "module",
      "http.route": "/api/sandbox-modules/:id",
      "cordon.error.code": "MODULE_NOT_FOUND",
    },
    {
      "http.request.method": "GET",
      "http.response.status_code": 503,
      "cordon.route": "module",
      "http.route": "/api/sandbox-modules/:id",
      "cordon.error.code": "DELIVERY_UNAVAILABLE",
    },
    {
      "http.request.method": "GET",
      "http.response.status_code": 404,
      "cordon.route": "none",
      "cordon.error.code": "MODULE_NOT_FOUND",
    },
  ]);
  assert.equal(spans[2]!.status?.code, 2);
  assert.deepEqual(spans[2]!.exceptions, [{
    name: "Error",
    message: "Error",
  }]);

  const counted = points.filter((p) => p.instrument === COUNTER_NAME);
  const timed = points.filter((p) => p.instrument === HISTOGRAM_NAME);
  assert.deepEqual(counted.map((p) => p.value), [1, 1, 1, 1]);
  assert.deepEqual(
    counted.map((p) => p.attributes),
    spans.map((s) => s.attributes),
  );
  assert.equal(timed.length, 4);
  for (const point of timed) assert.ok(point.value >= 0);
});
