import assert from "node:assert/strict";
import vm from "node:vm";
import { realmSource } from "./realm_source.ts";
import { createWebText } from "./web_text.ts";
import { createWebUrl } from "./web_url.ts";
import { createQuickJSLoader } from "../loader/quickjs_loader.ts";
import { EMPTY_CATALOG } from "../catalog/empty_catalog.ts";
import { WEB_GLOBALS_STEPS, type WebGlobalsSteps } from "./web_globals.ts";
import {
  KNOWN_DIFFERENCES,
  observeParams,
  observeSetters,
  observeUrls,
  PARAMS_SCRIPTS,
  SETTER_URLS,
  SETTER_VALUES,
  SETTERS,
  URL_CASES,
  type UrlCase,
} from "./_web_url_cases_test.ts";

/** A fresh `node:vm` realm with the Web globals installed, as plugins get. */
function freshRealm(): {
  urls(cases: UrlCase[]): unknown;
  setters(urls: string[], values: string[]): unknown;
  params(scripts: string[]): unknown;
  shape(): unknown;
} {
  function entry(
    steps: WebGlobalsSteps & {
      observeUrls: typeof observeUrls;
      observeSetters: typeof observeSetters;
      observeParams: typeof observeParams;
      describeShape: typeof describeShape;
    },
    _data: null,
    request: string,
  ): string {
    steps.installWebGlobals(steps, globalThis);
    const { kind, args } = JSON.parse(request);
    const run = {
      urls: () => steps.observeUrls(URL, args[0]),
      setters: () => steps.observeSetters(URL, args[0], args[1]),
      params: () => steps.observeParams(URLSearchParams, URL, args[0]),
      shape: () => steps.describeShape(URL, URLSearchParams),
    }[kind as "urls"];
    return JSON.stringify(run());
  }
  const source = realmSource(entry, {
    ...WEB_GLOBALS_STEPS,
    observeUrls,
    observeSetters,
    observeParams,
    describeShape,
  }, null);
  const call = (kind: string, ...args: unknown[]) =>
    JSON.parse(
      vm.runInNewContext(source)(JSON.stringify({ kind, args })) as string,
    );
  return {
    urls: (cases) => call("urls", cases),
    setters: (urls, values) => call("setters", urls, values),
    params: (scripts) => call("params", scripts),
    shape: () => call("shape"),
  };
}

/** What Deno's own constructors give, through JSON as the realm's do. */
const deno = {
  urls: (cases: UrlCase[]) =>
    JSON.parse(JSON.stringify(observeUrls(URL, cases))),
  setters: (urls: string[], values: string[]) =>
    JSON.parse(JSON.stringify(observeSetters(URL, urls, values))),
  params: (scripts: string[]) =>
    JSON.parse(
      JSON.stringify(observeParams(URLSearchParams, URL, scripts)),
    ),
  shape: () => JSON.parse(JSON.stringify(describeShape(URL, URLSearchParams))),
};

/**
 * Each case where the realm and Deno differ, beside both answers, so one
 * failure shows them all.
 */
function differences(
  labels: unknown[],
  mine: unknown[],
  theirs: unknown[],
): unknown[] {
  assert.equal(mine.length, theirs.length);
  const found: unknown[] = [];
  for (let i = 0; i < mine.length; i++) {
    try {
      assert.deepEqual(mine[i], theirs[i]);
    } catch {
      found.push({ case: labels[i], realm: mine[i], deno: theirs[i] });
    }
  }
  return found;
}

