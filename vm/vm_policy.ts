import path from "node:path";
import { operatorQuote } from "../protocol/operator_text.ts";
import { readPolicy, type VmPluginPolicy } from "./_read_policy.ts";

export type { VmPluginPolicy } from "./_read_policy.ts";

/** One proxy call a plugin wants the host to make. */
export type PermissionRequest =
  | {
    /** A `fetch` call. */
    kind: "fetch";
    /** The calling plugin. */
    pluginId: string;
    /**
     * The URL the host fetches: the plugin's, as WHATWG's URL parser reads
     * it, so `..` and `%2e%2e` segments, case, tabs and newlines and the
     * default port are resolved as the host's client resolves them.
     */
    url: string;
    /** The HTTP method, upper case. */
    method: string;
  }
  | {
    /** A file system call. */
    kind: "fs";
    /** The calling plugin. */
    pluginId: string;
    /** Reading (and listing) or writing. */
    access: "read" | "write";
    /**
     * The path the host opens: the plugin's absolute path with `.` and `..`
     * segments resolved (symbolic links are not; the default file proxy
     * checks where they lead against the policy's folders).
     */
    path: string;
  }
  | {
    /** A capability call. */
    kind: "capability";
    /** The calling plugin. */
    pluginId: string;
    /** The capability name. */
    name: string;
  };

/** The answer of a permission check. */
export type PermissionDecision =
  | {
    /** The call may go ahead. */
    allowed: true;
  }
  | {
    /** The call is refused with `PERMISSION_DENIED`. */
    allowed: false;
    /** What was refused and what to do, shown to plugin code. */
    message: string;
  };

/**
 * An extra check a host adds to a plugin's policy. It runs after the
 * policy allowed a call and can only narrow it: only `true` or
 * `{ allowed: true }` lets the call go ahead. `false`, a refusal, any other
 * answer and a throw deny it with `PERMISSION_DENIED`.
 */
export type PermissionChecker = (
  request: PermissionRequest,
) =>
  | boolean
  | PermissionDecision
  | Promise<boolean | PermissionDecision>;

/** `hostname` or `hostname:port`. */
const HOST_RULE = /^(\[[^\]]+\]|[^:/?#@\[\]]+)(?::(\d{1,5}))?$/;
// Refused in a rule: the URL parser would drop some of these, and read
// "example.com\n" as a rule it is not.
// deno-lint-ignore no-control-regex
const BLANK_OR_CONTROL = /[\s\u0000-\u001f\u007f]/;

/** A `policy.fetch` entry: its hostname, and its port unless it has none. */
function parseHostRule(
  entry: unknown,
): { hostname: string; port: string | null } {
  if (typeof entry !== "string" || entry.length === 0) {
    throw new TypeError(
      "Cannot read policy.fetch: each entry is a host such as 127.0.0.1:8080",
    );
  }
  const match = BLANK_OR_CONTROL.test(entry) ? null : HOST_RULE.exec(entry);
  const port = match?.[2] === undefined ? null : Number(match[2]);
  const hostname = match === null ? null : urlHostname(match[1]!);
  if (hostname === null || (port !== null && (port < 1 || port > 65535))) {
    throw new TypeError(
      `Cannot read policy.fetch entry ${
        JSON.stringify(entry)
      }: use hostname or hostname:port (1 to 65535), without scheme or path`,
    );
  }
  return { hostname, port: port === null ? null : String(port) };
}

/** The hostname a URL keeps of `host`, or `null` when no URL can name it. */
function urlHostname(host: string): string | null {
  try {
    return new URL(`http://${host}`).hostname;
  } catch {
    return null;
  }
}

/**
 * A list of the policy, or `[]` when it is not given. Anything else is
 * refused: a string would be read as its characters (`capabilities: "all"`
 * granting "a" and "l"), and a policy that does not say what it means must
 * not run.
 */
function listOf(value: unknown, key: string, entries: string): unknown[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    throw new TypeError(
      `Cannot read policy.${key}: pass an array of ${entries}`,
    );
  }
  return value;
}

function absoluteRoots(entries: unknown, key: string): string[] {
  return listOf(entries, `fs.${key}`, "absolute folder paths").map((entry) => {
    if (typeof entry !== "string" || !path.isAbsolute(entry)) {
      throw new TypeError(
        `Cannot read policy.fs.${key}: each entry is an absolute folder path`,
      );
    }
    return path.resolve(entry);
  });
}

/** Whether `candidate` is `root` or inside it; both absolute and normalised. */
function isPathInside(root: string, candidate: string): boolean {
  if (candidate === root) return true;
  const prefix = root.endsWith(path.sep) ? root : root + path.sep;
  return candidate.startsWith(prefix);
}

function refuse(message: string): PermissionDecision {
  return { allowed: false, message };
}

/**
 * Normalises a path a plugin passed: it must be absolute and free of NUL
 * characters; `.` and `..` segments are resolved.
 *
 * @param input The plugin's path.
 * @returns The normalised absolute path, or `null` when it is not usable.
 */
