// This module is browser compatible.

/**
 * Turns a JSON Schema, as zod exports it for a protocol schema, into a
 * function built once as a tree of closures, with no code in strings, so
 * the zod schema stays the one home of the rule and this module only reads
 * what zod derived from it. Two kinds are compiled:
 *
 * - a check says whether a parsed JSON value matches; it copies nothing
 *   and reports no issues, so it costs a fraction of a zod parse. It is for
 *   input read in bulk (a discovery index holds a hundred thousand tuples).
 * - a parse answers as the zod schema's `safeParse` does: a copy with each
 *   default filled in, or the same issues in zod's words. It lets a module
 *   that must not load zod (the loader's) keep zod's rule and answers.
 *
 * Only the keywords zod emits for such shapes are understood. A schema with
 * any other keyword is refused when it is compiled, never half-checked.
 *
 * @module
 */

import type { SafeParseResult, SchemaError, SchemaIssue } from "./schema.ts";

/** A JSON Schema (draft 2020-12) as plain JSON data. */
export type JsonSchema = boolean | { readonly [keyword: string]: unknown };

/** Says whether a parsed JSON value matches the schema it was compiled from. */
export type JsonCheck = (value: unknown) => boolean;

/** Keywords that say nothing about which values match. */
const ANNOTATIONS = new Set(["$schema", "$id", "title", "description"]);

/**
 * The `$defs` of the schema being compiled, and each one's check once it
 * is compiled: a recursive shape (a JSON value holds JSON values) refers to
 * itself, and is compiled once rather than once per level of a value.
 */
interface Definitions {
  readonly schemas: Readonly<Record<string, unknown>>;
  readonly compiled: Map<string, JsonCheck>;
}

type Compiler = (
  schema: Record<string, unknown>,
  definitions: Definitions,
) => JsonCheck | undefined;

/**
 * Compiles a JSON Schema into a check.
 *
 * @param schema The schema, as `z.toJSONSchema` returns it.
 * @returns The check.
 * @throws {TypeError} When the schema uses a keyword this compiler does not
 * understand, or a keyword's value has the wrong shape.
 */
export function compileJsonCheck(schema: JsonSchema): JsonCheck {
  const defs = isObject(schema) && isObject(schema.$defs) ? schema.$defs : {};
  return checkOf(schema, { schemas: defs, compiled: new Map() });
}

function checkOf(schema: unknown, definitions: Definitions): JsonCheck {
  if (schema === true) return () => true;
  if (schema === false) return () => false;
  if (!isObject(schema)) {
    throw new TypeError("Cannot compile a JSON Schema that is not an object");
  }
  const checks: JsonCheck[] = [];
  for (const keyword of Object.keys(schema)) {
    if (ANNOTATIONS.has(keyword)) continue;
    const compile = Object.hasOwn(KEYWORDS, keyword)
      ? KEYWORDS[keyword]
      : undefined;
    if (compile === undefined) {
      throw new TypeError(
        `Cannot compile a JSON Schema with "${keyword}": the keyword is not supported`,
      );
    }
    const check = compile(schema, definitions);
    if (check !== undefined) checks.push(check);
  }
  return all(checks);
}

/** `$ref` names one of the root's own `$defs`, as zod writes it. */
const LOCAL_DEFINITION = /^#\/\$defs\/([^/~%]+)$/;

function referenceCheck(ref: unknown, definitions: Definitions): JsonCheck {
  const name = typeof ref === "string"
    ? LOCAL_DEFINITION.exec(ref)?.[1]
    : undefined;
  if (name === undefined || !Object.hasOwn(definitions.schemas, name)) {
    throw new TypeError(
      `Cannot compile a JSON Schema: $ref ${
        String(ref)
      } is not one of its own $defs`,
    );
  }
  const known = definitions.compiled.get(name);
  if (known !== undefined) return known;
  // A reference met while its definition compiles calls it through here;
  // nothing is checked before compiling ends.
  const compiled: { check?: JsonCheck } = {};
  const viaDefinition: JsonCheck = (value) => compiled.check!(value);
  definitions.compiled.set(name, viaDefinition);
  compiled.check = checkOf(definitions.schemas[name], definitions);
  return viaDefinition;
}

