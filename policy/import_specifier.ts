// This module is browser compatible.

/**
 * The first step of the import policy, shared by every tier: what kind of
 * specifier a guest or pack module imports, before any catalog is asked.
 * URL schemes, absolute paths and Node built-in names are denied here, each
 * with its own code; what remains is a bare pack specifier or a relative
 * one, which the loader then checks against the declaration and the pack.
 *
 * The functions are pure and never throw, so a loader can call them on
 * hostile input in any runtime.
 *
 * @module
 */

import type { ErrorCode } from "../protocol/error_codes.ts";
import { isPackName } from "../protocol/ids.ts";
import { operatorQuote } from "../protocol/operator_text.ts";
import { hasEncodedPathChar } from "./_path_chars.ts";

/**
 * The codes {@linkcode classifySpecifier} and the import denials give:
 * every registered code that starts with `IMPORT_`.
 */
export type ImportDenialCode = Extract<ErrorCode, `IMPORT_${string}`>;

/** A refused import: its stable code and a message that says what to do. */
export interface ImportDenial {
  /** Always `"denied"`. */
  kind: "denied";
  /** The stable error code. */
  code: ImportDenialCode;
  /** What was refused, why, and what to do next. */
  message: string;
}

/** A bare specifier: a pack name and the subpath imported from it. */
export interface BareSpecifier {
  /** Always `"bare"`. */
  kind: "bare";
  /** The pack name, such as `@acme/math` or `lodash`. */
  pack: string;
  /** The subpath, `"."` for the pack itself or `"./trig"` for `pack/trig`. */
  subpath: string;
}

/** A relative specifier (`./x.js`, `../x.js`), to resolve against its referrer. */
export interface RelativeSpecifier {
  /** Always `"relative"`. */
  kind: "relative";
}

/** What {@linkcode classifySpecifier} found. */
export type SpecifierClass = ImportDenial | BareSpecifier | RelativeSpecifier;

/** The error name every tier gives a refused import in its result. */
export const IMPORT_DENIED_ERROR_NAME = "ImportDeniedError";

/**
 * The names Node resolves to its built-in modules without the `node:`
 * prefix, with their subpaths. A bare specifier whose first segment is one
 * of these is denied as a compat module (`IMPORT_COMPAT`), even when a pack
 * of that name exists.
 */
export const NODE_COMPAT_MODULES: readonly string[] = Object.freeze([
  "_http_agent",
  "_http_client",
  "_http_common",
  "_http_incoming",
  "_http_outgoing",
  "_http_server",
  "_stream_duplex",
  "_stream_passthrough",
  "_stream_readable",
  "_stream_transform",
  "_stream_wrap",
  "_stream_writable",
  "_tls_common",
  "_tls_wrap",
  "assert",
  "assert/strict",
  "async_hooks",
  "buffer",
  "child_process",
  "cluster",
  "console",
  "constants",
  "crypto",
  "dgram",
  "diagnostics_channel",
  "dns",
  "dns/promises",
  "domain",
  "events",
  "fs",
  "fs/promises",
  "http",
  "http2",
  "https",
  "inspector",
  "inspector/promises",
  "module",
  "net",
  "os",
  "path",
  "path/posix",
  "path/win32",
  "perf_hooks",
  "process",
  "punycode",
  "querystring",
  "readline",
  "readline/promises",
  "repl",
  "stream",
  "stream/consumers",
  "stream/promises",
  "stream/web",
  "string_decoder",
  "sys",
  "test",
  "timers",
  "timers/promises",
  "tls",
  "trace_events",
  "tty",
  "url",
  "util",
  "util/types",
  "v8",
  "vm",
  "wasi",
  "worker_threads",
  "zlib",
]);

const COMPAT_ROOTS: ReadonlySet<string> = new Set(
  NODE_COMPAT_MODULES.map((name) => name.split("/")[0]!),
);

