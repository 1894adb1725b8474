import assert from "node:assert/strict";
import type { PackStatus } from "../catalog/types.ts";
import {
  type DeliveryRefusal,
  DeliveryRefusalSchema,
  type PackDiagnostic,
} from "../protocol/delivery.ts";
import {
  ERROR_CODES,
  isErrorCode,
  type WireErrorCode,
} from "../protocol/error_codes.ts";
import { type Problem, ProblemSchema } from "../protocol/problem.ts";
import type { DeliveryRequestInfo } from "./types.ts";
import { PROBLEMS } from "./_problem.ts";

Deno.test("every problem the delivery handler answers has a status the error registry (and docs/errors.md) lists for its code", () => {
  for (const [kind, { code, status }] of Object.entries(PROBLEMS)) {
    assert.ok(
      ERROR_CODES[code].httpStatuses.includes(status),
      `${kind} answers ${code} with ${status}, which ERROR_CODES.${code}.httpStatuses does not list`,
    );
  }
});

/** `true` when `A` and `B` are the same type, neither wider. */
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends
  (<T>() => T extends B ? 1 : 2) ? true : false;

Deno.test("the codes of shapes another version may write are WireErrorCode, a known code or any other string, and one of a later version parses", () => {
  // Checked when the test is type-checked: a plain `string` is not the same.
  const same: [
    Same<DeliveryRefusal["code"], WireErrorCode>,
    Same<PackDiagnostic["code"], WireErrorCode>,
    Same<Problem["code"], WireErrorCode>,
    Same<Exclude<PackStatus, { status: "ok" }>["code"], WireErrorCode>,
    Same<Exclude<DeliveryRequestInfo["code"], undefined>, WireErrorCode>,
  ] = [true, true, true, true, true];
  assert.deepEqual(same, [true, true, true, true, true]);
  const refusal = DeliveryRefusalSchema.parse({
    ok: false,
    reason: "unavailable",
    code: "CODE_OF_A_LATER_VERSION",
    message: "Later",
  });
  assert.equal(isErrorCode(refusal.code), false);
  const problem = ProblemSchema.parse({
    type: "urn:cordon:error:CODE_OF_A_LATER_VERSION",
    title: "Bad Request",
    status: 400,
    code: "CODE_OF_A_LATER_VERSION",
    detail: "Later",
  });
  assert.equal(problem.code, "CODE_OF_A_LATER_VERSION");
});
