/**
 * The URL corpus and the observers `web_url_test.ts` runs in Deno, in a
 * `node:vm` realm and in QuickJS. Each observer is self-contained, so its
 * text runs in any realm, and returns plain data.
 *
 * @module
 */

/** An input, and the base it is parsed against when there is one. */
export type UrlCase = [string] | [string, string];

/** Every component of each case's URL, or the error it throws. */
export function observeUrls(URLCtor: typeof URL, cases: UrlCase[]): unknown[] {
  const keys = [
    "href",
    "origin",
    "protocol",
    "username",
    "password",
    "host",
    "hostname",
    "port",
    "pathname",
    "search",
    "hash",
  ] as const;
  return cases.map(([input, base]) => {
    try {
      const url = base === undefined
        ? new URLCtor(input)
        : new URLCtor(input, base);
      const out: unknown[] = keys.map((key) => url[key]);
      out.push(url.searchParams.toString(), url.toJSON() === url.href);
      out.push(URLCtor.canParse(input, base), URLCtor.parse(input, base)?.href);
      return out;
    } catch (error) {
      return [
        (error as Error).name,
        (error as Error).message,
        URLCtor.canParse(input, base),
        URLCtor.parse(input, base),
      ];
    }
  });
}

/** The setters, in the order {@linkcode observeSetters} runs them. */
export const SETTERS = [
  "href",
  "protocol",
  "username",
  "password",
  "host",
  "hostname",
  "port",
  "pathname",
  "search",
  "hash",
] as const;

/**
 * Each setter with each value on a fresh copy of each URL: every
 * component after it, or the error it throws.
 */
export function observeSetters(
  URLCtor: typeof URL,
  urls: string[],
  values: string[],
): unknown[][] {
  const setters = [
    "href",
    "protocol",
    "username",
    "password",
    "host",
    "hostname",
    "port",
    "pathname",
    "search",
    "hash",
  ] as const;
  const keys = [
    "href",
    "origin",
    "protocol",
    "username",
    "password",
    "host",
    "hostname",
    "port",
    "pathname",
    "search",
    "hash",
  ] as const;
  const out: unknown[][] = [];
  for (const input of urls) {
    for (const setter of setters) {
      for (const value of values) {
        const url = new URLCtor(input);
        const params = url.searchParams;
        let error = "";
        try {
          url[setter] = value;
        } catch (thrown) {
          error = (thrown as Error).name + ": " + (thrown as Error).message;
        }
        out.push([
          input,
          setter,
          value,
          error,
          ...keys.map((key) => url[key]),
          [...params].join("&"),
        ]);
      }
    }
  }
  return out;
}

/**
 * Runs each script: a small program over `URLSearchParams` (`P`) and
 * `URL` (`U`) that returns a value, evaluated with `new Function` only in
 * the host; in a realm the scripts are the cases of a switch below.
 */
