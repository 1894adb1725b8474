/**
 * The differential table: for each npm package, calls whose JSON results
 * plain Deno (importing the package by `npm:` specifier) and the QuickJS
 * sandbox (importing the pack built from it) must agree on. Each call is
 * an expression; its value goes through JSON on both sides.
 *
 * @module
 */

/** One package of the table. */
export interface PackageCalls {
  /** The npm name. */
  name: string;
  /** The pinned version. */
  version: string;
  /** The subpaths to pack, when not every export. */
  subpaths?: string[];
  /** Import declarations, written against the pack name. */
  imports: string;
  /** Call name to expression. */
  calls: Record<string, string>;
}

/** The ten packages of the differential test. */
export const PACKAGE_CALLS: readonly PackageCalls[] = [
  {
    name: "date-fns",
    version: "4.4.0",
    subpaths: [".", "./format", "./parseISO"],
    imports: `import { addDays, differenceInCalendarDays, eachDayOfInterval,
  format, formatDistanceStrict, intervalToDuration, isValid, startOfWeek } from "date-fns";
import { format as formatOnly } from "date-fns/format";
import { parseISO } from "date-fns/parseISO";`,
    calls: {
      format:
        `format(new Date(2024, 1, 29, 13, 5, 9), "yyyy-MM-dd HH:mm:ss EEEE do MMMM qqq")`,
      formatSubpath: `formatOnly(new Date(2023, 6, 4), "EEE, d MMM yyyy")`,
      addDays: `format(addDays(new Date(2024, 1, 28), 3), "yyyy-MM-dd")`,
      difference:
        `differenceInCalendarDays(new Date(2024, 11, 25), new Date(2024, 0, 1))`,
      parseISO: `parseISO("2024-03-10T12:34:56Z").getTime()`,
      isValid: `[isValid(new Date("nope")), isValid(new Date(0))]`,
      interval:
        `eachDayOfInterval({ start: new Date(2024, 0, 30), end: new Date(2024, 1, 2) }).map((d) => d.getDate())`,
      startOfWeek:
        `startOfWeek(new Date(2024, 4, 15), { weekStartsOn: 1 }).getDate()`,
      distance:
        `formatDistanceStrict(new Date(2024, 0, 1), new Date(2024, 2, 1))`,
      duration:
        `intervalToDuration({ start: new Date(2020, 0, 1), end: new Date(2024, 5, 15, 3) })`,
    },
  },
  {
    name: "lodash-es",
    version: "4.18.1",
    imports:
      `import { camelCase, chunk, groupBy, merge, template } from "lodash-es";`,
    calls: {
      chunk: `chunk([1, 2, 3, 4, 5], 2)`,
      groupBy: `groupBy([1.3, 2.1, 2.4], Math.floor)`,
      camelCase: `camelCase("Foo Bar-baz")`,
      merge: `merge({ a: [{ b: 1 }] }, { a: [{ c: 2 }] })`,
      template: `template("hi <%= name %>")({ name: "ada" })`,
    },
  },
  {
    name: "marked",
    version: "18.2.1",
    imports: `import { marked } from "marked";`,
    calls: {
      parse:
        'marked.parse("# Title\\n\\nSome *em* and **strong** [link](https://example.com).\\n\\n- one\\n- two\\n\\n```js\\nconst x = 1 < 2;\\n```\\n\\n| a | b |\\n|---|---|\\n| 1 | 2 |\\n")',
      inline: `marked.parseInline("**bold** _it_ \`code\` <b>raw</b>")`,
      lexer: `marked.lexer("para\\n\\n> quote\\n\\n---").map((t) => t.type)`,
    },
  },
  {
    name: "yaml",
    version: "2.9.1",
    imports: `import * as YAML from "yaml";`,
    calls: {
      parse:
        `YAML.parse("a: 1\\nb: [x, y]\\nc: {d: true, e: null}\\nf: |\\n  two\\n  lines\\n")`,
      stringify: `YAML.stringify({ a: [1, 2], b: "x: y", c: { d: null } })`,
      document:
        `YAML.parseDocument("# comment\\nkey: value # trailing\\n").toString()`,
      error:
        `(() => { try { YAML.parse("a: [1, 2"); return "parsed"; } catch (e) { return e.name + ": " + e.code; } })()`,
    },
  },
  {
    name: "papaparse",
    version: "5.7.1",
    imports: `import Papa from "papaparse";`,
    calls: {
      header:
        `Papa.parse("a,b\\n1,x\\n3,4", { header: true, dynamicTyping: true }).data`,
      quoted: `Papa.parse('"q ""x""",2\\n"multi\\nline",3').data`,
      errors: `Papa.parse('a,"b\\n1,2').errors.map((e) => e.code)`,
      unparse: `Papa.unparse([{ a: 1, b: "x,y" }, { a: 2, b: 'say "hi"' }])`,
    },
  },
  {
    name: "zod",
    version: "4.6.7",
    subpaths: [".", "./v3"],
    imports: `import { z } from "zod";`,
    calls: {
      success:
        `z.object({ a: z.string(), n: z.number().int() }).parse({ a: "x", n: 2, extra: 1 })`,
      failure:
        `z.object({ a: z.string(), n: z.number().int() }).safeParse({ a: 1, n: 1.5 }).error.issues.map((i) => i.code)`,
    },
  },
  {
    name: "dayjs",
    version: "1.11.23",
    imports: `import dayjs from "dayjs";`,
    calls: {
      add: `dayjs("2024-02-29T10:00:00Z").add(1, "year").toISOString()`,
      format:
        `dayjs(new Date(2024, 0, 31, 8, 9)).format("YYYY-MM-DD HH:mm ddd MMM")`,
      month:
        `dayjs(new Date(2024, 0, 31)).add(1, "month").format("YYYY-MM-DD")`,
      diff: `dayjs(new Date(2024, 2, 10)).diff(new Date(2024, 0, 1), "day")`,
      invalid: `dayjs("not a date").isValid()`,
    },
  },
  {
    name: "immer",
    version: "11.2.13",
    imports:
      `import { produce, produceWithPatches, enablePatches } from "immer";`,
    calls: {
      produce:
        `(() => { const base = { a: { b: 1 }, keep: { k: 1 }, l: [1] }; const next = produce(base, (d) => { d.a.b = 2; d.l.push(3); }); return { next, same: next.keep === base.keep, frozen: Object.isFrozen(next), base }; })()`,
      patches:
        `(() => { enablePatches(); const [, patches, inverse] = produceWithPatches({ x: [1] }, (d) => { d.x.push(2); d.y = "n"; }); return { patches, inverse }; })()`,
    },
  },
  {
    name: "decimal.js",
    version: "10.6.0",
    imports: `import Decimal from "decimal.js";`,
    calls: {
      plus: `new Decimal("0.1").plus("0.2").toString()`,
      sqrt: `Decimal.sqrt(2).toPrecision(40)`,
      div: `new Decimal(1).div(3).toFixed(30)`,
      pow: `Decimal.pow(2, 100).toFixed()`,
      exp:
        `new Decimal("1e-7").toString() + " " + new Decimal(123.456).toExponential(2)`,
    },
  },
  {
    name: "fast-xml-parser",
    version: "5.12.1",
    imports:
      `import { XMLBuilder, XMLParser, XMLValidator } from "fast-xml-parser";`,
    calls: {
      parse:
        `new XMLParser({ ignoreAttributes: false }).parse('<r a="1"><x>2</x><x>t</x><y/></r>')`,
      validate: `XMLValidator.validate("<a><b></a>")`,
      build:
        `new XMLBuilder({ format: false }).build({ r: { x: [1, 2], "@_a": "v" } })`,
    },
  },
];

/**
 * The module both sides run: the imports (with `from` rewritten by
 * `specifier`), then every call, each through JSON and caught on its own.
 */
export function callModule(
  table: PackageCalls,
  specifier: (imported: string) => string,
): string {
  const imports = table.imports.replace(
    /from "([^"]+)"/g,
    (_, imported: string) => `from ${JSON.stringify(specifier(imported))}`,
  );
  const calls = Object.entries(table.calls).map(([name, expression]) =>
    `try { out[${
      JSON.stringify(name)
    }] = JSON.parse(JSON.stringify(${expression}) ?? "null"); } catch (error) { out[${
      JSON.stringify(name)
    }] = { threw: String(error && error.name) }; }`
  ).join("\n");
  return `${imports}\nconst out = {};\n${calls}\nexport default out;\n`;
}
