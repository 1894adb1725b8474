// The adversarial table: hostile plugins, each with the one outcome every
// tier must give, written once. plugin/adversarial_test.ts registers it with
// Deno.test on every tier, plugin/node_test/adversarial.test.mjs with
// node:test on the tiers Node hosts. This file is JavaScript so that Node
// runs it as is.
//
// Limits are small so the table runs in seconds: a call gets TIMEOUT_MS, a
// realm comes up within STARTUP_MS (so far more than TIMEOUT_MS that only a
// realm that never starts, or a budget that wrongly added the two, takes
// that long, however loaded the machine).

import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { assertNothingLeftRunning } from "../../vm/node_test/leak_probe.mjs";
import { checkLastWords } from "../../vm/node_test/last_words_cases.mjs";
import { until } from "../../vm/node_test/until.mjs";
import { buildTablePlugin, CANARY } from "./_table_plugins.mjs";

const TIMEOUT_MS = 400;
const STARTUP_MS = 120_000;
const STOP_MS = 300;
const MEMORY_BYTES = 32 * 1024 * 1024;
const BOMB_MEMORY_BYTES = 48 * 1024 * 1024;
const MAX_PAYLOAD_BYTES = 64 * 1024;
const MAX_BODY_BYTES = 16 * 1024;
const MAX_READ_BYTES = 1024;
const MAX_DIR_ENTRIES = 20;
/** A block: the least a written file counts in a plugin's write footprint. */
const BLOCK = 4096;
/** The write footprint of the writer plugins: eight blocks. */
const MAX_WRITE_BYTES = 8 * BLOCK;
const FLOOD = 3000;
/** How long `adv.held` holds a call, in ms. */
const HELD_MS = 1000;
const SEQUENTIAL = 300;
/** Elements of `adv.wide`'s result: its JSON is far over MAX_READ_BYTES. */
const WIDE_RESULT = 100_000;
const MAX_CONCURRENT_CALLS = 64;
/** The most headers an answer may set (MAX_RESPONSE_HEADERS). */
const MAX_RESPONSE_HEADERS = 256;
/**
 * The most bytes an answer's own header fields may take, each counted as
 * `name: value` and its line end (the host's MAX_RESPONSE_HEADER_BYTES).
 */
const MAX_RESPONSE_HEADER_BYTES = 16 * 1024;
/** The hostile plugin's call budget: its cases do not run away. */
const CALM_TIMEOUT_MS = 10_000;
/** Plugins put it in what they throw; no answer may carry it. */
const SECRET = "plugin-secret-7f3a";
/**
 * The protocol's MAX_NESTING_DEPTH: the most levels of arrays and objects
 * a value crossing a realm's edge may nest (this file is plain JavaScript
 * and cannot import it).
 */
const MAX_NESTING_DEPTH = 256;

/** Arrays nested `levels` deep: `[[]]` is two. */
function nested(levels) {
  let value = [];
  for (let i = 1; i < levels; i++) value = [value];
  return value;
}

/** How deeply `value`, arrays each holding the next, nests. */
function levelsOf(value) {
  let levels = 0;
  for (let v = value; Array.isArray(v); v = v[0]) levels++;
  return levels;
}

/** Plugin source that makes `deep`, arrays nested `levels` deep. */
function nestedArrays(levels) {
  return `let deep = []; for (let i = 1; i < ${levels}; i++) deep = [deep];`;
}