/** The property layout of both classes: names, lengths, kinds, flags. */
function describeShape(
  URLCtor: typeof URL,
  ParamsCtor: typeof URLSearchParams,
): unknown {
  const describe = (target: object) =>
    Object.getOwnPropertyNames(target)
      .filter((key) => key !== "createObjectURL" && key !== "revokeObjectURL")
      .sort()
      .map((key) => {
        const d = Object.getOwnPropertyDescriptor(target, key)!;
        return [
          key,
          typeof d.value === "function" ? `method ${d.value.length}` : "",
          d.get ? `get ${d.get.name}` : "",
          d.set ? `set ${d.set.name}` : "",
          d.enumerable,
          d.configurable,
        ];
      });
  const params = new ParamsCtor("a=1");
  const iterator = params.entries();
  const iteratorProto = Object.getPrototypeOf(iterator);
  const tag = (value: unknown) => Object.prototype.toString.call(value);
  return {
    url: describe(URLCtor),
    urlProto: describe(URLCtor.prototype),
    params: describe(ParamsCtor),
    paramsProto: describe(ParamsCtor.prototype),
    iteratorProto: describe(iteratorProto),
    names: [URLCtor.name, URLCtor.length, ParamsCtor.name, ParamsCtor.length],
    tags: [
      tag(new URLCtor("http://a")),
      tag(params),
      tag(iterator),
      tag(URLCtor.prototype),
    ],
    iterator: ParamsCtor.prototype[Symbol.iterator] ===
      ParamsCtor.prototype.entries,
    iteratorChain: typeof Object.getPrototypeOf(iteratorProto)[Symbol.iterator],
    sameParams: (() => {
      const url = new URLCtor("http://a/?b=c");
      return url.searchParams === url.searchParams;
    })(),
    brands: [
      () => URLCtor.prototype.toString.call({}),
      () =>
        Object.getOwnPropertyDescriptor(URLCtor.prototype, "href")!.get!
          .call({}),
      () => ParamsCtor.prototype.get.call({}, "a"),
      () => iteratorProto.next.call({}),
      () => (URLCtor as unknown as () => void)(),
      () => new (URLCtor as unknown as new () => URL)(),
      () => (URLCtor.canParse as unknown as () => boolean)(),
      () => (URLCtor.parse as unknown as () => URL)(),
    ].map((fn) => {
      try {
        fn();
        return "no error";
      } catch (error) {
        return (error as Error).name +
          ((error as Error).message.includes("without 'new'")
            ? ""
            : ": " + (error as Error).message);
      }
    }),
  };
}

Deno.test("URL parses a corpus of tricky inputs as Deno does: every component, the origin and the failures", () => {
  const realm = freshRealm();
  assert.ok(URL_CASES.length >= 300, `${URL_CASES.length} cases`);
  const mine = realm.urls(URL_CASES) as unknown[];
  const theirs = deno.urls(URL_CASES) as unknown[];
  assert.deepEqual(differences(URL_CASES, mine, theirs), []);
});

Deno.test("where Deno leaves the URL Standard, URL follows the standard", () => {
  const cases = KNOWN_DIFFERENCES.map((known) => known.case);
  const mine = freshRealm().urls(cases) as string[][];
  const theirs = deno.urls(cases) as string[][];
  KNOWN_DIFFERENCES.forEach((known, i) => {
    assert.deepEqual([mine[i]![0], mine[i]![5]], [known.href, known.host]);
    assert.notDeepEqual(
      mine[i],
      theirs[i],
      "Deno agrees now: move the case into the corpus",
    );
  });
});

Deno.test("every URL setter changes a URL as Deno's does, component by component", () => {
  const realm = freshRealm();
  const mine = realm.setters(SETTER_URLS, SETTER_VALUES) as unknown[][];
  const theirs = deno.setters(SETTER_URLS, SETTER_VALUES) as unknown[][];
  assert.equal(
    mine.length,
    SETTER_URLS.length * SETTERS.length * SETTER_VALUES.length,
  );
  assert.deepEqual(
    differences(mine.map((row) => row.slice(0, 3)), mine, theirs),
    [],
  );
});

Deno.test("URLSearchParams parses, edits, sorts and serializes as Deno's does, lone surrogates and all", () => {
  const realm = freshRealm();
  const mine = realm.params(PARAMS_SCRIPTS) as unknown[];
  const theirs = deno.params(PARAMS_SCRIPTS) as unknown[];
  assert.deepEqual(differences(PARAMS_SCRIPTS, mine, theirs), []);
});

Deno.test("a URL setter applies its value to the URL as it is once the value is converted, as Deno's does, when the value's toString() sets href", () => {
  const realm = createWebUrl(createWebText().TextDecoder);
  const setters = [
    ["protocol", "wss"],
    ["username", "user"],
    ["password", "secret"],
    ["host", "other:81"],
    ["hostname", "other"],
    ["port", "82"],
    ["pathname", "/new"],
    ["search", "?s=2"],
    ["hash", "#h"],
  ] as const;
  /** What each setter leaves, its value's toString() setting href first. */
  const answers = (Url: typeof URL) =>
    setters.map(([setter, value]) => {
      const url = new Url("http://a.example/b?x=1#y");
      const params = url.searchParams;
      const converted = {
        toString() {
          url.href = "https://z.example/q?k=v#f";
          return value;
        },
      };
      (url as unknown as Record<string, unknown>)[setter] = converted;
      return [setter, url.href, params.toString()];
    });
  assert.deepEqual(answers(realm.URL), answers(URL));
});