export function observeParams(
  ParamsCtor: typeof URLSearchParams,
  URLCtor: typeof URL,
  scripts: string[],
): unknown[] {
  const P = ParamsCtor;
  const U = URLCtor;
  const show = (
    params: URLSearchParams,
  ) => [params.toString(), [...params], params.size];
  const attempt = (fn: () => unknown) => {
    try {
      return fn();
    } catch (error) {
      return [(error as Error).name, (error as Error).message];
    }
  };
  const programs: Record<string, () => unknown> = {
    "parse": () =>
      [
        "",
        "?",
        "a",
        "a=",
        "=b",
        "=",
        "&&a=1&&b=2&",
        "a=1=2",
        "a+b=c+d",
        "%20=%2B",
        "a=%",
        "a=%4",
        "a=%zz",
        "a=%41%42",
        "%e2%9c%93=%E2%9C",
        "a=%ff%fe",
        "??a=b",
        "a=b#c",
        "é=ü",
        "a=\ud800&\udc00=b",
        "a\u0000b=c",
        "+=+",
        "%2B%26%3D=%25",
      ].map((text) => show(new P(text))),
    "records and sequences": () => [
      attempt(() =>
        show(new P({ a: "1", b: "2", a2: "é", "\ud800": "\udfff" }))
      ),
      attempt(() => show(new P([["a", "1"], ["a", "2"], ["b", "3"]]))),
      attempt(() => show(new P(new P("x=1&y=2")))),
      attempt(() => show(new P(new Map([["k", "v"]])))),
      attempt(() =>
        show(new P([new Set(["a", "b"])] as unknown as string[][]))
      ),
      attempt(() =>
        show(new P({ [Symbol.iterator]: undefined, c: "3" } as never))
      ),
      attempt(() => show(new P({ [Symbol.iterator]: null, d: "4" } as never))),
      attempt(() =>
        show(
          new P(
            Object.create({ inherited: "x" }, {
              own: { value: "y", enumerable: true },
              hidden: { value: "z" },
            }),
          ),
        )
      ),
      attempt(() => show(new P(1234 as unknown as string))),
      attempt(() => show(new P(undefined))),
      attempt(() => show(new P(null as unknown as string))),
      attempt(() =>
        show(new P({ toString: () => "a=b" } as unknown as string))
      ),
      attempt(() => show(new P(["ab"] as unknown as string[][]))),
    ],
    "init errors": () => [
      attempt(() => new P([["a"]] as unknown as string[][])),
      attempt(() => new P([["a", "b", "c"]] as unknown as string[][])),
      attempt(() => new P([1] as unknown as string[][])),
      attempt(() => new P([null] as unknown as string[][])),
      attempt(() => new P({ [Symbol.iterator]: 5 } as unknown as string)),
    ],
    "edits": () => {
      const p = new P("a=1&b=2&a=3&c=4&a=5");
      const log: unknown[] = [];
      log.push(
        p.get("a"),
        p.getAll("a"),
        p.get("z"),
        p.has("a"),
        p.has("a", "3"),
        p.has("a", "9"),
      );
      p.append("d", "6");
      p.set("a", "x");
      log.push(show(p));
      p.delete("b");
      p.delete("a", "nope");
      p.append("a", "y");
      p.delete("a", "x");
      log.push(show(p));
      p.set("new", "n");
      p.delete("zzz");
      log.push(show(p), p.has("a", undefined), p.getAll("none"));
      p.append(1 as unknown as string, null as unknown as string);
      p.append("\ud800", "\udc00x");
      p.set("sp ace", "+&=%");
      log.push(show(p));
      return log;
    },
    "argument errors": () => {
      const p = new P() as unknown as Record<
        string,
        (...args: unknown[]) => unknown
      >;
      return [
        attempt(() => p.append!("a")),
        attempt(() => p.set!("a")),
        attempt(() => p.get!()),
        attempt(() => p.getAll!()),
        attempt(() => p.has!()),
        attempt(() => p.delete!()),
        attempt(() => p.forEach!(5)),
        attempt(() => p.forEach!(null)),
        attempt(() => p.forEach!("f")),
        attempt(() => p.forEach!({})),
      ];
    },
    "sort": () => {
      const p = new P(
        "z=1&a=2&\ud83d\ude00=3&\uff21=4&a=5&B=6&b=7&=8&a=9&\u00e9=10&e\u0301=11",
      );
      p.sort();
      const many = new P();
      for (let i = 0; i < 200; i++) {
        many.append(String.fromCharCode(97 + ((i * 7) % 5)), String(i));
      }
      many.sort();
      return [show(p), show(many)];
    },
    "iteration": () => {
      const p = new P("a=1&b=2&c=3");
      const seen: unknown[] = [];
      p.forEach(function (this: unknown, value, name, parent) {
        seen.push([value, name, parent === p, this]);
        if (name === "a") p.append("d", "4");
        if (name === "b") p.delete("c");
      }, "self");
      const it = p.keys();
      const first = it.next();
      p.delete("a");
      const rest = [...it];
      return [
        seen,
        first,
        rest,
        [...p.values()],
        [...p.entries()],
        [...p],
        Object.prototype.toString.call(p.keys()),
        p.keys()[Symbol.iterator]() !== undefined,
      ];
    },
    "linked to a URL": () => {
      const url = new U("https://h/p?a=1&b=%20+#frag");
      const params = url.searchParams;
      const log: unknown[] = [show(params)];
      params.append("c", "x y");
      log.push(url.href);
      url.search = "?z=9&z=8";
      log.push(show(params), url.search);
      params.delete("z");
      log.push(url.href, url.search);
      url.href = "http://other/?q=%26";
      log.push(show(params), params.get("q"));
      url.search = "";
      log.push(show(params));
      params.set("e", "é");
      log.push(url.href);
      params.sort();
      const opaque = new U("data:text  ?x=1");
      opaque.searchParams.delete("x");
      log.push(opaque.href, opaque.pathname);
      const hashed = new U("data:a  ?x=1#h");
      hashed.searchParams.delete("x");
      log.push(hashed.href);
      const plain = new U("sc://h/p?a=b");
      plain.searchParams.append("'", "'");
      log.push(plain.href);
      return log;
    },
    "statics": () => [
      U.canParse("http://a"),
      U.canParse("nope"),
      U.canParse("/p", "http://a"),
      U.canParse("/p", "nope"),
      U.parse("nope"),
      U.parse("/p", "http://a/b")!.href,
      U.parse("/p", "http://a/b") instanceof U,
      U.parse("http://x", undefined)!.href,
      attempt(() => new U("http://a", "nope")),
      attempt(() => new U("nope", "also nope")),
      attempt(() => new U("")),
      attempt(() => new U("\ud800")),
      JSON.stringify({ u: new U("http://a/b c") }),
      String(new U("http://a")),
      `${new U(
        "http://a",
        { toString: () => "http://b" } as unknown as string,
      )}`,
      new U({ toString: () => "http://c/" } as unknown as string).href,
      new U(new U("http://d/")).href,
    ],
  };
  return scripts.map((name) => attempt(programs[name]!));
}

