// The test pages' one script: it records every Content-Security-Policy
// violation the page reports (`cordonViolations`), loads the browser bundle
// as `globalThis.cordon` (or sets `cordonLoadError`) and then sets
// `cordonSettled`. It is a file, not an inline script, so a page whose
// policy forbids inline scripts runs it too.
const status = document.getElementById("status");
const violations = [];
globalThis.cordonViolations = violations;
globalThis.addEventListener("securitypolicyviolation", (event) => {
  violations.push(
    `${event.effectiveDirective} blocked ${event.blockedURI} at ${event.sourceFile}:${event.lineNumber}`,
  );
});
try {
  globalThis.cordon = await import("/dist/cordon.js");
  status.textContent = "Ready";
} catch (error) {
  globalThis.cordonLoadError = String(error);
  status.textContent =
    `Cannot load dist/cordon.js: ${error}; run "deno task bundle" first`;
}
globalThis.cordonSettled = true;
