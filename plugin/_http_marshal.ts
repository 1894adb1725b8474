/**
 * One plugin's requests, as every module kind passes them: a host request
 * context becomes a `SerializedRequest` and the plugin's
 * `SerializedResponse` a web `Response`, with the bridge error codes when
 * either side does not fit, and each request is counted and timed.
 *
 * @module
 */

import {
  copyListOption,
  readIntegerOption,
  TIMEOUT_MS_RANGE,
} from "../protocol/options.ts";
import { Buffer } from "node:buffer";
import { performance } from "node:perf_hooks";
import { CordonError } from "../protocol/cordon_error.ts";
import {
  endToEndHeaders,
  isFieldName,
  isHopByHopHeader,
} from "../protocol/hop_by_hop.ts";
import {
  MAX_RESPONSE_HEADERS,
  type SerializedRequest,
  type SerializedResponse,
  SerializedResponseSchema,
} from "../protocol/bridge_messages.ts";
import type {
  PluginMetrics,
  PluginRequestContext,
  PluginRequestOptions,
} from "./plugin_module.ts";
import type { ResponseHeaderPolicy } from "./response_headers.ts";
import type { VmSandboxInstruments } from "../vm/vm_sandbox.ts";

/**
 * Headers a plugin never sees unless the host asks for them: credentials,
 * and the identity headers a client may forge (a plugin reads who calls
 * from `principalId` and `tenantId`, which the host's `identify` sets).
 */
const DEFAULT_REDACTED_HEADERS: readonly string[] = Object.freeze([
  "authorization",
  "cookie",
  "proxy-authorization",
  "x-cordon-principal",
  "x-cordon-tenant",
]);

/** A plugin module's {@linkcode PluginRequestOptions}, with their defaults. */
interface RequestLimits {
  maxBodyBytes: number;
  bodyTimeoutMs: number;
  /** `redactHeaders`, in lower case. */
  redacted: ReadonlySet<string>;
}

/**
 * @throws {RangeError} When `maxBodyBytes` is not a whole number of bytes
 * or `bodyTimeoutMs` not a whole number of milliseconds from 1.
 */
function requestLimits(
  where: string,
  options: PluginRequestOptions,
): RequestLimits {
  const maxBodyBytes = readIntegerOption(
    where,
    "maxBodyBytes",
    options.maxBodyBytes,
    1024 * 1024,
    { min: 0, max: Number.MAX_SAFE_INTEGER, unit: "bytes" },
  );
  // Ample for 1 MiB on a slow link.
  const bodyTimeoutMs = readIntegerOption(
    where,
    "bodyTimeoutMs",
    options.bodyTimeoutMs,
    30_000,
    TIMEOUT_MS_RANGE,
  );
  const given: unknown = options.redactHeaders ?? DEFAULT_REDACTED_HEADERS;
  // Copied once, a hole read as undefined, then checked: the names kept are
  // the names checked, whatever a getter would answer on a later read.
  const redacted = copyListOption(where, "redactHeaders", given);
  if (
    redacted === null ||
    !redacted.every((name): name is string => typeof name === "string")
  ) {
    throw new TypeError(
      `Cannot ${where}: redactHeaders must be an array of header names`,
    );
  }
  return {
    maxBodyBytes,
    bodyTimeoutMs,
    redacted: new Set(redacted.map((name) => name.toLowerCase())),
  };
}

/**
 * A header value a plugin may send: visible ASCII, spaces and tabs. Bytes
 * above 0x7f are refused too: runtimes and clients read them differently
 * (Latin-1 or UTF-8, or refuse them), so the answer would depend on them.
 */
const HEADER_VALUE = /^[\t\x20-\x7e]*$/;

/**
 * The most bytes an answer's own header fields may take on the wire, each
 * counted as `name: value` and its line end as the host sends it (a
 * repeated name as its one joined line, a dropped field not at all): 16 KiB, the whole head Node's
 * HTTP client (its fetch too) reads by default. A longer head is refused
 * by such clients, and by proxies with smaller buffers, in their own ways;
 * the host answers it with a code instead.
 */
const MAX_RESPONSE_HEADER_BYTES = 16 * 1024;

/** The bytes of `headers` as a head carries them: `name: value\r\n`. */
function headerBytes(headers: readonly (readonly [string, string])[]): number {
  let bytes = 0;
  for (const [name, value] of headers) bytes += name.length + value.length + 4;
  return bytes;
}

/** A response header as a pair: its name and its value. */
export type HeaderPair = readonly [name: string, value: string];

/**
 * Whether `name` and `value` make a header the bridge sends the same on
 * every runtime: a token and a value of {@linkcode HEADER_VALUE}.
 */