export function normalizePluginPath(input: string): string | null {
  if (typeof input !== "string" || input.includes("\0")) return null;
  if (!path.isAbsolute(input)) return null;
  return path.resolve(input);
}

/**
 * Builds the check of a policy: fetch hosts, file folders and capability
 * names. Paths are normalised first, so `..` cannot leave an allowed
 * folder; the default file proxy also resolves symbolic links and checks
 * again.
 *
 * @param policy The plugin's policy.
 * @returns A synchronous checker.
 * @throws {TypeError} When the policy is malformed or has an unknown key.
 *
 * @example
 * ```ts
 * import { createPolicyChecker } from "@cordon/cordon/vm";
 * import assert from "node:assert/strict";
 *
 * const check = createPolicyChecker({
 *   fetch: ["127.0.0.1:8080"],
 *   fs: { read: ["/srv/data"] },
 *   capabilities: ["kv.read"],
 * });
 * const base = { pluginId: "p" };
 * assert.equal(check({ ...base, kind: "fetch", url: "http://127.0.0.1:8080/x", method: "GET" }).allowed, true);
 * assert.equal(check({ ...base, kind: "fetch", url: "http://127.0.0.1:9090/x", method: "GET" }).allowed, false);
 * assert.equal(check({ ...base, kind: "fs", access: "read", path: "/srv/data/../secret" }).allowed, false);
 * assert.equal(check({ ...base, kind: "capability", name: "kv.read" }).allowed, true);
 * ```
 */
export function createPolicyChecker(
  given: VmPluginPolicy,
): (request: PermissionRequest) => PermissionDecision {
  if (typeof given !== "object" || given === null) {
    throw new TypeError("Cannot read the policy: pass an object");
  }
  const policy = readPolicy("read the policy", given);
  const hosts = listOf(policy.fetch, "fetch", "hosts").map(parseHostRule);
  const fs: unknown = policy.fs;
  if (fs !== undefined && (typeof fs !== "object" || fs === null)) {
    throw new TypeError(
      "Cannot read policy.fs: pass { read?, write? } with arrays of absolute folder paths",
    );
  }
  const readRoots = absoluteRoots(policy.fs?.read, "read");
  const writeRoots = absoluteRoots(policy.fs?.write, "write");
  const names = listOf(policy.capabilities, "capabilities", "names");
  if (names.some((name) => typeof name !== "string" || name.length === 0)) {
    throw new TypeError(
      "Cannot read policy.capabilities: each entry is a non-empty name",
    );
  }
  const capabilities = new Set(names as string[]);

  function checkFetch(pluginId: string, input: string): PermissionDecision {
    let url: URL;
    try {
      url = new URL(input);
    } catch {
      return refuse(
        `Cannot fetch "${input}" from plugin "${pluginId}": it is not an absolute URL; pass http://host/path`,
      );
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      return refuse(
        `Cannot fetch a ${url.protocol} URL from plugin "${pluginId}": only http: and https: are fetched`,
      );
    }
    if (url.username !== "" || url.password !== "") {
      return refuse(
        `Cannot fetch a URL with credentials from plugin "${pluginId}": send them in a header instead`,
      );
    }
    // A rule without a port, and a URL without one, mean the scheme's
    // default port (which URL never keeps in url.port).
    const defaultPort = url.protocol === "https:" ? "443" : "80";
    const port = url.port || defaultPort;
    const allowed = hosts.some((rule) =>
      rule.hostname === url.hostname && (rule.port ?? defaultPort) === port
    );
    return allowed ? { allowed: true } : refuse(
      `Cannot fetch "${url.origin}" from plugin "${pluginId}": the policy does not allow host "${url.host}"; add it to policy.fetch`,
    );
  }

  function checkFs(
    pluginId: string,
    access: "read" | "write",
    input: string,
  ): PermissionDecision {
    const normalized = normalizePluginPath(input);
    if (normalized === null) {
      return refuse(
        `Cannot ${access} "${
          String(input).replaceAll("\0", "\\0")
        }" from plugin "${pluginId}": pass an absolute path without NUL characters`,
      );
    }
    const roots = access === "read" ? readRoots : writeRoots;
    return roots.some((root) => isPathInside(root, normalized))
      ? { allowed: true }
      : refuse(
        `Cannot ${access} "${input}" from plugin "${pluginId}": the path is outside the folders of policy.fs.${access}; add its folder there`,
      );
  }

  return (request: PermissionRequest): PermissionDecision => {
    switch (request.kind) {
      case "fetch":
        return checkFetch(request.pluginId, request.url);
      case "fs":
        return checkFs(request.pluginId, request.access, request.path);
      case "capability":
        // The name is the plugin's, as long as its arguments may be:
        // writing a 3 MB one back whole cost the host's thread 30 ms, so
        // it is quoted as other outside text is, cut to 200 characters.
        return capabilities.has(request.name) ? { allowed: true } : refuse(
          `Cannot use capability ${
            operatorQuote(request.name)
          } from plugin "${request.pluginId}": the policy does not grant it; add it to policy.capabilities`,
        );
    }
  };
}