const SCHEME = /^([a-zA-Z][a-zA-Z0-9+.-]*):/;
const DRIVE = /^[a-zA-Z]:(?:[\\/]|$)/;
const MAX_DECODE_ROUNDS = 4;

/**
 * Whether a bare specifier names a Node built-in or compat module: `fs`,
 * `fs/promises`, `child_process` and the other names of
 * {@linkcode NODE_COMPAT_MODULES}, with any subpath.
 *
 * @param specifier A bare specifier, without `node:`.
 * @returns `true` when its first segment is a Node built-in name.
 *
 * @example
 * ```ts
 * import { isNodeCompatSpecifier } from "@cordon/cordon/policy";
 * import assert from "node:assert/strict";
 *
 * assert.equal(isNodeCompatSpecifier("fs/promises"), true);
 * assert.equal(isNodeCompatSpecifier("@acme/fs"), false);
 * ```
 */
export function isNodeCompatSpecifier(specifier: string): boolean {
  return COMPAT_ROOTS.has(specifier.split("/")[0]!);
}

/**
 * Quotes a specifier, pack name or subpath for an import denial, the one way
 * every tier does, so the same import gets the same message everywhere:
 * `operatorQuote()`'s JSON quotes, with the escapes of `operatorJson()` (a
 * newline, an escape sequence, a bidi control or a line separator a guest
 * put in it cannot forge or reorder the log line the message ends up in),
 * clipped to 200 characters and `…` so a huge `data:` URL does not make a
 * huge message.
 *
 * @param specifier The text as the guest or the pack wrote it.
 * @returns The quoted text, which `JSON.parse` reads back when not clipped.
 *
 * @example
 * ```ts
 * import { quoteSpecifier } from "@cordon/cordon/policy";
 * import assert from "node:assert/strict";
 *
 * assert.equal(quoteSpecifier("node:fs"), '"node:fs"');
 * assert.equal(quoteSpecifier("a\nb\u202e"), String.raw`"a\nb\u202e"`);
 * assert.equal(quoteSpecifier("x".repeat(300)), `"${"x".repeat(200)}…"`);
 * ```
 */
export function quoteSpecifier(specifier: string): string {
  return operatorQuote(specifier);
}

function deny(
  code: ImportDenialCode,
  specifier: string,
  reason: string,
): ImportDenial {
  return {
    kind: "denied",
    code,
    message: `Cannot import ${
      quoteSpecifier(specifier)
    } from a sandbox module: ${reason}`,
  };
}

/** Decodes `%XX` escapes; malformed input decodes what it can, never throws. */
function decodeOnce(text: string): string {
  if (!text.includes("%")) return text;
  try {
    return decodeURIComponent(text);
  } catch {
    return text.replace(/%([0-9a-fA-F]{2})/g, (escape, hex: string) => {
      const code = parseInt(hex, 16);
      return code < 0x80 ? String.fromCharCode(code) : escape;
    });
  }
}

/** Decodes repeatedly, so `%252e` is seen as `.` too. */
function decodeFully(text: string): string {
  let current = text;
  for (let round = 0; round < MAX_DECODE_ROUNDS; round++) {
    const next = decodeOnce(current);
    if (next === current) return next;
    current = next;
  }
  return current;
}

/**
 * What a URL parser would see: leading and trailing C0 controls and spaces
 * are dropped, tabs and newlines anywhere are removed.
 */
function urlView(specifier: string): string {
  // Trimmed by index, not by a pattern anchored at the end: that one tried
  // every run of spaces inside a long specifier against the end, which
  // took 13 s for 100 KB of them.
  let start = 0;
  let end = specifier.length;
  while (start < end && specifier.charCodeAt(start) <= 0x20) start++;
  while (end > start && specifier.charCodeAt(end - 1) <= 0x20) end--;
  return specifier.slice(start, end).replace(/[\t\n\r]/g, "");
}