function all(checks: JsonCheck[]): JsonCheck {
  if (checks.length === 0) return () => true;
  if (checks.length === 1) return checks[0]!;
  return (value) => {
    for (let i = 0; i < checks.length; i++) {
      if (!checks[i]!(value)) return false;
    }
    return true;
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const TYPES: Record<string, JsonCheck> = {
  string: (value) => typeof value === "string",
  number: (value) => typeof value === "number" && Number.isFinite(value),
  integer: (value) => Number.isInteger(value),
  boolean: (value) => typeof value === "boolean",
  null: (value) => value === null,
  array: (value) => Array.isArray(value),
  object: isObject,
};

function typeCheck(name: unknown): JsonCheck {
  const check = typeof name === "string" ? TYPES[name] : undefined;
  if (check === undefined) {
    throw new TypeError(`Cannot compile a JSON Schema of type ${String(name)}`);
  }
  return check;
}

/**
 * A string's length as JSON Schema and zod count it: in code points, so a
 * surrogate pair (an emoji) is one character and a lone surrogate is one.
 */
function codePointLength(text: string): number {
  let length = text.length;
  for (let i = 0; i < text.length - 1; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0xd800 || unit > 0xdbff) continue;
    const next = text.charCodeAt(i + 1);
    if (next >= 0xdc00 && next <= 0xdfff) {
      length--;
      i++;
    }
  }
  return length;
}

// A code point is one or two UTF-16 units, so most strings are decided by
// their `length` alone and only those near the bound are counted.
function hasAtMost(text: string, max: number): boolean {
  if (text.length <= max) return true;
  return text.length <= 2 * max && codePointLength(text) <= max;
}

function hasAtLeast(text: string, min: number): boolean {
  if (text.length < min) return false;
  return text.length >= 2 * min || codePointLength(text) >= min;
}

function numberOf(s: Record<string, unknown>, keyword: string): number {
  const value = s[keyword];
  if (typeof value !== "number") {
    throw new TypeError(
      `Cannot compile a JSON Schema: ${keyword} is not a number`,
    );
  }
  return value;
}

function schemasOf(
  s: Record<string, unknown>,
  keyword: string,
  definitions: Definitions,
): JsonCheck[] {
  const value = s[keyword];
  if (!Array.isArray(value)) {
    throw new TypeError(
      `Cannot compile a JSON Schema: ${keyword} is not a list`,
    );
  }
  return value.map((inner) => checkOf(inner, definitions));
}

/** Each supported keyword, compiled on its own or with its neighbours. */
const KEYWORDS: Record<string, Compiler> = {
  type: (s) => {
    const types = Array.isArray(s.type) ? s.type.map(typeCheck) : [
      typeCheck(s.type),
    ];
    return types.length === 1
      ? types[0]!
      : (value) => types.some((check) => check(value));
  },
  const: (s) => {
    const expected = s.const;
    if (typeof expected === "object" && expected !== null) {
      throw new TypeError(
        "Cannot compile a JSON Schema: const is not a scalar",
      );
    }
    return (value) => value === expected;
  },
  enum: (s) => {
    const values = s.enum;
    if (
      !Array.isArray(values) ||
      values.some((value) => typeof value === "object" && value !== null)
    ) {
      throw new TypeError("Cannot compile a JSON Schema: enum is not scalars");
    }
    return (value) => values.includes(value);
  },
  not: (s, definitions) => {
    const refused = checkOf(s.not, definitions);
    return (value) => !refused(value);
  },
  pattern: (s) => {
    if (typeof s.pattern !== "string") {
      throw new TypeError("Cannot compile a JSON Schema: pattern is not text");
    }
    // The pattern is zod's regular expression's source; it has no flags.
    const pattern = new RegExp(s.pattern);
    return (value) => typeof value !== "string" || pattern.test(value);
  },
  minLength: (s) => {
    const min = numberOf(s, "minLength");
    return (value) => typeof value !== "string" || hasAtLeast(value, min);
  },
  maxLength: (s) => {
    const max = numberOf(s, "maxLength");
    return (value) => typeof value !== "string" || hasAtMost(value, max);
  },
  minimum: (s) => {
    const min = numberOf(s, "minimum");
    return (value) => typeof value !== "number" || value >= min;
  },
  maximum: (s) => {
    const max = numberOf(s, "maximum");
    return (value) => typeof value !== "number" || value <= max;
  },
  exclusiveMinimum: (s) => {
    const min = numberOf(s, "exclusiveMinimum");
    return (value) => typeof value !== "number" || value > min;
  },
  exclusiveMaximum: (s) => {
    const max = numberOf(s, "exclusiveMaximum");
    return (value) => typeof value !== "number" || value < max;
  },
  minItems: (s) => {
    const min = numberOf(s, "minItems");
    return (value) => !Array.isArray(value) || value.length >= min;
  },
  maxItems: (s) => {
    const max = numberOf(s, "maxItems");
    return (value) => !Array.isArray(value) || value.length <= max;
  },
  anyOf: (s, definitions) => {
    const options = schemasOf(s, "anyOf", definitions);
    return (value) => options.some((check) => check(value));
  },
  oneOf: (s, definitions) => {
    const options = schemasOf(s, "oneOf", definitions);
    return (value) => {
      let matched = 0;
      for (const check of options) if (check(value) && ++matched > 1) break;
      return matched === 1;
    };
  },
  // Items after `prefixItems` follow `items`, so both compile together.
  prefixItems: (s, definitions) => arrayItems(s, definitions),
  items: (s, definitions) =>
    s.prefixItems === undefined ? arrayItems(s, definitions) : undefined,
  // Keys and the other properties follow `properties`: compiled together.
  properties: (s, definitions) => objectProperties(s, definitions),
  required: (s, definitions) =>
    s.properties === undefined ? objectProperties(s, definitions) : undefined,
  additionalProperties: (s, definitions) =>
    s.properties === undefined && s.required === undefined
      ? objectProperties(s, definitions)
      : undefined,
  $ref: (s, definitions) => referenceCheck(s.$ref, definitions),
  // Definitions are compiled where a `$ref` names them.
  $defs: () => undefined,
  propertyNames: (s) => {
    // Every key of parsed JSON is a string; other name rules are not known.
    const names = s.propertyNames as Record<string, unknown> | undefined;
    if (
      !isObject(names) || Object.keys(names).length !== 1 ||
      names.type !== "string"
    ) {
      throw new TypeError(
        "Cannot compile a JSON Schema: only string propertyNames are supported",
      );
    }
    return undefined;
  },
};

function arrayItems(
  s: Record<string, unknown>,
  definitions: Definitions,
): JsonCheck {
  const prefix = s.prefixItems === undefined
    ? []
    : schemasOf(s, "prefixItems", definitions);
  const rest = s.items === undefined
    ? () => true
    : checkOf(s.items, definitions);
  return (value) => {
    if (!Array.isArray(value)) return true;
    for (let i = 0; i < value.length; i++) {
      const check = i < prefix.length ? prefix[i]! : rest;
      if (!check(value[i])) return false;
    }
    return true;
  };
}

function objectProperties(
  s: Record<string, unknown>,
  definitions: Definitions,
): JsonCheck {
  const properties = s.properties === undefined ? {} : s.properties;
  if (!isObject(properties)) {
    throw new TypeError(
      "Cannot compile a JSON Schema: properties is not an object",
    );
  }
  const known = new Map(
    Object.entries(properties).map((
      [key, inner],
    ) => [key, checkOf(inner, definitions)]),
  );
  const required = s.required === undefined ? [] : s.required;
  if (!Array.isArray(required)) {
    throw new TypeError("Cannot compile a JSON Schema: required is not a list");
  }
  const optional = new Set(
    [...known.keys()].filter((key) => !required.includes(key)),
  );
  const others = s.additionalProperties === undefined
    ? () => true
    : checkOf(s.additionalProperties, definitions);
  return (value) => {
    if (!isObject(value)) return true;
    for (const key of required as string[]) {
      if (!Object.hasOwn(value, key)) return false;
    }
    for (const key of Object.keys(value)) {
      const item = value[key];
      // A value cloned rather than parsed may hold an optional property
      // as `undefined`, which zod's optional accepts.
      if (item === undefined && optional.has(key)) continue;
      if (!(known.get(key) ?? others)(item)) return false;
    }
    return true;
  };
}

/** The answer of a compiled parse: a copy of the value, or every problem. */
export type JsonParse = (value: unknown) => SafeParseResult<unknown>;

/** How a compiled parse words what the schema alone cannot say. */
export interface JsonParseOptions {
  /**
   * The message of a value that breaks a `pattern`, keyed by the pattern's
   * text: the schema keeps a regular expression's source, not its message.
   */
  readonly patternMessages: Readonly<Record<string, string>>;
}

/**
 * One problem while a value is parsed. Its path grows at the front as the
 * problem is handed up to each enclosing object or array; `continues` says
 * whether the value's other checks still ran, which decides how a union
 * reports it.
 */
interface ParseIssue {
  code: string;
  path: PropertyKey[];
  message: string;
  continues: boolean;
}

/** Pushes the problems of `value` onto `issues` and returns its copy. */
type Parser = (value: unknown, issues: ParseIssue[]) => unknown;

/** What a parse understands, beside the annotations. */
const PARSE_KEYWORDS = new Set([
  "type",
  "default",
  "pattern",
  "not",
  "minLength",
  "maxLength",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "maxItems",
  "anyOf",
]);

/**
 * Compiles a JSON Schema into a parse that answers as the zod schema it was
 * exported from does: the same success, a copy of the value with each
 * `default` filled in, and on failure the same issues (code, path and
 * message, in zod's words and order). A value's checks run in the order
 * the protocol's zod schemas declare them: its type first, then its
 * pattern, then its length. A union reports the issues of its one option
 * that got past its type checks, or else one `invalid_union`.
 *
 * A property the schema does not require may be `undefined`, as a zod
 * optional may; it is copied only when the value has the key.
 *
 * @param schema The schema, as `z.toJSONSchema` returns it for input.
 * @param options The messages of the schema's patterns.
 * @returns The parse.
 * @throws {TypeError} When the schema uses a keyword or a form of one that
 * the parse does not understand, or a pattern has no message.
 */
export function compileJsonParse(
  schema: JsonSchema,
  options: JsonParseOptions,
): JsonParse {
  const parse = parserOf(schema, options);
  return (value) => {
    const issues: ParseIssue[] = [];
    const data = parse(value, issues);
    if (issues.length === 0) return { success: true, data };
    const published = issues.map(({ code, path, message }) => ({
      code,
      path,
      message,
    }));
    const error = new TypeError(
      published.map((issue) => issue.message).join("; "),
    ) as TypeError & { issues: readonly SchemaIssue[] };
    error.issues = published;
    return { success: false, error: error as SchemaError };
  };
}

function parserOf(schema: JsonSchema, options: JsonParseOptions): Parser {
  if (!isObject(schema)) {
    throw new TypeError(
      "Cannot compile a JSON Schema parse: a schema is not an object",
    );
  }
  for (const keyword of Object.keys(schema)) {
    if (!ANNOTATIONS.has(keyword) && !PARSE_KEYWORDS.has(keyword)) {
      throw new TypeError(
        `Cannot compile a JSON Schema parse with "${keyword}": the keyword is not supported`,
      );
    }
  }
  const fill = defaultOf(schema);
  const type = schema.type === undefined ? undefined : parseTypeOf(schema);
  const checks = stringChecksOf(schema, options);
  const shape = type?.name === "object"
    ? objectParserOf(schema, options)
    : type?.name === "array"
    ? arrayParserOf(schema, options)
    : undefined;
  const structural = [
    "properties",
    "required",
    "additionalProperties",
    "items",
  ];
  if (shape === undefined && structural.some((key) => key in schema)) {
    throw new TypeError(
      "Cannot compile a JSON Schema parse: properties and items need the type object or array",
    );
  }
  const union = schema.anyOf === undefined
    ? undefined
    : unionParserOf(schema, options);
  if (shape !== undefined && union !== undefined) {
    throw new TypeError(
      "Cannot compile a JSON Schema parse: anyOf beside an object or array type is not supported",
    );
  }
  // Each step wraps the ones after it only when the schema has it, so a
  // plain string costs one type check.
  let parse: Parser = shape ?? union ?? ((value) => value);
  if (checks.length > 0) parse = withChecks(checks, parse);
  if (type !== undefined) parse = withType(type.name, type.matches, parse);
  if (fill !== undefined) parse = withDefault(fill, parse);
  return parse;
}

function withChecks(checks: StringCheck[], next: Parser): Parser {
  return (value, issues) => {
    for (let i = 0; i < checks.length; i++) checks[i]!(value, issues);
    return next(value, issues);
  };
}

function withType(name: string, matches: JsonCheck, next: Parser): Parser {
  return (value, issues) => {
    if (matches(value)) return next(value, issues);
    issues.push(typeIssue(name, value));
    return value;
  };
}

function withDefault(fill: () => unknown, next: Parser): Parser {
  return (value, issues) => value === undefined ? fill() : next(value, issues);
}

/**
 * A copy of the schema's default for each value that leaves it out, made
 * as zod makes it: an array or object is copied one level deep.
 */
function defaultOf(
  schema: Record<string, unknown>,
): (() => unknown) | undefined {
  if (!Object.hasOwn(schema, "default")) return undefined;
  const fallback = schema.default;
  if (Array.isArray(fallback)) return () => fallback.slice();
  if (isObject(fallback)) return () => ({ ...fallback });
  return () => fallback;
}

/** The types a parse names in zod's words. */
const PARSE_TYPES: ReadonlySet<string> = new Set([
  "string",
  "boolean",
  "array",
  "object",
]);

function parseTypeOf(
  schema: Record<string, unknown>,
): { name: string; matches: JsonCheck } {
  const name = schema.type;
  if (typeof name !== "string" || !PARSE_TYPES.has(name)) {
    throw new TypeError(
      `Cannot compile a JSON Schema parse of type ${String(name)}`,
    );
  }
  return { name, matches: TYPES[name]! };
}

/** What a value is, in the words of zod's type issues. */
function receivedOf(value: unknown): string {
  if (typeof value === "number") {
    return Number.isFinite(value) ? "number" : String(value);
  }
  if (typeof value !== "object") return typeof value;
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (Object.getPrototypeOf(value) === Object.prototype) return "object";
  const constructor = "constructor" in value ? value.constructor : undefined;
  return constructor
    ? String((constructor as { name?: unknown }).name)
    : "object";
}

function typeIssue(expected: string, value: unknown): ParseIssue {
  return {
    code: "invalid_type",
    path: [],
    message: `Invalid input: expected ${expected}, received ${
      receivedOf(value)
    }`,
    continues: false,
  };
}

/** Checks a string's pattern or length; it passes over other values. */
type StringCheck = (value: unknown, issues: ParseIssue[]) => void;

/** The schema's string checks, in the order zod reports them. */
function stringChecksOf(
  schema: Record<string, unknown>,
  options: JsonParseOptions,
): StringCheck[] {
  const checks: StringCheck[] = [];
  if (schema.not !== undefined && schema.pattern === undefined) {
    throw new TypeError(
      'Cannot compile a JSON Schema parse: "not" is understood only beside a pattern',
    );
  }
  if (schema.pattern !== undefined) {
    checks.push(patternCheckOf(schema.pattern, schema.not, options));
  }
  if (schema.minLength !== undefined) {
    const min = numberOf(schema, "minLength");
    const message = `Too small: expected string to have >=${min} characters`;
    checks.push((value, issues) => {
      if (typeof value === "string" && !hasAtLeast(value, min)) {
        issues.push({ code: "too_small", path: [], message, continues: true });
      }
    });
  }
  if (schema.maxLength !== undefined) {
    const max = numberOf(schema, "maxLength");
    const message = `Too big: expected string to have <=${max} characters`;
    checks.push((value, issues) => {
      if (typeof value === "string" && !hasAtMost(value, max)) {
        issues.push({ code: "too_big", path: [], message, continues: true });
      }
    });
  }
  return checks;
}

/**
 * A pattern's check. The published schemas pair an anchored pattern with a
 * `not` that refuses a final newline, for platforms whose `$` matches
 * before one; a value either refuses fails the pattern, in zod's words.
 */
function patternCheckOf(
  pattern: unknown,
  not: unknown,
  { patternMessages }: JsonParseOptions,
): StringCheck {
  if (typeof pattern !== "string") {
    throw new TypeError("Cannot compile a JSON Schema: pattern is not text");
  }
  if (!Object.hasOwn(patternMessages, pattern)) {
    throw new TypeError(
      `Cannot compile a JSON Schema parse: the pattern ${pattern} has no message`,
    );
  }
  const message = patternMessages[pattern]!;
  // The pattern is zod's regular expression's source; it has no flags.
  const expression = new RegExp(pattern);
  const refused = not === undefined
    ? undefined
    : checkOf(not, { schemas: {}, compiled: new Map() });
  return (value, issues) => {
    if (
      typeof value === "string" &&
      (!expression.test(value) || refused?.(value) === true)
    ) {
      issues.push({
        code: "invalid_format",
        path: [],
        message,
        continues: true,
      });
    }
  };
}

/** Puts `key` in front of the paths of the issues from `start` on. */
function prefixPaths(issues: ParseIssue[], start: number, key: PropertyKey) {
  for (let i = start; i < issues.length; i++) issues[i]!.path.unshift(key);
}

interface PropertyParser {
  key: string;
  parse: Parser;
  /** Whether an `undefined` value is checked, not skipped. */
  checked: boolean;
}

/**
 * A strict object's parser: each property in the schema's order, then one
 * issue naming every other key, own or inherited, as zod's `for...in` finds
 * them.
 */
function objectParserOf(
  schema: Record<string, unknown>,
  options: JsonParseOptions,
): Parser {
  const properties = schema.properties ?? {};
  const required = schema.required ?? [];
  if (
    !isObject(properties) || !Array.isArray(required) ||
    required.some((key) => !Object.hasOwn(properties, key)) ||
    schema.additionalProperties !== false
  ) {
    throw new TypeError(
      "Cannot compile a JSON Schema parse: only objects with properties, a required list of some of them and no additional properties are supported",
    );
  }
  const parsers: PropertyParser[] = Object.entries(properties).map((
    [key, inner],
  ) => ({
    key,
    parse: parserOf(inner as JsonSchema, options),
    checked: required.includes(key) ||
      (isObject(inner) && Object.hasOwn(inner, "default")),
  }));
  const known = new Set(Object.keys(properties));
  return (value, issues) => {
    const input = value as Record<string, unknown>;
    const copy: Record<string, unknown> = {};
    for (let i = 0; i < parsers.length; i++) {
      const { key, parse, checked } = parsers[i]!;
      const field = input[key];
      if (field === undefined && !checked) {
        if (key in input) copy[key] = undefined;
        continue;
      }
      const start = issues.length;
      copy[key] = parse(field, issues);
      if (issues.length !== start) prefixPaths(issues, start, key);
    }
    let unknown: string[] | undefined;
    for (const key in input) if (!known.has(key)) (unknown ??= []).push(key);
    if (unknown !== undefined) issues.push(unrecognizedIssue(unknown));
    return copy;
  };
}

function unrecognizedIssue(keys: string[]): ParseIssue {
  const list = keys.map((key) => `"${key}"`).join(", ");
  return {
    code: "unrecognized_keys",
    path: [],
    message: `Unrecognized key${keys.length > 1 ? "s" : ""}: ${list}`,
    continues: true,
  };
}

function arrayParserOf(
  schema: Record<string, unknown>,
  options: JsonParseOptions,
): Parser {
  const parse = parserOf(schema.items as JsonSchema, options);
  const max = schema.maxItems === undefined
    ? Infinity
    : numberOf(schema, "maxItems");
  return (value, issues) => {
    const input = value as unknown[];
    // As zod does, a list that is too long has its items left unread: that
    // is the one problem reported, and reading them would cost its length.
    if (input.length > max) {
      issues.push(tooManyItemsIssue(max));
      return value;
    }
    const copy: unknown[] = [];
    for (let i = 0; i < input.length; i++) {
      const start = issues.length;
      copy.push(parse(input[i], issues));
      prefixPaths(issues, start, i);
    }
    return copy;
  };
}

function tooManyItemsIssue(max: number): ParseIssue {
  return {
    code: "too_big",
    path: [],
    message: `Too big: expected array to have <=${max} items`,
    continues: true,
  };
}

/**
 * A union's parser: the first option that matches gives the copy. When
 * none does, the issues of the one option whose checks all ran (its type
 * matched) are reported; with none or several, one `invalid_union`.
 */
function unionParserOf(
  schema: Record<string, unknown>,
  options: JsonParseOptions,
): Parser {
  const alternatives = schema.anyOf;
  if (!Array.isArray(alternatives)) {
    throw new TypeError("Cannot compile a JSON Schema: anyOf is not a list");
  }
  const parsers = alternatives.map((inner) =>
    parserOf(inner as JsonSchema, options)
  );
  return (value, issues) => {
    let closest: { data: unknown; issues: ParseIssue[] } | undefined;
    let completed = 0;
    for (let i = 0; i < parsers.length; i++) {
      const start = issues.length;
      const data = parsers[i]!(value, issues);
      if (issues.length === start) return data;
      const own = issues.splice(start);
      if (own.every((issue) => issue.continues)) {
        completed++;
        closest = { data, issues: own };
      }
    }
    if (completed === 1) {
      issues.push(...closest!.issues);
      return closest!.data;
    }
    issues.push({
      code: "invalid_union",
      path: [],
      message: "Invalid input",
      continues: false,
    });
    return value;
  };
}
