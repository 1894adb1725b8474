import assert from "node:assert/strict";
import { referenceErrorIn } from "./_realm_transport.ts";

Deno.test("referenceErrorIn() reads the last ReferenceError a realm printed as it ended, which tells a vm sandbox that its realm code was changed", () => {
  const stderr = `cordon:realm:392
  const vm2 = await __vite_ssr_dynamic_import__("node:vm");
              ^

ReferenceError: __vite_ssr_dynamic_import__ is not defined
    at realmEntry (cordon:realm:392:15)
`;
  assert.equal(
    referenceErrorIn(stderr),
    "__vite_ssr_dynamic_import__ is not defined",
  );
  assert.equal(
    referenceErrorIn(
      "ReferenceError: a is not defined\nReferenceError: b is not defined\n",
    ),
    "b is not defined",
  );
  assert.equal(referenceErrorIn("TypeError: x is not a function\n"), undefined);
});