function denyScheme(
  scheme: string,
  specifier: string,
): ImportDenial {
  switch (scheme.toLowerCase()) {
    case "node":
      return deny(
        "IMPORT_NODE_BUILTIN",
        specifier,
        "node built-ins are denied; declare a pack that provides this instead",
      );
    case "npm":
      return deny(
        "IMPORT_NPM",
        specifier,
        "npm specifiers are denied; vet the package as a pack and declare it",
      );
    case "jsr":
      return deny(
        "IMPORT_JSR",
        specifier,
        "jsr specifiers are denied; vet the package as a pack and declare it",
      );
    case "http":
    case "https":
      return deny(
        "IMPORT_REMOTE",
        specifier,
        "remote URLs are denied; vet the module as a pack and declare it",
      );
    case "file":
      return deny(
        "IMPORT_FILE",
        specifier,
        "file URLs and absolute paths are denied; import declared packs by name only",
      );
    case "data":
      return deny(
        "IMPORT_DATA",
        specifier,
        "data URLs are denied; put the code in the guest source or in a pack",
      );
    case "blob":
      return deny(
        "IMPORT_BLOB",
        specifier,
        "blob URLs are denied; put the code in the guest source or in a pack",
      );
    default:
      return deny(
        "IMPORT_SCHEME",
        specifier,
        `the ${
          JSON.stringify(scheme.toLowerCase().slice(0, 32) + ":")
        } scheme is not supported; import declared packs by name only`,
      );
  }
}

function isRelative(text: string): boolean {
  return text === "." || text === ".." || text.startsWith("./") ||
    text.startsWith("../") || text.startsWith(".\\") ||
    text.startsWith("..\\");
}

function hasUnsafePathChars(text: string): boolean {
  // deno-lint-ignore no-control-regex
  return text.includes("\\") || /[\u0000-\u001f\u007f]/.test(text) ||
    hasEncodedPathChar(text);
}

/**
 * Classifies an import specifier by its form alone: denied (with a code and
 * message), bare (a pack name and subpath) or relative. It checks the
 * specifier as written and as a URL parser or loader could read it, so
 * percent-encoding, stray whitespace, backslashes and `..` segments cannot
 * smuggle a denied form past it.
 *
 * Denied here: URL schemes (`node:`, `npm:`, `jsr:`, `http(s):`, `file:`,
 * `data:`, `blob:`, any other), absolute and drive paths, Node built-in and
 * compat names (`fs`, `child_process`, ...), bare specifiers that are not
 * pack names, subpaths that leave their pack, and relative specifiers with
 * encoded or backslash path characters. Whether a bare pack is declared and
 * exports the subpath, and whether a relative path stays inside its pack,
 * is for the caller to check.
 *
 * @param specifier The specifier as it appears in the source.
 * @returns The classification; it never throws.
 *
 * @example Deny, split or pass on
 * ```ts
 * import { classifySpecifier } from "@cordon/cordon/policy";
 * import assert from "node:assert/strict";
 *
 * const denied = classifySpecifier("node:fs");
 * assert.equal(denied.kind === "denied" && denied.code, "IMPORT_NODE_BUILTIN");
 * assert.deepEqual(classifySpecifier("@acme/math/trig"), {
 *   kind: "bare",
 *   pack: "@acme/math",
 *   subpath: "./trig",
 * });
 * assert.deepEqual(classifySpecifier("./lib/round.js"), { kind: "relative" });
 * ```
 */
