import assert from "node:assert/strict";
import { CordonError } from "../protocol/cordon_error.ts";
import { readRoutes } from "./_route_pattern.ts";

const answer = () => Promise.resolve(new Response(null));

function problemsOf(listed: unknown): string {
  try {
    readRoutes("p", listed, answer);
  } catch (error) {
    assert.ok(error instanceof CordonError);
    assert.equal(error.code, "BRIDGE_INVALID_PLUGIN_SURFACE");
    return (error.cause as { message: string }).message;
  }
  assert.fail("the routes were accepted");
}

Deno.test("readRoutes() refuses a route an earlier route answers for", () => {
  assert.match(
    problemsOf([
      { method: "GET", path: "/a/:x" },
      { method: "GET", path: "/a/b" },
    ]),
    /route 1: "GET \/a\/b" would never answer: route 0, "GET \/a\/:x", matches its requests first/,
  );
  assert.match(
    problemsOf([
      { method: "POST", path: "/:a/:b" },
      { method: "POST", path: "/x/:c" },
    ]),
    /route 1: "POST \/x\/:c" would never answer: route 0/,
  );
  assert.match(
    problemsOf([{ method: "GET", path: "/" }, { method: "GET", path: "/" }]),
    /route 1: "GET \/" is listed twice/,
  );
});

Deno.test("readRoutes() keeps routes that each answer some request", () => {
  const routes = readRoutes("p", [
    { method: "GET", path: "/a/b" },
    { method: "GET", path: "/a/:x" },
    { method: "POST", path: "/a/:x" },
    { method: "GET", path: "/a/:x/c" },
    { method: "GET", path: "/:y/b/c" },
    { method: "GET", path: "/" },
  ], answer);
  assert.deepEqual(
    routes.map(({ method, path }) => `${method} ${path}`),
    [
      "GET /a/b",
      "GET /a/:x",
      "POST /a/:x",
      "GET /a/:x/c",
      "GET /:y/b/c",
      "GET /",
    ],
  );
});

Deno.test("readRoutes() refuses a route of more than 32 segments or 1024 characters", () => {
  assert.match(
    problemsOf([{ method: "GET", path: "/a".repeat(33) }]),
    /route 0: path "(\/a){33}" has 33 segments, more than 32; use fewer/,
  );
  assert.match(
    problemsOf([{ method: "GET", path: `/${"a".repeat(1024)}` }]),
    /route 0: path "\/a+…\[\+\d+\]" is 1025 characters long, more than 1024; use a shorter one/,
  );
  // At the bounds, routes are taken.
  const routes = readRoutes("p", [
    { method: "GET", path: "/a".repeat(32) },
    { method: "GET", path: `/${"b".repeat(1023)}` },
  ], answer);
  assert.equal(routes.length, 2);
});
