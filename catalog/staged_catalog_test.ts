import assert from "node:assert/strict";
import {
  StagedIndexSchema,
  stagedModulePath,
  stagedPackIndexPath,
} from "../protocol/mod.ts";
import type { SandboxResult } from "../protocol/sandbox_result.ts";
import { createQuickJSLoader } from "../loader/quickjs_loader.ts";
import { createStagedCatalog } from "./staged_catalog.ts";
import { createMemoryModuleCache } from "./remote_catalog.ts";
import {
  FIXTURE_PACKS,
  indexUrlOf,
  stageInto,
  tempDir,
} from "./_test_staged_tree_test.ts";
import {
  HANG_MS,
  type StuckBody,
  stuckBody,
} from "./_misbehaving_server_test.ts";
import { settleWithin } from "../protocol/deadline.ts";
import { unhandledDuring } from "../protocol/_test_unhandled_test.ts";
import { CordonError } from "../protocol/mod.ts";

const MATH_RUN = {
  source:
    'console.log("guest code ran");\nimport { add } from "@cordon-fixtures/math";\nexport default add(1, 2);',
  packages: ["@cordon-fixtures/math"],
};

async function mathFiles(dir: string) {
  const index = StagedIndexSchema.parse(
    JSON.parse(await Deno.readTextFile(`${dir}/index.json`)),
  );
  const entry = index.packs.find((e) => e.name === "@cordon-fixtures/math")!;
  const packPath = stagedPackIndexPath(entry.name);
  const pack = JSON.parse(await Deno.readTextFile(`${dir}/${packPath}`));
  const main = pack.modules.find((m: { exportedAs: string[] }) =>
    m.exportedAs.includes(".")
  );
  return {
    packPath,
    mainPath: stagedModulePath(main.id, main.digest),
    modulePaths: pack.modules.map((m: { id: string; digest: string }) =>
      stagedModulePath(m.id, m.digest)
    ) as string[],
  };
}

Deno.test("the staged catalog fetches only index.json and the declared pack's files", async () => {
  await using dir = await tempDir();
  const out = await stageInto(FIXTURE_PACKS, dir.path);
  const root = indexUrlOf(out);
  const fetched: string[] = [];
  const catalog = createStagedCatalog({
    indexUrl: root,
    fetch: (input, init) => {
      fetched.push(new URL(input).href.slice(new URL(".", root).href.length));
      return fetch(input, init);
    },
  });
  using loader = await createQuickJSLoader({ catalog });
  const result = await loader.run(MATH_RUN);
  assert.equal(result.ok && result.value, 3);
  const { packPath, modulePaths } = await mathFiles(out);
  assert.deepEqual(
    fetched.sort(),
    ["index.json", packPath, ...modulePaths].sort(),
  );
  assert.deepEqual(catalog.summaries().map((pack) => pack.name), [
    "@cordon-fixtures/math",
  ]);
});

Deno.test("a tampered staged module fails the run with DIGEST_MISMATCH before any code runs, and is not cached", async () => {
  await using dir = await tempDir();
  const out = await stageInto(FIXTURE_PACKS, dir.path);
  const { mainPath } = await mathFiles(out);
  await Deno.writeTextFile(
    `${out}/${mainPath}`,
    'console.log("tampered code ran");\nexport const add = () => 666;\n',
  );
  const cache = createMemoryModuleCache();
  const puts: string[] = [];
  const catalog = createStagedCatalog({
    indexUrl: indexUrlOf(out),
    cache: {
      get: (digest) => cache.get(digest),
      put: (digest, source) => {
        puts.push(source);
        cache.put(digest, source);
      },
    },
  });
  using loader = await createQuickJSLoader({ catalog });
  const result = await loader.run(MATH_RUN);
  assert.equal(!result.ok && result.error.code, "DIGEST_MISMATCH");
  assert.match(
    !result.ok ? result.error.message : "",
    /^Refusing module \.\/index\.js of pack "@cordon-fixtures\/math": its bytes hash to sha256-\S+ but the catalog listing gives sha256-\S+; do not trust this server or proxy; the module was not cached or run$/,
  );
  assert.deepEqual(result.logs, []);
  assert.ok(puts.every((source) => !source.includes("tampered")));
  assert.deepEqual(catalog.resolveForExecution(MATH_RUN).modules, {});
});

