import assert from "node:assert/strict";
import { accessLogLine, MAX_LOGGED_TARGET_CHARS } from "./_access_log.ts";
import type { DeliveryRequestInfo } from "../delivery/handler.ts";
import { runServer } from "./serve.ts";
import { PrintedLines } from "../delivery/_test_lines_test.ts";

/** What must never reach a log line as it is. */
const UNSAFE_IN_OUTPUT = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u;

function info(overrides: Partial<DeliveryRequestInfo>): DeliveryRequestInfo {
  return {
    method: "GET",
    path: "/api/sandbox-modules",
    route: "listing",
    status: 200,
    durationMs: 1.25,
    ...overrides,
  };
}

Deno.test("accessLogLine() writes method, escaped target, status, code and time", () => {
  assert.equal(accessLogLine(info({})), "GET /api/sandbox-modules 200 1.3ms");
  assert.equal(
    accessLogLine(info({
      method: "GE\x1bT",
      path: "/api/sandbox-modules/\u202eabc\r\nGET / 200",
      route: "module",
      status: 404,
      code: "MODULE_NOT_FOUND",
      durationMs: 0.04,
    })),
    "GE\\x1bT /api/sandbox-modules/\\u202eabc\\r\\nGET / 200 404 MODULE_NOT_FOUND 0.0ms",
  );
});

Deno.test("accessLogLine() clips a long target at 512 characters with a marker", () => {
  const path = `/${"a".repeat(2000)}`;
  const line = accessLogLine(info({ path, route: "none", status: 404 }));
  assert.equal(
    line,
    `GET ${path.slice(0, MAX_LOGGED_TARGET_CHARS)}…[+${
      path.length - MAX_LOGGED_TARGET_CHARS
    }] 404 1.3ms`,
  );
  const method = accessLogLine(info({ method: "X".repeat(100) }));
  assert.match(method, /^X{32}…\[\+68\] \/api\/sandbox-modules 200 /);
});

/** Sends raw bytes as one HTTP/1.1 request and reads the status line. */
async function rawRequest(port: number, target: Uint8Array): Promise<string> {
  const encoder = new TextEncoder();
  using conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await conn.write(
    new Uint8Array([
      ...encoder.encode("GET "),
      ...target,
      ...encoder.encode(
        " HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n",
      ),
    ]),
  );
  const response = await new Response(conn.readable).text();
  return response.slice(0, response.indexOf("\r\n"));
}

Deno.test("cli/serve.ts logs a request target with a raw bidi override, C1 controls or a line separator escaped", async () => {
  const lines = new PrintedLines();
  const stop = new AbortController();
  const running = runServer(["--port", "0"], {
    print: lines.print,
    printError: lines.print,
    signal: stop.signal,
  });
  try {
    const { line } = await lines.waitFor(/^Listening on http:\/\/\S+$/);
    const port = Number(new URL(line.slice("Listening on ".length)).port);
    const encoder = new TextEncoder();
    // Deno's HTTP parser passes UTF-8 in the target on as it is, so these
    // reach the handler raw.
    const cases: [target: string, logged: string][] = [
      [
        "/api/sandbox-modules/x\u202egnp.js",
        "/api/sandbox-modules/x\\u202egnp.js",
      ],
      [
        "/api/sandbox-modules/a\u0085b\u009b31m",
        "/api/sandbox-modules/a\\x85b\\x9b31m",
      ],
      [
        "/api/sandbox-modules/\u2028\u2066",
        "/api/sandbox-modules/\\u2028\\u2066",
      ],
      [
        "/api/sandbox-modules/%1B[2J%E2%80%AE",
        "/api/sandbox-modules/%1B[2J%E2%80%AE",
      ],
    ];
    for (const [target, logged] of cases) {
      const from = lines.lines.length;
      assert.match(
        await rawRequest(port, encoder.encode(target)),
        /^HTTP\/1\.1 4\d\d /,
      );
      await lines.waitFor(
        new RegExp(
          `^GET ${RegExp.escape(logged)} 404 MODULE_ID_INVALID \\d+\\.\\dms$`,
        ),
        { from },
      );
    }
    // A raw escape byte or lone C1 byte is refused before the handler.
    for (const bytes of [[0x2f, 0x1b, 0x5b, 0x32, 0x4a], [0x2f, 0x85]]) {
      assert.equal(
        await rawRequest(port, new Uint8Array(bytes)),
        "HTTP/1.1 400 Bad Request",
      );
    }
    for (const printed of lines.lines) {
      assert.doesNotMatch(printed, UNSAFE_IN_OUTPUT, JSON.stringify(printed));
    }
  } finally {
    stop.abort();
    assert.equal(await running, 0);
  }
});