/** Handler bodies of the hostile plugin, by case name. */
const HANDLERS = {
  ok: `return { status: 200, headers: [], body: "ok" };`,
  // Runaways: the realm is ended and replaced.
  loop: `for (;;) {}`,
  "loop-after-await": `await null; for (;;) {}`,
  "never-settles": `return new Promise(() => {});`,
  "getter-loops":
    `return { status: 200, headers: [], get body() { for (;;) {} } };`,
  "proxy-trap-loops":
    `return new Proxy({}, { get() { for (;;) {} }, ownKeys() { for (;;) {} } });`,
  "then-loops": `return { then() { for (;;) {} } };`,
  "then-never-settles": `return { then() {} };`,
  "tojson-loops":
    `return { status: 200, headers: [], body: { toJSON() { for (;;) {} } } };`,
  // Answers that are not a response.
  "answer-number": `return 42;`,
  "answer-null": `return null;`,
  "answer-undefined": `return;`,
  "answer-string": `return "200 OK";`,
  "answer-array": `return [200, [], "ok"];`,
  "answer-extra-key":
    `return { status: 200, headers: [], body: "ok", proto: 1 };`,
  "answer-proto-key":
    `return JSON.parse('{"status":200,"headers":[],"body":"ok","__proto__":{"status":500}}');`,
  "body-huge": `return { status: 200, headers: [], body: "x".repeat(${
    MAX_PAYLOAD_BYTES + 1
  }) };`,
  "body-far-over": `return { status: 200, headers: [], body: "x".repeat(${
    MAX_PAYLOAD_BYTES + 2 * 1024 * 1024
  }) };`,
  // Console arguments whose JSON would outgrow the realm's heap: the
  // console writes a placeholder for them, on every tier.
  "console-to-json":
    `console.log({ toJSON() { return "x".repeat(2 ** 26); } }); return { status: 200, headers: [], body: "ok" };`,
  "console-caught":
    `const a = []; a.length = 2 ** 27; try { console.log(a); } catch {} return { status: 200, headers: [], body: "ok" };`,
  "log-huge":
    `const line = "l".repeat(4 * 1024 * 1024); for (let i = 0; i < 3; i++) console.log(line); return { status: 200, headers: [], body: "ok" };`,
  "body-number": `return { status: 200, headers: [], body: 42 };`,
  "body-object": `return { status: 200, headers: [], body: { a: 1 } };`,
  "body-bytes":
    `return { status: 200, headers: [], body: new Uint8Array([1, 2]) };`,
  "body-function": `return { status: 200, headers: [], body: () => 1 };`,
  "body-symbol": `return { status: 200, headers: [], body: Symbol("s") };`,
  "body-bigint": `return { status: 200, headers: [], body: 10n };`,
  "body-sparse":
    `const a = []; a.length = 2 ** 32 - 1; return { status: 200, headers: [], body: a };`,
  "headers-sparse":
    `const a = []; a.length = 2 ** 32 - 1; return { status: 200, headers: a, body: "" };`,
  "body-cyclic":
    `const body = {}; body.self = body; return { status: 200, headers: [], body };`,
  "body-tojson-self":
    `return { status: 200, headers: [], body: { toJSON() { return this; } } };`,
  "body-base64-bad": `return { status: 200, headers: [], bodyBase64: "%%%" };`,
  "body-and-base64":
    `return { status: 200, headers: [], body: "a", bodyBase64: "YQ==" };`,
  "body-getter-throws":
    `return { status: 200, headers: [], get body() { throw new Error("${SECRET}"); } };`,
  "body-tojson-throws":
    `return { status: 200, headers: [], body: { toJSON() { throw new Error("${SECRET}"); } } };`,
  "answer-proxy-throws":
    `return new Proxy({}, { get() { throw new Error("${SECRET}"); }, ownKeys() { throw new Error("${SECRET}"); } });`,
  "answer-proxy-plain":
    `return new Proxy({ status: 200, headers: [], body: "ok" }, {});`,
  "status-99": `return { status: 99, headers: [], body: "" };`,
  "status-101": `return { status: 101, headers: [], body: null };`,
  "status-600": `return { status: 600, headers: [], body: "" };`,
  "status-fraction": `return { status: 200.5, headers: [], body: "" };`,
  "status-string": `return { status: "200", headers: [], body: "" };`,
  "status-nan": `return { status: NaN, headers: [], body: "" };`,
  "status-204-body": `return { status: 204, headers: [], body: "no" };`,
  "header-crlf-value":
    `return { status: 200, headers: [["x-a", "1\\r\\nset-cookie: a=b"]], body: "" };`,
  "header-lf-value":
    `return { status: 200, headers: [["x-a", "1\\nx: y"]], body: "" };`,
  "header-crlf-name":
    `return { status: 200, headers: [["x-a\\r\\nx-b", "1"]], body: "" };`,
  "header-space-name":
    `return { status: 200, headers: [["x a", "1"]], body: "" };`,
  "header-empty-name":
    `return { status: 200, headers: [["", "1"]], body: "" };`,
  "header-nonascii-name":
    `return { status: 200, headers: [["x-é", "1"]], body: "" };`,
  "header-latin1-value":
    `return { status: 200, headers: [["x-a", "café"]], body: "" };`,
  "header-unicode-value":
    `return { status: 200, headers: [["x-a", "☃"]], body: "" };`,
  "header-nul-value":
    `return { status: 200, headers: [["x-a", "a\\u0000b"]], body: "" };`,
  "header-triple":
    `return { status: 200, headers: [["x-a", "1", "2"]], body: "" };`,
  "header-number": `return { status: 200, headers: [["x-a", 1]], body: "" };`,
  "headers-at-cap":
    `return { status: 200, headers: Array.from({ length: ${MAX_RESPONSE_HEADERS} }, (_, i) => ["x-h" + i, "v"]), body: "ok" };`,
  "headers-over-cap":
    `return { status: 200, headers: Array.from({ length: 4000 }, (_, i) => ["x" + i, "v"]), body: "ok" };`,
  // One field of exactly the bytes an answer's headers may take, and one
  // of a byte more: "x-a: " and "\r\n" are seven of them.
  "header-bytes-at-cap": `return { status: 200, headers: [["x-a", "a".repeat(${
    MAX_RESPONSE_HEADER_BYTES - 7
  })]], body: "ok" };`,
  "header-bytes-over-cap":
    `return { status: 200, headers: [["x-a", "a".repeat(${
      MAX_RESPONSE_HEADER_BYTES - 6
    })]], body: "ok" };`,
  "header-set-cookie":
    `return { status: 200, headers: [["set-cookie", "session=stolen"]], body: "" };`,
  "header-set-cookie-case":
    `return { status: 200, headers: [["Set-Cookie", "session=stolen"]], body: "" };`,
  "header-transfer-encoding":
    `return { status: 200, headers: [["transfer-encoding", "chunked"]], body: "" };`,
  "header-connection":
    `return { status: 200, headers: [["connection", "close"]], body: "" };`,
  "header-hsts":
    `return { status: 200, headers: [["strict-transport-security", "max-age=0"]], body: "" };`,
  "header-nel":
    `return { status: 200, headers: [["NEL", '{"report_to":"p","max_age":31536000,"include_subdomains":true}']], body: "" };`,
  "header-report-to":
    `return { status: 200, headers: [["report-to", '{"group":"p","max_age":31536000,"endpoints":[{"url":"https://plugin.example/r"}]}']], body: "" };`,
  "header-service-worker-allowed":
    `return { status: 200, headers: [["service-worker-allowed", "/"]], body: "" };`,
  "header-accept-ch":
    `return { status: 200, headers: [["Accept-CH", "Sec-CH-UA-Model, Viewport-Width"]], body: "" };`,
  "header-use-as-dictionary":
    `return { status: 200, headers: [["Use-As-Dictionary", 'match="/*", id="tracker-42"'], ["cache-control", "max-age=31536000"]], body: "" };`,
  "header-feature-policy":
    `return { status: 200, headers: [["Feature-Policy", "camera *; microphone *"]], body: "" };`,
  "header-origin-agent-cluster":
    `return { status: 200, headers: [["origin-agent-cluster", "?0"]], body: "" };`,
  "header-session-registration":
    `return { status: 200, headers: [["Sec-Session-Registration", '(ES256);path="/start";challenge="c"']], body: "" };`,
  "header-cors-private-network":
    `return { status: 200, headers: [["Access-Control-Allow-Private-Network", "true"]], body: "" };`,
  "header-coop-report-only":
    `return { status: 200, headers: [["cross-origin-opener-policy-report-only", "same-origin"]], body: "" };`,
  "header-content-length":
    `return { status: 200, headers: [["content-length", "999"]], body: "ok" };`,
  "header-duplicate":
    `return { status: 200, headers: [["x-dup", "a"], ["x-dup", "b"]], body: "ok" };`,
  // Odd throws: the plugin threw, whatever it threw.
  "throw-null": `throw null;`,
  "throw-undefined": `throw undefined;`,
  "throw-symbol": `throw Symbol("${SECRET}");`,
  "throw-string": `throw "${SECRET}";`,
  "throw-proxy":
    `throw new Proxy({}, { get() { throw new Error("${SECRET}"); }, getPrototypeOf() { throw new Error("${SECRET}"); } });`,
  "throw-message-getter":
    `throw { get message() { throw new Error("${SECRET}"); }, get name() { throw new Error("${SECRET}"); } };`,
  "throw-cyclic-cause":
    `const error = new Error("${SECRET}"); error.cause = error; throw error;`,
  "throw-fake-denied":
    `const error = new Error("${SECRET}"); error.code = "PERMISSION_DENIED"; throw error;`,
  "throw-fake-timeout":
    `throw { code: "TIMEOUT", name: "TimeoutError", message: "${SECRET}" };`,
  "throw-huge-message": `throw new Error("${SECRET}" + "x".repeat(1e6));`,
  // The host's own error, caught and thrown on with a message far over
  // what a frame may carry: clipped as any thrown message is.
  "rethrow-host-error-huge-message":
    `try { await capabilities.call("adv.secret", {}); } catch (error) { error.message = "x".repeat(${
      MAX_PAYLOAD_BYTES + 2 * 1024 * 1024
    }); throw error; } return { status: 200, headers: [], body: "leaked" };`,
  "body-deep":
    `let deep = []; for (let i = 0; i < 3e4; i++) deep = [deep]; return { status: 200, headers: [], body: deep };`,
  "throw-stack-overflow":
    `function down() { return down() + 1; } return down();`,
  "reject-later": `await Promise.resolve(); throw new TypeError("${SECRET}");`,
  // Work left behind after the answer.
  "unhandled-rejection":
    `Promise.reject(new Error("${SECRET}")); return { status: 200, headers: [], body: "ok" };`,
  "left-behind":
    `capabilities.call("adv.slow", {}).then(() => { throw new Error("${SECRET}"); }); Promise.resolve().then(() => { for (let i = 0; i < 1e5; i++); }); return { status: 200, headers: [], body: "ok" };`,
  // Hostile inputs reach the plugin as data.
  "proto-headers":
    `const own = req.headers.filter(([n]) => n === "__proto__" || n === "constructor").map(([n, v]) => n + "=" + v); return { status: 200, headers: [], body: own.sort().join(",") + "|" + ({}).polluted };`,
  identity:
    `const seen = req.headers.filter(([n]) => n.toLowerCase().startsWith("x-cordon")); return { status: 200, headers: [], body: JSON.stringify([req.principalId, req.tenantId, seen]) };`,
  "hop-by-hop":
    `return { status: 200, headers: [], body: req.headers.map(([n]) => n).sort().join(",") };`,
  "proto-body":
    `const data = JSON.parse(bodyText(req)); const merged = Object.assign({}, data); return { status: 200, headers: [], body: Object.keys(data).sort().join(",") + "|" + ({}).polluted + "|" + merged.polluted };`,
  // Capabilities.
  "cap-ungranted":
    `await capabilities.call("adv.secret", {}); return { status: 200, headers: [], body: "leaked" };`,
  "cap-proto-name":
    `await capabilities.call("constructor", {}); return { status: 200, headers: [], body: "leaked" };`,
  "cap-oversize": `return await codeOf(capabilities.call("adv.big", {}));`,
  // A result far over maxCapabilityResultBytes is refused while its text
  // is written, not once the host has written all of it.
  "cap-result-wide":
    `const code = (await codeOf(capabilities.call("adv.wide", {}))).body; const reads = await capabilities.call("adv.wide-reads", {}); return { status: 200, headers: [], body: code + "," + (reads <= 2 * ${MAX_READ_BYTES} ? "stopped" : reads + " elements read") };`,
  "cap-huge-args":
    `return await codeOf(capabilities.call("adv.length", "a".repeat(${MAX_PAYLOAD_BYTES})).then(() => {}));`,
  // Arguments nested deeper than an engine's stack allows: refused by the
  // cap on nesting before any stack gives out, alike on every tier.
  "cap-args-deep":
    `let deep = []; for (let i = 0; i < 3e4; i++) deep = [deep]; return await codeOf(capabilities.call("adv.length", deep));`,
  // A getter of the arguments that throws: the call rejects with the
  // plugin's own error, not a claim that the data is not JSON.
  // Arguments and capability results past MAX_NESTING_DEPTH: one
  // code and a message that names the cap, on every tier; at the cap they
  // go through.
  "cap-args-past-cap": `${
    nestedArrays(MAX_NESTING_DEPTH + 1)
  } return await failureOf(capabilities.call("adv.echo", deep));`,
  "cap-echo-at-cap": `${
    nestedArrays(MAX_NESTING_DEPTH)
  } let levels = 0; for (let v = await capabilities.call("adv.echo", deep); Array.isArray(v); v = v[0]) levels++; return { status: 200, headers: [], body: String(levels) };`,
  "cap-result-past-cap":
    `return await failureOf(capabilities.call("adv.nested", ${
      MAX_NESTING_DEPTH + 1
    }));`,
  "cap-args-getter-throws":
    `return { status: 200, headers: [], body: await capabilities.call("adv.length", { get a() { throw new RangeError("mine"); } }).then(() => "sent", (e) => e.name + ":" + e.message + ":" + (e.code ?? "no code")) };`,
  // QuickJS's strings are flat: it runs out of memory making this one,
  // where V8 makes it and the host refuses it for its size.
  "cap-args-tojson-huge":
    `await capabilities.call("adv.length", { toJSON() { return "x".repeat(2 ** 26); } }); return { status: 200, headers: [], body: "leaked" };`,
  "cap-flood":
    `const all = []; for (let i = 0; i < ${FLOOD}; i++) all.push(capabilities.call("adv.held", i).then(() => "ran", (e) => e.code)); const codes = [...new Set(await Promise.all(all))].sort(); return { status: 200, headers: [], body: codes.join(",") };`,
  "cap-flood-denied":
    `const all = []; for (let i = 0; i < ${FLOOD}; i++) all.push(capabilities.call("adv.secret", i).then(() => "ran", (e) => e.code)); const codes = [...new Set(await Promise.all(all))].sort(); return { status: 200, headers: [], body: codes.join(",") };`,
  "cap-burst-at-cap":
    `const all = []; for (let i = 0; i < ${MAX_CONCURRENT_CALLS}; i++) all.push(capabilities.call("adv.one", 1)); const values = await Promise.all(all); return { status: 200, headers: [], body: String(values.reduce((a, b) => a + b, 0)) };`,
  "cap-sequential":
    `let sum = 0; for (let i = 0; i < ${SEQUENTIAL}; i++) sum += await capabilities.call("adv.one", 1); return { status: 200, headers: [], body: String(sum) };`,
  "fetch-denied":
    `await fetch("http://example.invalid/"); return { status: 200, headers: [], body: "leaked" };`,
  "fetch-credentials":
    `await fetch(UPSTREAM.replace("http://", "http://user:pw@") + "/small"); return { status: 200, headers: [], body: "leaked" };`,
  "fetch-oversize":
    `return await codeOf(fetch(UPSTREAM + "/big").then((r) => r.text()));`,
  "fetch-redirect":
    `const r = await fetch(UPSTREAM + "/redirect"); return { status: 200, headers: [], body: String(r.status) };`,
  // A body read as JSON past MAX_NESTING_DEPTH: refused as a capability's
  // answer is, on every tier; at the cap it is read.
  "fetch-json-past-cap":
    `return await failureOf(fetch(UPSTREAM + "/past-cap").then((r) => r.json()));`,
  "fetch-json-at-cap":
    `let levels = 0; for (let v = await (await fetch(UPSTREAM + "/at-cap")).json(); Array.isArray(v); v = v[0]) levels++; return { status: 200, headers: [], body: String(levels) };`,
  "fs-dotdot":
    `await fs.readTextFile(ALLOWED + "/../secret.txt"); return { status: 200, headers: [], body: "leaked" };`,
  "fs-symlink":
    `await fs.readTextFile(ALLOWED + "/link.txt"); return { status: 200, headers: [], body: "leaked" };`,
  "fs-relative":
    `await fs.readTextFile("secret.txt"); return { status: 200, headers: [], body: "leaked" };`,
  // The host's checker denies ALLOWED/private and UPSTREAM/private by
  // prefix: it is shown the path and URL the host uses, not the plugin's
  // text around them.
  "fs-checker-dotdot":
    `await fs.readTextFile(ALLOWED + "/crowded/../private/secret.txt"); return { status: 200, headers: [], body: "leaked" };`,
  "fetch-checker-dotdot":
    `await fetch(UPSTREAM + "/small/../private"); return { status: 200, headers: [], body: "leaked" };`,
  "fetch-checker-encoded-dot":
    `await fetch(UPSTREAM + "/small/%2e%2E/private"); return { status: 200, headers: [], body: "leaked" };`,
  "fetch-checker-tab":
    `await fetch(UPSTREAM + "/pri\tvate"); return { status: 200, headers: [], body: "leaked" };`,
  "fs-oversize": `return await codeOf(fs.readTextFile(ALLOWED + "/big.txt"));`,
  // Over the host's bounds on what it parses on its own thread, inside the
  // folder and host the policy grants.
  "fs-path-long":
    `return await codeOf(fs.readTextFile(ALLOWED + "/" + "a/".repeat(2048)));`,
  "fetch-url-long":
    `return await codeOf(fetch(UPSTREAM + "/small?" + "a".repeat(32768)));`,
  "fs-list":
    `const names = (await fs.readDir(ALLOWED)).map((e) => e.name).sort(); return { status: 200, headers: [], body: names.join(",") };`,
  "fs-list-crowded": `return await codeOf(fs.readDir(ALLOWED + "/crowded"));`,
  "fs-device":
    `return await codeOf(fs.readTextFile("/dev/zero").catch((e) => { throw { code: e.name }; }));`,
  "fs-write-denied":
    `await fs.writeTextFile(ALLOWED + "/new.txt", "x"); return { status: 200, headers: [], body: "leaked" };`,
  // An argument whose conversion throws rejects the call: it never throws
  // at the caller, as fetch's own conversions do not.
  "host-call-bad-argument":
    `const bad = { toString() { throw new Error("bad argument"); } }; const calls = [() => fs.readTextFile(bad), () => fs.writeTextFile(ALLOWED + "/x.txt", bad), () => fs.readDir(bad), () => capabilities.call(bad, 1), () => fetch(bad)]; const seen = []; for (const call of calls) { let promise; try { promise = call(); } catch { seen.push("threw"); continue; } seen.push(await promise.then(() => "resolved", (e) => e.message)); } return { status: 200, headers: [], body: seen.join(",") };`,
};

