import assert from "node:assert/strict";
import { createHostPluginModule } from "./mod.ts";

// redactHeaders is copied once and the copy checked: the names redacted
// are the names checked, whatever a getter answers on a later read, and a
// hole is refused as any other entry that is not a name.

function create(redactHeaders: unknown) {
  return createHostPluginModule({
    manifest: { id: "redact", version: "1.0.0" },
    plugin: {
      routes: () => [{ method: "GET", path: "/" }],
      handleRequest: () => ({ status: 204, headers: [], body: null }),
    },
    redactHeaders: redactHeaders as string[],
  });
}

const REFUSED = {
  name: "TypeError",
  message:
    'Cannot create plugin "redact": redactHeaders must be an array of header names',
};

Deno.test("redactHeaders is read once, so an entry that answers a name and then a number cannot crash the host", () => {
  let reads = 0;
  const names: unknown[] = [];
  Object.defineProperty(names, 0, {
    enumerable: true,
    get: () => reads++ === 0 ? "authorization" : 5,
  });
  let error: unknown;
  try {
    create(names);
  } catch (caught) {
    error = caught;
  }
  // Read once: the name checked is the name kept, so no later read meets 5.
  assert.equal(reads, 1);
  assert.equal(error, undefined);
});

Deno.test("redactHeaders with a hole is refused as an entry that is not a name", () => {
  // deno-lint-ignore no-sparse-arrays
  assert.throws(() => create([, "x-secret"]), REFUSED);
});

Deno.test("redactHeaders that is not an array of names is refused", () => {
  for (const value of ["authorization", 5, [5], { 0: "a", length: 1 }]) {
    assert.throws(() => create(value), REFUSED);
  }
});
