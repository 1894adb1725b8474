import assert from "node:assert/strict";
import { ERROR_CODES } from "../protocol/error_codes.ts";
import { PROBLEMS } from "./_problem.ts";

Deno.test("every problem the delivery handler answers has a status the error registry (and docs/errors.md) lists for its code", () => {
  for (const [kind, { code, status }] of Object.entries(PROBLEMS)) {
    assert.ok(
      ERROR_CODES[code].httpStatuses.includes(status),
      `${kind} answers ${code} with ${status}, which ERROR_CODES.${code}.httpStatuses does not list`,
    );
  }
});
