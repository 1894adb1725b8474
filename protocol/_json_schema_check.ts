// This module is browser compatible.

/**
 * Turns a JSON Schema, as zod exports it for a protocol schema, into a
 * function that says whether a parsed JSON value matches it. The function
 * is a tree of closures built once, with no code in strings; it copies
 * nothing and reports no issues, so it costs a fraction of a zod parse. It
 * is for input read in bulk (a discovery index holds a hundred thousand
 * tuples); the zod schema stays the one home of the rule, and this module
 * only reads what zod derived from it.
 *
 * Only the keywords zod emits for such shapes are understood. A schema with
 * any other keyword is refused when it is compiled, never half-checked.
 *
 * @module
 */

/** A JSON Schema (draft 2020-12) as plain JSON data. */
export type JsonSchema = boolean | { readonly [keyword: string]: unknown };

/** Says whether a parsed JSON value matches the schema it was compiled from. */
export type JsonCheck = (value: unknown) => boolean;

/** Keywords that say nothing about which values match. */
const ANNOTATIONS = new Set(["$schema", "$id", "title", "description"]);

type Compiler = (schema: Record<string, unknown>) => JsonCheck | undefined;

/**
 * Compiles a JSON Schema into a check.
 *
 * @param schema The schema, as `z.toJSONSchema` returns it.
 * @returns The check.
 * @throws {TypeError} When the schema uses a keyword this compiler does not
 * understand, or a keyword's value has the wrong shape.
 */
export function compileJsonCheck(schema: JsonSchema): JsonCheck {
  if (schema === true) return () => true;
  if (schema === false) return () => false;
  if (typeof schema !== "object" || schema === null) {
    throw new TypeError("Cannot compile a JSON Schema that is not an object");
  }
  const s = schema as Record<string, unknown>;
  const checks: JsonCheck[] = [];
  for (const keyword of Object.keys(s)) {
    if (ANNOTATIONS.has(keyword)) continue;
    const compile = Object.hasOwn(KEYWORDS, keyword)
      ? KEYWORDS[keyword]
      : undefined;
    if (compile === undefined) {
      throw new TypeError(
        `Cannot compile a JSON Schema with "${keyword}": the keyword is not supported`,
      );
    }
    const check = compile(s);
    if (check !== undefined) checks.push(check);
  }
  return all(checks);
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

function numberOf(s: Record<string, unknown>, keyword: string): number {
  const value = s[keyword];
  if (typeof value !== "number") {
    throw new TypeError(
      `Cannot compile a JSON Schema: ${keyword} is not a number`,
    );
  }
  return value;
}

function schemasOf(s: Record<string, unknown>, keyword: string): JsonCheck[] {
  const value = s[keyword];
  if (!Array.isArray(value)) {
    throw new TypeError(
      `Cannot compile a JSON Schema: ${keyword} is not a list`,
    );
  }
  return value.map((inner) => compileJsonCheck(inner as JsonSchema));
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
    return (value) => typeof value !== "string" || value.length >= min;
  },
  maxLength: (s) => {
    const max = numberOf(s, "maxLength");
    return (value) => typeof value !== "string" || value.length <= max;
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
  anyOf: (s) => {
    const options = schemasOf(s, "anyOf");
    return (value) => options.some((check) => check(value));
  },
  oneOf: (s) => {
    const options = schemasOf(s, "oneOf");
    return (value) => {
      let matched = 0;
      for (const check of options) if (check(value) && ++matched > 1) break;
      return matched === 1;
    };
  },
  // Items after `prefixItems` follow `items`, so both compile together.
  prefixItems: (s) => arrayItems(s),
  items: (s) => (s.prefixItems === undefined ? arrayItems(s) : undefined),
  // Keys and the other properties follow `properties`: compiled together.
  properties: (s) => objectProperties(s),
  required: (
    s,
  ) => (s.properties === undefined ? objectProperties(s) : undefined),
  additionalProperties: (s) =>
    s.properties === undefined && s.required === undefined
      ? objectProperties(s)
      : undefined,
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

function arrayItems(s: Record<string, unknown>): JsonCheck {
  const prefix = s.prefixItems === undefined ? [] : schemasOf(s, "prefixItems");
  const rest = s.items === undefined
    ? () => true
    : compileJsonCheck(s.items as JsonSchema);
  return (value) => {
    if (!Array.isArray(value)) return true;
    for (let i = 0; i < value.length; i++) {
      const check = i < prefix.length ? prefix[i]! : rest;
      if (!check(value[i])) return false;
    }
    return true;
  };
}

function objectProperties(s: Record<string, unknown>): JsonCheck {
  const properties = s.properties === undefined ? {} : s.properties;
  if (!isObject(properties)) {
    throw new TypeError(
      "Cannot compile a JSON Schema: properties is not an object",
    );
  }
  const known = new Map(
    Object.entries(properties).map((
      [key, inner],
    ) => [key, compileJsonCheck(inner as JsonSchema)]),
  );
  const required = s.required === undefined ? [] : s.required;
  if (!Array.isArray(required)) {
    throw new TypeError("Cannot compile a JSON Schema: required is not a list");
  }
  const others = s.additionalProperties === undefined
    ? () => true
    : compileJsonCheck(s.additionalProperties as JsonSchema);
  return (value) => {
    if (!isObject(value)) return true;
    for (const key of required as string[]) {
      if (!Object.hasOwn(value, key)) return false;
    }
    for (const key of Object.keys(value)) {
      const check = known.get(key) ?? others;
      if (!check(value[key])) return false;
    }
    return true;
  };
}
