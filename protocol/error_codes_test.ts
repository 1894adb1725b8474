import assert from "node:assert/strict";
import { ERROR_CODES, isErrorCode } from "./error_codes.ts";

Deno.test("ERROR_CODES gives every code a meaning and a remedy", () => {
  for (const [code, info] of Object.entries(ERROR_CODES)) {
    assert.match(code, /^[A-Z][A-Z0-9_]+$/);
    assert.ok(info.meaning.length > 0, code);
    assert.ok(info.remedy.length > 0, code);
    assert.ok(
      !info.meaning.endsWith("."),
      `${code} meaning ends with a period`,
    );
  }
});

Deno.test("ERROR_CODES says where each code arises and which HTTP statuses carry it", () => {
  for (const [code, info] of Object.entries(ERROR_CODES)) {
    assert.ok(info.where.length > 0, `${code} says not where it arises`);
    for (const status of info.httpStatuses) {
      assert.ok(
        Number.isInteger(status) && status >= 400 && status <= 599,
        `${code} lists ${status}, not an error status`,
      );
    }
    assert.ok(Object.isFrozen(info.httpStatuses), code);
  }
});

Deno.test("ERROR_CODES cannot be changed", () => {
  assert.ok(Object.isFrozen(ERROR_CODES));
  assert.ok(Object.isFrozen(ERROR_CODES.TIMEOUT));
});

Deno.test("isErrorCode() accepts registered codes only", () => {
  assert.equal(isErrorCode("MODULE_NOT_FOUND"), true);
  assert.equal(isErrorCode("__proto__"), false);
  assert.equal(isErrorCode("hasOwnProperty"), false);
});