/** The programs of {@linkcode observeParams}, by name. */
export const PARAMS_SCRIPTS = [
  "parse",
  "records and sequences",
  "init errors",
  "edits",
  "argument errors",
  "sort",
  "iteration",
  "linked to a URL",
  "statics",
];

/** URLs the setters start from: special, not special, file, opaque. */
export const SETTER_URLS = [
  "https://user:pass@example.com:8443/a/b?q=1#f",
  "http://example.com/",
  "ws://h:80/x",
  "file:///C:/dir/x",
  "file://host/share/x",
  "sc://u@h:1/p?q#f",
  "sc:/path",
  "sc:opaque text ?q#f",
  "mailto:someone@example.com",
  "http://[::1]:8080/",
  "http://1.2.3.4/",
  "blob:https://a.example/uuid",
];

/** Values each setter receives on each URL. */
export const SETTER_VALUES = [
  "",
  "https",
  "file",
  "sc",
  "HTTP:extra",
  "https://other.example:1/new?x#y",
  "not a url",
  "x:y@z",
  "new host",
  "h\u00fcst.example:99",
  "[::2]",
  "[::2]:7",
  "0x7f.1",
  "host:0080",
  "host:",
  "host:99999",
  ":8",
  "8080abc",
  "65536",
  "0",
  "/a/./b/../c d",
  "\\x\\y",
  "%2e%2E/z",
  "C|/drive",
  "?query with space#",
  "#hash 'q' `b`",
  "\ud800\t\n",
  "user@name:pw",
  "\u00e9",
  "a/b?c#d",
];

