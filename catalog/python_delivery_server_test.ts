import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import {
  createMemoryModuleCache,
  createRemoteCatalog,
} from "./remote_catalog.ts";
import { createQuickJSLoader } from "../loader/quickjs_loader.ts";
import { FIXTURE_CASES } from "../fixtures/cases.ts";
import { runCase } from "../fixtures/run_table.ts";
import type { PackSummary } from "../protocol/delivery.ts";
import { createDiskCatalog } from "./disk_catalog.ts";

// A delivery server written in Python from the docs and schemas alone: the
// contract must be enough for another platform, and cordon's client must
// accept every liberty the contract leaves such a server.
const SERVER = fileURLToPath(
  new URL("./testdata/py_delivery_server.py", import.meta.url),
);
const PACKS = fileURLToPath(new URL("../fixtures/packs/", import.meta.url));

interface PythonServer extends AsyncDisposable {
  baseUrl: string;
}

async function startPythonServer(
  flags: string[] = [],
  packs = PACKS,
): Promise<PythonServer> {
  const child = new Deno.Command("python3", {
    args: [SERVER, "--packs", packs, "--port", "0", ...flags],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let head = "";
  while (!head.includes("\n")) {
    const { value, done } = await lines.read();
    if (done) break;
    head += value;
  }
  await lines.cancel();
  const port = /^LISTENING (\d+)\n/.exec(head)?.[1];
  if (port === undefined) {
    child.kill();
    await child.status;
    throw new Error(`The Python delivery server did not start: ${head}`);
  }
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    async [Symbol.asyncDispose]() {
      child.kill();
      await child.status;
    },
  };
}

interface Exchange {
  url: string;
  ifNoneMatch: string | null;
  status: number;
}

/** A fetch that records each request's URL, If-None-Match and status. */
function recordingFetch(exchanges: Exchange[]): typeof fetch {
  return async (input, init) => {
    const request = new Request(input, init);
    const response = await fetch(request);
    exchanges.push({
      url: request.url,
      ifNoneMatch: request.headers.get("if-none-match"),
      status: response.status,
    });
    return response;
  };
}

// File names whose order differs by UTF-16 code unit ("😀" is D83D DE00)
// and by code point ("～" is U+FF5E), and one that JSON may escape ("é").
const UNICODE_PACK: Record<string, string> = {
  "package.json": JSON.stringify({
    name: "uni",
    version: "1.0.0",
    cordon: {
      exports: { ".": "./index.js", "./tilde": "./lib/～.js", "./x": "./x.js" },
      internal: ["./lib/😀.js", "./lib/é.js"],
    },
  }),
  "index.js": 'import { a } from "./lib/😀.js";\n' +
    'import { b } from "./lib/～.js";\nimport { c } from "./lib/é.js";\n' +
    "export const abc = a + b + c;\n",
  "x.js": 'export { a } from "./lib/😀.js";\n',
  "lib/😀.js": 'export const a = "😀";\n',
  "lib/～.js": 'export const b = "～";\n',
  "lib/é.js": 'export const c = "é";\n',
};

async function writeUnicodePacks(): Promise<string> {
  const packs = await Deno.makeTempDir({ prefix: "cordon-py-packs-" });
  await Deno.mkdir(`${packs}/uni/lib`, { recursive: true });
  for (const [path, text] of Object.entries(UNICODE_PACK)) {
    await Deno.writeTextFile(`${packs}/uni/${path}`, text);
  }
  return packs;
}

function byPath(pack: PackSummary): PackSummary {
  const modules = [...pack.modules].sort((a, b) => a.path < b.path ? -1 : 1);
  return { ...pack, modules };
}

Deno.test("the Python server derives the ids and graph digests of cordon's disk catalog for non-ASCII file names, and the remote catalog runs them", async () => {
  const packs = await writeUnicodePacks();
  try {
    const disk = await createDiskCatalog(packs);
    await using server = await startPythonServer([], packs);
    const listing = await (await fetch(`${server.baseUrl}/api/sandbox-modules`))
      .json();
    assert.deepEqual(listing.packs.map(byPath), disk.summaries().map(byPath));
    const catalog = createRemoteCatalog({ baseUrl: server.baseUrl });
    using loader = await createQuickJSLoader({ catalog });
    const result = await loader.run({
      source: 'import { abc } from "uni";\nimport { a } from "uni/x";\n' +
        "export default abc + a;",
      packages: ["uni"],
    });
    assert.deepEqual(result.ok ? result.value : result.error, "😀～é😀");
  } finally {
    await Deno.remove(packs, { recursive: true });
  }
});

const MATH_AND_CLOCK = {
  source: 'import { add, round } from "@cordon-fixtures/math";\n' +
    'import { formatDuration } from "@cordon-fixtures/clock";\n' +
    "export default [add(1, 2), round(2.5), formatDuration(3723000)];",
  packages: ["@cordon-fixtures/math", "@cordon-fixtures/clock"],
};

/** Runs MATH_AND_CLOCK twice: a fetch, then a revalidation of the listing. */
async function runMathAndClockTwice(baseUrl: string) {
  const catalog = createRemoteCatalog({ baseUrl });
  using loader = await createQuickJSLoader({ catalog });
  const results = [];
  for (let run = 0; run < 2; run++) {
    const result = await loader.run(MATH_AND_CLOCK);
    results.push(result.ok ? result.value : result.error);
  }
  return results;
}

Deno.test("the fixture table gives its expected outcomes through a Python delivery server written from the docs", async (t) => {
  await using server = await startPythonServer();
  const catalog = createRemoteCatalog({ baseUrl: server.baseUrl });
  using loader = await createQuickJSLoader({ catalog });
  for (const fixtureCase of FIXTURE_CASES) {
    await t.step(fixtureCase.name, async () => {
      assert.deepEqual(await runCase(loader, fixtureCase), fixtureCase.expect);
    });
  }
});

const LIBERTIES: [string, string[]][] = [
  ["HTTP/1.0 with each connection closed", ["--http10"]],
  ["chunked bodies", ["--chunked"]],
  ["lower-case header names", ["--header-case", "lower"]],
  ["upper-case header names", ["--header-case", "upper"]],
  ["Content-Type: application/javascript", [
    "--content-type",
    "application/javascript",
  ]],
  ["a weak ETag", ["--weak-etag"]],
  ["Repr-Digest with sha-512 before sha-256", [
    "--repr-digest",
    "sha-512-first",
  ]],
  ["Repr-Digest with sha-256 before sha-512", [
    "--repr-digest",
    "sha-256-first",
  ]],
  ["no ?packs= listing (the whole listing answers)", ["--no-packs-query"]],
  ["packs, modules, exports and imports in reverse order", [
    "--reverse-order",
  ]],
  ["module ids of its own, not derived from the packs", ["--opaque-ids"]],
  ["HTTP/1.0 bodies ended by the close, without Content-Length", [
    "--http10",
    "--close-delimited",
  ]],
  ["a gzip listing with a weak ETag", ["--gzip-listing", "--weak-etag"]],
  ["304s without ETag and Cache-Control", ["--bare-304"]],
  ["no X-Cordon-Dependencies", ["--no-dependencies"]],
];

for (const [liberty, flags] of LIBERTIES) {
  Deno.test(`the remote catalog runs pack code from a server that sends ${liberty}`, async () => {
    await using server = await startPythonServer(flags);
    assert.deepEqual(await runMathAndClockTwice(server.baseUrl), [
      [3, 3, "1:02:03"],
      [3, 3, "1:02:03"],
    ]);
  });
}

Deno.test("the remote catalog asks for the declared packs only and revalidates the listing with a 304", async () => {
  await using server = await startPythonServer();
  const exchanges: Exchange[] = [];
  const catalog = createRemoteCatalog({
    baseUrl: server.baseUrl,
    fetch: recordingFetch(exchanges),
  });
  await catalog.prefetch(MATH_AND_CLOCK);
  const listing = exchanges.filter((e) =>
    !e.url.includes("/api/sandbox-modules/")
  );
  assert.equal(listing.length, 1);
  const asked = new URL(listing[0]!.url).searchParams.get("packs");
  assert.deepEqual(
    asked?.split(",").sort(),
    ["@cordon-fixtures/clock", "@cordon-fixtures/math"],
  );
  exchanges.length = 0;
  await catalog.prefetch(MATH_AND_CLOCK);
  assert.equal(exchanges.length, 1);
  assert.match(exchanges[0]!.ifNoneMatch ?? "", /^"sha256-/);
  assert.equal(exchanges[0]!.status, 304);
  assert.deepEqual(
    catalog.resolveForExecution(MATH_AND_CLOCK).statuses.map((s) => s.status),
    ["ok", "ok"],
  );
});

Deno.test("authorizeDelivery() revalidates a module with If-None-Match and keeps its bytes on a 304", async () => {
  for (const flags of [[], ["--weak-etag"], ["--bare-304"]]) {
    await using server = await startPythonServer(flags);
    const exchanges: Exchange[] = [];
    const catalog = createRemoteCatalog({
      baseUrl: server.baseUrl,
      fetch: recordingFetch(exchanges),
    });
    await catalog.prefetch({ source: "", packages: ["greet"] });
    const id = catalog.summaries()[0]!.modules[0]!.id;
    const first = await catalog.authorizeDelivery(id);
    const second = await catalog.authorizeDelivery(id);
    assert.equal(first.ok && first.content.includes("Hello"), true);
    assert.deepEqual(second, first);
    const last = exchanges.at(-1)!;
    assert.equal(last.status, 304, flags.join(" "));
    assert.notEqual(last.ifNoneMatch, null);
  }
});

Deno.test("a module another catalog cached is granted with If-None-Match: * and a 304", async () => {
  await using server = await startPythonServer();
  const cache = createMemoryModuleCache();
  const declaration = { source: "", packages: ["greet"] };
  await createRemoteCatalog({ baseUrl: server.baseUrl, cache })
    .prefetch(declaration);
  const exchanges: Exchange[] = [];
  const second = createRemoteCatalog({
    baseUrl: server.baseUrl,
    cache,
    fetch: recordingFetch(exchanges),
  });
  await second.prefetch(declaration);
  const modules = exchanges.filter((e) => e.url.includes("?digest="));
  assert.deepEqual(
    modules.map((e) => [e.ifNoneMatch, e.status]),
    [["*", 304]],
  );
});

for (const extras of [[], ["--problem-extras"]]) {
  Deno.test(`problem documents${extras.length ? " with RFC 9457 extension members" : ""} for 403 and 404 become refusals with the server's codes`, async () => {
    await checkProblems(extras);
  });
}

async function checkProblems(extras: string[]) {
  await using server = await startPythonServer([
    "--forbid",
    "greet",
    ...extras,
  ]);
  const catalog = createRemoteCatalog({ baseUrl: server.baseUrl });
  const forbidden = await catalog.prefetch({ source: "", packages: ["greet"] })
    .then(() => undefined, (error: Error & { code?: string }) => error.code);
  assert.equal(forbidden, "FETCH_FAILED");
  const greetId = catalog.summaries()[0]!.modules[0]!.id;
  const refusal = await catalog.authorizeDelivery(greetId);
  assert.deepEqual(
    refusal.ok ? refusal : [refusal.reason, refusal.code],
    ["forbidden", "DELIVERY_FORBIDDEN"],
  );
  const missing = await catalog.authorizeDelivery("AAAAAAAAAAAAAAAAAAAAAA");
  assert.deepEqual(
    missing.ok ? missing : [missing.reason, missing.code],
    ["not-found", "MODULE_NOT_FOUND"],
  );
}