export function isWellFormedHeader(name: string, value: string): boolean {
  return isFieldName(name) && HEADER_VALUE.test(value);
}

/**
 * The policy a sandboxed plugin's answers carry unless its operator says
 * otherwise: a page it answers is a document of an opaque origin that runs
 * no script, so it cannot act as the host's origin.
 */
const DEFAULT_CONTENT_SECURITY_POLICY = "sandbox";

/**
 * The headers every answer of a sandboxed plugin carries: its
 * `contentSecurityPolicy` (unless `false`), and `nosniff`, so a browser
 * reads each answer as the type it says and never as script or a page.
 *
 * @throws {TypeError} When `contentSecurityPolicy` is neither `false` nor
 * a non-empty header value.
 */
export function sandboxAnswerHeaders(
  where: string,
  contentSecurityPolicy: unknown = DEFAULT_CONTENT_SECURITY_POLICY,
): readonly HeaderPair[] {
  const nosniff: HeaderPair = ["x-content-type-options", "nosniff"];
  if (contentSecurityPolicy === false) return Object.freeze([nosniff]);
  if (
    typeof contentSecurityPolicy !== "string" ||
    contentSecurityPolicy.trim() === "" ||
    !HEADER_VALUE.test(contentSecurityPolicy)
  ) {
    throw new TypeError(
      `Cannot ${where}: contentSecurityPolicy must be a policy of visible ASCII, spaces and tabs, or false`,
    );
  }
  return Object.freeze([
    ["content-security-policy", contentSecurityPolicy.trim()],
    nosniff,
  ]);
}

const BASE64_TEXT = /^[A-Za-z0-9+/]*={0,2}$/;
/**
 * The statuses a response carries no body with (the Fetch standard's null
 * body statuses; those under 200 never pass the schema).
 */
const NULL_BODY_STATUSES: ReadonlySet<number> = new Set([204, 205, 304]);

/**
 * Whether `text` is padded base64. One character class and a length check,
 * not a repeated group of four: V8 keeps a backtracking frame per group, so
 * `(?:[A-Za-z0-9+/]{4})*` overflowed the stack on a body of about 4 MiB.
 */
function isBase64(text: string): boolean {
  return text.length % 4 === 0 && BASE64_TEXT.test(text);
}

function bodyTooLarge(maxBodyBytes: number): CordonError {
  return new CordonError(
    "BRIDGE_MARSHAL_FAILED",
    `Cannot pass the request to the plugin: the body is larger than ${maxBodyBytes} bytes; send less or raise maxBodyBytes`,
    { cause: { reason: "body-too-large", maxBodyBytes } },
  );
}

/** The request's body in base64, or `null` when it has none. */
async function readBodyBase64(
  request: Request,
  { maxBodyBytes, bodyTimeoutMs }: RequestLimits,
): Promise<string | null> {
  if (request.body === null) return null;
  if (request.bodyUsed) {
    throw new CordonError(
      "BRIDGE_MARSHAL_FAILED",
      "Cannot pass the request to the plugin: its body was already read; pass the request untouched",
      { cause: { reason: "body-used" } },
    );
  }
  // A declared length over the bound is refused before a byte is read: a
  // client waiting for 100 Continue, or one that declares more than it
  // sends, is answered at once instead of when it gives up. The body is
  // left as it is, not cancelled: on Node 20 cancelling the stream of a
  // request whose bytes are arriving throws out of Node's stream adapter,
  // which ends the process; the server closes the connection instead.
  if (Number(request.headers.get("content-length")) > maxBodyBytes) {
    throw bodyTooLarge(maxBodyBytes);
  }
  const reader = request.body.getReader();
  // Every read of the body races one deadline: a client that sends a byte
  // now and then, or stops, gives up its place with the plugin when it
  // passes. A late read is left pending, not cancelled: the server drops it
  // with the connection.
  let timer: ReturnType<typeof setTimeout> | undefined;
  let timedOut = false;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      timedOut = true;
      reject(
        new CordonError(
          "BRIDGE_MARSHAL_FAILED",
          `Cannot pass the request to the plugin: its body did not arrive within ${bodyTimeoutMs} ms; send it faster or raise bodyTimeoutMs`,
          { cause: { reason: "body-timeout", bodyTimeoutMs } },
        ),
      );
    }, bodyTimeoutMs);
  });
  // Nothing may wait on it once the body is read.
  late.catch(() => {});
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await Promise.race([reader.read(), late]);
      if (done) break;
      size += value.byteLength;
      if (size > maxBodyBytes) {
        await reader.cancel().catch(() => {});
        throw bodyTooLarge(maxBodyBytes);
      }
      chunks.push(value);
    }
  } catch (error) {
    // A read still pending past the deadline keeps the lock.
    if (!timedOut) reader.releaseLock();
    if (error instanceof CordonError) throw error;
    throw new CordonError(
      "BRIDGE_MARSHAL_FAILED",
      "Cannot pass the request to the plugin: its body could not be read; send it again",
      { cause: { reason: "body-unreadable" } },
    );
  } finally {
    clearTimeout(timer);
  }
  // The stream is closed and the body used: releasing the lock would only
  // build a TypeError for the reader's closed promise, which costs more
  // than the rest of the read.
  const bytes = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    .toString("base64");
}

