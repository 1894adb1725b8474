import assert from "node:assert/strict";
import { withOfflineNote } from "./network_status.ts";

const REMEDY = "check the server URL and that the server is running";

/** Runs `body` while `navigator.onLine` reads `onLine`, as a browser's does. */
function whileOnLine(onLine: boolean, body: () => void): void {
  Object.defineProperty(navigator, "onLine", {
    value: onLine,
    configurable: true,
  });
  try {
    body();
  } finally {
    delete (navigator as { onLine?: boolean }).onLine;
  }
}

Deno.test("withOfflineNote() says first that the browser is offline where navigator.onLine is false", () => {
  whileOnLine(false, () => {
    assert.equal(
      withOfflineNote(REMEDY),
      `this browser reports that it is offline (navigator.onLine is false): connect it to a network and run again; otherwise ${REMEDY}`,
    );
  });
});

Deno.test("withOfflineNote() gives the remedy alone where navigator.onLine is true or missing", () => {
  whileOnLine(true, () => assert.equal(withOfflineNote(REMEDY), REMEDY));
  assert.equal(withOfflineNote(REMEDY), REMEDY);
});