Deno.test("a staged module whose bytes fail their digest is fetched once more past the HTTP cache, so a cache that kept a bad answer does not fail every later run", async () => {
  await using dir = await tempDir();
  const out = await stageInto(FIXTURE_PACKS, dir.path);
  const { mainPath } = await mathFiles(out);
  const reloads: string[] = [];
  const catalog = createStagedCatalog({
    indexUrl: indexUrlOf(out),
    // As a browser's HTTP cache that kept one bad answer for the module's
    // immutable URL: only a request sent with cache "reload" gets the file.
    fetch: async (input, init) => {
      const url = String(input);
      if (init?.cache === "reload") reloads.push(url);
      if (!url.endsWith(mainPath) || init?.cache === "reload") {
        return await fetch(input, init);
      }
      return new Response("export const add = () => 666;\n");
    },
  });
  using loader = await createQuickJSLoader({ catalog });
  const result = await loader.run(MATH_RUN);
  assert.equal(result.ok && result.value, 3, JSON.stringify(result));
  assert.deepEqual(reloads.map((url) => url.endsWith(mainPath)), [true]);
});

Deno.test("a staged module whose bytes fail their digest again past the HTTP cache fails the run with DIGEST_MISMATCH", async () => {
  await using dir = await tempDir();
  const out = await stageInto(FIXTURE_PACKS, dir.path);
  const { mainPath } = await mathFiles(out);
  await Deno.writeTextFile(
    `${out}/${mainPath}`,
    "export const add = () => 666;\n",
  );
  const reloads: string[] = [];
  const catalog = createStagedCatalog({
    indexUrl: indexUrlOf(out),
    fetch: (input, init) => {
      if (init?.cache === "reload") reloads.push(String(input));
      return fetch(input, init);
    },
  });
  using loader = await createQuickJSLoader({ catalog });
  const result = await loader.run(MATH_RUN);
  assert.equal(!result.ok && result.error.code, "DIGEST_MISMATCH");
  assert.equal(reloads.length, 1);
});

/** Replaces a file of a staged tree with its gzip data, as a host that compressed it ahead of time keeps it. */
async function gzipInPlace(path: string): Promise<void> {
  const plain = await Deno.readFile(path);
  const compressed = new Blob([plain]).stream().pipeThrough(
    new CompressionStream("gzip"),
  );
  await Deno.writeFile(
    path,
    new Uint8Array(await new Response(compressed).arrayBuffer()),
  );
}

const GZIP_HINT =
  "they are gzip data (they begin 1f 8b) the host sent without Content-Encoding: gzip, so nothing inflated them; serve the file uncompressed, or with that header (a file compressed ahead of time needs it)";

Deno.test("staged files sent gzip-compressed without Content-Encoding fail the run with their code and a message that names the compression, not a server to distrust", async () => {
  await using dir = await tempDir();
  const out = await stageInto(FIXTURE_PACKS, dir.path);
  const { packPath, mainPath } = await mathFiles(out);
  const run = async () => {
    using loader = await createQuickJSLoader({
      catalog: createStagedCatalog({ indexUrl: indexUrlOf(out) }),
    });
    const result = await loader.run(MATH_RUN);
    assert.equal(result.ok, false);
    return !result.ok && result.error;
  };
  await gzipInPlace(`${out}/${mainPath}`);
  const module = await run();
  assert.equal(module && module.code, "DIGEST_MISMATCH");
  assert.ok(
    module && module.message.endsWith(
      `but the catalog listing gives ${
        module.message.match(/gives (sha256-\S+?),/)?.[1]
      }, and ${GZIP_HINT}; the module was not cached or run`,
    ),
    module && module.message,
  );
  await gzipInPlace(`${out}/${packPath}`);
  const pack = await run();
  assert.equal(pack && pack.code, "DIGEST_MISMATCH");
  assert.match(
    pack ? pack.message : "",
    /^Refusing pack "@cordon-fixtures\/math": its pack index hashes to sha256-\S+ but the staged index gives sha256-\S+, and they are gzip data /,
  );
  await gzipInPlace(`${out}/index.json`);
  const index = await run();
  assert.equal(index && index.code, "FETCH_FAILED");
  assert.match(
    index ? index.message : "",
    /: the body is not JSON, and it is gzip data \(it begins 1f 8b\) the host sent without Content-Encoding: gzip/,
  );
});

