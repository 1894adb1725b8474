// This module is browser compatible.

/**
 * A module's imports as a full parser reads them, for source where the
 * lexer may have misread code as a regular expression (a `}` followed by a
 * `/`, see `misread_imports.ts`), or cannot read it (U+2028 or U+2029 in a
 * string, which the parser finds for it). A parser knows where each `/`
 * belongs: an import hidden after a function body is found, and text in a
 * comment or a string is not taken for one. It runs only where the lexer
 * is in doubt, since it costs many times what the lexer does.
 *
 * @module
 */

import type { Node } from "acorn";
import type { ScanRefusal } from "./scan_module.ts";
import { lineOf } from "./source_text.ts";
import { RecentMap } from "../protocol/recent.ts";
import { parseModule } from "./module_syntax.ts";

/** The first import of a module, from {@linkcode firstParsedImport}. */
export type ParsedImport =
  | { kind: "none" }
  | { kind: "static"; specifier: string }
  | { kind: "refused"; refusal: ScanRefusal }
  /** The parser could not read the source (newer syntax, say). */
  | { kind: "unparsable" };

type ImportNode = Node & {
  source?: (Node & { value?: unknown }) | null;
  attributes?: unknown[];
};

const STATIC_IMPORTS = new Set([
  "ImportDeclaration",
  "ExportAllDeclaration",
  "ExportNamedDeclaration",
]);

/** Every node of the tree, without recursion: nesting depth is the guest's. */
function* nodesOf(root: Node): Generator<ImportNode> {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const value = stack.pop();
    if (Array.isArray(value)) {
      // One at a time: a spread of a huge array would overflow the stack.
      for (const item of value) stack.push(item);
    } else if (
      typeof value === "object" && value !== null &&
      typeof (value as { type?: unknown }).type === "string"
    ) {
      yield value as ImportNode;
      stack.push(...Object.values(value));
    }
  }
}

function literalOf(node: ImportNode["source"]): string | undefined {
  return typeof node?.value === "string" ? node.value : undefined;
}

function isImport(node: ImportNode): boolean {
  return node.type === "ImportExpression" ||
    (STATIC_IMPORTS.has(node.type) && !!node.source);
}

/**
 * Every import of a module as a parser reads it: the static specifiers in
 * source order, each once, that come before the first `import()` or import
 * with attributes, and that one as the scan's refusal of it (the shape of
 * a readable `ModuleScan`).
 */
export type ParsedImports =
  | FoundImports
  /** The parser could not read the source (newer syntax, say). */
  | { kind: "unparsable" };

/** The imports of a module the parser read. */
export interface FoundImports {
  kind: "parsed";
  specifiers: string[];
  refusal: ScanRefusal | null;
  /**
   * The indexes of U+2028 and U+2029 inside string literals, which
   * es-module-lexer cannot read past (see `scan_module.ts`).
   */
  separatorsInStrings: number[];
}

/** The refusal of an import node, or `null` for a plain static import. */
function refusalOf(source: string, node: ImportNode): ScanRefusal | null {
  const line = lineOf(source, node.start);
  const specifier = literalOf(node.source);
  if (node.type === "ImportExpression") {
    return { kind: "dynamic", specifier, line };
  }
  if ((node.attributes ?? []).length > 0) {
    return { kind: "attributes", specifier: specifier ?? "", line };
  }
  return null;
}

function importsOf(
  source: string,
  nodes: ImportNode[],
  separatorsInStrings: number[],
): FoundImports {
  const specifiers: string[] = [];
  for (const node of nodes.sort((a, b) => a.start - b.start)) {
    const refusal = refusalOf(source, node);
    if (refusal !== null) {
      return { kind: "parsed", specifiers, refusal, separatorsInStrings };
    }
    const specifier = literalOf(node.source) ?? "";
    if (!specifiers.includes(specifier)) specifiers.push(specifier);
  }
  return { kind: "parsed", specifiers, refusal: null, separatorsInStrings };
}

const LINE_SEPARATORS = /[\u2028\u2029]/g;

/** Where U+2028 and U+2029 stand in a string literal node's source text. */
function separatorsIn(source: string, node: ImportNode): number[] {
  const { value } = node as { value?: unknown };
  if (node.type !== "Literal" || typeof value !== "string") return [];
  const text = source.slice(node.start, node.end);
  return [...text.matchAll(LINE_SEPARATORS)].map((match) =>
    node.start + match.index
  );
}

/**
 * The last sources parsed and what they import: a guest that needs the
 * parser is often run again, and parsing it costs the caller's thread about
 * 0.2 ms a KB. Bounded in characters and in entries, since a key's
 * overhead outweighs a short source's own characters.
 */
const recent = new RecentMap<string, { found: ParsedImports; chars: number }>({
  maxEntries: 1024,
  maxBytes: 4 * 1024 * 1024,
  sizeOf: (entry) => entry.chars,
});

/**
 * Every import of `source`, as {@linkcode ParsedImports} describes.
 *
 * @param source An ES module's text.
 * @returns The imports, or `unparsable`.
 */
export async function parsedImports(source: string): Promise<ParsedImports> {
  const kept = recent.get(source);
  if (kept !== undefined) return kept.found;
  const found = await parseImports(source);
  recent.set(source, { found, chars: source.length });
  return found;
}

/**
 * The first import of `source` in source order: a static import or
 * re-export, or an `import()` or import with attributes as the scan's
 * refusal of it.
 *
 * @param source An ES module's text.
 * @returns The first import, `none`, or `unparsable`.
 */
export async function firstParsedImport(
  source: string,
): Promise<ParsedImport> {
  const found = await parsedImports(source);
  if (found.kind === "unparsable") return found;
  const first = found.specifiers[0];
  if (first !== undefined) return { kind: "static", specifier: first };
  return found.refusal === null
    ? { kind: "none" }
    : { kind: "refused", refusal: found.refusal };
}

async function parseImports(source: string): Promise<ParsedImports> {
  const parsed = await parseModule(source);
  // A syntax error, or a nesting too deep for the parser.
  if (!parsed.ok) return { kind: "unparsable" };
  return importsOfProgram(source, parsed.program);
}

/**
 * Every import of a module already parsed, as {@linkcode ParsedImports}
 * describes: pack discovery parses each module to check its syntax, and
 * reads the imports from that tree where the lexer is in doubt.
 *
 * @param source The module's text.
 * @param program The module's tree, from `parseModule()`.
 * @returns The imports.
 */
export function importsOfProgram(
  source: string,
  program: Node,
): FoundImports {
  const imports: ImportNode[] = [];
  const separators: number[] = [];
  // Most sources hold no separator: their literals are not searched.
  const searched = /[\u2028\u2029]/.test(source);
  for (const node of nodesOf(program)) {
    if (isImport(node)) imports.push(node);
    if (!searched) continue;
    // One at a time: a spread of a huge array would overflow the stack.
    for (const index of separatorsIn(source, node)) separators.push(index);
  }
  return importsOf(source, imports, separators.sort((a, b) => a - b));
}