/** Absolute inputs, by what they exercise. */
const ABSOLUTE = [
  // Schemes, special and not, and what a scheme may hold.
  "http://example.com/",
  "HTTP://EXAMPLE.COM/",
  "hTtPs://Example.Com/Path",
  "ftp://ftp.example/file",
  "ws://h/socket",
  "wss://h/socket",
  "a+b-c.d://host/",
  "1http://host/",
  "+http://host/",
  "ht tp://host/",
  "web+demo:/.//x",
  "sc://host/path",
  "sc://HOST/Path",
  "sc:",
  "sc:/",
  "sc://",
  "sc:///",
  "sc://@/",
  "sc://:/",
  "sc://:12/",
  "sc://u:p@/",
  "sc://h:65536/",
  "http:",
  "http:/",
  "http://",
  "http:///",
  "https:h",
  "https:/h/p",
  "https:\\\\h\\p",
  "ws:",
  // Whitespace: leading and trailing C0 and spaces, tabs and newlines.
  "  http://example.com/  ",
  "\u0000\u001fhttp://example.com/\u0001 ",
  "ht\ttp://exa\nmple.com/pa\rth",
  "http://example.com/\t?q\n=1#\rf",
  "\u00a0http://example.com/",
  "http://example.com/\u00a0",
  "http://exa mple.com/",
  "http://example.com/a b",
  // Userinfo.
  "http://user@host/",
  "http://user:pass@host/",
  "http://user:@host/",
  "http://:pass@host/",
  "http://@host/",
  "http://:@host/",
  "http://a@b@c/",
  "http://a:b:c@d/",
  "http://us er:pa ss@host/",
  "http://ü:é@host/",
  "http://%41:%42@host/",
  "http://a%40b@host/",
  "http://a/b@c/",
  "http://a?b@c/",
  "http://a#b@c/",
  "http://user@/",
  "http://user:pass@",
  "http://[]@host/",
  "http://^`{}|;=@host/",
  // Ports.
  "http://h:80/",
  "http://h:8080/",
  "https://h:443/",
  "https://h:80/",
  "ws://h:80/",
  "wss://h:443/",
  "ftp://h:21/",
  "http://h:0/",
  "http://h:00080/",
  "http://h:65535/",
  "http://h:65536/",
  "http://h:99999999999999999999/",
  "http://h:/",
  "http://h:a/",
  "http://h:8a/",
  "http://h:-1/",
  "http://h: 8/",
  "http://h:8 /",
  "sc://h:80/",
  "http://:80/",
  "file://h:80/",
  // IPv4 forms.
  "http://127.0.0.1/",
  "http://0x7f.0.0.1/",
  "http://0X7F.1/",
  "http://0177.0.0.1/",
  "http://127.1/",
  "http://127.0.1/",
  "http://2130706433/",
  "http://0x7f000001/",
  "http://017700000001/",
  "http://4294967295/",
  "http://4294967296/",
  "http://256.0.0.1/",
  "http://1.256.0.0/",
  "http://1.2.3.256/",
  "http://1.2.65536/",
  "http://1.16777216/",
  "http://1.2.3.4./",
  "http://1.2.3.4../",
  "http://1.2.3.4.5/",
  "http://1.2.3.09/",
  "http://1.2.3.0x/",
  "http://0x/",
  "http://0x.0x.0/",
  "http://0xg/",
  "http://08/",
  "http://09.1/",
  "http://1.2.3/",
  "http://a.1/",
  "http://1.a/",
  "http://foo.0x4/",
  "http://foo.09/",
  "http://%30/",
  "http://0%2e1/",
  "http://１２７.0.0.1/",
  "sc://1.2.3.4.5/",
  "http://00000000000000000001/",
  "http://0x00000000000000000001/",
  // IPv6 forms.
  "http://[::]/",
  "http://[::1]/",
  "http://[1::]/",
  "http://[1:2:3:4:5:6:7:8]/",
  "http://[1:0:0:0:0:0:0:8]/",
  "http://[1:0:0:2:0:0:0:3]/",
  "http://[0:0:1:0:0:1:0:0]/",
  "http://[1:0::0:0:8]/",
  "http://[FFFF::ABCD]/",
  "http://[0001::0002]/",
  "http://[::ffff:1.2.3.4]/",
  "http://[::1.2.3.4]/",
  "http://[1:2:3:4:5:6:1.2.3.4]/",
  "http://[1:2:3:4:5:6:7:1.2.3.4]/",
  "http://[::1.2.3]/",
  "http://[::1.2.3.4.5]/",
  "http://[::1.2.3.256]/",
  "http://[::1.02.3.4]/",
  "http://[::1.2.3.4x]/",
  "http://[::.1.2.3]/",
  "http://[1:2:3:4:5:6:7:8:9]/",
  "http://[1:2:3:4:5:6:7]/",
  "http://[1::2::3]/",
  "http://[:1]/",
  "http://[1:]/",
  "http://[::1/",
  "http://::1]/",
  "http://[12345::]/",
  "http://[g::]/",
  "http://[::1]:8080/",
  "http://[::1]x/",
  "http://[%3A%3A1]/",
  "sc://[::1]/",
  "sc://[1:2::3]:4/",
  "sc://[x]/",
  // Opaque hosts.
  "sc://ñ/",
  "sc://%C3%B1/",
  "sc://a b/",
  "sc://a<b/",
  "sc://a%b/",
  "sc://a^b/",
  "sc://a|b/",
  'sc://a"b/',
  "sc://a`{}b/",
  "sc://\u0000/",
  "sc://a\u007fb/",
  "sc://a.b.c.d.e/",
  // Domains: forbidden code points, percent-encoding, case.
  "http://a<b/",
  "http://a>b/",
  "http://a^b/",
  "http://a|b/",
  "http://a%b/",
  "http://a%41b/",
  "http://a%2eb/",
  "http://a%2Fb/",
  "http://a%00b/",
  "http://a%7fb/",
  "http://a\u007fb/",
  "http://%ef%bf%bd/",
  "http://%ff/",
  "http://%c3%bc.example/",
  "http://a*b/",
  "http://a_b-c/",
  "http://a..b/",
  "http://.a/",
  "http://a./",
  "http://./",
  "http://../",
  "http://EXAMPLE.com./",
  "http://a\\b/",
  "http://xn--/",
  "http://xn--a/",
  "http://xn--ab-/",
  "http://xn--bcher-kva.example/",
  "http://XN--BCHER-KVA.example/",
  "http://xn--zca.de/",
  "http://xn--ls8h.la/",
  "http://xn--abc/",
  "http://a.xn--/",
  // Unicode domains.
  "https://Bücher.example/",
  "https://ｅｘａｍｐｌｅ.com",
  "http://日本.jp/",
  "http://例え.テスト/",
  "http://ß.de/",
  "http://ẞ.de/",
  "http://MÜNCHEN.de/",
  "http://münchen.de/",
  "http://mu\u0308nchen.de/",
  "http://💩.la/",
  "http://a。b/",
  "http://a．b/",
  "http://a｡b/",
  "http://\u2024.com/",
  "http://a\u00adb.com/",
  "http://\u00ad/",
  "http://a\u200bb.com/",
  "http://\u200d.com/",
  "http://\u0301a.com/",
  "http://ℌ.com/",
  "http://Ⅷ.com/",
  "http://ﬀ.com/",
  "http://①.com/",
  "http://\ufffd.com/",
  "http://\ue000.com/",
  "http://a\u0080b/",
  "http://ａ：b/",
  "http://ﹶ.com/",
  "http://א.com/",
  "http://aא.com/",
  "http://א1/",
  "http://1.א/",
  "http://a1.א/",
  "http://-a.א/",
  "http://\u0627\u064b1/",
  "http://\u06f1\u0627/",
  "http://\u05d0\u0660/",
  "http://x\u0663\u06f3.com/",
  "http://привет.рф/",
  "http://ελληνικά.gr/",
  "http://한국.kr/",
  "http://xn--80ak6aa92e.com/",
  // Paths, dot segments, percent-encoding of the path set.
  "http://h/a/b/c",
  "http://h/a/./b",
  "http://h/a/../b",
  "http://h/a/b/..",
  "http://h/a/b/.",
  "http://h/..",
  "http://h/../../a",
  "http://h/a/%2e/b",
  "http://h/a/%2E%2e/b",
  "http://h/a/.%2e/b",
  "http://h/a/%2e./b",
  "http://h/a/%2e%2",
  "http://h/a/...",
  "http://h/a\\b\\..\\c",
  "sc://h/a\\b\\..\\c",
  "sc://h/a/../b",
  "sc://h/..",
  "http://h/ \"<>`{}|^'",
  "http://h/%zz%2",
  "http://h/é/日/😀",
  "http://h/\ud800",
  "http://h/\u0000\u001f\u007f",
  "http://h//a//b",
  "http://h/;p=1",
  "http://h/a?b?c",
  "http://h/a#b#c",
  "http://h/a#b?c",
  // Queries and fragments.
  "http://h/?",
  "http://h/#",
  "http://h/?#",
  "http://h/? \"#<>'`",
  "sc://h/? \"<>'`",
  "http://h/#  \"<>`'{}",
  "http://h/?é#é",
  "http://h/?%zz#%zz",
  "http://h/?a=1&b=2",
  "http://h/?a+b=%20",
  "sc:o?q#f",
  "http://h/?\ud800#\udc00",
  // Opaque paths.
  "mailto:someone@example.com",
  "data:text/plain,hello world",
  "data:a ?b",
  "data:a #b",
  "data:a  ",
  "javascript:alert(1)",
  "urn:isbn:0451450523",
  "sc:é \u0000",
  "sc:\\x",
  "sc:a/b",
  "about:blank",
  "tel:+1-555",
  // File URLs.
  "file:///etc/passwd",
  "file://localhost/etc",
  "file://LOCALHOST/etc",
  "file://host/share/file",
  "file:/x",
  "file:x",
  "file:",
  "file://",
  "file:///",
  "file:///C:/x",
  "file:///C:",
  "file:///c:/x/..",
  "file:///C:/../../..",
  "file:/C|/x",
  "file:C|/x",
  "file://C|/x",
  "file://C:/x",
  "file://host/C|/x",
  "file://host/C:",
  "file://host/x/C:",
  "file:/host/C:/x",
  "file:\\\\h\\C:\\x",
  "file:///C:/a/../../D:/b",
  "file:///Ab:/x",
  "file:///C%3A/x",
  "file://1.2.3.4/x",
  "file://[::1]/x",
  "file://ü/x",
  "file://h%20/x",
  "file://u@h/x",
  "file:///?q#f",
  // blob: and origins.
  "blob:https://a.example:443/uuid",
  "blob:http://a:81/uuid",
  "blob:ftp://a/b",
  "blob:ws://a/",
  "blob:file:///a",
  "blob:sc://a/b",
  "blob:blob:https://a/",
  "blob:",
  "blob:nope",
];