Deno.test("an HTML page in place of a staged file, as a host's fallback for a path it has no file at, fails the run with its code and a message that names the page, not a server to distrust", async () => {
  await using dir = await tempDir();
  const out = await stageInto(FIXTURE_PACKS, dir.path);
  const { mainPath } = await mathFiles(out);
  const page =
    '\n<!doctype html>\n<html><head><title>My app</title></head><body><div id="app"></div></body></html>\n';
  const run = async () => {
    using loader = await createQuickJSLoader({
      catalog: createStagedCatalog({ indexUrl: indexUrlOf(out) }),
    });
    const result = await loader.run(MATH_RUN);
    return result.ok ? result : result.error;
  };
  const hint = (subject: string, begins: string) =>
    `${subject} an HTML page (${begins} <), such as a host answers for a path it has no file at, or a login or error page; check the URL, and that the file is there`;
  await Deno.writeTextFile(`${out}/${mainPath}`, page);
  const module = await run();
  assert.equal("code" in module && module.code, "DIGEST_MISMATCH");
  assert.match(
    "message" in module ? module.message : "",
    /^Refusing module \.\/index\.js of pack "@cordon-fixtures\/math": its bytes hash to sha256-\S+ but the catalog listing gives sha256-\S+, and they are /,
  );
  assert.ok(
    "message" in module &&
      module.message.endsWith(
        `, and ${
          hint("they are", "they begin")
        }; the module was not cached or run`,
      ),
    JSON.stringify(module),
  );
  await Deno.writeTextFile(`${out}/index.json`, page);
  const index = await run();
  assert.equal("code" in index && index.code, "FETCH_FAILED");
  assert.ok(
    "message" in index &&
      index.message.endsWith(
        `/index.json: the body is not JSON, and ${hint("it is", "it begins")}`,
      ),
    JSON.stringify(index),
  );
});

Deno.test("a missing staged module fails the run with FETCH_FAILED naming the pack", async () => {
  await using dir = await tempDir();
  const out = await stageInto(FIXTURE_PACKS, dir.path);
  const { mainPath } = await mathFiles(out);
  await Deno.remove(`${out}/${mainPath}`);
  using loader = await createQuickJSLoader({
    catalog: createStagedCatalog({ indexUrl: indexUrlOf(out) }),
  });
  const result = await loader.run(MATH_RUN);
  assert.equal(!result.ok && result.error.code, "FETCH_FAILED");
  assert.match(
    !result.ok ? result.error.message : "",
    /^Cannot fetch module \.\/index\.js of pack "@cordon-fixtures\/math" from file:.*; check that the file exists and is readable/,
  );
  assert.deepEqual(result.logs, []);
});

Deno.test("a prefetch whose module bodies leave a read pending past the deadline fails with FETCH_FAILED by fetchTimeoutMs, and cancels each body", async () => {
  await using dir = await tempDir();
  const out = await stageInto(FIXTURE_PACKS, dir.path);
  const { modulePaths } = await mathFiles(out);
  const bodies: StuckBody[] = [];
  const catalog = createStagedCatalog({
    indexUrl: indexUrlOf(out),
    fetchTimeoutMs: 200,
    fetch: (input, init) => {
      if (!input.includes("/modules/")) return fetch(input, init);
      const body = stuckBody();
      bodies.push(body);
      return Promise.resolve(new Response(body.stream));
    },
  });
  const error = await settleWithin(
    catalog.prefetch(MATH_RUN).then(
      () => assert.fail("prefetch() resolved"),
      (error: unknown) => error,
    ),
    HANG_MS,
    () => assert.fail("prefetch() was still waiting past its fetchTimeoutMs"),
  );
  assert.ok(error instanceof CordonError, String(error));
  assert.equal(error.code, "FETCH_FAILED");
  assert.match(
    error.message,
    /module \.\/\S+ of pack "@cordon-fixtures\/math"/,
  );
  assert.match(error.message, /within fetchTimeoutMs \(200 ms\)/);
  assert.equal(bodies.length, modulePaths.length);
  assert.ok(bodies.every((body) => body.cancelled()));
});