function contextShapeError(): CordonError {
  return new CordonError(
    "BRIDGE_MARSHAL_FAILED",
    "Cannot pass the request to the plugin: principalId and tenantId must be strings or null, capabilities a list of names and params strings",
    { cause: { reason: "context-shape" } },
  );
}

/** A request's caller fields, as the plugin gets them. */
type CallerFields = Pick<
  SerializedRequest,
  "principalId" | "tenantId" | "capabilities" | "params"
>;

function isIdOrNull(value: unknown): value is string | null {
  return value === null || typeof value === "string";
}

/**
 * The context's caller fields, copied once: what is checked is what the
 * plugin gets, and a host's context whose fields throw when read (a
 * getter, a proxy) is refused with a code instead of its own error.
 */
function callerOf(context: PluginRequestContext): CallerFields {
  let copy: CallerFields | null = null;
  try {
    const { principalId, tenantId, capabilities, params } = context;
    if (
      isIdOrNull(principalId) && isIdOrNull(tenantId) &&
      Array.isArray(capabilities) &&
      typeof params === "object" && params !== null
    ) {
      copy = {
        principalId,
        tenantId,
        capabilities: [...capabilities],
        params: { ...params },
      };
    }
  } catch {
    // Refused below, as a context of the wrong shape.
  }
  if (
    copy === null ||
    !copy.capabilities.every((name) => typeof name === "string") ||
    !Object.values(copy.params).every((value) => typeof value === "string")
  ) {
    throw contextShapeError();
  }
  return copy;
}

async function serializeRequest(
  context: PluginRequestContext,
  limits: RequestLimits,
): Promise<SerializedRequest> {
  let request: unknown;
  try {
    request = context?.request;
  } catch {
    // Read as a missing request below.
  }
  if (!(request instanceof Request)) {
    throw new CordonError(
      "BRIDGE_MARSHAL_FAILED",
      "Cannot pass the request to the plugin: context.request is not a web Request",
      { cause: { reason: "not-a-request" } },
    );
  }
  const caller = callerOf(context);
  // The client's hop-by-hop fields are about its connection to the host,
  // not the plugin's business.
  const headers = endToEndHeaders(request.headers)
    .filter(([name]) => !limits.redacted.has(name));
  const bodyBase64 = await readBodyBase64(request, limits);
  return {
    url: request.url,
    method: request.method.toUpperCase(),
    headers,
    bodyBase64,
    ...caller,
  };
}

/**
 * What a plugin's author returns instead of an answer of the wrong shape,
 * told by the first field the schema refused: the usual slips (bytes or an
 * object as `body`, headers as an object, a status as text, no `return`)
 * each get their fix, where the schema's own words name only a type. The
 * schema's messages are not quoted: a key it refuses is the plugin's text.
 */
function answerShapeRemedy(
  value: unknown,
  issue: { code: string; path: readonly PropertyKey[] } | undefined,
): string {
  const shape = "return { status, headers, body } from handleRequest()";
  // A realm sends `undefined` as `null`: both are an answer not returned.
  if (value === null || value === undefined) {
    return `handleRequest() returned no answer; ${shape}`;
  }
  if (issue?.code === "unrecognized_keys") {
    return "an answer has only status, headers and body or bodyBase64; leave out the other fields";
  }
  if (issue?.code === "custom") {
    return "it sets both body and bodyBase64; set one of them";
  }
  switch (String(issue?.path[0] ?? "")) {
    case "body":
      return "body must be a string or null: JSON.stringify() an object, or put bytes in bodyBase64 (base64.encode() of cordon:host)";
    case "headers":
      return 'headers must be a list of [name, value] pairs of strings, such as [["content-type", "application/json"]]';
    // An answer without a status is some other object (a web `Response`
    // is one without fields once read as data): the whole shape is wrong.
    case "status":
      return Object.hasOwn(value, "status")
        ? "status must be a whole number from 200 to 599"
        : `it is not a SerializedResponse; ${shape}`;
    default:
      return `it is not a SerializedResponse; ${shape}`;
  }
}

