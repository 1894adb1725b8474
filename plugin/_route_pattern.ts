/**
 * Route paths of plugins: `/`, `/echo`, `/items/:id`. Literal segments
 * match exactly (after percent-decoding), `:name` segments match one
 * non-empty segment and become a parameter.
 *
 * @module
 */

import { CordonError } from "../protocol/cordon_error.ts";
import { operatorText } from "../protocol/operator_text.ts";
import {
  HTTP_METHODS,
  type HttpMethod,
  type PluginRequestContext,
  type RouteDefinition,
} from "./plugin_module.ts";

/** Matches a path's segments under the plugin's prefix: its parameters, or `null`. */
export type RouteMatcher = (
  segments: readonly string[],
) => Record<string, string> | null;

const SEGMENT = /^(?::[A-Za-z_][A-Za-z0-9_]*|[A-Za-z0-9._~!$&'()*+,;=@-]+)$/;

/**
 * The most characters of one plugin value an install error quotes: a route
 * path may be megabytes, and the operator logs the error.
 */
const MAX_QUOTED_CHARS = 200;

/** The most problems an install error lists; the rest are counted. */
const MAX_PROBLEMS_LISTED = 10;

/** A plugin value as an install error quotes it: escaped and bounded. */
function quoted(value: unknown): string {
  const text = typeof value === "string"
    ? value
    : String(JSON.stringify(value));
  return `"${operatorText(text, MAX_QUOTED_CHARS)}"`;
}

/** The segments of a route path that starts with `/`: none for `/`. */
function routeSegments(path: string): string[] {
  return path === "/" ? [] : path.slice(1).split("/");
}

/**
 * The most segments and characters of one route path. The host checks
 * every pair of a plugin's routes at install and matches a request against
 * each route segment by segment, on its own thread: 1000 routes of 1500
 * segments held that thread 3.8 s at install and cost 7 ms a request.
 */
const MAX_ROUTE_SEGMENTS = 32;
const MAX_ROUTE_CHARS = 1024;

/** Why a route is malformed, or `null` when it is fine. */
function routeProblem(method: unknown, path: unknown): string | null {
  if (!HTTP_METHODS.includes(method as HttpMethod)) {
    return `method ${quoted(method)} is not one of ${HTTP_METHODS.join(", ")}`;
  }
  if (typeof path !== "string" || !path.startsWith("/")) {
    return `path ${quoted(path)} does not start with /`;
  }
  if (path.length > MAX_ROUTE_CHARS) {
    return `path ${
      quoted(path)
    } is ${path.length} characters long, more than ${MAX_ROUTE_CHARS}; use a shorter one`;
  }
  const segments = routeSegments(path);
  if (segments.length > MAX_ROUTE_SEGMENTS) {
    return `path ${
      quoted(path)
    } has ${segments.length} segments, more than ${MAX_ROUTE_SEGMENTS}; use fewer`;
  }
  const names = new Set<string>();
  for (const segment of segments) {
    // A request's path never holds "." or ".." segments (splitPath refuses
    // them), so a route with one could never answer.
    if (!SEGMENT.test(segment) || segment === "." || segment === "..") {
      return `path ${quoted(path)} has a malformed segment ${quoted(segment)}`;
    }
    if (segment.startsWith(":")) {
      if (names.has(segment)) {
        return `path ${quoted(path)} repeats the parameter ${quoted(segment)}`;
      }
      names.add(segment);
    }
  }
  return null;
}

/**
 * The most routes a plugin may list: the host matches a request against a
 * plugin's routes one by one, so a plugin listing 50,000 cost the host's
 * thread milliseconds a request.
 */
const MAX_ROUTES = 1000;

/** A parameter in {@linkcode ListedRoute.parts}: it matches any segment. */
const ANY_SEGMENT = -1;

/** A well-formed route, split for {@linkcode shadows}. */
interface ListedRoute {
  readonly index: number;
  readonly key: string;
  readonly method: string;
  /**
   * Its segments as numbers, one per distinct literal and
   * {@linkcode ANY_SEGMENT} for a parameter: every pair of routes is
   * compared, and numbers compare at once where long literals compared
   * character by character.
   */
  readonly parts: readonly number[];
}

/**
 * Whether `earlier` answers every request `later` matches: the host takes
 * the first route that matches, so `later` would never answer (`GET
 * /a/:x` before `GET /a/:y` or before `GET /a/b`).
 */
function shadows(earlier: ListedRoute, later: ListedRoute): boolean {
  return earlier.method === later.method &&
    earlier.parts.length === later.parts.length &&
    // A parameter matches any segment, and every segment is not empty.
    earlier.parts.every((part, i) =>
      part === ANY_SEGMENT || part === later.parts[i]
    );
}

/**
 * @param literals The number of each literal segment seen so far, which
 * this route's new literals join.
 */
function listedRoute(
  index: number,
  method: string,
  path: string,
  literals: Map<string, number>,
): ListedRoute {
  const parts = routeSegments(path).map((segment) => {
    if (segment.startsWith(":")) return ANY_SEGMENT;
    let number = literals.get(segment);
    if (number === undefined) {
      number = literals.size;
      literals.set(segment, number);
    }
    return number;
  });
  return { index, key: `${method} ${path}`, method, parts };
}

function shadowedProblem(first: ListedRoute, route: ListedRoute): string {
  return first.key === route.key
    ? `route ${route.index}: ${quoted(route.key)} is listed twice`
    : `route ${route.index}: ${
      quoted(route.key)
    } would never answer: route ${first.index}, ${
      quoted(first.key)
    }, matches its requests first`;
}

function listProblems(problems: string[]): string {
  const listed = problems.slice(0, MAX_PROBLEMS_LISTED).join("; ");
  const more = problems.length - MAX_PROBLEMS_LISTED;
  return more > 0 ? `${listed}; and ${more} more` : listed;
}

/**
 * Checks what a plugin's `routes()` returned and builds its routes, each
 * answered by `handle`, frozen.
 *
 * @throws {CordonError} `BRIDGE_INVALID_PLUGIN_SURFACE` when the list or a
 * route is malformed, a route would never answer because an earlier one
 * matches every request it matches (listed twice, or `GET /a/:x` before
 * `GET /a/:y` or `GET /a/b`), it lists more than 1000 routes, or a route
 * path has more than 32 segments or 1024 characters.
 */
export function readRoutes(
  pluginId: string,
  listed: unknown,
  handle: (
    method: HttpMethod,
    path: string,
    context: PluginRequestContext,
  ) => Promise<Response>,
): readonly RouteDefinition[] {
  const problems: string[] = [];
  const wellFormed: ListedRoute[] = [];
  const literals = new Map<string, number>();
  if (!Array.isArray(listed)) {
    problems.push("routes() must return a list of { method, path }");
  } else if (listed.length > MAX_ROUTES) {
    problems.push(
      `routes() lists ${listed.length} routes, more than ${MAX_ROUTES}; use route parameters`,
    );
  } else {
    for (const [index, route] of listed.entries()) {
      const { method, path } =
        (typeof route === "object" && route !== null ? route : {}) as {
          method?: unknown;
          path?: unknown;
        };
      const problem = routeProblem(method, path);
      if (problem !== null) {
        problems.push(`route ${index}: ${problem}`);
        continue;
      }
      const checked = listedRoute(
        index,
        method as string,
        path as string,
        literals,
      );
      const first = wellFormed.find((earlier) => shadows(earlier, checked));
      if (first === undefined) wellFormed.push(checked);
      else problems.push(shadowedProblem(first, checked));
    }
  }
  if (problems.length > 0) {
    throw new CordonError(
      "BRIDGE_INVALID_PLUGIN_SURFACE",
      `Cannot use the routes of plugin "${pluginId}": ${
        problems[0]
      }; return [{ method: "GET", path: "/x" }] from routes()`,
      {
        cause: {
          code: "BRIDGE_INVALID_PLUGIN_SURFACE",
          name: "TypeError",
          message: listProblems(problems),
        },
      },
    );
  }
  return Object.freeze(
    (listed as { method: HttpMethod; path: string }[]).map(({ method, path }) =>
      Object.freeze({
        method,
        path,
        handler: (context: PluginRequestContext) =>
          handle(method, path, context),
      })
    ),
  );
}

/** Compiles a route path that {@linkcode routeProblem} accepted. */
export function compileRoute(path: string): RouteMatcher {
  const parts = routeSegments(path);
  return (segments) => {
    if (segments.length !== parts.length) return null;
    const params: [string, string][] = [];
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i]!;
      const segment = segments[i]!;
      if (part.startsWith(":")) {
        if (segment === "") return null;
        params.push([part.slice(1), segment]);
      } else if (part !== segment) return null;
    }
    // Defined, not assigned: a parameter named __proto__ is data too.
    return Object.fromEntries(params);
  };
}

/**
 * Splits the path after a plugin's prefix (starting with `/`, or empty)
 * into decoded segments; a trailing slash is ignored. Returns `null` when a
 * segment cannot be decoded or decodes to a slash, `.` or `..`.
 */
export function splitPath(rest: string): string[] | null {
  // Trimmed by index: a pattern anchored at the end tried every run of
  // slashes inside the path against it, 4.4 s for one 60 KB request path.
  let start = 0;
  let end = rest.length;
  while (start < end && rest[start] === "/") start++;
  while (end > start && rest[end - 1] === "/") end--;
  const trimmed = rest.slice(start, end);
  if (trimmed === "") return [];
  const out: string[] = [];
  for (const raw of trimmed.split("/")) {
    let segment: string;
    try {
      segment = decodeURIComponent(raw);
    } catch {
      return null;
    }
    if (segment.includes("/") || segment === "." || segment === "..") {
      return null;
    }
    out.push(segment);
  }
  return out;
}