/** Writes a packs folder with "wide", whose entry imports `count` helpers. */
async function writeWidePack(packsDir: string, count: number): Promise<void> {
  const helpers = Array.from({ length: count }, (_, i) => `./lib/h${i}.js`);
  await Deno.mkdir(`${packsDir}/wide/lib`, { recursive: true });
  await Deno.writeTextFile(
    `${packsDir}/wide/package.json`,
    JSON.stringify({
      name: "wide",
      version: "1.0.0",
      cordon: { exports: { ".": "./index.js" }, internal: helpers },
    }),
  );
  await Deno.writeTextFile(
    `${packsDir}/wide/index.js`,
    helpers.map((path) => `import "${path}";\n`).join("") +
      "export const wide = true;\n",
  );
  for (const [i, path] of helpers.entries()) {
    await Deno.writeTextFile(
      `${packsDir}/wide/${path}`,
      `export const h = ${i};\n`,
    );
  }
}

Deno.test("a prefetch keeps at most 32 module requests in flight, however many modules a pack lists", async () => {
  await using dir = await tempDir();
  await writeWidePack(`${dir.path}/packs`, 99);
  const out = await stageInto(`${dir.path}/packs`, dir.path);
  let open = () => {};
  const opened = new Promise<void>((resolve) => open = resolve);
  let modules = 0;
  const catalog = createStagedCatalog({
    indexUrl: indexUrlOf(out),
    fetch: async (input, init) => {
      if (input.includes("/modules/")) {
        modules++;
        await opened;
      }
      return await fetch(input, init);
    },
  });
  const declaration = { source: "", packages: ["wide"] };
  const prefetching = catalog.prefetch(declaration);
  for (let turn = 0; turn < 1000 && modules < 32; turn++) {
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  // The catalog is given time to ask for more than it may.
  for (let turn = 0; turn < 20; turn++) {
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  assert.equal(modules, 32);
  open();
  await prefetching;
  assert.equal(modules, 100);
  assert.equal(
    catalog.resolveForExecution(declaration).statuses[0]?.status,
    "ok",
  );
});

/** A fetch that holds module requests until `open()`, counting them. */
function heldFetch(): { fetch: typeof fetch; open(): void; modules(): number } {
  let open = () => {};
  const opened = new Promise<void>((resolve) => open = resolve);
  let modules = 0;
  return {
    open,
    modules: () => modules,
    fetch: async (input, init) => {
      if (String(input).includes("/modules/")) {
        modules++;
        await opened;
      }
      return await fetch(input, init);
    },
  };
}

/** Lets the event loop turn until `ready()` holds, then 20 turns more. */
async function turnsPast(ready: () => boolean): Promise<void> {
  for (let turn = 0; turn < 1000 && !ready(); turn++) {
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  // The catalog is given time to ask for more than it may.
  for (let turn = 0; turn < 20; turn++) {
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
}

Deno.test("a prefetch keeps at most maxConcurrentFetches module requests in flight, and is refused with CATALOG_BUSY past maxQueued waiting", async () => {
  await using dir = await tempDir();
  await writeWidePack(`${dir.path}/packs`, 19);
  const out = await stageInto(`${dir.path}/packs`, dir.path);
  const declaration = { source: "", packages: ["wide"] };
  const wide = heldFetch();
  const catalog = createStagedCatalog({
    indexUrl: indexUrlOf(out),
    fetch: wide.fetch,
    maxConcurrentFetches: 5,
  });
  const prefetching = catalog.prefetch(declaration);
  await turnsPast(() => wide.modules() >= 5);
  assert.equal(wide.modules(), 5);
  wide.open();
  await prefetching;
  assert.equal(wide.modules(), 20);

  // 20 modules, 1 in flight: 19 would wait, 3 may.
  const narrow = heldFetch();
  const bounded = createStagedCatalog({
    indexUrl: indexUrlOf(out),
    fetch: narrow.fetch,
    maxConcurrentFetches: 1,
    maxQueued: 3,
  });
  const refused = bounded.prefetch(declaration).then(
    () => assert.fail("prefetch() resolved"),
    (error: unknown) => error,
  );
  await turnsPast(() => narrow.modules() >= 1);
  narrow.open();
  const error = await refused;
  assert.ok(error instanceof CordonError, String(error));
  assert.equal(error.code, "CATALOG_BUSY");
  // The one in flight and the three that waited were sent.
  assert.equal(narrow.modules(), 4);
});

for (const hung of ["get", "put"] as const) {
  Deno.test(`a prefetch rejects with ABORTED when its signal aborts while the cache's ${hung} never settles`, async () => {
    await using dir = await tempDir();
    const out = await stageInto(FIXTURE_PACKS, dir.path);
    const never = () => new Promise<never>(() => {});
    const inner = createMemoryModuleCache();
    const catalog = createStagedCatalog({
      indexUrl: indexUrlOf(out),
      cache: hung === "get"
        ? { get: never, put: (digest, source) => inner.put(digest, source) }
        : { get: (digest) => inner.get(digest), put: never },
    });
    const error = await settleWithin(
      catalog.prefetch(MATH_RUN, { signal: AbortSignal.timeout(100) }).then(
        () => assert.fail("prefetch() resolved"),
        (error: unknown) => error,
      ),
      HANG_MS,
      () =>
        assert.fail("prefetch() was still waiting after its signal aborted"),
    );
    assert.ok(error instanceof CordonError, String(error));
    assert.equal(error.code, "ABORTED");
  });
}

Deno.test("a prefetch aborted with a revoked Proxy once the index has answered rejects with ABORTED and leaves no rejection unhandled", async () => {
  await using dir = await tempDir();
  const out = await stageInto(FIXTURE_PACKS, dir.path);
  const controller = new AbortController();
  const { proxy: reason, revoke } = Proxy.revocable({}, {});
  revoke();
  const catalog = createStagedCatalog({
    indexUrl: indexUrlOf(out),
    // The abort comes while the body of the answer is still to be read.
    fetch: async (input, init) => {
      const response = await fetch(input, init);
      controller.abort(reason);
      return response;
    },
  });
  let error: unknown;
  const unhandled = await unhandledDuring(async () => {
    error = await catalog.prefetch(MATH_RUN, { signal: controller.signal })
      .then(() => assert.fail("prefetch() resolved"), (error) => error);
  });
  assert.deepEqual(unhandled.map(String), []);
  assert.ok(error instanceof CordonError, String(error));
  assert.equal(error.code, "ABORTED");
  assert.equal(error.cause, reason);
  const result = await catalog.prefetch(MATH_RUN).then(() => "prefetched");
  assert.equal(result, "prefetched");
});

Deno.test("a pack index that does not match index.json fails the run with DIGEST_MISMATCH", async () => {
  await using dir = await tempDir();
  const out = await stageInto(FIXTURE_PACKS, dir.path);
  const { packPath } = await mathFiles(out);
  const text = await Deno.readTextFile(`${out}/${packPath}`);
  await Deno.writeTextFile(`${out}/${packPath}`, text.replace(/\n$/, " \n"));
  using loader = await createQuickJSLoader({
    catalog: createStagedCatalog({ indexUrl: indexUrlOf(out) }),
  });
  const result = await loader.run(MATH_RUN);
  assert.equal(!result.ok && result.error.code, "DIGEST_MISMATCH");
  assert.match(
    !result.ok ? result.error.message : "",
    /^Refusing pack "@cordon-fixtures\/math": its pack index hashes to/,
  );
});

Deno.test("an index.json that is not a staged index fails with FETCH_FAILED naming the pack", async () => {
  await using dir = await tempDir();
  const out = await stageInto(FIXTURE_PACKS, dir.path);
  await Deno.writeTextFile(`${out}/index.json`, '{"packs": []}');
  const catalog = createStagedCatalog({ indexUrl: indexUrlOf(out) });
  await assert.rejects(
    () => catalog.prefetch(MATH_RUN),
    (error: Error & { code?: string }) =>
      error.code === "FETCH_FAILED" &&
      /catalog listing for pack "@cordon-fixtures\/math".*staged index schema/
        .test(error.message),
  );
});

Deno.test("an index.json of 100,000 empty entries is refused at its first wrong entry, where every missing field of every entry got an issue", async () => {
  await using dir = await tempDir();
  const out = await stageInto(FIXTURE_PACKS, dir.path);
  const entries = new Array(100_000).fill("{}").join(",");
  await Deno.writeTextFile(
    `${out}/index.json`,
    `{"format":1,"packs":[${entries}]}`,
  );
  const catalog = createStagedCatalog({ indexUrl: indexUrlOf(out) });
  const error = await catalog.prefetch(MATH_RUN).then(
    () => assert.fail("expected the prefetch to reject"),
    (error: CordonError) => error,
  );
  assert.equal(error.code, "FETCH_FAILED");
  assert.match(error.message, /staged index schema/);
  const { issues } = error.cause as { issues: { path: PropertyKey[] }[] };
  assert.equal(issues.length, 1);
  assert.deepEqual(issues[0]!.path.slice(0, 2), ["packs", 0]);
});

Deno.test("the staged catalog serves modules of fetched packs from authorizeDelivery", async () => {
  await using dir = await tempDir();
  const out = await stageInto(FIXTURE_PACKS, dir.path);
  const catalog = createStagedCatalog({ indexUrl: indexUrlOf(out) });
  const missing = await catalog.authorizeDelivery("abc");
  assert.equal(!missing.ok && missing.code, "MODULE_NOT_FOUND");
  await catalog.prefetch(MATH_RUN);
  const id = catalog.resolveForExecution(MATH_RUN).packs[
    "@cordon-fixtures/math"
  ]!.exports["."]!;
  const delivery = await catalog.authorizeDelivery(id);
  assert.equal(delivery.ok && delivery.path, "./index.js");
});

Deno.test("createStagedCatalog() refuses bad options with TypeError or RangeError", () => {
  assert.throws(
    () => createStagedCatalog({ indexUrl: "index.json" }),
    TypeError,
  );
  assert.throws(
    () => createStagedCatalog({ indexUrl: "ftp://host/index.json" }),
    TypeError,
  );
  assert.throws(
    () => createStagedCatalog({ indexUrl: "https://h/index.json?x=1" }),
    TypeError,
  );
  assert.throws(
    () =>
      createStagedCatalog({
        indexUrl: "https://h/index.json",
        indexMaxAgeMs: -1,
      }),
    RangeError,
  );
  assert.throws(
    () =>
      createStagedCatalog({
        indexUrl: "https://h/index.json",
        maxModuleBytes: 0,
      }),
    RangeError,
  );
  for (
    const [bad, message] of [
      [
        { maxConcurrentFetches: 0 },
        "maxConcurrentFetches must be an integer from 1 to 1024",
      ],
      [{ maxQueued: -1 }, "maxQueued must be an integer from 0 to 1000000000"],
    ] as const
  ) {
    assert.throws(
      () => createStagedCatalog({ indexUrl: "https://h/index.json", ...bad }),
      {
        name: "RangeError",
        message: `Cannot create a staged catalog: ${message}`,
      },
    );
  }
});

Deno.test("createStagedCatalog() refuses an indexUrl with credentials, which every failure message would repeat", () => {
  for (
    const indexUrl of [
      "http://user:s3cret@h/index.json",
      "https://token@h/x/index.json",
    ]
  ) {
    assert.throws(
      () => createStagedCatalog({ indexUrl }),
      (error: Error) =>
        error instanceof TypeError &&
        /indexUrl must not hold a user name or password: .*headers/.test(
          error.message,
        ) && !error.message.includes("s3cret"),
    );
  }
});

Deno.test("a second prefetch over an unchanged index fetches index.json again and nothing else", async () => {
  await using dir = await tempDir();
  const out = await stageInto(FIXTURE_PACKS, dir.path);
  const fetched: string[] = [];
  const catalog = createStagedCatalog({
    indexUrl: indexUrlOf(out),
    fetch: (input, init) => {
      fetched.push(input.slice(input.lastIndexOf("/") + 1));
      return fetch(input, init);
    },
  });
  await catalog.prefetch(MATH_RUN);
  const first = fetched.length;
  await catalog.prefetch(MATH_RUN);
  assert.deepEqual(fetched.slice(first), ["index.json"]);
  assert.equal(catalog.resolveForExecution(MATH_RUN).statuses[0]!.status, "ok");
});

Deno.test("a declared pack that is not staged gets PACK_NOT_INSTALLED, not a fetch failure", async () => {
  await using dir = await tempDir();
  const out = await stageInto(FIXTURE_PACKS, dir.path);
  using loader = await createQuickJSLoader({
    catalog: createStagedCatalog({ indexUrl: indexUrlOf(out) }),
  });
  const result = await loader.run({
    source: 'import { x } from "nope";\nexport default x;',
    packages: ["nope"],
  });
  assert.equal(!result.ok && result.error.code, "PACK_NOT_INSTALLED");
});

/** Serves a staged tree's files over HTTP; `answer` may answer first. */
function serveTree(
  root: string,
  answer: (path: string, request: Request) => Response | undefined = () =>
    undefined,
): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      const path = new URL(request.url).pathname.slice(1);
      const early = answer(path, request);
      if (early !== undefined) return early;
      try {
        return new Response(await Deno.readFile(`${root}/${path}`));
      } catch {
        return new Response("not found", { status: 404 });
      }
    },
  );
}

/**
 * Runs the math fixture over a staged tree whose host redirects every
 * module to another origin, which answers with `otherAnswer` (or the
 * tree's own file); returns the result and what the other origin was asked
 * for, with the `x-api-key` it saw.
 */
async function runBehindRedirect(
  otherAnswer: (path: string) => Response | undefined,
  headers?: Record<string, string>,
): Promise<{ result: SandboxResult; elsewhere: string[] }> {
  await using dir = await tempDir();
  const out = await stageInto(FIXTURE_PACKS, dir.path);
  const elsewhere: string[] = [];
  await using other = serveTree(out, (path, request) => {
    elsewhere.push(`${path} ${request.headers.get("x-api-key")}`);
    return otherAnswer(path);
  });
  await using host = serveTree(
    out,
    (path) =>
      path.startsWith("modules/")
        ? Response.redirect(`http://127.0.0.1:${other.addr.port}/${path}`, 302)
        : undefined,
  );
  using loader = await createQuickJSLoader({
    catalog: createStagedCatalog({
      indexUrl: `http://127.0.0.1:${host.addr.port}/index.json`,
      headers,
    }),
  });
  return { result: await loader.run(MATH_RUN), elsewhere };
}

Deno.test("a staged catalog given headers does not follow a redirect elsewhere: FETCH_FAILED, and nothing reaches the other origin", async () => {
  const { result, elsewhere } = await runBehindRedirect(
    () => undefined,
    { "x-api-key": "secret" },
  );
  assert.equal(!result.ok && result.error.code, "FETCH_FAILED");
  assert.match(
    !result.ok ? result.error.message : "",
    /^Cannot fetch module \.\/index\.js of pack "@cordon-fixtures\/math" from http:\S+: the host answered a redirect \(302\), which the catalog does not follow while it sends the headers it was given /,
  );
  assert.deepEqual(elsewhere, []);
  assert.deepEqual(result.logs, []);
});

Deno.test("a staged catalog with no headers follows a host's redirect to where the tree is served", async () => {
  const { result } = await runBehindRedirect(() => undefined);
  assert.equal(result.ok, true, JSON.stringify(result));
});

Deno.test("a staged catalog with no headers follows a host's redirect and checks what it leads to by digest", async () => {
  const { result, elsewhere } = await runBehindRedirect((path) =>
    path.endsWith(".js") ? new Response("export const add = 0;") : undefined
  );
  // The other origin was asked, and its bytes are not the tree's.
  assert.ok(elsewhere.length > 0);
  assert.equal(!result.ok && result.error.code, "DIGEST_MISMATCH");
});

Deno.test("createStagedCatalog() refuses a misspelt option, naming the closest one", () => {
  assert.throws(
    () =>
      createStagedCatalog({
        indexUrl: "http://127.0.0.1:1/index.json",
        indexMaxAge: 10,
      } as never),
    {
      name: "TypeError",
      message:
        "Cannot create a staged catalog: unknown option indexMaxAge; did you mean indexMaxAgeMs?",
    },
  );
});

Deno.test("the staged catalog fetches index.json again past indexMaxAgeMs even when the wall clock stepped back", async () => {
  await using dir = await tempDir();
  const out = await stageInto(FIXTURE_PACKS, dir.path);
  let indexFetches = 0;
  const catalog = createStagedCatalog({
    indexUrl: indexUrlOf(out),
    indexMaxAgeMs: 1,
    fetch: (input, init) => {
      if (new URL(input).pathname.endsWith("/index.json")) indexFetches++;
      return fetch(input, init);
    },
  });
  const wallClock = Date.now;
  try {
    await catalog.prefetch(MATH_RUN);
    const before = indexFetches;
    // An NTP correction that steps the wall clock back by an hour.
    const stepped = wallClock() - 3_600_000;
    Date.now = () => stepped;
    await new Promise((resolve) => setTimeout(resolve, 20));
    await catalog.prefetch(MATH_RUN);
    assert.ok(indexFetches > before, "index.json was not fetched again");
  } finally {
    Date.now = wallClock;
  }
});
