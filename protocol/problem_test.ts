import assert from "node:assert/strict";
import { ERROR_CODES, type ErrorCode } from "./error_codes.ts";
import { problemDocument } from "./problem.ts";

Deno.test("problemDocument() titles every status an error code is answered with by its reason phrase", () => {
  for (const [code, info] of Object.entries(ERROR_CODES)) {
    for (const status of info.httpStatuses) {
      const { title } = problemDocument(code as ErrorCode, status, "detail");
      assert.notEqual(title, "Error", `${code} is answered ${status}`);
    }
  }
  assert.equal(
    problemDocument("BRIDGE_MARSHAL_FAILED", 408, "d").title,
    "Request Timeout",
  );
  assert.equal(
    problemDocument("REQUEST_INVALID", 431, "d").title,
    "Request Header Fields Too Large",
  );
});
