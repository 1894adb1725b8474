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
  /**
   * Calls whose sandbox result differs from plain Deno by design: call
   * name to the sandbox's result, and why. The test holds the sandbox to
   * exactly that value, and plain Deno to not throwing.
   */
  differs?: Record<string, { sandbox: unknown; why: string }>;
}

/** The packages of the differential test. */
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
      `import { camelCase, chunk, cloneDeep, debounce, groupBy, isEqual, merge, sortBy, template } from "lodash-es";`,
    calls: {
      chunk: `chunk([1, 2, 3, 4, 5], 2)`,
      groupBy: `groupBy([1.3, 2.1, 2.4], Math.floor)`,
      camelCase: `camelCase("Foo Bar-baz")`,
      merge: `merge({ a: [{ b: 1 }] }, { a: [{ c: 2 }] })`,
      template: `template("hi <%= name %>")({ name: "ada" })`,
      debounced: `typeof debounce(() => 1, 10)`,
      sortBy:
        `sortBy([{ n: "b", a: 2 }, { n: "a", a: 2 }, { n: "c", a: 1 }], ["a", "n"]).map((o) => o.n)`,
      isEqual:
        `[isEqual({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] }), isEqual([1], [2])]`,
      cloneDeep:
        `(() => { const o = { a: { b: [1, 2] } }; const c = cloneDeep(o); c.a.b.push(3); return [o, c]; })()`,
    },
    differs: {
      template: {
        sandbox: { threw: "EvalError" },
        why:
          "lodash's template compiles with the Function constructor, and code generation from strings is denied",
      },
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
    imports: `import { z } from "zod";
import { z as z3 } from "zod/v3";`,
    calls: {
      success:
        `z.object({ a: z.string(), n: z.number().int() }).parse({ a: "x", n: 2, extra: 1 })`,
      failure:
        `z.object({ a: z.string(), n: z.number().int() }).safeParse({ a: 1, n: 1.5 }).error.issues.map((i) => i.code)`,
      issues:
        `z.object({ tags: z.array(z.string().min(2)), email: z.email() }).safeParse({ tags: ["ok", "x"], email: "nope" }).error.issues.map((i) => [i.path, i.code, i.message])`,
      transform:
        `z.string().transform((s) => s.length).pipe(z.number().max(3)).safeParse("hello").success`,
      jsonSchema:
        `z.toJSONSchema(z.object({ a: z.string(), b: z.number().optional() }))`,
      v3:
        `z3.object({ a: z3.string() }).safeParse({ a: 1 }).error.issues[0].code`,
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
  {
    name: "nanoid",
    version: "6.0.2",
    imports:
      `import { customAlphabet, customRandom, urlAlphabet } from "nanoid";`,
    calls: {
      alphabet: `urlAlphabet`,
      customRandom:
        `customRandom("abcdef", 12, (size) => new Uint8Array(size).map((_, i) => i * 37 + 5))()`,
      // Random ids (crypto.getRandomValues): the shape only.
      customAlphabet:
        `(() => { try { return /^[xy]{8}$/.test(customAlphabet("xy", 8)()); } catch (e) { return e.name; } })()`,
    },
  },
  {
    name: "uuid",
    version: "14.0.3",
    imports:
      `import { NIL, parse, stringify, v1, v3, v4, v5, v7, validate, version } from "uuid";`,
    calls: {
      // crypto.getRandomValues and crypto.randomUUID: the shape only.
      v4:
        `[v4(), v4({ random: new Uint8Array(16) })].map((id) => /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(id))`,
      v5: `v5("cordon", v5.URL)`,
      v3: `v3("cordon", v3.DNS)`,
      v1:
        `v1({ msecs: 1700000000000, nsecs: 42, clockseq: 0x1234, node: [1, 2, 3, 4, 5, 6], random: new Uint8Array(16) })`,
      v7:
        `v7({ msecs: 1700000000000, random: new Uint8Array(16).map((_, i) => i * 13) })`,
      validate:
        `[validate(NIL), validate("not-a-uuid"), version("6ba7b810-9dad-11d1-80b4-00c04fd430c8")]`,
      roundTrip: `stringify(parse("6ba7b810-9dad-11d1-80b4-00c04fd430c8"))`,
    },
  },
  {
    name: "valibot",
    version: "1.5.0",
    imports: `import * as v from "valibot";`,
    calls: {
      parse:
        `v.parse(v.object({ name: v.pipe(v.string(), v.trim(), v.minLength(2)), age: v.optional(v.number(), 7) }), { name: "  ada ", extra: 1 })`,
      issues:
        `v.safeParse(v.object({ email: v.pipe(v.string(), v.email()), n: v.pipe(v.number(), v.integer()) }), { email: "x", n: 1.5 }).issues.map((i) => [i.type, i.message, v.getDotPath(i)])`,
      flatten:
        `v.flatten(v.safeParse(v.array(v.picklist(["a", "b"])), ["a", "c"]).issues)`,
    },
  },
  {
    name: "superstruct",
    version: "2.0.2",
    imports:
      `import { array, assert, create, defaulted, number, object, optional, string, validate } from "superstruct";`,
    calls: {
      valid:
        `validate({ a: "x", n: [1, 2] }, object({ a: string(), n: array(number()) }))[1]`,
      invalid:
        `(() => { const [error] = validate({ a: 1 }, object({ a: string(), b: optional(number()) })); return [error.message, error.failures().map((f) => f.path)]; })()`,
      coerce: `create({}, object({ n: defaulted(number(), 3) }))`,
      assert:
        `(() => { try { assert("x", number()); return "passed"; } catch (e) { return e.name + ": " + e.message; } })()`,
    },
  },
  {
    name: "preact",
    version: "11.2.0",
    imports:
      `import { cloneElement, createRef, Fragment, h, isValidElement, toChildArray } from "preact";`,
    calls: {
      props:
        `h("a", { href: "/x", key: "k" }, "one", h("b", null, 2)).props.children.length`,
      key: `h("a", { key: "k", id: 1 }).key`,
      valid: `[isValidElement(h("a")), isValidElement({})]`,
      children:
        `toChildArray([h("i"), [null, "text", [h(Fragment, null, "f")]], false]).map((c) => typeof c === "string" ? c : typeof c.type)`,
      clone: `cloneElement(h("a", { id: 1, c: 2 }), { id: 3 }).props`,
      ref: `createRef()`,
    },
  },
  {
    name: "ramda",
    version: "0.32.0",
    imports: `import * as R from "ramda";`,
    calls: {
      pipe:
        `R.pipe(R.filter((n) => n % 2), R.map((n) => n * n), R.sum)([1, 2, 3, 4, 5])`,
      groupBy: `R.groupBy((s) => s.length, ["a", "bb", "cc", "d"])`,
      lens: `R.over(R.lensPath(["a", "b"]), R.inc, { a: { b: 1, c: 2 } })`,
      curry: `R.curry((a, b, c) => a + b * c)(1)(2)(3)`,
      sortWith:
        `R.sortWith([R.descend(R.prop("a")), R.ascend(R.prop("b"))], [{ a: 1, b: 2 }, { a: 2, b: 9 }, { a: 1, b: 1 }])`,
      equals:
        `[R.equals({ a: [1, new Date(0)] }, { a: [1, new Date(0)] }), R.equals(NaN, NaN)]`,
    },
  },
  {
    name: "fast-deep-equal",
    version: "3.1.3",
    imports: `import equal from "fast-deep-equal";`,
    calls: {
      equal:
        `[equal({ a: [1, { b: /x/g }] }, { a: [1, { b: /x/g }] }), equal({ a: 1 }, { a: 1, b: undefined }), equal(new Date(1), new Date(1))]`,
    },
  },
  {
    name: "semver",
    version: "7.8.6",
    imports: `import semver from "semver";`,
    calls: {
      satisfies:
        `[semver.satisfies("1.2.3", "^1.0.0"), semver.satisfies("2.0.0-rc.1", ">=1.0.0"), semver.satisfies("2.0.0-rc.1", ">=1.0.0", { includePrerelease: true })]`,
      maxSatisfying:
        `semver.maxSatisfying(["1.2.3", "1.3.0", "2.0.0", "1.10.1"], "~1.3 || ^1.10")`,
      sort: `semver.sort(["1.10.0", "1.2.0", "1.2.0-beta.1", "0.9.9"])`,
      inc:
        `[semver.inc("1.2.3", "minor"), semver.inc("1.2.3-alpha.1", "prerelease")]`,
      coerce: `semver.coerce("v2.3 beta").version`,
      range: `new semver.Range(">=1.2 <2 || 3.x").range`,
      invalid: `semver.valid("nope")`,
    },
  },
  {
    // Its dependency tree has a file its browser field disables: the
    // bundler names it in a comment holding a NUL, which would end the
    // module for QuickJS if the packer kept it.
    name: "qs",
    version: "6.17.1",
    imports: `import qs from "qs";`,
    calls: {
      parse: `qs.parse("a[b]=c&d=1&d=2&e[]=x&f[g][h]=i")`,
      stringify:
        `qs.stringify({ a: [1, 2], b: { c: "x y" } }, { encodeValuesOnly: true })`,
      depth: `qs.parse("a[b][c][d][e][f][g]=1", { depth: 2 })`,
      arrays: `qs.stringify({ a: ["b", "c"] }, { arrayFormat: "brackets" })`,
    },
  },
  {
    // Its main entry bundles linkify-it, whose JSDoc shows
    // `require('tlds')`: text in a comment, not a call.
    name: "markdown-it",
    version: "15.0.3",
    imports: `import MarkdownIt from "markdown-it";`,
    calls: {
      render:
        `new MarkdownIt().render("# hi\\n\\n*a* **b** [x](http://y.z) \\\`c\\\`\\n\\n- one\\n- two")`,
      linkify:
        `new MarkdownIt({ linkify: true }).render("visit https://example.com/a?b=c now")`,
      inline: `new MarkdownIt().renderInline("__x__ <b> &amp;")`,
    },
  },
  {
    // Encodes and decodes strings with TextEncoder and TextDecoder.
    name: "@msgpack/msgpack",
    version: "3.1.3",
    imports: `import { decode, encode } from "@msgpack/msgpack";`,
    calls: {
      encode:
        `Array.from(encode({ a: [1, -2, 3.5, null, true], s: "h\u00e9 \u2713 \ud83c\udf89", n: 2 ** 40, b: new Uint8Array([1, 2]) }))`,
      roundTrip:
        `decode(encode({ text: "x".repeat(300) + "\u00e9", list: [{}, [], ""], big: -(2 ** 33) }))`,
      invalid:
        `(() => { try { return decode(new Uint8Array([0xd9, 0x02, 0xff, 0xfe])); } catch (e) { return e.name; } })()`,
    },
  },
  {
    // A CommonJS module: Node and Deno offer its exports' properties as
    // named imports, and so does its pack.
    name: "sprintf-js",
    version: "1.1.3",
    imports: `import { sprintf, vsprintf } from "sprintf-js";`,
    calls: {
      sprintf:
        `sprintf("%05.2f|%s|%d|%x|%o|%e|%+d|%-5s|%'*8s|%j", 3.14159, "a", 42, 255, 8, 12345.678, 3, "ab", "pad", { a: [1] })`,
      named: `sprintf("%(who)s is %(age)d", { who: "ada", age: 36 })`,
      vsprintf: `vsprintf("%2$s %1$s", ["world", "hello"])`,
    },
  },
  {
    // Named imports from a CommonJS subpath (lib/function.js) beside the
    // ES module main entry.
    name: "fp-ts",
    version: "2.16.11",
    subpaths: [".", "./lib/function.js"],
    imports: `import { array as A, either as E, option as O } from "fp-ts";
import { flow, pipe } from "fp-ts/lib/function.js";`,
    calls: {
      pipe:
        `pipe([1, 2, 3, 4], A.map((n) => n * 3), A.filter((n) => n % 2 === 0))`,
      option:
        `[pipe(O.some(2), O.map((n) => n + 1), O.getOrElse(() => 0)), pipe(O.none, O.getOrElse(() => -1))]`,
      either:
        `pipe(E.tryCatch(() => JSON.parse("{"), () => "bad json"), E.fold((e) => e, (v) => v))`,
      flow: `flow((s) => s.trim(), (s) => s.length)("  abc ")`,
      sequence: `A.sequence(O.Applicative)([O.some(1), O.some(2)])`,
    },
  },
  {
    // Its browser field maps crypto to false: the pack has no require of
    // it, and random salts come from crypto.getRandomValues.
    name: "crypto-js",
    version: "4.2.0",
    imports: `import CryptoJS from "crypto-js";`,
    calls: {
      sha256: `CryptoJS.SHA256("abc").toString()`,
      hmac: `CryptoJS.HmacSHA512("message", "key").toString()`,
      md5: `CryptoJS.MD5("h\u00e9llo").toString(CryptoJS.enc.Base64)`,
      pbkdf2:
        `CryptoJS.PBKDF2("pw", "salt", { keySize: 4, iterations: 10 }).toString()`,
      aes:
        `CryptoJS.AES.decrypt(CryptoJS.AES.encrypt("secret \u2713", "pw").toString(), "pw").toString(CryptoJS.enc.Utf8)`,
    },
  },
  {
    // Compression over typed arrays.
    name: "fflate",
    version: "0.8.3",
    imports:
      `import { deflateSync, gunzipSync, gzipSync, inflateSync, strFromU8, strToU8, unzipSync, zipSync } from "fflate";`,
    calls: {
      deflate: `Array.from(deflateSync(strToU8("hello ".repeat(20))))`,
      inflate:
        `strFromU8(inflateSync(deflateSync(strToU8("h\u00e9llo \u2713 ".repeat(50)), { level: 9 })))`,
      gzip:
        `Array.from(gunzipSync(gzipSync(new Uint8Array([1, 2, 3, 250]), { mtime: 0 })))`,
      zip:
        `Object.entries(unzipSync(zipSync({ "a.txt": strToU8("x"), "d/b.txt": strToU8("yy") }, { mtime: new Date(2020, 0, 1) }))).map(([k, v]) => [k, v.length])`,
    },
  },
  {
    // A template engine that needs no code generation.
    name: "mustache",
    version: "4.2.0",
    imports: `import Mustache from "mustache";`,
    calls: {
      render:
        `Mustache.render("Hi {{name}}! {{#items}}<{{.}}>{{/items}}{{^none}}empty{{/none}} {{&raw}} {{esc}}", { name: "ada", items: [1, 2], none: [], raw: "<b>", esc: "<i a='1'>" })`,
      partials:
        `Mustache.render("{{>row}}/{{>row}}", { n: 3 }, { row: "[{{n}}]" })`,
      parse: `Mustache.parse("a {{b}} {{#c}}d{{/c}}").map((t) => t[0])`,
    },
  },
  {
    // Its constructor measures the alphabet with `new Blob([alphabet]).size`.
    // (arktype is not here: @ark/util reads FormData, Headers, Request and
    // Response at load time, which no QuickJS realm has.)
    name: "sqids",
    version: "0.3.0",
    imports: `import Sqids from "sqids";`,
    calls: {
      encode: `new Sqids().encode([1, 2, 3])`,
      decode: `new Sqids().decode("86Rf07")`,
      options:
        `(() => { const s = new Sqids({ alphabet: "k3G7QAe51FCsPW92uEOyq4Bg6Sp8YzVTmnU0liwDdHXLajZrfxNhobJIRcMvKt", minLength: 12 }); return [s.encode([7, 0, 42]), s.decode(s.encode([7, 0, 42]))]; })()`,
      blocklist:
        `(() => { const s = new Sqids({ blocklist: new Set(["86Rf07"]) }); return [s.encode([1, 2, 3]), s.decode(s.encode([1, 2, 3]))]; })()`,
      multibyte:
        `(() => { try { new Sqids({ alphabet: "abcdefgh\u00e9" }); return "made"; } catch (e) { return e.message; } })()`,
    },
  },
  {
    // Its errors call Error.captureStackTrace; its status texts come from
    // a JSON file of its dependency statuses.
    name: "http-errors",
    version: "2.0.1",
    imports: `import createError from "http-errors";`,
    calls: {
      notFound:
        `(() => { const e = createError(404, "nope", { id: 7 }); return [e.name, e.message, e.status, e.expose, e.id, e instanceof Error, e instanceof createError.HttpError, typeof e.stack]; })()`,
      named:
        `(() => { const e = new createError.ImATeapot(); return [e.name, e.message, e.statusCode, Object.prototype.toString.call(e)]; })()`,
      server:
        `(() => { const e = createError(503); return [e.name, e.message, e.expose, e instanceof createError.ServiceUnavailable]; })()`,
    },
  },
  {
    // Uses Uint8Array.prototype.toBase64 / toHex and Uint8Array.fromBase64
    // / fromHex when the realm has them.
    name: "@scure/base",
    version: "2.4.0",
    imports:
      `import { base64, base64url, base58, base32, bech32, hex, utf8 } from "@scure/base";`,
    calls: {
      base64: `base64.encode(utf8.decode("héllo wörld"))`,
      base64Back: `utf8.encode(base64.decode("aMOpbGxvIHfDtnJsZA=="))`,
      base64url: `base64url.encode(new Uint8Array([251, 255, 191]))`,
      badBase64:
        `(() => { try { base64.decode("@@=="); return "decoded"; } catch (e) { return e.name; } })()`,
      hex:
        `[hex.encode(Uint8Array.from([1, 171, 255])), Array.from(hex.decode("00fF10"))]`,
      base58: `base58.encode(Uint8Array.from([0, 0, 1, 2, 3]))`,
      base32: `base32.encode(utf8.decode("foo"))`,
      bech32: `bech32.encode("bc", bech32.toWords(Uint8Array.from([1, 2, 3])))`,
    },
  },
  {
    // `./vanilla` is exported through the pattern `./*`.
    name: "zustand",
    version: "5.1.0",
    subpaths: ["./vanilla"],
    imports: `import { createStore } from "zustand/vanilla";`,
    calls: {
      store:
        `(() => { const s = createStore((set) => ({ n: 1, inc: () => set((st) => ({ n: st.n + 1 })) })); const seen = []; s.subscribe((st, prev) => seen.push([st.n, prev.n])); s.getState().inc(); s.getState().inc(); return [s.getState().n, seen]; })()`,
      replace:
        `(() => { const s = createStore(() => ({ a: 1, b: 2 })); s.setState({ a: 9 }); const merged = s.getState(); s.setState({ c: 3 }, true); return [merged, s.getState()]; })()`,
    },
  },
  {
    // The bundler renames its class Matrix, and toString() prints
    // constructor.name.
    name: "ml-matrix",
    version: "6.15.1",
    imports:
      `import { Matrix, inverse, solve, EigenvalueDecomposition } from "ml-matrix";`,
    calls: {
      name: `[Matrix.name, new Matrix([[1, 2]]).toString()]`,
      mmul:
        `new Matrix([[1, 2], [3, 4]]).mmul(new Matrix([[5], [6]])).to2DArray()`,
      inverse:
        `inverse(new Matrix([[4, 7], [2, 6]])).to2DArray().map((r) => r.map((x) => Math.round(x * 1e6) / 1e6))`,
      solve:
        `solve(new Matrix([[2, 1], [1, 3]]), Matrix.columnVector([3, 5])).to1DArray().map((x) => Math.round(x * 1e6) / 1e6)`,
      eigen:
        `new EigenvalueDecomposition(new Matrix([[2, 0], [0, 3]])).realEigenvalues`,
    },
  },
  {
    // Its browser build bundles core-js 2, which replaces
    // Function.prototype.toString and fails on the frozen built-in: the pack
    // has its module build. (Deno imports its CommonJS main.)
    name: "json5",
    version: "2.2.3",
    imports: `import JSON5 from "json5";`,
    calls: {
      parse:
        `JSON5.parse("{a:1, b:'x', c:[1,2,], // c\\n d: +Infinity, e: 0x1F, f: .5, 'g-h': \\"\\\\u00e9\\"}")`,
      stringify:
        `JSON5.stringify({ a: 1, "b-c": [1, "x'y"], d: { e: null } }, null, 2)`,
      error:
        `(() => { try { JSON5.parse("{a:"); } catch (e) { return [e.name, e.message, e.lineNumber, e.columnNumber]; } })()`,
    },
  },
  {
    // Built with @babel/runtime-corejs3: core-js 3 keeps its state in a
    // WeakMap it guards with \`store.get = store.get\`, and defines
    // Function.prototype[Symbol.metadata] when it is missing.
    name: "xregexp",
    version: "5.1.3",
    imports: `import XRegExp from "xregexp";`,
    calls: {
      named:
        `XRegExp.exec("2024-02-29", XRegExp("(?<y>\\\\d{4})-(?<m>\\\\d{2})")).groups`,
      unicode:
        `[XRegExp("^\\\\p{L}+$").test("h\u00e9llo"), XRegExp("^\\\\p{Han}+$").test("\u6f22\u5b57")]`,
      replace:
        `XRegExp.replace("John Smith", XRegExp("(?<first>\\\\w+) (?<last>\\\\w+)"), "$<last>, $<first>")`,
      free:
        `XRegExp.match("a1 b22 c333", XRegExp("\\\\d+ # digits", "x"), "all")`,
    },
  },
  {
    // Subpaths named with their .js, and bigint arithmetic.
    name: "@noble/hashes",
    version: "2.4.0",
    subpaths: [
      "./sha2.js",
      "./sha3.js",
      "./hmac.js",
      "./scrypt.js",
      "./blake3.js",
      "./utils.js",
    ],
    imports: `import { sha256, sha512 } from "@noble/hashes/sha2.js";
import { sha3_256, keccak_256 } from "@noble/hashes/sha3.js";
import { hmac } from "@noble/hashes/hmac.js";
import { scrypt } from "@noble/hashes/scrypt.js";
import { blake3 } from "@noble/hashes/blake3.js";
import { bytesToHex, randomBytes, utf8ToBytes } from "@noble/hashes/utils.js";`,
    calls: {
      sha2:
        `[bytesToHex(sha256(utf8ToBytes("abc"))), bytesToHex(sha512(utf8ToBytes("")))]`,
      sha3:
        `[bytesToHex(sha3_256(utf8ToBytes("abc"))), bytesToHex(keccak_256(utf8ToBytes("")))]`,
      hmac:
        `bytesToHex(hmac(sha256, utf8ToBytes("key"), utf8ToBytes("message")))`,
      scrypt:
        `bytesToHex(scrypt("pw", "salt", { N: 16, r: 1, p: 1, dkLen: 16 }))`,
      blake3: `bytesToHex(blake3(utf8ToBytes("abc"), { dkLen: 16 }))`,
      random: `randomBytes(8).length`,
    },
  },
  {
    // Probes the Function constructor to generate record readers and
    // falls back when it throws (a note at pack time).
    name: "msgpackr",
    version: "2.1.3",
    imports: `import { pack, unpack, Packr } from "msgpackr";`,
    calls: {
      pack:
        `Array.from(pack({ a: [1, -2, 3.5, null, true], s: "h\u00e9 \u2713", n: 2 ** 40 }))`,
      roundTrip:
        `unpack(pack({ text: "x".repeat(300) + "\u00e9", list: [{}, [], ""], big: -(2 ** 33), d: new Date(0) }))`,
      records:
        `(() => { const p = new Packr({ useRecords: true }); const out = []; for (let i = 0; i < 5; i++) out.push(p.unpack(p.pack({ a: i, b: "x" }))); return out; })()`,
    },
  },
  {
    name: "immutable",
    version: "5.2.1",
    imports: `import * as Immutable from "immutable";`,
    calls: {
      map: `Immutable.Map({ a: 1, b: 2 }).set("c", 3).delete("a").toJS()`,
      list:
        `Immutable.List([1, 2, 3]).push(4).map((x) => x * 2).filter((x) => x > 2).toArray()`,
      fromJS:
        `Immutable.fromJS({ a: { b: [1, 2] } }).setIn(["a", "b", 0], 9).updateIn(["a", "c"], () => "new").toJS()`,
      equality:
        `[Immutable.is(Immutable.Map({ a: Immutable.List([1]) }), Immutable.Map({ a: Immutable.List([1]) })), Immutable.Set([1, 2, 2]).size, Immutable.Map({ x: 1 }).hashCode() === Immutable.Map({ x: 1 }).hashCode()]`,
      record:
        `(() => { const P = Immutable.Record({ x: 0, y: 0 }, "Point"); return [new P({ x: 3 }).toString(), new P().set("y", 2).toJS()]; })()`,
    },
  },
  {
    name: "htmlparser2",
    version: "12.0.0",
    subpaths: ["."],
    imports: `import { Parser, parseDocument } from "htmlparser2";`,
    calls: {
      parser:
        `(() => { const seen = []; const p = new Parser({ onopentag: (n, a) => seen.push(["open", n, a]), ontext: (t) => seen.push(["text", t]), onclosetag: (n) => seen.push(["close", n]) }, { decodeEntities: true }); p.write("<p class='x'>a &amp; &eacute; <b>b</b><br>"); p.end(); return seen; })()`,
      document:
        `parseDocument("<div><p>x</p><!-- c --><p>y</p></div>").children[0].children.map((c) => c.type)`,
      xml:
        `parseDocument("<a><b c='1'/>t</a>", { xmlMode: true }).children[0].children.map((c) => [c.type, c.name ?? c.data, c.attribs ?? null])`,
    },
  },
  {
    name: "yup",
    version: "1.7.1",
    imports: `import { array, number, object, string } from "yup";`,
    calls: {
      valid:
        `object({ name: string().required().trim(), age: number().integer().default(7), tags: array(string()) }).validateSync({ name: " ada ", tags: ["x"] })`,
      invalid:
        `(() => { try { object({ name: string().required(), email: string().email() }).validateSync({ email: "x" }, { abortEarly: false }); } catch (e) { return [e.name, e.errors]; } })()`,
      cast:
        `object({ n: number(), d: string().default("x") }).cast({ n: "5" })`,
      path:
        `(() => { try { object({ a: object({ b: number().min(3) }) }).validateSync({ a: { b: 1 } }); } catch (e) { return [e.path, e.message]; } })()`,
    },
  },
  {
    // get-intrinsic reads String.prototype.valueOf by its descriptor: the
    // sandbox's tamed getter names the method as its originalValue.
    name: "is-string",
    version: "1.1.1",
    imports: `import isString from "is-string";`,
    calls: {
      checks:
        `[isString("x"), isString(Object("x")), isString({}), isString({ [Symbol.toStringTag]: "String" }), isString(1), isString(null)]`,
    },
  },
  {
    // Its entity decoder's browser build needs the DOM; the packer takes
    // the dependency's worker build.
    name: "micromark",
    version: "4.0.3",
    subpaths: ["."],
    imports: `import { micromark } from "micromark";`,
    calls: {
      html:
        `micromark("# Hi *there* &amp; &copy;\\n\\n- a\\n- [b](http://x.y)\\n\\n    code")`,
      escaped: `micromark("<b>x</b> &notin; &#x1D306;")`,
    },
  },
  {
    // joi sets Error.stackTraceLimit to 0 around the errors it makes.
    name: "joi",
    version: "18.3.2",
    imports: `import Joi from "joi";`,
    calls: {
      valid:
        `Joi.object({ a: Joi.string().min(2).required(), b: Joi.number().integer() }).validate({ a: "xy", b: "5" })`,
      invalid:
        `Joi.object({ a: Joi.string().email(), n: Joi.number().max(3) }).validate({ a: "no", n: 9 }, { abortEarly: false }).error.details.map((d) => [d.message, d.type])`,
      alternatives:
        `Joi.alternatives().try(Joi.number(), Joi.boolean()).validate("true").value`,
    },
  },
  {
    name: "esprima",
    version: "4.0.1",
    imports: `import esprima from "esprima";`,
    calls: {
      tokenize:
        `esprima.tokenize("const answer = 42").map((t) => t.type + ":" + t.value)`,
      parse:
        `esprima.parseScript("var x = 1 + 2;", { range: true }).body[0].declarations[0].init`,
      error:
        `(() => { try { esprima.parseScript("var = ;"); } catch (e) { return [e.message, e.index]; } })()`,
    },
  },
  {
    name: "postcss",
    version: "8.5.34",
    imports: `import postcss from "postcss";`,
    calls: {
      parse:
        `postcss.parse("a { color: red; margin: 0 } @media (x) { b { c: d } }").nodes.map((n) => n.type + ":" + (n.selector ?? n.name))`,
      walk:
        `(() => { const root = postcss.parse("a{color:red}b{color:blue}"); root.walkDecls((d) => { d.value = d.value.toUpperCase(); }); return root.toString(); })()`,
      error:
        `(() => { try { postcss.parse("a {"); } catch (e) { return [e.name, e.reason, e.line]; } })()`,
    },
  },
  {
    name: "css-tree",
    version: "3.2.1",
    subpaths: ["."],
    imports: `import * as csstree from "css-tree";`,
    calls: {
      generate:
        `csstree.generate(csstree.parse(".a > b { color: red !important; width: calc(1px + 2em) }"))`,
      lexer:
        `csstree.lexer.matchProperty("color", csstree.parse("red", { context: "value" })).error === null`,
    },
  },
  {
    name: "bson",
    version: "7.3.4",
    imports: `import { BSON, Long, ObjectId } from "bson";`,
    calls: {
      roundtrip:
        `(() => { const b = BSON.serialize({ a: 1, s: "x", n: null, l: Long.fromNumber(5) }); return [b.length, BSON.deserialize(b)]; })()`,
      objectId: `new ObjectId("65a1b2c3d4e5f60718293a4b").toHexString()`,
      ejson:
        `BSON.EJSON.stringify({ d: new Date(0), i: new BSON.Int32(3) }, { relaxed: false })`,
    },
  },
  {
    name: "xstate",
    version: "5.33.3",
    imports: `import { assign, createActor, createMachine } from "xstate";`,
    calls: {
      machine:
        `(() => { const m = createMachine({ initial: "off", context: { n: 0 }, states: { off: { on: { T: { target: "on", actions: assign({ n: ({ context }) => context.n + 1 }) } } }, on: { on: { T: "off" } } } }); const a = createActor(m).start(); a.send({ type: "T" }); a.send({ type: "T" }); a.send({ type: "T" }); return [a.getSnapshot().value, a.getSnapshot().context]; })()`,
    },
  },
  {
    name: "mobx",
    version: "7.1.3",
    imports:
      `import { autorun, computed, observable, runInAction } from "mobx";`,
    calls: {
      autorun:
        `(() => { const o = observable({ a: 1, get d() { return this.a * 2; } }); const seen = []; autorun(() => seen.push(o.d)); runInAction(() => { o.a = 5; }); return seen; })()`,
      computed:
        `(() => { const b = observable.box(3); const c = computed(() => b.get() ** 2); return c.get(); })()`,
    },
  },
  {
    // A CommonJS entry whose bundle ends with licence comments, imported
    // as a namespace: Node's names, "module.exports" among them.
    name: "scheduler",
    version: "0.28.0",
    imports: `import * as scheduler from "scheduler";`,
    calls: {
      priorities:
        `[scheduler.unstable_ImmediatePriority, scheduler.unstable_NormalPriority, scheduler.unstable_getCurrentPriorityLevel()]`,
      run:
        `scheduler.unstable_runWithPriority(1, () => scheduler.unstable_getCurrentPriorityLevel())`,
      whole:
        `[scheduler["module.exports"] === scheduler.default, typeof scheduler.unstable_now()]`,
    },
  },
  {
    // exports with nested conditions (node.production, module, import),
    // process.env.NODE_ENV in its bundler build, a dependency.
    name: "@vue/reactivity",
    version: "3.5.45",
    imports:
      `import { computed, effect, reactive, ref } from "@vue/reactivity";`,
    calls: {
      computed:
        `(() => { const s = reactive({ a: 1 }); const c = computed(() => s.a * 2); s.a = 5; return c.value; })()`,
      effect:
        `(() => { const r = ref(0); const seen = []; effect(() => seen.push(r.value)); r.value = 2; r.value = 3; return seen; })()`,
    },
  },
  {
    // The imports field: #ansi-styles, and #supports-color by condition.
    name: "chalk",
    version: "6.0.1",
    imports: `import { Chalk } from "chalk";`,
    calls: {
      styles: `new Chalk({ level: 1 }).red.bold("x")`,
      hex: `new Chalk({ level: 3 }).hex("#ff8800")("y")`,
    },
  },
  {
    // A JSON module imported with { type: "json" }.
    name: "binary-extensions",
    version: "3.2.0",
    imports: `import binaryExtensions from "binary-extensions";`,
    calls: {
      has:
        `[binaryExtensions.includes("png"), binaryExtensions.includes("txt"), binaryExtensions.length > 100]`,
    },
  },
  {
    // CommonJS with \`this\` at top level, an optional require("crypto") in
    // a try block and a browser field mapping crypto to false.
    name: "seedrandom",
    version: "3.0.5",
    imports: `import seedrandom from "seedrandom";`,
    calls: {
      seeded: `[seedrandom("hello")(), seedrandom("hello").int32()]`,
      alea: `seedrandom.alea("x")()`,
    },
  },
  {
    // CommonJS modules that require each other in a cycle; main without
    // an extension.
    name: "xmlbuilder",
    version: "15.1.1",
    imports: `import builder from "xmlbuilder";`,
    calls: {
      build:
        `builder.create("root", { headless: true }).ele("a", { x: 1 }, "t").up().ele("b").txt("<&>").end({ pretty: false })`,
      fromObject:
        `builder.create({ r: { "@id": 2, item: ["p", "q"] } }).end({ pretty: false })`,
    },
  },
  {
    // Survey 7: its rolldown runtime chunk opens with import "node:module".
    name: "confbox",
    version: "0.2.4",
    imports:
      `import { parseINI, parseJSON5, parseJSONC, parseTOML, parseYAML, stringifyYAML } from "confbox";`,
    calls: {
      yaml:
        `[parseYAML("a: 1\\nb: [x, y]\\nc:\\n  d: true\\n"), stringifyYAML({ a: [1, { b: "x" }] })]`,
      toml: `parseTOML('title = "t"\\n[owner]\\nnums = [1, 2]\\n')`,
      ini: `parseINI("; c\\n[db]\\nhost = localhost\\nport = 5432\\n")`,
      jsonc:
        `[parseJSONC('{ "a": 1, /* c */ "b": [1,], }'), parseJSON5("{ a: 0x10, b: 'x', }")]`,
    },
  },
  {
    // Survey 7: it depends on "@messageformat/date-skeleton": "2.0.0-0".
    name: "@messageformat/core",
    version: "3.4.1",
    imports: `import MessageFormat from "@messageformat/core";`,
    calls: {
      compile:
        `new MessageFormat("en").compile("{count, plural, one {# file} other {# files}}")({ count: 3 })`,
      options:
        `(() => { const o = new MessageFormat(["ru", "en"], { currency: "EUR" }).resolvedOptions(); return [o.locale, o.currency, Object.keys(o.plurals)]; })()`,
      locales: `MessageFormat.supportedLocalesOf(["ru", "fr-CA", "xx"])`,
      escape: `MessageFormat.escape("{a}#", true)`,
    },
    differs: {
      compile: {
        sandbox: { threw: "EvalError" },
        why:
          "compile() turns the message into JavaScript source and runs it with the Function constructor",
      },
    },
  },
  {
    // Survey 7: its browser field names a browserify build.
    name: "object-hash",
    version: "3.0.0",
    imports: `import hash from "object-hash";`,
    calls: {
      sha1: `hash({ a: 1, b: [1, 2], c: { d: "x" } })`,
      md5: `hash({ a: 1 }, { algorithm: "md5" })`,
      order: `hash({ a: 1, b: 2 }) === hash({ b: 2, a: 1 })`,
      sha256: `hash({ d: new Date(0) }, { algorithm: "sha256" })`,
      keys: `hash.keys({ x: 1 })`,
    },
    differs: {
      sha1: {
        sandbox: "e2688d84fbc0640a857a96decdd9c1b5809a4ff5",
        why:
          "it hashes each object's __proto__, which Deno removes from Object.prototype; the sandbox gives Node's hash",
      },
      md5: {
        sandbox: "0c03d484168a6a3ce1eb52fa025eff39",
        why: "the same __proto__ read; Node's hash",
      },
      sha256: {
        sandbox: { threw: "Error" },
        why:
          "its browser build hashes with sha1 and md5 only, and says so; Deno runs its Node build on node:crypto",
      },
    },
  },
  {
    // Survey 7: Intl, which the QuickJS realms lack.
    name: "i18next",
    version: "25.10.10",
    imports: `import i18next from "i18next";`,
    calls: {
      english:
        `await (async () => { const i = i18next.createInstance(); await i.init({ lng: "en", showSupportNotice: false, resources: { en: { translation: { hi: "Hello {{name}}", nested: "$t(hi) again", item_one: "{{count}} item", item_other: "{{count}} items" } } } }); return [i.t("hi", { name: "Ada" }), i.t("nested", { name: "Bo" }), i.t("item", { count: 1 }), i.t("item", { count: 5 })]; })()`,
      russian:
        `await (async () => { const i = i18next.createInstance(); await i.init({ lng: "ru", showSupportNotice: false, resources: { ru: { translation: { f_one: "{{count}} файл", f_few: "{{count}} файла", f_many: "{{count}} файлов", f_other: "{{count}} файла" } } } }); return [1, 2, 5, 21].map((count) => i.t("f", { count })); })()`,
    },
    differs: {
      russian: {
        sandbox: ["1 файл", "2 файла", "5 файла", "21 файла"],
        why:
          "without Intl.PluralRules i18next falls back to one and other, so Russian's few and many forms are lost",
      },
    },
  },
  {
    // Survey 7: Number.prototype.toLocaleString without Intl.
    name: "pretty-bytes",
    version: "7.2.0",
    imports: `import prettyBytes from "pretty-bytes";`,
    calls: {
      plain:
        `[prettyBytes(1337), prettyBytes(100), prettyBytes(1e12, { bits: true }), prettyBytes(-1234567, { binary: true })]`,
      digits: `prettyBytes(1536, { maximumFractionDigits: 1 })`,
      locale: `prettyBytes(1337, { locale: "de" })`,
    },
    differs: {
      digits: {
        sandbox: "1.536 kB",
        why:
          "QuickJS's toLocaleString ignores its locale and options (it has no Intl)",
      },
      locale: {
        sandbox: "1.34 kB",
        why: "the same: no German decimal comma without Intl",
      },
    },
  },
  {
    // Survey 7: the last bit of QuickJS's Math functions.
    name: "culori",
    version: "4.0.2",
    imports:
      `import { converter, differenceCiede2000, formatHex, interpolate, parse, wcagContrast } from "culori";`,
    calls: {
      oklch: `converter("oklch")("#ff6600")`,
      interpolate: `formatHex(interpolate(["red", "blue"], "oklab")(0.5))`,
      parse: `parse("hsl(120deg 50% 50% / 0.5)")`,
      contrast: `wcagContrast("#000", "#fff")`,
      ciede2000: `differenceCiede2000()("#ff0000", "#ee1111")`,
    },
    differs: {
      ciede2000: {
        sandbox: 3.647233365187671,
        why:
          "QuickJS's Math.atan2, sin, cos and pow can round the last bit differently from V8's",
      },
    },
  },
  {
    // Survey 8: a Date subclass that assigns its own getters and setters.
    name: "@date-fns/tz",
    version: "1.5.0",
    subpaths: ["."],
    imports: `import { TZDate, tzOffset } from "@date-fns/tz";`,
    calls: {
      fixed: `new TZDate(2024, 2, 10, 12, 0, "+05:30").toISOString()`,
      offset: `tzOffset("-03:00", new Date(0))`,
      setters:
        `(() => { const d = new TZDate(Date.UTC(2024, 0, 31, 23), "+02:00"); d.setMonth(1); d.setUTCHours(5); return [d.getFullYear(), d.getMonth(), d.getDate(), d.getHours(), d.getTimezoneOffset(), d.toISOString()]; })()`,
      named: `new TZDate(2024, 2, 10, 12, 0, "America/New_York").toISOString()`,
    },
    differs: {
      named: {
        sandbox: { threw: "RangeError" },
        why:
          "a named time zone is read with Intl.DateTimeFormat, which QuickJS lacks, so the date is invalid",
      },
    },
  },
  {
    // Survey 8: Emscripten's output makes a utf-16le TextDecoder on load.
    name: "h3-js",
    version: "4.5.0",
    imports:
      `import { cellToBoundary, cellToLatLng, gridDisk, latLngToCell } from "h3-js";`,
    calls: {
      cell: `latLngToCell(37.3615593, -122.0553238, 7)`,
      center: `cellToLatLng("872830828ffffff").map((x) => x.toFixed(9))`,
      disk: `gridDisk("872830828ffffff", 1).sort()`,
      boundary: `cellToBoundary("872830828ffffff").length`,
    },
  },
  {
    name: "d3-scale",
    version: "4.0.3",
    imports:
      `import { scaleBand, scaleLinear, scaleOrdinal, scaleQuantize, scaleUtc } from "d3-scale";`,
    calls: {
      linear:
        `(() => { const s = scaleLinear().domain([0, 10]).range([0, 100]).nice(); return [s(2.5), s.invert(75), s.ticks(4), s.tickFormat(4, "s")(5)]; })()`,
      time:
        `(() => { const s = scaleUtc().domain([new Date(Date.UTC(2024, 0, 1)), new Date(Date.UTC(2024, 0, 8))]); return s.ticks(4).map(s.tickFormat()); })()`,
      ordinal:
        `[scaleOrdinal(["a", "b"])("x"), scaleBand().domain(["a", "b", "c"]).range([0, 300]).padding(0.1).bandwidth(), scaleQuantize().domain([0, 1]).range(["lo", "hi"])(0.7)]`,
    },
  },
  {
    name: "@noble/curves",
    version: "2.4.0",
    subpaths: ["./ed25519.js", "./secp256k1.js"],
    imports: `import { ed25519 } from "@noble/curves/ed25519.js";
import { secp256k1 } from "@noble/curves/secp256k1.js";
const hex = ((u8) => Array.from(u8, (b) => b.toString(16).padStart(2, "0")).join(""));`,
    calls: {
      ed25519:
        `(() => { const sk = new Uint8Array(32).fill(7); const pk = ed25519.getPublicKey(sk); const msg = new TextEncoder().encode("hello"); const sig = ed25519.sign(msg, sk); return [hex(pk), hex(sig), ed25519.verify(sig, msg, pk)]; })()`,
      secp256k1:
        `(() => { const sk = new Uint8Array(32).fill(9); const pk = secp256k1.getPublicKey(sk); const msg = new Uint8Array(32).fill(1); const sig = secp256k1.sign(msg, sk); return [hex(pk), hex(sig), secp256k1.verify(sig, msg, pk)]; })()`,
    },
  },
  {
    // Survey 8: named time zones from its own data, without Intl.
    name: "moment-timezone",
    version: "0.6.6",
    imports: `import moment from "moment-timezone";`,
    calls: {
      tz:
        `[moment.tz("2024-03-10 12:00", "America/New_York").format(), moment.tz("2024-07-01T00:00:00Z", "Europe/Berlin").format("YYYY-MM-DD HH:mm z Z"), moment.tz.zone("Asia/Kolkata").utcOffset(0)]`,
      convert:
        `moment.tz("2024-11-03 01:30", "America/Chicago").clone().tz("Asia/Tokyo").format("LLLL")`,
    },
  },
  {
    // Survey 8: a named time zone needs Intl.
    name: "croner",
    version: "11.0.1",
    imports: `import { Cron } from "croner";`,
    calls: {
      next:
        `new Cron("*/15 9-17 * * 1-5").nextRuns(3, new Date("2024-01-06T00:00:00Z")).map((d) => d.toISOString())`,
      last:
        `new Cron("0 0 L * *").nextRuns(2, new Date("2024-01-06T00:00:00Z")).map((d) => d.toISOString())`,
      zone:
        `new Cron("0 9 * * *", { timezone: "America/New_York" }).nextRun(new Date("2024-01-06T00:00:00Z")).toISOString()`,
    },
    differs: {
      zone: {
        sandbox: { threw: "TypeError" },
        why:
          "croner converts to a named time zone with Intl.DateTimeFormat, which QuickJS lacks; its error says so",
      },
    },
  },
  {
    name: "sift",
    version: "17.1.4",
    imports: `import sift from "sift";`,
    calls: {
      filter:
        `[[{ a: 1 }, { a: 5 }, { a: 10, b: [1, 2] }].filter(sift({ a: { $gte: 5 } })), [{ t: ["x", "y"] }, { t: ["z"] }].filter(sift({ t: { $in: ["y"] } })), [{ n: "abc" }, { n: "b" }].filter(sift({ n: { $regex: "^a" } }))]`,
      where: `[{ a: 1 }, { a: 2 }].filter(sift({ $where: "this.a > 1" }))`,
    },
    differs: {
      where: {
        sandbox: { threw: "EvalError" },
        why:
          "a $where string is compiled with the Function constructor, and code generation from strings is denied",
      },
    },
  },
  {
    name: "rfc6902",
    version: "5.4.0",
    imports: `import { applyPatch, createPatch } from "rfc6902";`,
    calls: {
      create:
        `createPatch({ a: 1, b: [1, 2], d: { e: 1 } }, { a: 2, b: [1, 2, 3], c: "x", d: {} })`,
      apply:
        `(() => { const o = { a: [1], b: 1 }; const r = applyPatch(o, [{ op: "add", path: "/a/-", value: 2 }, { op: "test", path: "/b", value: 2 }, { op: "remove", path: "/b" }]); return [o, r.map((x) => x && x.name)]; })()`,
    },
  },
  {
    name: "@xmldom/xmldom",
    version: "0.9.12",
    imports: `import { DOMParser, XMLSerializer } from "@xmldom/xmldom";`,
    calls: {
      parse:
        `(() => { const doc = new DOMParser().parseFromString('<r xmlns:p="urn:x"><a x="1">t</a><p:b/></r>', "text/xml"); const a = doc.getElementsByTagName("a")[0]; a.setAttribute("y", "2"); return [a.getAttribute("x"), a.textContent, doc.documentElement.childNodes.length, new XMLSerializer().serializeToString(doc)]; })()`,
      error:
        `(() => { try { new DOMParser().parseFromString("<a><b></a>", "text/xml"); return "parsed"; } catch (e) { return e.name; } })()`,
    },
  },
  {
    name: "ipaddr.js",
    version: "2.5.0",
    imports: `import ipaddr from "ipaddr.js";`,
    calls: {
      calls:
        `[ipaddr.parse("2001:db8::1").toNormalizedString(), ipaddr.parse("10.1.2.3").match(ipaddr.parseCIDR("10.0.0.0/8")), ipaddr.process("::ffff:192.168.1.1").toString(), ipaddr.parse("192.168.1.1").range(), ipaddr.isValid("300.1.1.1"), ipaddr.subnetMatch(ipaddr.parse("127.0.0.1"), { loop: [ipaddr.parseCIDR("127.0.0.0/8")] }, "none")]`,
    },
  },
  {
    name: "cheerio",
    version: "1.2.0",
    subpaths: ["."],
    imports: `import * as cheerio from "cheerio";`,
    calls: {
      scrape:
        `(() => { const $ = cheerio.load('<ul id="fruits"><li class="apple">Apple</li><li class="orange">Orange &amp; co</li><li class="pear" data-id="7">Pear</li></ul>'); return [$(".apple", "#fruits").text(), $("li").map((i, el) => $(el).attr("class")).get(), $("li[data-id]").data("id"), $("ul").children().length, $.html($("li").last())]; })()`,
      modify:
        `(() => { const $ = cheerio.load("<h2 class=title>Hello world</h2>"); $("h2.title").text("Hello there!").addClass("welcome").after("<p>x</p>"); return $.html(); })()`,
      xml:
        `(() => { const $ = cheerio.load("<r><a k='1'>t</a></r>", { xml: true }); return [$("a").attr("k"), $.xml()]; })()`,
    },
  },
  {
    name: "xlsx",
    version: "0.18.5",
    imports: `import * as XLSX from "xlsx";`,
    calls: {
      sheet:
        `(() => { const ws = XLSX.utils.aoa_to_sheet([["name", "n", "d"], ["Ada", 1, 2.5], ["Bo", 2, true]]); return [XLSX.utils.sheet_to_csv(ws), XLSX.utils.sheet_to_json(ws), ws["!ref"]]; })()`,
      roundTrip:
        `(() => { const wb = XLSX.utils.book_new(); XLSX.utils.book_append_sheet(wb, XLSX.utils.json_to_sheet([{ a: 1, b: "x" }, { a: 2, b: "y" }]), "S"); const bytes = XLSX.write(wb, { type: "array", bookType: "xlsx", compression: true }); const back = XLSX.read(bytes, { type: "array" }); return [back.SheetNames, XLSX.utils.sheet_to_json(back.Sheets.S)]; })()`,
      csv:
        `(() => { const wb = XLSX.read("a,b\\n1,2024-01-02\\n3,x", { type: "string" }); return XLSX.utils.sheet_to_json(wb.Sheets[wb.SheetNames[0]], { header: 1, raw: false }); })()`,
    },
  },
  {
    name: "match-sorter",
    version: "8.3.2",
    imports: `import { matchSorter, rankings } from "match-sorter";`,
    calls: {
      keys:
        `matchSorter([{ n: "Ann Lee", e: "x@y" }, { n: "Bo", e: "ann@z" }], "ann", { keys: ["n", "e"] }).map((x) => x.n)`,
      ties:
        `matchSorter(["apple", "banana", "grape", "pineapple", "Apricot"], "ap")`,
      threshold:
        `matchSorter(["héllo", "hello", "help"], "hel", { threshold: rankings.STARTS_WITH })`,
    },
    differs: {
      ties: {
        sandbox: ["Apricot", "apple", "grape", "pineapple"],
        why:
          "equal ranks are ordered with localeCompare, which compares code points on QuickJS (it has no Intl collation)",
      },
      threshold: {
        sandbox: ["hello", "help", "héllo"],
        why: "the same: é sorts after every ASCII letter by code point",
      },
    },
  },
  {
    name: "flexsearch",
    version: "0.8.212",
    subpaths: ["."],
    imports: `import { Document, Encoder, Index } from "flexsearch";`,
    calls: {
      index:
        `(() => { const index = new Index({ tokenize: "forward", encoder: new Encoder({ cache: false }) }); index.add(1, "John Doe"); index.add(2, "Jane Roe"); index.add(3, "Johnny Walker"); return [index.search("joh"), index.search("roe")]; })()`,
      document:
        `(() => { const doc = new Document({ document: { id: "id", index: ["title"] }, encoder: new Encoder({ cache: false }) }); doc.add({ id: 1, title: "red apple" }); doc.add({ id: 2, title: "green apple pie" }); return doc.search("apple"); })()`,
      cached:
        `(() => { const index = new Index(); index.add(1, "cats"); return index.search("cats"); })()`,
    },
    differs: {
      cached: {
        sandbox: { threw: "ReferenceError" },
        why:
          "its encoder's cache, on by default, clears itself with setTimeout, which the QuickJS tier lacks",
      },
    },
  },
  {
    // Its ES module entry is `export * from` its CommonJS build: the names
    // come from that build.
    name: "computed-types",
    version: "1.11.2",
    subpaths: ["."],
    imports: `import Schema, { array, number, string } from "computed-types";`,
    calls: {
      valid:
        `Schema({ name: string.trim().between(3, 40), age: number.gte(18).integer(), tags: array.of(string).min(1) }).destruct()({ name: "  Ana ", age: 30, tags: ["x"] })`,
      invalid:
        `(() => { const [error] = Schema({ name: string.between(3, 40), age: number.gte(18) }).destruct()({ name: "A", age: 12 }); return error.errors.map((e) => [e.path, e.error.message]); })()`,
      either: `Schema.either("admin", "user").destruct()("root")[0].message`,
    },
  },
  {
    // Survey 20: Fluent formats plurals, numbers and dates with Intl, which
    // the QuickJS realms lack; it reports each failure and falls back.
    name: "@fluent/bundle",
    version: "0.19.1",
    imports: `import { FluentBundle, FluentResource } from "@fluent/bundle";`,
    calls: {
      hello:
        `(() => { const b = new FluentBundle("en-US", { useIsolating: false }); b.addResource(new FluentResource("hello = Hello, { $name }!\\n")); return b.formatPattern(b.getMessage("hello").value, { name: "Ada" }); })()`,
      plural:
        `(() => { const b = new FluentBundle("en-US", { useIsolating: false }); b.addResource(new FluentResource("emails = { $count ->\\n    [one] one email\\n   *[other] { $count } emails\\n}\\n")); const errors = []; const text = [1, 5].map((count) => b.formatPattern(b.getMessage("emails").value, { count }, errors)); return [text, errors.map(String)]; })()`,
    },
    differs: {
      plural: {
        sandbox: [["{???}", "{???}"], [
          "ReferenceError: 'Intl' is not defined",
          "ReferenceError: 'Intl' is not defined",
        ]],
        why:
          "Fluent selects a plural variant with Intl.PluralRules; without Intl it reports the error and gives {???}",
      },
    },
  },
  {
    // Survey 20: an ES module only query language, published in 2026.
    name: "@jsonquerylang/jsonquery",
    version: "5.1.1",
    imports:
      `import { compile, jsonquery, parse, stringify } from "@jsonquerylang/jsonquery";`,
    calls: {
      text:
        `jsonquery({ friends: [{ name: "Chris", age: 23, city: "NY" }, { name: "Emily", age: 19, city: "Atlanta" }, { name: "Joe", age: 32, city: "NY" }] }, '.friends | filter(.city == "NY") | sort(.age, "desc") | pick(.name, .age)')`,
      json:
        `jsonquery({ a: [1, 2, 3] }, ["pipe", ["get", "a"], ["map", ["multiply", ["get"], 2]], ["sum"]])`,
      parsed: `stringify(parse(".friends | groupBy(.city)"))`,
      compiled:
        `compile(parse('.xs | map(.n) | join(", ")'))({ xs: [{ n: "a" }, { n: "b" }] })`,
      bad:
        `(() => { try { return parse(".friends | filter("); } catch (error) { return [error.name, error.message]; } })()`,
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