/** Relative inputs, each against every base of {@linkcode BASES}. */
const RELATIVE = [
  "",
  "x",
  "./x",
  "../x",
  "../../../../x",
  "/x",
  "//x",
  "//x/y",
  "///x",
  "\\x",
  "\\\\x\\y",
  "?q",
  "#f",
  "?",
  "#",
  ".",
  "..",
  "x/../..",
  "%2e%2e/x",
  "C:",
  "C|/x",
  "/C:/x",
  "//host/C:",
  "http:x",
  "http:/x",
  "https:x",
  "sc:x",
  "file:x",
  "file:/x",
  "x:",
  "::",
  "a b",
  "\t/x\n",
  "é",
  "?é",
];
const BASES = [
  "http://u:p@h.example:8080/a/b/c?q#f",
  "https://h/",
  "file:///C:/dir/file",
  "file://host/share/file",
  "sc://host/a/b",
  "sc:opaque",
  "about:blank",
];

/**
 * Where Deno 2.9 leaves the URL Standard and this realm follows it: each
 * case, with the href and host the standard gives.
 */
export const KNOWN_DIFFERENCES: {
  case: UrlCase;
  href: string;
  host: string;
}[] = [
  // Deno's host and port getters read "/." and "." from the path.
  { case: ["web+demo:/.//x"], href: "web+demo:/.//x", host: "" },
  // Deno refuses three slashes after a special scheme's base.
  { case: ["///x", "https://h/"], href: "https://x/", host: "x" },
  { case: ["///x", BASES[0]!], href: "http://x/", host: "x" },
  // Deno reads a backslash as a slash in a URL that is not special.
  { case: ["\\x", BASES[4]!], href: "sc://host/a/\\x", host: "host" },
  { case: ["\\\\x\\y", BASES[4]!], href: "sc://host/a/\\\\x\\y", host: "host" },
  // Deno keeps the "|" of a drive letter right after "file:///".
  { case: ["file:///C|/x"], href: "file:///C:/x", host: "" },
];

/** The corpus: every absolute input, and the relative ones on every base. */
export const URL_CASES: UrlCase[] = [
  ...ABSOLUTE.map((input): UrlCase => [input]),
  ...RELATIVE.flatMap((input) => BASES.map((base): UrlCase => [input, base])),
  ["x", "not a base"] as UrlCase,
  ["http://ok/", "not a base"] as UrlCase,
].filter((item) =>
  !KNOWN_DIFFERENCES.some((known) => `${known.case}` === `${item}`)
);