/**
 * The table: for each case, the status and code every tier answers, and
 * whether the realm is replaced (the docs: a runaway's realm is ended and
 * the next call starts a new one; nothing else ends it). `check` holds what
 * a 200 answer must carry.
 */
const TABLE = [
  ["loop", 504, "TIMEOUT", { replaced: true }],
  ["loop-after-await", 504, "TIMEOUT", { replaced: true }],
  ["never-settles", 504, "TIMEOUT", { replaced: true }],
  ["tojson-loops", 504, "TIMEOUT", { replaced: true }],
  ["getter-loops", 504, "TIMEOUT", { replaced: true }],
  ["proxy-trap-loops", 504, "TIMEOUT", { replaced: true }],
  ["then-loops", 504, "TIMEOUT", { replaced: true }],
  ["then-never-settles", 504, "TIMEOUT", { replaced: true }],
  ["answer-number", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["answer-null", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["answer-undefined", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["answer-string", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["answer-array", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["answer-extra-key", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["answer-proto-key", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["body-huge", 502, "BRIDGE_UNMARSHAL_FAILED"],
  // The realm stops writing an answer once it passes maxPayloadBytes, so
  // one far over it is refused as one just over it, and the realm lives on.
  ["body-far-over", 502, "BRIDGE_UNMARSHAL_FAILED"],
  // A console line leaves the realm clipped to what the host keeps.
  // QuickJS's strings are flat: the plugin's own 64 MiB string is past its
  // heap before the console sees it.
  ["console-to-json", 200, null, {
    body: "ok",
    on: {
      quickjs: ["console-to-json", 502, "OUT_OF_MEMORY", { replaced: true }],
    },
  }],
  ["console-caught", 200, null, { body: "ok" }],
  ["log-huge", 200, null, { body: "ok" }],
  ["body-number", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["body-object", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["body-bytes", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["body-function", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["body-symbol", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["body-bigint", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["body-cyclic", 502, "BRIDGE_UNMARSHAL_FAILED"],
  // Refused at once, not walked to the deadline or the heap's end.
  ["body-sparse", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["headers-sparse", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["body-tojson-self", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["body-base64-bad", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["body-and-base64", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["body-getter-throws", 502, "BRIDGE_HANDLER_REJECTED"],
  ["body-tojson-throws", 502, "BRIDGE_HANDLER_REJECTED"],
  ["answer-proxy-throws", 502, "BRIDGE_HANDLER_REJECTED"],
  ["answer-proxy-plain", 200, null, { body: "ok" }],
  ["status-99", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["status-101", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["status-600", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["status-fraction", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["status-string", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["status-nan", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["status-204-body", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["header-crlf-value", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["header-lf-value", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["header-crlf-name", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["header-space-name", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["header-empty-name", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["header-nonascii-name", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["header-latin1-value", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["header-unicode-value", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["header-nul-value", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["header-triple", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["header-number", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["headers-at-cap", 200, null, {
    body: "ok",
    expectHeaders: {
      [`x-h${MAX_RESPONSE_HEADERS - 1}`]: (value) => value === "v",
    },
  }],
  // The runtime's Headers cost grows with the square of their count.
  ["headers-over-cap", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["header-bytes-at-cap", 200, null, {
    body: "ok",
    expectHeaders: {
      "x-a": (value) => value.length === MAX_RESPONSE_HEADER_BYTES - 7,
    },
  }],
  // A head longer than clients read: Node's fetch refuses one over 16 KiB.
  ["header-bytes-over-cap", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["header-set-cookie", 502, "BRIDGE_RESPONSE_HEADER_DENIED"],
  ["header-set-cookie-case", 502, "BRIDGE_RESPONSE_HEADER_DENIED"],
  ["header-transfer-encoding", 502, "BRIDGE_RESPONSE_HEADER_DENIED"],
  ["header-connection", 502, "BRIDGE_RESPONSE_HEADER_DENIED"],
  ["header-hsts", 502, "BRIDGE_RESPONSE_HEADER_DENIED"],
  ["header-nel", 502, "BRIDGE_RESPONSE_HEADER_DENIED"],
  ["header-report-to", 502, "BRIDGE_RESPONSE_HEADER_DENIED"],
  ["header-service-worker-allowed", 502, "BRIDGE_RESPONSE_HEADER_DENIED"],
  ["header-accept-ch", 502, "BRIDGE_RESPONSE_HEADER_DENIED"],
  ["header-use-as-dictionary", 502, "BRIDGE_RESPONSE_HEADER_DENIED"],
  ["header-feature-policy", 502, "BRIDGE_RESPONSE_HEADER_DENIED"],
  ["header-origin-agent-cluster", 502, "BRIDGE_RESPONSE_HEADER_DENIED"],
  // Every sec-* header, as the platform keeps adding them.
  ["header-session-registration", 502, "BRIDGE_RESPONSE_HEADER_DENIED"],
  // Every access-control-* and cross-origin-* header, not the listed ones only.
  ["header-cors-private-network", 502, "BRIDGE_RESPONSE_HEADER_DENIED"],
  ["header-coop-report-only", 502, "BRIDGE_RESPONSE_HEADER_DENIED"],
  ["header-content-length", 200, null, {
    body: "ok",
    expectHeaders: {
      "content-length": (value) => value === null || value === "2",
    },
  }],
  ["header-duplicate", 200, null, {
    body: "ok",
    expectHeaders: { "x-dup": (value) => value === "a, b" },
  }],
  ["throw-null", 502, "BRIDGE_HANDLER_REJECTED"],
  ["throw-undefined", 502, "BRIDGE_HANDLER_REJECTED"],
  ["throw-symbol", 502, "BRIDGE_HANDLER_REJECTED"],
  ["throw-string", 502, "BRIDGE_HANDLER_REJECTED"],
  ["throw-proxy", 502, "BRIDGE_HANDLER_REJECTED"],
  ["throw-message-getter", 502, "BRIDGE_HANDLER_REJECTED"],
  ["throw-cyclic-cause", 502, "BRIDGE_HANDLER_REJECTED"],
  ["throw-fake-denied", 502, "BRIDGE_HANDLER_REJECTED"],
  ["throw-fake-timeout", 502, "BRIDGE_HANDLER_REJECTED"],
  ["throw-huge-message", 502, "BRIDGE_HANDLER_REJECTED"],
  ["rethrow-host-error-huge-message", 403, "PERMISSION_DENIED"],
  ["throw-stack-overflow", 502, "BRIDGE_HANDLER_REJECTED"],
  // Refused by the cap on nesting, not by an engine's stack.
  ["body-deep", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["reject-later", 502, "BRIDGE_HANDLER_REJECTED"],
  ["unhandled-rejection", 200, null, { body: "ok" }],
  ["left-behind", 200, null, { body: "ok" }],
  ["proto-headers", 200, null, {
    body: "__proto__=p,constructor=c|undefined",
    headers: [["__proto__", "p"], ["constructor", "c"]],
  }],
  // Forged identity headers, in any case and twice, set no identity (the
  // host identifies anonymously) and do not reach the plugin as headers.
  ["identity", 200, null, {
    body: "[null,null,[]]",
    headers: [
      ["X-Cordon-Principal", "admin"],
      ["x-cordon-principal", "root"],
      ["x-cordon-TENANT", "other"],
    ],
  }],
  // The client's hop-by-hop headers, and those its Connection names, are
  // about its connection to the host: the plugin sees none of them.
  ["hop-by-hop", 200, null, {
    body: "x-kept",
    headers: [
      ["Connection", "keep-alive, X-Named"],
      ["X-Named", "1"],
      ["Keep-Alive", "timeout=5"],
      ["TE", "trailers"],
      ["Trailer", "x-t"],
      ["Transfer-Encoding", "chunked"],
      ["Upgrade", "h2c"],
      ["Proxy-Connection", "keep-alive"],
      ["Proxy-Foo", "bar"],
      ["X-Kept", "1"],
    ],
  }],
  ["proto-body", 200, null, {
    body: "__proto__,constructor|undefined|true",
    method: "POST",
    send:
      '{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}',
  }],
  ["huge-request", 413, "BRIDGE_MARSHAL_FAILED", {
    method: "POST",
    send: "x".repeat(MAX_BODY_BYTES + 1),
    route: "ok",
  }],
  ["cap-ungranted", 403, "PERMISSION_DENIED"],
  ["cap-proto-name", 403, "PERMISSION_DENIED"],
  ["cap-oversize", 200, null, { body: "PROXY_LIMIT_EXCEEDED" }],
  ["cap-result-wide", 200, null, { body: "PROXY_LIMIT_EXCEEDED,stopped" }],
  ["cap-huge-args", 200, null, { body: "PROXY_LIMIT_EXCEEDED" }],
  ["cap-args-deep", 200, null, { body: "RESULT_NOT_SERIALIZABLE" }],
  ["cap-args-past-cap", 200, null, {
    body:
      `RESULT_NOT_SERIALIZABLE: Cannot pass the arguments of capability to the host: they are nested deeper than ${MAX_NESTING_DEPTH} levels; pass flatter data, or pass the deeper part as JSON text`,
  }],
  ["cap-echo-at-cap", 200, null, { body: String(MAX_NESTING_DEPTH) }],
  ["cap-result-past-cap", 200, null, {
    body:
      `RESULT_NOT_SERIALIZABLE: The host's answer to capability is nested deeper than ${MAX_NESTING_DEPTH} levels: fix the capability to return flatter data, or the deeper part as JSON text`,
  }],
  ["cap-args-getter-throws", 200, null, { body: "RangeError:mine:no code" }],
  // The call fails with PROXY_LIMIT_EXCEEDED, which the handler throws on;
  // on QuickJS memory runs out first. Never an answer the host cannot read:
  // the arguments are JSON data.
  ["cap-args-tojson-huge", 502, "BRIDGE_HANDLER_REJECTED", {
    on: {
      quickjs: ["cap-args-tojson-huge", 502, "OUT_OF_MEMORY", {
        replaced: true,
      }],
    },
  }],
  // More host calls at once than the cap: the excess fails at once, the
  // rest run; one after another, as many as the time allows.
  ["cap-flood", 200, null, { body: "PROXY_LIMIT_EXCEEDED,ran" }],
  // Denied at once: whether some also meet the cap depends on how many the
  // host reads before the first denials are answered; none ever runs.
  ["cap-flood-denied", 200, null, {
    body: /^PERMISSION_DENIED(,PROXY_LIMIT_EXCEEDED)?$/,
  }],
  ["cap-burst-at-cap", 200, null, { body: String(MAX_CONCURRENT_CALLS) }],
  ["cap-sequential", 200, null, { body: String(SEQUENTIAL) }],
  ["fetch-denied", 403, "PERMISSION_DENIED"],
  ["fetch-credentials", 403, "PERMISSION_DENIED"],
  ["fetch-oversize", 200, null, { body: "PROXY_LIMIT_EXCEEDED" }],
  ["fetch-redirect", 200, null, { body: "302" }],
  ["fetch-json-past-cap", 200, null, {
    body: new RegExp(
      `^RESULT_NOT_SERIALIZABLE: Cannot read the response of "http://127\\.0\\.0\\.1:\\d+/past-cap" as JSON: it is nested deeper than ${MAX_NESTING_DEPTH} levels; read it with text\\(\\) and parse the part you need$`,
    ),
  }],
  ["fetch-json-at-cap", 200, null, { body: String(MAX_NESTING_DEPTH) }],
  ["fs-dotdot", 403, "PERMISSION_DENIED"],
  ["fs-symlink", 403, "PERMISSION_DENIED"],
  ["fs-relative", 403, "PERMISSION_DENIED"],
  ["fs-checker-dotdot", 403, "PERMISSION_DENIED"],
  ["fetch-checker-dotdot", 403, "PERMISSION_DENIED"],
  ["fetch-checker-encoded-dot", 403, "PERMISSION_DENIED"],
  ["fetch-checker-tab", 403, "PERMISSION_DENIED"],
  ["fs-oversize", 200, null, { body: "PROXY_LIMIT_EXCEEDED" }],
  ["fs-path-long", 200, null, { body: "PROXY_LIMIT_EXCEEDED" }],
  ["fetch-url-long", 200, null, { body: "PROXY_LIMIT_EXCEEDED" }],
  ["fs-list", 200, null, { body: "big.txt,crowded,link.txt,private" }],
  ["fs-list-crowded", 200, null, { body: "PROXY_LIMIT_EXCEEDED" }],
  ["host-call-bad-argument", 200, null, {
    body: Array(5).fill("bad argument").join(","),
  }],
  // Granted by the policy, but a device: it reports size 0 and never ends.
  ["fs-device", 200, null, { body: "NotAFile" }],
  ["fs-write-denied", 403, "PERMISSION_DENIED"],
];

/**
 * Lines one call of the chatty plugin logs: far more than a pipe, a port or
 * a realm's outbox holds, and few enough that QuickJS, which hands each line
 * out of its context alone (about 10 µs), answers well within the deadline
 * on a loaded machine.
 */
const LOG_FLOOD = 100_000;

/** A plugin whose lines must reach onLog in the order it logged them. */
const CHATTY_PLUGIN = `
import { capabilities } from "cordon:host";
const HANDLERS = {
  flood() {
    for (let i = 0; i < ${LOG_FLOOD}; i++) console.log("line", i);
    return "flooded";
  },
  async interleaved() {
    console.info("before");
    await capabilities.call("chatty.mark", "first");
    console.warn("between");
    await capabilities.call("chatty.mark", "second");
    await null;
    console.error("after");
    return { toJSON() { console.debug("in toJSON"); return "done"; } };
  },
  tamper() {
    let replaced = 0;
    const targets = [
      [Array.prototype, "join"],
      [String.prototype, "slice"],
      [Promise.prototype, "then"],
      [JSON, "stringify"],
    ];
    for (const [target, name] of targets) {
      try {
        target[name] = () => "forged";
        replaced++;
      } catch {}
    }
    console.log("still");
    console.log("whole");
    return replaced + " replaced";
  },
};
export const routes = () => [{ method: "GET", path: "/:name" }];
export async function handleRequest(req) {
  const body = await HANDLERS[req.params.name]();
  return { status: 200, headers: [], body };
}`;

/** Memory bombs, each against the realm's cap. */
const BOMBS = {
  arrays: `const a = []; for (;;) a.push(new Array(1e5).fill(a.length));`,
  strings: `const a = []; for (let i = 0; ; i++) a.push("x".repeat(1e5) + i);`,
  maps:
    `const m = new Map(); for (let i = 0; ; i++) m.set(i, { i, s: "v" + i });`,
  // Many small allocations: QuickJS may be left unable to make even its
  // out-of-memory error, and throws null instead.
  "small-objects": `const a = []; for (let i = 0; ; i++) a.push({ i });`,
  caught:
    `const a = []; for (;;) { try { a.push(new Array(1e5).fill(a.length)); } catch { a.length = 0; } }`,
  // Typed arrays' bytes live outside V8's heap, which its limit does not
  // count.
  "typed-arrays":
    `const a = []; for (;;) a.push(new Uint8Array(1e7).fill(a.length));`,
  "one-typed-array":
    `const u = new Uint8Array(1024 ** 3); u.fill(1); return { status: 200, headers: [], body: String(u[7]) };`,
};

/**
 * The bombs outside V8's heap. Node's worker threads (its vm tier) share
 * the host's process, so nothing bounds them there: docs/plugin.md says so.
 */
const OUTSIDE_HEAP = new Set(["typed-arrays", "one-typed-array"]);

/**
 * What a plugin's writes hold on disk, each case on a new plugin whose
 * writes may hold MAX_WRITE_BYTES: its handler's answer, as the body. The
 * handlers write into OUT (empty, holding a folder `dir`) and read it back.
 */
const WRITE_CASES = [
  // A file counts at least a block, an empty one too; the write that would
  // pass the bound is refused before the file is made.
  [
    "empty files count a block each",
    `const seen = []; for (let i = 0; i < 10; i++) seen.push(await outcome(fs.writeTextFile(OUT + "/e" + i, ""))); seen.push(await outcome(fs.readTextFile(OUT + "/e8"))); return seen.join(",");`,
    [
      ...Array(8).fill("ok"),
      "PROXY_LIMIT_EXCEEDED",
      "PROXY_LIMIT_EXCEEDED",
      "NotFound",
    ]
      .join(","),
  ],
  // Counted in UTF-8 bytes, as the file holds them: the second text is half
  // as many characters.
  [
    "one text over the bound is refused alone",
    `const seen = [await outcome(fs.writeTextFile(OUT + "/big", "x".repeat(${
      MAX_WRITE_BYTES + 1
    }))), await outcome(fs.writeTextFile(OUT + "/big", "é".repeat(${
      MAX_WRITE_BYTES / 2
    }) + "x")), await outcome(fs.readTextFile(OUT + "/big")), await outcome(fs.writeTextFile(OUT + "/big", "x".repeat(${MAX_WRITE_BYTES}))), await outcome(fs.writeTextFile(OUT + "/other", ""))]; return seen.join(",");`,
    "PROXY_LIMIT_EXCEEDED,PROXY_LIMIT_EXCEEDED,NotFound,ok,PROXY_LIMIT_EXCEEDED",
  ],
  [
    "the refusal names the bound and how to raise it",
    `return await fs.writeTextFile(OUT + "/big", "x".repeat(${
      MAX_WRITE_BYTES + 1
    })).then(() => "written", (e) => e.code + " " + e.name + ": " + e.message.replace(OUT, "OUT"));`,
    `PROXY_LIMIT_EXCEEDED RangeError: Cannot write "OUT/big": the plugin's files would hold more than ${MAX_WRITE_BYTES} bytes on disk (each file it wrote counts its last write, at least ${BLOCK} bytes); write less or to fewer files, or raise limits.maxWriteBytes`,
  ],
  // Seven blocks, then a file of one: the footprint is full. Rewriting the
  // file replaces its share; growing it is refused and leaves it as it
  // was; emptying it still holds a block.
  [
    "a rewrite replaces its file's share",
    `const seen = []; for (let i = 0; i < 7; i++) seen.push(await outcome(fs.writeTextFile(OUT + "/e" + i, ""))); const a = OUT + "/a"; seen.push(await outcome(fs.writeTextFile(a, "x".repeat(${BLOCK}))), await outcome(fs.writeTextFile(a, "y".repeat(${BLOCK}))), await outcome(fs.writeTextFile(a, "z".repeat(${
      BLOCK + 1
    }))), (await fs.readTextFile(a)) === "y".repeat(${BLOCK}) ? "kept" : "changed", await outcome(fs.writeTextFile(a, "")), await outcome(fs.writeTextFile(OUT + "/b", ""))); return seen.join(",");`,
    [
      ...Array(7).fill("ok"),
      "ok",
      "ok",
      "PROXY_LIMIT_EXCEEDED",
      "kept",
      "ok",
      "PROXY_LIMIT_EXCEEDED",
    ].join(","),
  ],
  // Each write takes its share before it starts: writes at once cannot
  // together pass the bound.
  [
    "writes at once cannot race past the bound",
    `const all = []; for (let i = 0; i < 20; i++) all.push(outcome(fs.writeTextFile(OUT + "/c" + i, ""))); const seen = await Promise.all(all); return seen.filter((s) => s === "ok").length + " ok, " + seen.filter((s) => s === "PROXY_LIMIT_EXCEEDED").length + " refused";`,
    "8 ok, 12 refused",
  ],
  // Writes of one file at once hold its share once, not once each.
  [
    "writes of one file at once count it once",
    `const all = []; for (let i = 0; i < 10; i++) all.push(outcome(fs.writeTextFile(OUT + "/s", "s".repeat(${
      MAX_WRITE_BYTES / 2
    })))); const seen = await Promise.all(all); seen.push(await outcome(fs.writeTextFile(OUT + "/t", "t".repeat(${
      MAX_WRITE_BYTES / 2
    }))), await outcome(fs.writeTextFile(OUT + "/u", ""))); return seen.join(",");`,
    [...Array(11).fill("ok"), "PROXY_LIMIT_EXCEEDED"].join(","),
  ],
  // A write that fails before the file is touched gives its share back.
  [
    "a failed write holds nothing",
    `const seen = []; for (let i = 0; i < 7; i++) seen.push(await outcome(fs.writeTextFile(OUT + "/e" + i, ""))); seen.push(await outcome(fs.writeTextFile(OUT + "/missing/f", "")), await outcome(fs.writeTextFile(OUT + "/dir", "")), await outcome(fs.writeTextFile(OUT + "/f", "")), await outcome(fs.writeTextFile(OUT + "/g", ""))); return seen.join(",");`,
    [
      ...Array(7).fill("ok"),
      "NotFound",
      "IsADirectory",
      "ok",
      "PROXY_LIMIT_EXCEEDED",
    ].join(","),
  ],
];

/** A plugin that runs `cases` (name to handler body) in `out`. */
function writerSource(out, cases) {
  const handlers = Object.entries(cases).map(([name, body]) =>
    `  ${JSON.stringify(name)}: async () => { ${body} },`
  ).join("\n");
  return `
import { fs } from "cordon:host";
const OUT = ${JSON.stringify(out)};
const outcome = (work) => work.then(
  () => "ok",
  (error) => error.code === "PROXY_CALL_FAILED" ? error.name : String(error.code),
);
const CASES = {
${handlers}
};
export const spin = () => { for (;;) {} };
export const routes = () => [{ method: "GET", path: "/:name" }];
export async function handleRequest(req) {
  return { status: 200, headers: [], body: String(await CASES[req.params.name]()) };
}
`;
}

/** Plugins that fail while they load, start or list their routes. */
const BAD_INSTALLS = [
  ["top-level loop", `for (;;) {}`, "TIMEOUT"],
  [
    "top-level await that never settles",
    `await new Promise(() => {});`,
    "TIMEOUT",
  ],
  // Filling the heap takes longer than TIMEOUT_MS on a loaded machine, so
  // this case has time enough for the cap, not the clock, to end it.
  [
    "top-level memory bomb",
    BOMBS.arrays,
    "OUT_OF_MEMORY",
    { timeoutMs: CALM_TIMEOUT_MS },
  ],
  [
    "top-level typed-array bomb",
    BOMBS["typed-arrays"],
    "OUT_OF_MEMORY",
    { timeoutMs: CALM_TIMEOUT_MS },
  ],
  ["top-level throw of null", `throw null;`, "GUEST_ERROR"],
  // A name cordon:host does not export is an error of the module's text,
  // found when it is linked, as QuickJS finds it when it compiles.
  [
    "an import of a name cordon:host lacks",
    `import { nothingHere } from "cordon:host"; nothingHere;`,
    "GUEST_SYNTAX_ERROR",
  ],
  // Deeper than V8's parser takes on any thread, and than the native stack
  // QuickJS's parser recurses on: the engine's stack, not a syntax error.
  [
    "source nested twenty thousand parentheses deep",
    `export const deep = ${"(".repeat(20_000)}1${")".repeat(20_000)};`,
    "STACK_OVERFLOW",
  ],
  ["start() that loops", `export function start() { for (;;) {} }`, "TIMEOUT"],
  [
    "start() that never settles",
    `export function start() { return new Promise(() => {}); }`,
    "TIMEOUT",
  ],
  [
    "start() that throws a Proxy",
    `export function start() { throw new Proxy({}, { get() { throw 1; } }); }`,
    "GUEST_ERROR",
  ],
];

const BAD_ROUTES = [
  [
    "routes() that lists 1001 routes",
    `export const routes = () => Array.from({ length: 1001 }, (_, i) => ({ method: "GET", path: "/r" + i }));`,
  ],
  [
    "a route of 33 segments",
    `export const routes = () => [{ method: "GET", path: "/a".repeat(33) }];`,
  ],
  [
    "a route path of 1025 characters",
    `export const routes = () => [{ method: "GET", path: "/" + "a".repeat(1024) }];`,
  ],
  ["routes() that loops", `export function routes() { for (;;) {} }`],
  [
    "a route that climbs out",
    `export const routes = () => [{ method: "GET", path: "/../canary/ok" }];`,
  ],
  [
    "a route with an encoded slash",
    `export const routes = () => [{ method: "GET", path: "/a%2Fb" }];`,
  ],
  [
    "a route that is not a path",
    `export const routes = () => [{ method: "GET", path: "ok" }];`,
  ],
  [
    "a route with an unknown method",
    `export const routes = () => [{ method: "TRACE", path: "/" }];`,
  ],
  [
    "a route listed twice",
    `export const routes = () => [{ method: "GET", path: "/a" }, { method: "GET", path: "/a" }];`,
  ],
  [
    "routes() that answers a getter that throws",
    `export const routes = () => [{ method: "GET", get path() { throw new Error("x"); } }];`,
  ],
  ["routes() that answers a string", `export const routes = () => "GET /";`],
];

function hostileSource(upstream, allowed) {
  const cases = Object.entries(HANDLERS).map(([name, body]) =>
    `  ${JSON.stringify(name)}: async (req) => { ${body} },`
  ).join("\n");
  return `
import { bodyText, capabilities, fetch, fs } from "cordon:host";
const UPSTREAM = ${JSON.stringify(upstream)};
const ALLOWED = ${JSON.stringify(allowed)};
const codeOf = (work) => work.then(
  () => ({ status: 200, headers: [], body: "no error" }),
  (error) => ({ status: 200, headers: [], body: String(error.code) }),
);
const failureOf = (work) => work.then(
  () => ({ status: 200, headers: [], body: "no error" }),
  (error) => ({ status: 200, headers: [], body: error.code + ": " + error.message }),
);
const CASES = {
${cases}
};
export const routes = () => [
  { method: "GET", path: "/case/:name" },
  { method: "POST", path: "/case/:name" },
  { method: "GET", path: "/params/:__proto__/:constructor" },
];
export function handleRequest(req) {
  if (req.url.includes("/params/")) {
    const keys = Object.keys(req.params).sort();
    return {
      status: 200,
      headers: [],
      body: keys.map((k) => k + "=" + req.params[k]).join(","),
    };
  }
  return CASES[req.params.name](req);
}
`;
}

/**
 * An answer that counts every read of it: a getter of its body that logs,
 * and its headers behind a proxy whose every trap counts. The `bare` kind
 * is an object without a prototype, which only the marshalling's copy
 * writes; the `plain` kind looks like plain data to a check that reads it.
 * A plugin on every tier and a host plugin build it with this one function
 * (a sandboxed plugin gets its source text), so each must read it once.
 *
 * @param kind `bare` or `plain`, which also prefixes every count.
 * @param read Counts one read, by name.
 * @param log Logs one line.
 */
function countedAnswer(kind, read, log) {
  const traps = {};
  for (const trap of ["get", "ownKeys", "getOwnPropertyDescriptor", "has"]) {
    traps[trap] = (target, key) => {
      read(`${kind} headers ${trap} ${String(key ?? "")}`);
      return Reflect[trap](target, key);
    };
  }
  traps.getPrototypeOf = (target) => {
    read(`${kind} headers getPrototypeOf`);
    return Reflect.getPrototypeOf(target);
  };
  const answer = kind === "bare" ? Object.create(null) : {};
  answer.status = 200;
  answer.headers = new Proxy([["x-once", "1"]], traps);
  Object.defineProperty(answer, "body", {
    enumerable: true,
    get() {
      read(`${kind} body`);
      log(`${kind} body read`);
      return "once";
    },
  });
  return answer;
}

/** A plugin that answers countedAnswer() and, at /reads, what it counted. */
const COUNTED_PLUGIN = `
const reads = {};
const read = (what) => { reads[what] = (reads[what] ?? 0) + 1; };
export const routes = () => [{ method: "GET", path: "/:what" }];
export function handleRequest(req) {
  if (req.params.what === "reads") {
    return { status: 200, headers: [], body: JSON.stringify(reads) };
  }
  return (${countedAnswer})(req.params.what, read, (line) => console.log(line));
}`;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function hasProc() {
  return fs.existsSync("/proc/self/stat");
}

/** CPU time (user + system) of a process in clock ticks; 0 once it is gone. */
function cpuTicks(pid) {
  let stat;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return 0;
  }
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]);
}

/**
 * The CPU ticks `pid` used in its first quiet half second, or in the last
 * one looked at. A loaded machine may run the host's deadline late, so the
 * realm gets many chances: one that spins for ever fails all of them.
 */
async function ticksOnceQuiet(pid) {
  let used = Infinity;
  // Looks for two minutes in all: only a realm left spinning uses them up.
  for (let look = 0; look < 240 && used >= 15; look++) {
    const before = cpuTicks(pid);
    await sleep(500);
    used = cpuTicks(pid) - before;
  }
  return used;
}

/**
 * Brings up the realm that replaces an ended one before the call that checks
 * it, and returns how many starts ran out of time on the way. The table's
 * cases are about the realm that was ended, not about the start of the next
 * one; yet a fresh realm's module evaluation has the table's short
 * TIMEOUT_MS of wall time, half of which a module that only declares
 * functions took at a load of 7 on two cores (and a host that stalls that
 * long has the deadline fire before it reads the answer). A start that
 * times out is tried again: the restart budget (limits.maxRestarts) still
 * fails one that never comes up, with SANDBOX_RESTART_LIMITED.
 */
async function startAgain(sandbox) {
  let timedOut = 0;
  for (;;) {
    const started = await sandbox.start();
    if (started.ok) return timedOut;
    assert.equal(started.error.code, "TIMEOUT", started.error.message);
    timedOut++;
  }
}

/** Fails when an answer carries a stack, a host path or the plugin's secret. */
function assertNoLeak(text, where) {
  assert.doesNotMatch(text, new RegExp(SECRET), where);
  assert.doesNotMatch(
    text,
    /\bat .*:\d+:\d+|file:\/\/|\/tmp\/|\/home\/|\/work\//,
    where,
  );
}

function makeFolder() {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "adv-")));
  const allowed = path.join(root, "allowed");
  fs.mkdirSync(allowed);
  fs.writeFileSync(path.join(root, "secret.txt"), SECRET);
  fs.writeFileSync(
    path.join(allowed, "big.txt"),
    "b".repeat(MAX_READ_BYTES + 1),
  );
  fs.symlinkSync(path.join(root, "secret.txt"), path.join(allowed, "link.txt"));
  // Inside the policy's folder, but denied by the host's checker.
  fs.mkdirSync(path.join(allowed, "private"));
  fs.writeFileSync(path.join(allowed, "private", "secret.txt"), SECRET);
  const crowded = path.join(allowed, "crowded");
  fs.mkdirSync(crowded);
  for (let i = 0; i <= MAX_DIR_ENTRIES; i++) {
    fs.writeFileSync(path.join(crowded, `${i}.txt`), "");
  }
  return { root, allowed };
}

/**
 * Registers the adversarial table.
 *
 * @param api `createPluginHost`, `createSandboxedVmPluginModule`,
 * `createPluginSandbox`, `createHostPluginModule`, `identifyAnonymously`
 * of the build under test,
 * `serve(handler)` (resolves to `{ port, close() }`), and `tiers`.
 * @param test Registers one test: `test(name, fn)`, where `fn` receives a
 * context whose `step(name, fn)` runs a sub-test, or
 * `test(name, { ignore }, fn)`, which reports the test as ignored, not
 * passed, when `ignore` is true.
 */
export function registerAdversarialCases(api, test) {
  const {
    createHostPluginModule,
    createPluginHost,
    createPluginSandbox,
    identifyAnonymously,
    serve,
    tiers,
  } = api;

  /** Whether a realm on `tier` shares the host's process (Node's threads). */
  const sharesProcess = (tier) =>
    tier === "vm" && typeof globalThis.Deno === "undefined";

  function build(tier, id, source, extra = {}) {
    return buildTablePlugin(api, tier, id, source, {
      ...extra,
      limits: {
        timeoutMs: TIMEOUT_MS,
        startupTimeoutMs: STARTUP_MS,
        stopTimeoutMs: STOP_MS,
        memoryLimitBytes: MEMORY_BYTES,
        maxPayloadBytes: MAX_PAYLOAD_BYTES,
        ...extra.limits,
      },
      maxBodyBytes: extra.maxBodyBytes ?? MAX_BODY_BYTES,
    });
  }

  async function call(host, url, init = {}) {
    const response = await host.fetch(new Request(url, init));
    const text = await response.text();
    return { status: response.status, headers: response.headers, text };
  }

  async function expectCode(host, url, status, code, init) {
    const answer = await call(host, url, init);
    assertNoLeak(answer.text, url);
    let problem = null;
    try {
      problem = JSON.parse(answer.text);
    } catch {
      // Checked below.
    }
    assert.deepEqual(
      [answer.status, problem?.code],
      [status, code],
      `${url}: ${answer.text.slice(0, 300)}`,
    );
    return answer;
  }

  /** Installing `module` fails with `code`, and its cause with `cause`. */
  async function installFails(host, tier, module, code, cause) {
    await assert.rejects(
      host.installPlugin({ kind: tier, module }),
      (error) => {
        assert.equal(error.code, code, error.message);
        if (cause !== undefined) {
          assert.equal(error.cause?.code, cause, JSON.stringify(error.cause));
        }
        return true;
      },
    );
  }

  async function canaryAlive(host) {
    const answer = await call(host, "http://h/plugins/canary/ok");
    assert.deepEqual([answer.status, answer.text], [200, "alive"]);
  }

  for (const tier of tiers) {
    test(`every hostile answer, throw, input and capability call of a plugin on the ${tier} tier gets the table's one outcome`, async (t) => {
      const folder = makeFolder();
      const upstream = await serve((request) => {
        const { pathname } = new URL(request.url);
        if (pathname === "/big") return new Response("B".repeat(4096));
        if (pathname === "/past-cap") {
          return Response.json(nested(MAX_NESTING_DEPTH + 1));
        }
        if (pathname === "/at-cap") {
          return Response.json(nested(MAX_NESTING_DEPTH));
        }
        if (pathname === "/redirect") {
          return new Response(null, {
            status: 302,
            headers: { location: "http://example.invalid/" },
          });
        }
        return new Response("small");
      });
      const upstreamUrl = `http://127.0.0.1:${upstream.port}`;
      const host = createPluginHost({ identify: identifyAnonymously });
      const slowCalls = [];
      let wideReads = 0;
      try {
        await host.installPlugin({
          kind: tier,
          module: build(tier, "canary", CANARY).module,
        });
        const hostilePlugin = (id, timeoutMs) =>
          build(tier, id, hostileSource(upstreamUrl, folder.allowed), {
            policy: {
              capabilities: [
                "adv.one",
                "adv.big",
                "adv.slow",
                "adv.held",
                "adv.length",
                "adv.echo",
                "adv.nested",
                "adv.wide",
                "adv.wide-reads",
              ],
              fetch: [`127.0.0.1:${upstream.port}`],
              fs: { read: [folder.allowed, "/dev"] },
            },
            checker: (request) =>
              request.kind === "fs"
                ? !request.path.startsWith(path.join(folder.allowed, "private"))
                : request.kind !== "fetch" ||
                  !request.url.startsWith(`${upstreamUrl}/private`),
            proxies: {
              capabilities: {
                "adv.one": (n) => n,
                "adv.length": (text) => String(text).length,
                "adv.echo": (value) => value,
                "adv.nested": (levels) => {
                  let nested = [];
                  for (let i = 1; i < levels; i++) nested = [nested];
                  return nested;
                },
                "adv.big": () => "c".repeat(4096),
                // WIDE_RESULT elements, each read counted.
                "adv.wide": () => {
                  wideReads = 0;
                  return new Proxy(new Array(WIDE_RESULT).fill(null), {
                    get(target, key, receiver) {
                      if (typeof key === "string" && /^\d+$/.test(key)) {
                        wideReads++;
                      }
                      return Reflect.get(target, key, receiver);
                    },
                  });
                },
                "adv.wide-reads": () => wideReads,
                "adv.slow": () =>
                  new Promise((resolve) => {
                    const timer = setTimeout(resolve, 50, 1);
                    slowCalls.push(timer);
                  }),
                // Held long enough that the host reads more calls of a
                // flood than it may run at once before the first ends.
                "adv.held": () =>
                  new Promise((resolve) => {
                    const timer = setTimeout(resolve, HELD_MS, 1);
                    slowCalls.push(timer);
                  }),
                "adv.secret": () => SECRET,
              },
            },
            limits: {
              timeoutMs,
              maxFetchResponseBytes: MAX_READ_BYTES,
              maxFileReadBytes: MAX_READ_BYTES,
              maxDirEntries: MAX_DIR_ENTRIES,
              maxCapabilityResultBytes: MAX_READ_BYTES,
              maxConcurrentProxyCalls: MAX_CONCURRENT_CALLS,
            },
          });
        // The same plugin twice: runaways get the short budget, the other
        // cases one no loaded machine overruns (an answer far over its
        // bound ends the realm too, but only after the realm built it,
        // which a loaded machine may take longer than a runaway's budget
        // for).
        const plugins = {
          hostile: hostilePlugin("hostile", CALM_TIMEOUT_MS),
          runaway: hostilePlugin("runaway", TIMEOUT_MS),
        };
        for (const { module } of Object.values(plugins)) {
          await host.installPlugin({ kind: tier, module });
        }
        for (const row of TABLE) {
          const [name, status, code, options = {}] = row[3]?.on?.[tier] ??
            row;
          await t.step(`${name}: ${status} ${code ?? ""}`, async () => {
            const id = code === "TIMEOUT" ? "runaway" : "hostile";
            const { sandbox } = plugins[id];
            const before = sandbox.instruments.realmsStarted;
            const url = `http://h/plugins/${id}/case/${options.route ?? name}`;
            const init = {
              method: options.method ?? "GET",
              headers: options.headers,
              body: options.send,
            };
            if (code !== null) {
              await expectCode(host, url, status, code, init);
            } else {
              const answer = await call(host, url, init);
              assertNoLeak(answer.text, url);
              if (options.body instanceof RegExp) {
                assert.equal(answer.status, status, url);
                assert.match(answer.text, options.body, url);
              } else {
                assert.deepEqual(
                  [answer.status, answer.text],
                  [status, options.body],
                  url,
                );
              }
              for (
                const [header, ok] of Object.entries(
                  options.expectHeaders ?? {},
                )
              ) {
                const value = answer.headers.get(header);
                assert.ok(ok(value), `${header}: ${value}`);
              }
            }
            // The plugin answers again, from a new realm only after a runaway.
            const timedOut = await startAgain(sandbox);
            const next = await call(host, `http://h/plugins/${id}/case/ok`);
            assert.deepEqual([next.status, next.text], [200, "ok"], name);
            assert.equal(
              sandbox.instruments.realmsStarted - timedOut - before,
              options.replaced ? 1 : 0,
              `${name}: realms started`,
            );
            await canaryAlive(host);
          });
        }
        await t.step(
          "a body within maxBodyBytes but over the sandbox's maxPayloadBytes is refused with 413",
          async () => {
            const { module } = build(
              tier,
              "roomy",
              `export const routes = () => [{ method: "POST", path: "/" }];
export const handleRequest = () => ({ status: 200, headers: [], body: "read" });`,
              { maxBodyBytes: 4 * MAX_PAYLOAD_BYTES },
            );
            await host.installPlugin({ kind: tier, module });
            await expectCode(
              host,
              "http://h/plugins/roomy",
              413,
              "BRIDGE_MARSHAL_FAILED",
              { method: "POST", body: "x".repeat(2 * MAX_PAYLOAD_BYTES) },
            );
            await canaryAlive(host);
          },
        );
        await t.step(
          "over a real socket, hostile answers and bodies leave the server serving",
          async () => {
            const server = await serve(host.fetch);
            try {
              const base = `http://127.0.0.1:${server.port}/plugins`;
              const cookie = await fetch(
                `${base}/hostile/case/header-set-cookie`,
              );
              assert.equal(cookie.headers.get("set-cookie"), null);
              assert.deepEqual(
                [cookie.status, (await cookie.json()).code],
                [502, "BRIDGE_RESPONSE_HEADER_DENIED"],
              );
              const huge = await fetch(`${base}/hostile/case/ok`, {
                method: "POST",
                body: "x".repeat(MAX_BODY_BYTES * 8),
              });
              assert.deepEqual(
                [huge.status, (await huge.json()).code],
                [413, "BRIDGE_MARSHAL_FAILED"],
              );
              const loop = await fetch(`${base}/runaway/case/loop`);
              assert.deepEqual(
                [loop.status, (await loop.json()).code],
                [504, "TIMEOUT"],
              );
              const alive = await fetch(`${base}/canary/ok`);
              assert.deepEqual(
                [alive.status, await alive.text()],
                [200, "alive"],
              );
            } finally {
              await server.close();
            }
          },
        );
        await t.step(
          "route parameters named __proto__ and constructor reach the plugin as its own",
          async () => {
            const answer = await call(
              host,
              "http://h/plugins/hostile/params/p/c",
            );
            assert.deepEqual(
              [answer.status, answer.text],
              [200, "__proto__=p,constructor=c"],
            );
          },
        );
        assert.equal(({}).polluted, undefined);
      } finally {
        await host.dispose();
        await upstream.close();
        for (const timer of slowCalls) clearTimeout(timer);
        fs.rmSync(folder.root, { recursive: true, force: true });
      }
    });

    test(`memory bombs of a plugin on the ${tier} tier end as OUT_OF_MEMORY and the host serves on`, async (t) => {
      const host = createPluginHost({ identify: identifyAnonymously });
      try {
        await host.installPlugin({
          kind: tier,
          module: build(tier, "canary", CANARY).module,
        });
        const cases = Object.entries(BOMBS).map(([name, body]) =>
          `  ${JSON.stringify(name)}: () => { ${body} },`
        ).join("\n");
        const { module, sandbox } = build(
          tier,
          "hog",
          `const BOMBS = {\n${cases}\n};
export const routes = () => [{ method: "GET", path: "/:name" }];
export function handleRequest(req) {
  if (req.params.name === "ok") return { status: 200, headers: [], body: "ok" };
  return BOMBS[req.params.name]();
}`,
          // A limit that is not a power of two: where QuickJS runs out
          // differs, and with it what it can still make of its error. Two
          // minutes: the cap ends each bomb first, however loaded the
          // machine (the caught one took over 20 s at a load of 10).
          {
            limits: { timeoutMs: 120_000, memoryLimitBytes: BOMB_MEMORY_BYTES },
          },
        );
        await host.installPlugin({ kind: tier, module });
        for (const name of Object.keys(BOMBS)) {
          if (sharesProcess(tier) && OUTSIDE_HEAP.has(name)) continue;
          await t.step(name, async () => {
            const before = sandbox.instruments.realmsStarted;
            // A bomb that catches its own failure and allocates on may be
            // stopped by the clock instead, on a tier that lets it catch.
            const answer = await call(host, `http://h/plugins/hog/${name}`);
            assertNoLeak(answer.text, name);
            const code = JSON.parse(answer.text).code;
            assert.deepEqual(
              [answer.status, code],
              [502, "OUT_OF_MEMORY"],
              name,
            );
            const next = await call(host, "http://h/plugins/hog/ok");
            assert.deepEqual([next.status, next.text], [200, "ok"]);
            assert.equal(sandbox.instruments.realmsStarted - before, 1);
            await canaryAlive(host);
          });
        }
      } finally {
        await host.dispose();
      }
    });

    test(`plugins on the ${tier} tier that fail to load, start or list routes are refused with a code within their budget`, async (t) => {
      const host = createPluginHost({ identify: identifyAnonymously });
      try {
        await host.installPlugin({
          kind: tier,
          module: build(tier, "canary", CANARY).module,
        });
        const surface = `
export const routes = () => [{ method: "GET", path: "/" }];
export const handleRequest = () => ({ status: 200, headers: [], body: "" });
`;
        for (const [name, body, cause, limits] of BAD_INSTALLS) {
          if (sharesProcess(tier) && body === BOMBS["typed-arrays"]) continue;
          await t.step(name, async () => {
            const { module } = build(tier, "bad", body + surface, { limits });
            const started = Date.now();
            try {
              await installFails(
                host,
                tier,
                module,
                "BRIDGE_LIFECYCLE_FAILED",
                cause,
              );
            } finally {
              await host.uninstallPlugin("bad");
            }
            // The budget is timeoutMs (the realm's start excluded), never
            // timeoutMs plus the start-up allowance.
            assert.ok(
              Date.now() - started < STARTUP_MS,
              `${Date.now() - started} ms`,
            );
            assert.deepEqual(host.plugins().map((p) => p.id), ["canary"]);
            await canaryAlive(host);
          });
        }
        for (const [name, source] of BAD_ROUTES) {
          await t.step(name, async () => {
            // Nothing here runs long: a calm budget keeps a loaded machine
            // from turning a bad surface into a module that ran over.
            const { module } = build(
              tier,
              "bad",
              source + `\nexport const handleRequest = () => null;`,
              { limits: { timeoutMs: CALM_TIMEOUT_MS } },
            );
            try {
              await installFails(
                host,
                tier,
                module,
                "BRIDGE_INVALID_PLUGIN_SURFACE",
              );
            } finally {
              await host.uninstallPlugin("bad");
            }
            await canaryAlive(host);
          });
        }
        await t.step(
          "uninstallPlugin() during installPlugin() ends the install, and the plugin never serves",
          async () => {
            const { module, sandbox } = build(tier, "racer", CANARY, {
              limits: { timeoutMs: CALM_TIMEOUT_MS },
            });
            const [install, removed] = await Promise.allSettled([
              host.installPlugin({ kind: tier, module }),
              host.uninstallPlugin("racer"),
            ]);
            assert.equal(install.status, "rejected");
            assert.equal(install.reason.code, "BRIDGE_LIFECYCLE_FAILED");
            assert.equal(install.reason.cause.code, "SANDBOX_DISPOSED");
            assert.deepEqual(removed, { status: "fulfilled", value: true });
            assert.deepEqual(host.plugins().map((p) => p.id), ["canary"]);
            assert.equal(sandbox.instruments.state, "disposed");
            const gone = await call(host, "http://h/plugins/racer/ok");
            assert.equal(gone.status, 404);
            // The id is free again.
            const again = build(tier, "racer", CANARY, {
              limits: { timeoutMs: CALM_TIMEOUT_MS },
            });
            await host.installPlugin({ kind: tier, module: again.module });
            assert.equal(
              (await call(host, "http://h/plugins/racer/ok")).status,
              200,
            );
            assert.equal(await host.uninstallPlugin("racer"), true);
          },
        );
        await t.step(
          "a second plugin cannot take an installed plugin's id",
          async () => {
            const { module } = build(tier, "canary", CANARY);
            await assert.rejects(
              host.installPlugin({ kind: tier, module }),
              TypeError,
            );
            await module.dispose();
            await canaryAlive(host);
          },
        );
        for (
          const [name, hook] of [
            ["stop() that loops", "for (;;) {}"],
            ["stop() that never settles", "return new Promise(() => {});"],
            ["stop() that throws", "throw null;"],
          ]
        ) {
          await t.step(
            `${name} is cut off and the plugin uninstalled`,
            async () => {
              const { module, sandbox } = build(
                tier,
                "stopper",
                `export function stop() { ${hook} }` + surface,
              );
              await host.installPlugin({ kind: tier, module });
              const started = Date.now();
              assert.equal(await host.uninstallPlugin("stopper"), true);
              assert.ok(
                Date.now() - started < STARTUP_MS,
                `${Date.now() - started} ms`,
              );
              assert.equal(sandbox.instruments.state, "disposed");
              await canaryAlive(host);
            },
          );
        }
      } finally {
        await host.dispose();
      }
    });

    test(
      `plugin code on the ${tier} tier that spins after its answer is stopped and the next call is served`,
      {
        // Linux's /proc is where a realm's CPU time is read; CI runs there.
        ignore: !hasProc(),
      },
      async (t) => {
        const host = createPluginHost({ identify: identifyAnonymously });
        try {
          // Jobs that run after the answer left, when no call waits for
          // them: a settled capability call's; a job the handler left behind,
          // silent or one that logs first;
          // a rejected import()'s, which the realm runs on its own turn;
          // promise chains that renew themselves, which no single job holds;
          // and a chain that spins a while, then asks the host again, so
          // each stretch is short but they never end.
          // The next call waits for a capability call, so its own promise
          // jobs would queue behind anything left running.
          const { module, sandbox } = build(
            tier,
            "spinner",
            `import { capabilities } from "cordon:host";
const spin = () => { for (;;) {} };
const renew = () => Promise.resolve().then(renew);
const spinThenCall = () => {
  const end = Date.now() + ${TIMEOUT_MS / 2};
  while (Date.now() < end) {}
  return capabilities.call("adv.one", 1).then(spinThenCall);
};
export const routes = () => [{ method: "GET", path: "/:name" }];
export function handleRequest(req) {
  const name = req.params.name;
  if (name === "capability") capabilities.call("adv.one", 1).then(spin);
  if (name === "left") Promise.resolve().then(spin);
  if (name === "logged") Promise.resolve().then(() => { console.log("on"); spin(); });
  if (name === "import") import("cordon:" + "nothing").catch(() => { console.log("on"); spin(); });
  if (name === "renewing") Promise.resolve().then(() => { console.log("on"); for (let i = 0; i < 20; i++) renew(); });
  if (name === "calling") capabilities.call("adv.one", 1).then(spinThenCall);
  if (name === "next") return capabilities.call("adv.one", 2).then((n) => ({ status: 200, headers: [], body: String(n) }));
  return { status: 200, headers: [], body: name };
}`,
            {
              policy: { capabilities: ["adv.one"] },
              proxies: { capabilities: { "adv.one": (n) => n } },
            },
          );
          await host.installPlugin({ kind: tier, module });
          for (
            const name of [
              "capability",
              "left",
              "logged",
              "import",
              "renewing",
              "calling",
            ]
          ) {
            await t.step(name, async () => {
              const spin = await call(host, `http://h/plugins/spinner/${name}`);
              assert.deepEqual([spin.status, spin.text], [200, name]);
              // Every tier runs its realm in a process of its own.
              const pid = sandbox.instruments.realmPid;
              assert.equal(typeof pid, "number", "the realm has no process");
              await sleep(TIMEOUT_MS);
              const used = await ticksOnceQuiet(pid);
              // A spinning realm uses about 50 ticks in 500 ms.
              assert.ok(used < 15, `the realm used ${used} CPU ticks`);
              await startAgain(sandbox);
              const next = await call(host, "http://h/plugins/spinner/next");
              assert.deepEqual([next.status, next.text], [200, "2"]);
            });
          }
        } finally {
          await host.dispose();
        }
      },
    );

    test(`invoke() on the ${tier} tier passes a payload and an answer nested MAX_NESTING_DEPTH deep, and refuses deeper ones with a message naming the cap`, async () => {
      const sandbox = createPluginSandbox(tier, {
        pluginId: "nesting",
        pluginModule: {
          kind: "source",
          identifier: "nesting.js",
          source: `export const echo = (x) => x;
export function levels(x) { let n = 0; for (let v = x; Array.isArray(v); v = v[0]) n++; return n; }
export function nested(levels) { let v = []; for (let i = 1; i < levels; i++) v = [v]; return v; }`,
        },
        limits: { timeoutMs: CALM_TIMEOUT_MS, startupTimeoutMs: STARTUP_MS },
      });
      try {
        const sent = await sandbox.invoke("levels", nested(MAX_NESTING_DEPTH));
        assert.equal(sent.ok && sent.value, MAX_NESTING_DEPTH);
        await assert.rejects(
          sandbox.invoke("echo", nested(MAX_NESTING_DEPTH + 1)),
          (error) => {
            assert.ok(error instanceof TypeError);
            assert.equal(
              error.message,
              `Cannot send the payload of echo() to the plugin: it is nested deeper than ${MAX_NESTING_DEPTH} levels; pass flatter data, or the deeper part as JSON text`,
            );
            return true;
          },
        );
        const answered = await sandbox.invoke("nested", MAX_NESTING_DEPTH);
        assert.equal(
          answered.ok && levelsOf(answered.value),
          MAX_NESTING_DEPTH,
        );
        const past = await sandbox.invoke("nested", MAX_NESTING_DEPTH + 1);
        assert.equal(
          past.ok ? "ok" : past.error.code,
          "RESULT_NOT_SERIALIZABLE",
        );
        assert.ok(
          past.error.message.startsWith(
            `Cannot return data nested deeper than ${MAX_NESTING_DEPTH} levels from a sandbox at result${
              "[0]".repeat(MAX_NESTING_DEPTH)
            }:`,
          ),
          past.error.message.slice(0, 300),
        );
        const next = await sandbox.invoke("echo", 7);
        assert.deepEqual(next.ok && next.value, 7);
      } finally {
        await sandbox.dispose();
      }
    });

    test(`an answer's getters and proxy traps run once, a getter's log line logged once, from a plugin on the ${tier} tier and from a host plugin`, async () => {
      const lines = [];
      const hostReads = {};
      const host = createPluginHost({ identify: identifyAnonymously });
      try {
        await host.installPlugin({
          kind: tier,
          module: build(tier, "counted", COUNTED_PLUGIN, {
            onLog: (entry) => lines.push(`${entry.level} ${entry.message}`),
          }).module,
        });
        await host.installPlugin({
          kind: "host",
          module: createHostPluginModule({
            manifest: { id: "trusted", version: "1.0.0" },
            plugin: {
              routes: () => [{ method: "GET", path: "/:what" }],
              handleRequest: (req) =>
                countedAnswer(
                  req.params.what,
                  (what) => hostReads[what] = (hostReads[what] ?? 0) + 1,
                  (line) => lines.push(`host ${line}`),
                ),
            },
          }),
        });
        for (const id of ["counted", "trusted"]) {
          for (const kind of ["bare", "plain"]) {
            const answer = await call(host, `http://h/plugins/${id}/${kind}`);
            assert.deepEqual(
              [answer.status, answer.text, answer.headers.get("x-once")],
              [200, "once", "1"],
              `${id} ${kind}`,
            );
          }
        }
        const counted = await call(host, "http://h/plugins/counted/reads");
        for (
          const [id, reads] of [
            ["counted", JSON.parse(counted.text)],
            ["trusted", hostReads],
          ]
        ) {
          for (const kind of ["bare", "plain"]) {
            assert.ok(reads[`${kind} body`] >= 1, `${id}: no ${kind} body`);
            assert.ok(reads[`${kind} headers get 0`] >= 1, `${id}: ${kind}`);
          }
          const twice = Object.entries(reads).filter(([, n]) => n !== 1);
          assert.deepEqual(twice, [], id);
        }
        assert.deepEqual(lines, [
          "log bare body read",
          "log plain body read",
          "host bare body read",
          "host plain body read",
        ]);
      } finally {
        await host.dispose();
      }
    });

    test(`an answer nested deeper than MAX_NESTING_DEPTH fails alike from a plugin on the ${tier} tier and from a host plugin, naming the cap`, async () => {
      const errors = [];
      const host = createPluginHost({
        identify: identifyAnonymously,
        onError: (error) => errors.push(error),
      });
      const deepAnswer = (levels) => ({
        status: 200,
        headers: [],
        body: nested(levels),
      });
      try {
        await host.installPlugin({
          kind: tier,
          module: build(
            tier,
            "sandboxed",
            `export const routes = () => [{ method: "GET", path: "/:levels" }];
export function handleRequest(req) { ${
              nestedArrays("Number(req.params.levels)")
            } return { status: 200, headers: [], body: deep }; }`,
          ).module,
        });
        await host.installPlugin({
          kind: "host",
          module: createHostPluginModule({
            manifest: { id: "trusted", version: "1.0.0" },
            plugin: {
              routes: () => [{ method: "GET", path: "/:levels" }],
              handleRequest: (req) => deepAnswer(Number(req.params.levels)),
            },
          }),
        });
        const levels = MAX_NESTING_DEPTH;
        const causes = [];
        for (const id of ["sandboxed", "trusted"]) {
          errors.length = 0;
          await expectCode(
            host,
            `http://h/plugins/${id}/${levels}`,
            502,
            "BRIDGE_UNMARSHAL_FAILED",
          );
          assert.equal(errors.length, 1, id);
          causes.push(errors[0].cause?.message);
        }
        assert.ok(
          causes[0]?.startsWith(
            `Cannot return data nested deeper than ${MAX_NESTING_DEPTH} levels from a sandbox at result.body${
              "[0]".repeat(MAX_NESTING_DEPTH - 1)
            }:`,
          ),
          String(causes[0]).slice(0, 300),
        );
        assert.equal(causes[1], causes[0]);
      } finally {
        await host.dispose();
      }
    });

    test(`invoke() on the ${tier} tier answers ABORTED for an aborted signal and a later abort, and serves the next call`, async () => {
      // Each call logs its name as it begins in the realm: the abort comes
      // once it is there, however long a loaded machine took to send it.
      const entered = new Map();
      const enteredCall = (name) =>
        new Promise((resolve) => entered.set(name, resolve));
      // Node 20 has no `await using`.
      const sandbox = createPluginSandbox(tier, {
        pluginId: "abort",
        pluginModule: {
          kind: "source",
          identifier: "abort.js",
          source:
            `export const hang = () => { console.log("hang"); return new Promise(() => {}); };
export const spin = () => { console.log("spin"); for (;;) {} };
export const echo = (x) => x;`,
        },
        onLog: (entry) => entered.get(entry.message)?.(),
        // Long enough that the calls below reach the realm before the
        // aborted calls' deadline ends it, on a loaded machine too.
        limits: { timeoutMs: 1000, startupTimeoutMs: STARTUP_MS },
      });
      try {
        const early = await sandbox.invoke("echo", 1, {
          signal: AbortSignal.abort(),
        });
        assert.equal(early.ok ? "ok" : early.error.code, "ABORTED");
        const abortLater = async (name) => {
          const controller = new AbortController();
          const began = enteredCall(name);
          const pending = sandbox.invoke(name, null, {
            signal: controller.signal,
          });
          await began;
          controller.abort();
          const result = await pending;
          assert.equal(result.ok ? "ok" : result.error.code, "ABORTED", name);
        };
        // A plugin waiting on a promise leaves its realm free.
        await abortLater("hang");
        const free = await sandbox.invoke("echo", 1);
        assert.deepEqual(free.ok && free.value, 1);
        // A spinning one holds it until the call's deadline ends the realm:
        // a call sent meanwhile fails with it, the next one has a new realm.
        await abortLater("spin");
        const caught = await sandbox.invoke("echo", 2);
        assert.equal(caught.ok ? "ok" : caught.error.code, "SANDBOX_CRASHED");
        const next = await sandbox.invoke("echo", 7);
        assert.deepEqual(next.ok && next.value, 7);
      } finally {
        await sandbox.dispose();
      }
    });

    test(`a plugin on the ${tier} tier whose start() leaves plugin code running is started again at most limits.maxRestarts times`, async () => {
      const sandbox = createPluginSandbox(tier, {
        pluginId: "restless",
        pluginModule: {
          kind: "source",
          identifier: "restless.js",
          // Answers start(), then keeps its realm busy with no call waiting.
          source: `const renew = () => Promise.resolve().then(renew);
export function start() { Promise.resolve().then(() => { for (let i = 0; i < 20; i++) renew(); }); }
export const echo = (x) => x;`,
        },
        limits: {
          timeoutMs: TIMEOUT_MS,
          startupTimeoutMs: STARTUP_MS,
          maxRestarts: 1,
          restartWindowMs: 120_000,
        },
      });
      try {
        // start() answers on every tier, and the jobs it left behind end the
        // realm after.
        const codes = [];
        for (let i = 0; i < 3; i++) {
          const started = await sandbox.start();
          codes.push(started.ok ? "ok" : started.error.code);
          await until(
            () => sandbox.instruments.state !== "running",
            "the realm's end",
            120_000,
          );
        }
        assert.deepEqual(codes, ["ok", "ok", "SANDBOX_RESTART_LIMITED"]);
        assert.equal(sandbox.instruments.realmsStarted, 2);
      } finally {
        await sandbox.dispose();
      }
    });

    test(`the files a plugin on the ${tier} tier writes hold at most limits.maxWriteBytes, across writes at once, new realms and uncaught refusals`, async (t) => {
      const root = fs.realpathSync(
        fs.mkdtempSync(path.join(os.tmpdir(), "adv-write-")),
      );
      const host = createPluginHost({ identify: identifyAnonymously });
      /** Installs a writer of `cases` in a new folder; returns its parts. */
      const installWriter = async (name, cases) => {
        const out = path.join(root, name.replace(/\W+/g, "-"));
        fs.mkdirSync(path.join(out, "dir"), { recursive: true });
        const writer = build(tier, "writer", writerSource(out, cases), {
          policy: { fs: { read: [out], write: [out] } },
          limits: {
            timeoutMs: CALM_TIMEOUT_MS,
            maxWriteBytes: MAX_WRITE_BYTES,
          },
        });
        await host.installPlugin({ kind: tier, module: writer.module });
        return { out, sandbox: writer.sandbox };
      };
      const answerOf = async (route) => {
        const answer = await call(host, `http://h/plugins/writer/${route}`);
        assert.equal(answer.status, 200, answer.text);
        return answer.text;
      };
      try {
        for (const [name, body, expected] of WRITE_CASES) {
          await t.step(name, async () => {
            await installWriter(name, { run: body });
            try {
              assert.equal(await answerOf("run"), expected);
            } finally {
              await host.uninstallPlugin("writer");
            }
          });
        }
        await t.step(
          "the count outlives the realm, and a new install starts it anew",
          async () => {
            // Nine files named `prefix` and a number, one after another.
            const fillAs = (prefix) =>
              `const seen = []; for (let i = 0; i < 9; i++) seen.push(await outcome(fs.writeTextFile(OUT + "/${prefix}" + i, ""))); return seen.join(",");`;
            const cases = {
              fill: fillAs("e"),
              more:
                `return [await outcome(fs.writeTextFile(OUT + "/e0", "")), await outcome(fs.writeTextFile(OUT + "/e8", ""))].join(",");`,
              fresh: fillAs("n"),
            };
            const full = [...Array(8).fill("ok"), "PROXY_LIMIT_EXCEEDED"]
              .join(",");
            const { sandbox } = await installWriter("restart", cases);
            try {
              assert.equal(await answerOf("fill"), full);
              const before = sandbox.instruments.realmsStarted;
              const spun = await sandbox.invoke("spin", null, {
                timeoutMs: TIMEOUT_MS,
              });
              assert.equal(spun.ok ? "ok" : spun.error.code, "TIMEOUT");
              assert.equal(await answerOf("more"), "ok,PROXY_LIMIT_EXCEEDED");
              assert.equal(sandbox.instruments.realmsStarted - before, 1);
              // A new sandbox counts what it writes; the files of the one
              // before stay where they are.
              await host.uninstallPlugin("writer");
              await installWriter("restart", cases);
              assert.equal(await answerOf("fresh"), full);
              assert.equal(
                fs.readdirSync(path.join(root, "restart")).length,
                17,
              );
            } finally {
              await host.uninstallPlugin("writer");
            }
          },
        );
        await t.step(
          "a refusal the plugin does not catch is its handler's failure",
          async () => {
            await installWriter("uncaught", {
              run: `await fs.writeTextFile(OUT + "/big", "x".repeat(${
                MAX_WRITE_BYTES + 1
              })); return "written";`,
            });
            try {
              await expectCode(
                host,
                "http://h/plugins/writer/run",
                502,
                "BRIDGE_HANDLER_REJECTED",
              );
            } finally {
              await host.uninstallPlugin("writer");
            }
          },
        );
      } finally {
        await host.dispose();
        fs.rmSync(root, { recursive: true, force: true });
      }
    });
  }

  for (const tier of tiers) {
    test(`console lines of a plugin on the ${tier} tier reach onLog in order before its answer, a flood of ${LOG_FLOOD} lines too`, async (t) => {
      const events = [];
      const host = createPluginHost({ identify: identifyAnonymously });
      try {
        const { module } = build(tier, "chatty", CHATTY_PLUGIN, {
          policy: { capabilities: ["chatty.mark"] },
          proxies: {
            capabilities: {
              "chatty.mark": (name) => {
                events.push(`call ${name}`);
                return name;
              },
            },
          },
          onLog: (entry) => events.push(`${entry.level} ${entry.message}`),
          // The defaults, but time enough for a loaded machine.
          limits: {
            timeoutMs: CALM_TIMEOUT_MS,
            memoryLimitBytes: 128 * 1024 * 1024,
          },
        });
        await host.installPlugin({ kind: tier, module });
        await t.step(
          "a flood answers 200 with every line delivered in order",
          async () => {
            events.length = 0;
            const answer = await call(host, "http://h/plugins/chatty/flood");
            assert.deepEqual([answer.status, answer.text], [200, "flooded"]);
            assert.equal(events.length, LOG_FLOOD);
            assert.deepEqual(events.slice(0, 3), [
              "log line 0",
              "log line 1",
              "log line 2",
            ]);
            const misplaced = events.findIndex((event, i) =>
              event !== `log line ${i}`
            );
            assert.equal(
              misplaced,
              -1,
              `line ${misplaced}: ${events[misplaced]}`,
            );
          },
        );
        await t.step(
          "lines keep their place around capability calls, promise jobs and the answer",
          async () => {
            events.length = 0;
            const answer = await call(
              host,
              "http://h/plugins/chatty/interleaved",
            );
            assert.deepEqual([answer.status, answer.text], [200, "done"]);
            assert.deepEqual(events, [
              "info before",
              "call first",
              "warn between",
              "call second",
              "error after",
              "debug in toJSON",
            ]);
          },
        );
        await t.step(
          "plugin code cannot replace what the console sends lines with",
          async () => {
            events.length = 0;
            const answer = await call(host, "http://h/plugins/chatty/tamper");
            assert.deepEqual([answer.status, answer.text], [200, "0 replaced"]);
            assert.deepEqual(events, ["log still", "log whole"]);
          },
        );
      } finally {
        await host.dispose();
      }
    });
  }

  for (const tier of tiers) {
    test(`console lines a plugin on the ${tier} tier logged before it ran over its deadline, out of memory or stack, or threw reach onLog before the failure, which is named as a run's`, async (t) => {
      await checkLastWords(
        (options) => createPluginSandbox(tier, options),
        t,
      );
    });
  }

  // Last, once every host and sandbox above is disposed: what a hostile
  // plugin started must not outlive them, in a realm process or on one of
  // this process's threads (a terminated thread that loops on would use
  // about 100 ticks a second).
  test(
    "once the hostile plugins of every tier are disposed, no realm process is left and this process is idle",
    {
      // Linux's /proc is where this is read; CI runs there.
      ignore: !hasProc(),
    },
    async () => {
      await assertNothingLeftRunning("the hostile plugin table");
    },
  );
}