export function classifySpecifier(specifier: string): SpecifierClass {
  const view = urlView(String(specifier));
  if (view === "") {
    return deny(
      "IMPORT_UNDECLARED",
      specifier,
      "the specifier is empty; import declared packs by name",
    );
  }
  const decoded = decodeFully(view);

  for (const form of [view, decoded]) {
    if (DRIVE.test(form)) {
      return denyScheme("file", specifier);
    }
    const scheme = SCHEME.exec(form)?.[1];
    if (scheme !== undefined) return denyScheme(scheme, specifier);
  }
  for (const form of [view, decoded]) {
    if (form.startsWith("//") || form.startsWith("\\\\")) {
      return deny(
        "IMPORT_REMOTE",
        specifier,
        "protocol-relative URLs are denied; vet the module as a pack and declare it",
      );
    }
    if (form.startsWith("/") || form.startsWith("\\")) {
      return denyScheme("file", specifier);
    }
  }

  if (isRelative(view) || isRelative(decoded)) {
    if (hasUnsafePathChars(view) || !isRelative(view)) {
      return deny(
        "IMPORT_PATH_ESCAPE",
        specifier,
        "encoded or backslash path characters are not allowed; relative imports stay inside a pack",
      );
    }
    return { kind: "relative" };
  }

  if (isNodeCompatSpecifier(view) || isNodeCompatSpecifier(decoded)) {
    return deny(
      "IMPORT_COMPAT",
      specifier,
      "Node built-in and compat modules are denied; declare a pack that provides this instead",
    );
  }

  const segments = view.split("/");
  const nameLength = view.startsWith("@") ? 2 : 1;
  const pack = segments.slice(0, nameLength).join("/");
  if (!isPackName(pack)) {
    return deny(
      "IMPORT_UNDECLARED",
      specifier,
      "it is not a pack name; import declared packs by their lowercase npm-style name",
    );
  }
  const rest = segments.slice(nameLength);
  if (rest.length === 0) return { kind: "bare", pack, subpath: "." };
  const decodedRest = rest.map(decodeFully);
  const escapes = hasUnsafePathChars(rest.join("/")) ||
    decodedRest.some((segment) =>
      segment === "" || segment === "." || segment === ".." ||
      segment.includes("/") || segment.includes("\\")
    );
  if (escapes) {
    return deny(
      "IMPORT_PATH_ESCAPE",
      specifier,
      "the subpath leaves the pack or hides path characters; import one of the pack's exported subpaths",
    );
  }
  return { kind: "bare", pack, subpath: "./" + rest.join("/") };
}

/**
 * The denial of an `import()` expression: dynamic imports are refused
 * before the code runs, whatever their argument.
 *
 * @param specifier The literal specifier, when the lexer found one.
 * @returns The denial, with code `IMPORT_DYNAMIC`.
 *
 * @example
 * ```ts
 * import { dynamicImportDenial } from "@cordon/cordon/policy";
 * import assert from "node:assert/strict";
 *
 * assert.equal(dynamicImportDenial("node:fs").code, "IMPORT_DYNAMIC");
 * ```
 */
export function dynamicImportDenial(specifier?: string): ImportDenial {
  const what = specifier === undefined
    ? "Cannot use import() in a sandbox module"
    : `Cannot import ${
      quoteSpecifier(specifier)
    } with import() in a sandbox module`;
  return {
    kind: "denied",
    code: "IMPORT_DYNAMIC",
    message:
      `${what}: dynamic import is denied; use static import declarations of declared packs`,
  };
}

/**
 * The denial of an import that carries attributes
 * (`with { type: "json" }`, `"text"`, `"bytes"`, ...).
 *
 * @param specifier The imported specifier.
 * @returns The denial, with code `IMPORT_ATTRIBUTES`.
 *
 * @example
 * ```ts
 * import { importAttributesDenial } from "@cordon/cordon/policy";
 * import assert from "node:assert/strict";
 *
 * assert.match(importAttributesDenial("./x.json").message, /without attributes/);
 * ```
 */
export function importAttributesDenial(specifier: string): ImportDenial {
  return {
    kind: "denied",
    code: "IMPORT_ATTRIBUTES",
    message: `Cannot import ${
      quoteSpecifier(specifier)
    } with attributes from a sandbox module: import attributes are denied; import JavaScript modules without attributes`,
  };
}
