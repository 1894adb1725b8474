import assert from "node:assert/strict";
import { SpanKind } from "@opentelemetry/api";
import { recordTelemetry } from "../protocol/_test_telemetry_test.ts";
import { SPAN_NAME } from "../protocol/run_telemetry.ts";
import { SERVER_DURATION_NAME } from "../protocol/server_telemetry.ts";
import { createVmSandbox } from "../vm/vm_sandbox.ts";
import { createSandboxedVmPluginModule } from "./host_bridge.ts";
import { createPluginHost, identifyAnonymously } from "./plugin_host.ts";

const SOURCE = `export const routes = () => [
  { method: "GET", path: "/items/:id" },
  { method: "GET", path: "/fail" },
];
export const handleRequest = (request) => {
  if (request.params.id === undefined) throw new Error("failed");
  console.log(request.params.id);
  return { status: 200, headers: [], body: request.params.id };
};`;

Deno.test("createPluginHost() records one server span per request, continued from traceparent and named after the route, with each plugin call its child", async () => {
  using recording = recordTelemetry();
  const { spans, points } = recording;
  await using host = createPluginHost({ identify: identifyAnonymously });
  await host.installPlugin({
    kind: "host",
    module: createSandboxedVmPluginModule({
      manifest: { id: "tel", version: "1.0.0" },
      sandbox: createVmSandbox({
        pluginId: "tel",
        pluginModule: { kind: "source", source: SOURCE, identifier: "t.js" },
      }),
    }),
  });
  spans.length = 0;
  points.length = 0;
  const secret = `secret-${crypto.randomUUID()}`;
  const traceId = "0af7651916cd43dd8448eb211c80319c";
  const statuses: number[] = [];
  for (const path of [`/items/${secret}?token=${secret}`, "/fail", "/nope"]) {
    const response = await host.fetch(
      new Request(`http://127.0.0.1/plugins/tel${path}`, {
        headers: { traceparent: `00-${traceId}-b7ad6b7169203331-01` },
      }),
    );
    statuses.push(response.status);
    await response.body?.cancel();
  }
  assert.deepEqual(statuses, [200, 502, 404]);

  const servers = spans.filter((span) => span.kind === SpanKind.SERVER);
  assert.deepEqual(servers.map((span) => [span.scope, span.name]), [
    ["@cordon/cordon/plugin", "GET /plugins/tel/items/:id"],
    ["@cordon/cordon/plugin", "GET /plugins/tel/fail"],
    ["@cordon/cordon/plugin", "GET"],
  ]);
  for (const span of servers) {
    assert.equal(span.parent?.traceId, traceId);
    assert.equal(span.parent?.spanId, "b7ad6b7169203331");
    assert.ok(span.ended);
  }
  assert.deepEqual(servers.map((span) => span.attributes), [
    {
      "http.request.method": "GET",
      "url.scheme": "http",
      "http.response.status_code": 200,
      "http.route": "/plugins/tel/items/:id",
    },
    {
      "http.request.method": "GET",
      "url.scheme": "http",
      "http.response.status_code": 502,
      "http.route": "/plugins/tel/fail",
      "error.type": "502",
    },
    {
      "http.request.method": "GET",
      "url.scheme": "http",
      "http.response.status_code": 404,
    },
  ]);
  assert.deepEqual(servers.map((span) => span.status?.code), [
    undefined,
    2,
    undefined,
  ]);
  // Each routed request's plugin call is a run span under its server span.
  const runs = spans.filter((span) => span.name === SPAN_NAME);
  assert.deepEqual(
    runs.map((span) => [span.parent?.spanId, span.attributes]),
    [
      [servers[0]!.context.spanId, {
        "cordon.tier": "vm",
        "cordon.outcome": "ok",
      }],
      [servers[1]!.context.spanId, {
        "cordon.tier": "vm",
        "cordon.outcome": "GUEST_ERROR",
      }],
    ],
  );
  assert.deepEqual(
    points.filter((point) => point.instrument === SERVER_DURATION_NAME)
      .map((point) => point.attributes),
    servers.map((span) => span.attributes),
  );
  const recorded = JSON.stringify({ spans, points });
  assert.ok(!recorded.includes(secret), recorded);
  assert.ok(!recorded.includes("console.log"), recorded);
});
