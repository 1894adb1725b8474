// This module is browser compatible.

/**
 * The files of a staged tree besides module bytes and pack indexes: the
 * bytes of each JSON file as staging writes them, and the response headers
 * for static hosts (`_headers`) and for nginx (`_nginx.conf`). Staging
 * writes them and verification rebuilds them to compare, so they have one
 * home.
 *
 * @module
 */

import type {
  ModuleSummary,
  PackSummary,
  StagedIndex,
} from "../protocol/mod.ts";

/** The headers file static hosts (Netlify, Cloudflare Pages) read. */
export const HEADERS_FILE = "_headers";
/** The nginx snippet. */
export const NGINX_FILE = "_nginx.conf";

const IMMUTABLE = "public, max-age=31536000, immutable";
const JSON_TYPE = "application/json; charset=utf-8";
const JS_TYPE = "text/javascript; charset=utf-8";

/** Per URL pattern of the tree: the headers each response carries. */
const RULES: readonly {
  pattern: string;
  nginx: string;
  headers: readonly [string, string][];
}[] = [
  {
    pattern: "/index.json",
    nginx: "location = /index.json",
    headers: [
      ["Content-Type", JSON_TYPE],
      // The index changes with every publish: caches must revalidate.
      ["Cache-Control", "no-cache"],
    ],
  },
  {
    pattern: "/packs/*",
    nginx: "location /packs/",
    // Named by pack, pinned by index.json: revalidate like index.json.
    headers: [["Content-Type", JSON_TYPE], ["Cache-Control", "no-cache"]],
  },
  {
    pattern: "/modules/*",
    nginx: "location /modules/",
    headers: [["Content-Type", JS_TYPE], ["Cache-Control", IMMUTABLE]],
  },
];

/** Headers every file of the tree carries: the tree is public data. */
const COMMON: readonly [string, string][] = [
  ["Access-Control-Allow-Origin", "*"],
  ["X-Content-Type-Options", "nosniff"],
];

const encoder = new TextEncoder();

/** The bytes of a JSON file of the tree: one canonical rendering. */
export function jsonBytes(value: unknown): Uint8Array<ArrayBuffer> {
  // Compact: index.json has one entry per pack and is read on every run.
  return encoder.encode(`${JSON.stringify(value)}\n`);
}

/** A pack summary with its keys in one order, modules sorted by path. */
export function canonicalPack(pack: PackSummary): PackSummary {
  const modules = [...pack.modules].sort((a, b) =>
    a.path < b.path ? -1 : a.path > b.path ? 1 : 0
  );
  return {
    name: pack.name,
    version: pack.version,
    graphDigest: pack.graphDigest,
    modules: modules.map((module): ModuleSummary => ({
      id: module.id,
      path: module.path,
      exportedAs: [...module.exportedAs].sort(),
      digest: module.digest,
      graphDigest: module.graphDigest,
      dependencyIds: [...module.dependencyIds],
    })),
  };
}

/** An index with its keys in one order. */
export function canonicalIndex(index: StagedIndex): StagedIndex {
  return {
    format: 1,
    packs: index.packs.map((entry) => ({
      name: entry.name,
      version: entry.version,
      graphDigest: entry.graphDigest,
      indexDigest: entry.indexDigest,
    })),
  };
}

/** The text of `_headers`. */
export function headersFileText(): string {
  const lines = [
    "# Response headers of a cordon staged tree (Netlify and Cloudflare Pages",
    "# read this file). Modules are named by digest: cache them forever.",
    "# index.json and the pack indexes it pins change with every publish.",
  ];
  for (const rule of RULES) {
    lines.push(rule.pattern);
    for (const [name, value] of [...rule.headers, ...COMMON]) {
      lines.push(`  ${name}: ${value}`);
    }
  }
  return `${lines.join("\n")}\n`;
}

/** The text of `_nginx.conf`. */
export function nginxSnippetText(): string {
  const lines = [
    "# nginx: include this file inside a server block whose root is the",
    "# staged tree. Modules are named by digest: cache them forever.",
    "# index.json and the pack indexes it pins change with every publish.",
  ];
  for (const rule of RULES) {
    lines.push(`${rule.nginx} {`);
    const type = rule.headers.find(([name]) => name === "Content-Type")![1];
    lines.push(
      "    types { }",
      `    default_type "${type}";`,
      // Static hosts compress by themselves; nginx only when told to.
      "    gzip on;",
      `    gzip_types ${type.split(";")[0]};`,
      "    gzip_vary on;",
    );
    for (const [name, value] of [...rule.headers, ...COMMON]) {
      if (name !== "Content-Type") {
        lines.push(`    add_header ${name} "${value}";`);
      }
    }
    lines.push("}");
  }
  lines.push(
    "# The tree's own metadata files are not served.",
    "location ~ ^/_ {",
    "    return 404;",
    "}",
  );
  return `${lines.join("\n")}\n`;
}