function responseFromSerialized(
  value: unknown,
  pluginId: string,
  allowHeader: ResponseHeaderPolicy,
  answerHeaders: readonly HeaderPair[],
): Response {
  const listed = (value as { headers?: unknown } | null)?.headers;
  if (Array.isArray(listed) && listed.length > MAX_RESPONSE_HEADERS) {
    throw new CordonError(
      "BRIDGE_UNMARSHAL_FAILED",
      `Cannot use the answer of plugin "${pluginId}": it sets ${listed.length} headers, over the ${MAX_RESPONSE_HEADERS} an answer may set; set fewer`,
      { cause: { reason: "header-count", maxHeaders: MAX_RESPONSE_HEADERS } },
    );
  }
  const parsed = SerializedResponseSchema.safeParse(value);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => ({
      path: issue.path.map(String).join("."),
      message: issue.message,
    }));
    throw new CordonError(
      "BRIDGE_UNMARSHAL_FAILED",
      `Cannot use the answer of plugin "${pluginId}": ${
        answerShapeRemedy(value, parsed.error.issues[0])
      }`,
      { cause: { reason: "schema", issues } },
    );
  }
  const answer: SerializedResponse = parsed.data;
  // The schema lets at most one of body and bodyBase64 through.
  let body: Uint8Array | string | null = answer.body ?? null;
  if (typeof answer.bodyBase64 === "string") {
    if (!isBase64(answer.bodyBase64)) {
      throw new CordonError(
        "BRIDGE_UNMARSHAL_FAILED",
        `Cannot use the answer of plugin "${pluginId}": bodyBase64 is not base64; encode the bytes with base64.encode()`,
        { cause: { reason: "base64" } },
      );
    }
    body = new Uint8Array(Buffer.from(answer.bodyBase64, "base64"));
  }
  // Pairs, not a Headers object: Response would copy (and sort) it again.
  // A repeated name is one comma-joined pair (RFC 9110 §5.3), as Headers
  // reads it: Deno.serve would send each pair as a line of its own and
  // Node one joined line, so the wire would depend on the runtime.
  // `set-cookie` keeps its pairs apart, as cookies cannot be joined.
  // The host's answer headers come first: a browser enforces every policy
  // of a joined content-security-policy, so the plugin's can only tighten
  // the host's, and reads the first value of x-content-type-options.
  const headers: [string, string][] = answerHeaders.map(([n, v]) => [n, v]);
  const joined = new Map(headers.map((pair) => [pair[0], pair]));
  for (const [name, headerValue] of answer.headers) {
    if (!isWellFormedHeader(name, headerValue)) {
      throw new CordonError(
        "BRIDGE_UNMARSHAL_FAILED",
        `Cannot use the answer of plugin "${pluginId}": a response header's name is not a token or its value holds a control or non-ASCII character; percent-encode the value`,
        { cause: { reason: "header-syntax", header: name.slice(0, 100) } },
      );
    }
    const lower = name.toLowerCase();
    if (!allowHeader(lower)) {
      throw new CordonError(
        "BRIDGE_RESPONSE_HEADER_DENIED",
        `Cannot use the answer of plugin "${pluginId}": it sets the response header "${lower}", which the host's header policy refuses; drop it or allow it in responseHeaders`,
        { cause: { reason: "header", header: lower } },
      );
    }
    // The host computes the length itself, and a hop-by-hop field belongs
    // to the client's connection (a permissive policy lets them to here).
    if (lower === "content-length" || isHopByHopHeader(lower)) continue;
    const earlier = joined.get(lower);
    if (earlier !== undefined) {
      earlier[1] = `${earlier[1]}, ${headerValue.trim()}`;
      continue;
    }
    const pair: [string, string] = [name, headerValue.trim()];
    headers.push(pair);
    if (lower !== "set-cookie") joined.set(lower, pair);
  }
  // Counted as sent: a repeated name is one joined line, a dropped field
  // takes nothing, and the host's own fields are not the plugin's. Every
  // character is visible ASCII by now, so a character is a byte.
  if (
    headerBytes(headers) - headerBytes(answerHeaders) >
      MAX_RESPONSE_HEADER_BYTES
  ) {
    throw new CordonError(
      "BRIDGE_UNMARSHAL_FAILED",
      `Cannot use the answer of plugin "${pluginId}": its headers take more than ${MAX_RESPONSE_HEADER_BYTES} bytes, more than clients read of a head; send the data in the body`,
      {
        cause: {
          reason: "header-bytes",
          maxHeaderBytes: MAX_RESPONSE_HEADER_BYTES,
        },
      },
    );
  }
  // Checked here, so the refusal is in the host's words on every runtime
  // (each Response constructor words its own).
  if (body !== null && NULL_BODY_STATUSES.has(answer.status)) {
    throw new CordonError(
      "BRIDGE_UNMARSHAL_FAILED",
      `Cannot use the answer of plugin "${pluginId}": a ${answer.status} answer carries no body, not even an empty one; answer body: null`,
      { cause: { reason: "null-body-status", status: answer.status } },
    );
  }
  try {
    return new Response(body as BodyInit | null, {
      status: answer.status,
      headers,
    });
  } catch (error) {
    throw new CordonError(
      "BRIDGE_UNMARSHAL_FAILED",
      `Cannot use the answer of plugin "${pluginId}": ${
        error instanceof Error ? error.message : "the response is invalid"
      }; fix its headers or status`,
      { cause: { reason: "response" } },
    );
  }
}