Deno.test("URLSearchParams's append() adds its pair to the list as it is once both are converted, as Deno's does, when a toString() edits the list", () => {
  const realm = createWebUrl(createWebText().TextDecoder);
  const answers = (Url: typeof URL, Params: typeof URLSearchParams) => {
    const params = new Params("b=1&a=2");
    params.append({
      toString() {
        params.delete("b");
        return "n";
      },
    } as never, "v");
    params.append("m", {
      toString() {
        params.sort();
        return "w";
      },
    } as never);
    const url = new Url("http://a.example/?a=1");
    url.searchParams.append({
      toString() {
        url.href = "http://z.example/?z=0";
        return "k";
      },
    } as never, "v");
    return [params.toString(), url.href];
  };
  assert.deepEqual(
    answers(realm.URL, realm.URLSearchParams),
    answers(URL, URLSearchParams),
  );
  assert.deepEqual(answers(realm.URL, realm.URLSearchParams), [
    "a=2&n=v&m=w",
    "http://z.example/?z=0&k=v",
  ]);
});

Deno.test("URL and URLSearchParams are laid out as Deno's are: members, lengths, accessors, tags and brand checks", () => {
  assert.deepEqual(freshRealm().shape(), deno.shape());
});

/** A small deterministic generator, so a failure can be replayed. */
function generator(seed: number): (below: number) => number {
  let state = seed >>> 0;
  return (below) => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state % below;
  };
}

const FUZZ_TOKENS = [
  "a",
  "B",
  "1",
  "0",
  "0x",
  "09",
  "255",
  "4294967296",
  "%",
  "%2e",
  "%2E",
  "%41",
  "%zz",
  "%00",
  "%ff",
  ".",
  "..",
  "/",
  "//",
  "\\",
  "?",
  "#",
  "@",
  ":",
  "[",
  "]",
  "::",
  "[::1]",
  "1.2.3.4",
  " ",
  "\t",
  "\n",
  "\u0000",
  "\u001f",
  "\u007f",
  "é",
  "ß",
  "日",
  "Ａ",
  "\u00ad",
  "\ud800",
  "😀",
  "http:",
  "https:",
  "file:",
  "sc:",
  "blob:",
  "C:",
  "c|",
  "|",
  "'",
  '"',
  "<",
  "`",
  "{",
  "^",
  "xn--",
  "+",
  "&",
  "=",
  "-",
  "~",
];
const FUZZ_BASES = [
  undefined,
  "http://u:p@h.example:8080/a/b?q#f",
  "file:///C:/dir/file",
  "sc://host/path",
  "sc:opaque",
  "https://[::1]/x",
];

Deno.test("URL parses 4,000 seeded random inputs from an alphabet of special characters as Deno does", () => {
  const next = generator(20260601);
  const cases: UrlCase[] = [];
  for (let i = 0; i < 4000; i++) {
    let input = "";
    const count = 1 + next(9);
    for (let t = 0; t < count; t++) {
      input += FUZZ_TOKENS[next(FUZZ_TOKENS.length)];
    }
    const base = FUZZ_BASES[next(FUZZ_BASES.length)];
    // Half start with a scheme, so most reach the host and path states.
    if (next(2) === 0) {
      input = ["http://", "file://", "sc://", "https:"][next(4)] + input;
    }
    cases.push(base === undefined ? [input] : [input, base]);
  }
  const mine = freshRealm().urls(cases) as unknown[];
  const theirs = deno.urls(cases) as unknown[];
  assert.deepEqual(differences(cases, mine, theirs), []);
});

Deno.test("inside QuickJS, URL and URLSearchParams answer as Deno's do for the corpus, the setters and the params programs", async () => {
  using loader = await createQuickJSLoader({ catalog: EMPTY_CATALOG });
  const urls = SETTER_URLS.filter((_, i) => i % 2 === 0);
  const result = await loader.run({
    source: `const observeUrls = ${observeUrls};
const observeSetters = ${observeSetters};
const observeParams = ${observeParams};
export default ({ cases, urls, values, scripts }) => JSON.stringify([
  observeUrls(URL, cases),
  observeSetters(URL, urls, values),
  observeParams(URLSearchParams, URL, scripts),
]);`,
  }, {
    context: {
      cases: URL_CASES,
      urls,
      values: SETTER_VALUES,
      scripts: PARAMS_SCRIPTS,
    },
    timeoutMs: 60_000,
  });
  assert.ok(result.ok, JSON.stringify(result).slice(0, 500));
  const [cases, setters, params] = JSON.parse(result.value as string);
  assert.deepEqual(differences(URL_CASES, cases, deno.urls(URL_CASES)), []);
  const expected = deno.setters(urls, SETTER_VALUES) as unknown[][];
  assert.deepEqual(
    differences(expected.map((row) => row.slice(0, 3)), setters, expected),
    [],
  );
  assert.deepEqual(
    differences(PARAMS_SCRIPTS, params, deno.params(PARAMS_SCRIPTS)),
    [],
  );
});
