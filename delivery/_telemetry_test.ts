import assert from "node:assert/strict";
import { context, propagation, SpanKind, trace } from "@opentelemetry/api";
import { recordTelemetry } from "../protocol/_test_telemetry_test.ts";
import { SERVER_DURATION_NAME } from "../protocol/server_telemetry.ts";
import type { SandboxModuleCatalog } from "../catalog/types.ts";
import { createDeliveryHandler } from "./handler.ts";
import {
  COUNTER_NAME,
  HISTOGRAM_NAME,
  INSTRUMENTATION_SCOPE,
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

Deno.test("createDeliveryHandler() records one server span and the request metrics per request, never the path", async () => {
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
    await (await handle(new Request(`${url}?token=secret_query`))).body
      ?.cancel();
  }

  assert.equal(spans.length, 4);
  assert.deepEqual(spans.map((span) => span.name), [
    "GET /api/sandbox-modules",
    "GET /api/sandbox-modules/:id",
    "GET /api/sandbox-modules/:id",
    "GET",
  ]);
  for (const span of spans) {
    assert.equal(span.scope, INSTRUMENTATION_SCOPE);
    assert.equal(span.kind, SpanKind.SERVER);
    assert.equal(span.parent, undefined);
    assert.ok(span.ended);
    const text = JSON.stringify(span);
    assert.ok(!text.includes("secret"), text);
    assert.ok(!text.includes("/srv/packs"), text);
  }
  assert.deepEqual(spans.map((s) => s.attributes), [
    {
      "http.request.method": "GET",
      "url.scheme": "http",
      "http.response.status_code": 200,
      "cordon.route": "listing",
      "http.route": "/api/sandbox-modules",
    },
    {
      "http.request.method": "GET",
      "url.scheme": "http",
      "http.response.status_code": 404,
      "cordon.route": "module",
      "http.route": "/api/sandbox-modules/:id",
      "cordon.error.code": "MODULE_NOT_FOUND",
    },
    {
      "http.request.method": "GET",
      "url.scheme": "http",
      "http.response.status_code": 503,
      "cordon.route": "module",
      "http.route": "/api/sandbox-modules/:id",
      "cordon.error.code": "DELIVERY_UNAVAILABLE",
      "error.type": "DELIVERY_UNAVAILABLE",
    },
    {
      "http.request.method": "GET",
      "url.scheme": "http",
      "http.response.status_code": 404,
      "cordon.route": "none",
      "cordon.error.code": "MODULE_NOT_FOUND",
    },
  ]);
  // Only a 5xx is an error of the server.
  assert.deepEqual(spans.map((s) => s.status?.code), [
    undefined,
    undefined,
    2,
    undefined,
  ]);
  assert.deepEqual(spans[2]!.exceptions, [{
    name: "Error",
    message: "Error",
  }]);

  const counted = points.filter((p) => p.instrument === COUNTER_NAME);
  const timed = points.filter((p) => p.instrument === HISTOGRAM_NAME);
  assert.deepEqual(counted.map((p) => p.value), [1, 1, 1, 1]);
  assert.deepEqual(
    counted.map((p) => p.attributes),
    spans.map(({ attributes }) => {
      const { "url.scheme": _, "error.type": __, ...rest } = attributes;
      return rest;
    }),
  );
  assert.equal(timed.length, 4);
  for (const point of timed) assert.ok(point.value >= 0);
  const standard = points.filter((p) => p.instrument === SERVER_DURATION_NAME);
  assert.deepEqual(
    standard.map((p) => p.attributes),
    spans.map(({ attributes }) => {
      const { "cordon.route": _, "cordon.error.code": __, ...rest } =
        attributes;
      return rest;
    }),
  );
  // Seconds, where the handler's own histogram has milliseconds.
  standard.forEach((point, at) => {
    assert.ok(Math.abs(point.value * 1000 - timed[at]!.value) < 1e-6);
  });
  assert.ok(!JSON.stringify(points).includes("secret"));
});