/**
 * One plugin's requests: marshalled to the plugin and its answer back,
 * counted and timed for `metrics()`.
 */
/**
 * What {@linkcode PluginRequests} is built from: the request options, the
 * response header policy and the headers every answer carries. Callers
 * pass an object with a `null` prototype, so an option left out is not
 * read from `Object.prototype`.
 */
export type PluginRequestsOptions = PluginRequestOptions & {
  responseHeaders: ResponseHeaderPolicy;
  /** Headers every answer carries, before the plugin's own. */
  answerHeaders?: readonly HeaderPair[];
};

export class PluginRequests {
  readonly #pluginId: string;
  readonly #limits: RequestLimits;
  readonly #allowHeader: ResponseHeaderPolicy;
  readonly #answerHeaders: readonly HeaderPair[];
  #requests = 0;
  #failures = 0;
  #totalMs = 0;
  #maxMs = 0;

  /**
   * @throws {TypeError} When `maxBodyBytes` or `bodyTimeoutMs` is not a
   * number, `redactHeaders` is not a list of names, or `responseHeaders` is
   * not a function.
   * @throws {RangeError} When `maxBodyBytes` or `bodyTimeoutMs` is out of
   * range.
   */
  constructor(pluginId: string, options: PluginRequestsOptions) {
    const where = `create plugin "${pluginId}"`;
    this.#pluginId = pluginId;
    this.#limits = requestLimits(where, options);
    if (typeof options.responseHeaders !== "function") {
      throw new TypeError(
        `Cannot ${where}: responseHeaders must be a function`,
      );
    }
    this.#allowHeader = options.responseHeaders;
    this.#answerHeaders = options.answerHeaders ?? [];
  }

  /**
   * Answers a request: `call` has the plugin answer it as data.
   *
   * @throws {CordonError} `BRIDGE_MARSHAL_FAILED` when the request does not
   * fit, what `call` throws, and `BRIDGE_UNMARSHAL_FAILED` or
   * `BRIDGE_RESPONSE_HEADER_DENIED` when the answer does not fit.
   */
  async answer(
    context: PluginRequestContext,
    call: (request: SerializedRequest) => Promise<unknown>,
  ): Promise<Response> {
    this.#requests++;
    const started = performance.now();
    try {
      const request = await serializeRequest(context, this.#limits);
      return responseFromSerialized(
        await call(request),
        this.#pluginId,
        this.#allowHeader,
        this.#answerHeaders,
      );
    } catch (error) {
      this.#failures++;
      throw error;
    } finally {
      const duration = performance.now() - started;
      this.#totalMs += duration;
      if (duration > this.#maxMs) this.#maxMs = duration;
    }
  }

  /**
   * The plugin's metrics: its state, its requests, and the counts of the
   * sandbox it runs in (a host plugin, which has none, gives its own
   * timeouts and 0 for the rest).
   */
  metrics(
    state: PluginMetrics["state"],
    sandbox?: Pick<
      VmSandboxInstruments,
      "timeouts" | "restarts" | "restartsRefused" | "denials"
    >,
  ): PluginMetrics {
    return {
      state,
      requests: this.#requests,
      failures: this.#failures,
      timeouts: sandbox?.timeouts ?? 0,
      restarts: sandbox?.restarts ?? 0,
      restartsRefused: sandbox?.restartsRefused ?? 0,
      denials: sandbox?.denials ?? 0,
      meanDurationMs: this.#requests === 0 ? 0 : this.#totalMs / this.#requests,
      maxDurationMs: this.#maxMs,
    };
  }
}