Deno.test("createDeliveryHandler() continues the caller's trace from the request's traceparent", async () => {
  using recording = recordTelemetry();
  const handle = createDeliveryHandler(catalog);
  const traceId = "0af7651916cd43dd8448eb211c80319c";
  const response = await handle(
    new Request("http://localhost/api/sandbox-modules", {
      headers: { traceparent: `00-${traceId}-b7ad6b7169203331-01` },
    }),
  );
  await response.body?.cancel();

  const [span] = recording.spans;
  assert.equal(recording.spans.length, 1);
  assert.equal(span!.kind, SpanKind.SERVER);
  assert.equal(span!.parent?.traceId, traceId);
  assert.equal(span!.parent?.spanId, "b7ad6b7169203331");
  assert.equal(span!.parent?.isRemote, true);
  assert.equal(span!.context.traceId, traceId);
});

Deno.test("createDeliveryHandler() names the server span already active after the route, and starts none of its own", async () => {
  using recording = recordTelemetry();
  const handle = createDeliveryHandler(catalog);
  // As Deno.serve with OTEL_DENO=true does: its server span, named after
  // the method, is active in the handler.
  const server = trace.getTracer("server").startSpan("GET", {
    kind: SpanKind.SERVER,
  });
  const response = await context.with(
    trace.setSpan(context.active(), server),
    () =>
      handle(
        new Request("http://localhost/api/sandbox-modules/secret_name_1", {
          headers: { traceparent: `00-${"1".repeat(32)}-${"2".repeat(16)}-01` },
        }),
      ),
  );
  await response.body?.cancel();
  server.end();

  assert.equal(recording.spans.length, 1);
  const [span] = recording.spans;
  assert.equal(span!.scope, "server");
  assert.equal(span!.name, "GET /api/sandbox-modules/:id");
  assert.deepEqual(span!.attributes, {
    "http.route": "/api/sandbox-modules/:id",
    "cordon.route": "module",
    "cordon.error.code": "MODULE_NOT_FOUND",
  });
  assert.equal(span!.status, undefined, "its owner sets its status");
  // The owner records the standard duration; the handler its own metrics.
  const names = recording.points.map((p) => p.instrument);
  assert.ok(!names.includes(SERVER_DURATION_NAME));
  assert.deepEqual(names, [COUNTER_NAME, HISTOGRAM_NAME]);
});

Deno.test("createDeliveryHandler() names the listing of an empty prefix's route /", async () => {
  using recording = recordTelemetry();
  const handle = createDeliveryHandler(catalog, { prefix: "" });
  await (await handle(new Request("http://localhost/"))).body?.cancel();
  assert.equal(recording.spans[0]!.name, "GET /");
  assert.equal(recording.spans[0]!.attributes["http.route"], "/");
});

Deno.test("createDeliveryHandler() starts its own server span when the span active as it is called has ended", async () => {
  using recording = recordTelemetry();
  const handle = createDeliveryHandler(catalog);
  // A span its owner ended but left active records nothing.
  const finished = trace.getTracer("client").startSpan("GET", {
    kind: SpanKind.CLIENT,
  });
  finished.end();
  const response = await context.with(
    trace.setSpan(context.active(), finished),
    () => handle(new Request("http://localhost/api/sandbox-modules")),
  );
  await response.body?.cancel();

  assert.deepEqual(
    recording.spans.map((span) => [span.scope, span.kind, span.name]),
    [
      ["client", SpanKind.CLIENT, "GET"],
      [INSTRUMENTATION_SCOPE, SpanKind.SERVER, "GET /api/sandbox-modules"],
    ],
  );
});

Deno.test("createDeliveryHandler() reads no traceparent while no tracer or meter provider is registered", async () => {
  let extracted = 0;
  // A propagator alone, as a platform that forwards trace headers but
  // records no telemetry may register.
  assert.ok(propagation.setGlobalPropagator({
    inject: () => {},
    extract: (ctx) => {
      extracted++;
      return ctx;
    },
    fields: () => ["traceparent"],
  }));
  try {
    const handle = createDeliveryHandler(catalog);
    const response = await handle(
      new Request("http://localhost/api/sandbox-modules", {
        headers: { traceparent: `00-${"1".repeat(32)}-${"2".repeat(16)}-01` },
      }),
    );
    assert.equal(response.status, 200);
    await response.body?.cancel();
  } finally {
    propagation.disable();
  }
  assert.equal(extracted, 0);
});
