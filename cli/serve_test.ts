import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { createDiskCatalog } from "../catalog/disk_catalog.ts";
import { CatalogListingSchema } from "../protocol/mod.ts";
import { settleWithin } from "../protocol/deadline.ts";
import { parseServeArgs, runServer, USAGE } from "./serve.ts";
import { copyTree } from "../delivery/_test_copy_tree_test.ts";

const ROOT = new URL("../", import.meta.url);
const FIXTURE_PACKS = new URL("../fixtures/packs/", import.meta.url);
/**
 * The permissions of `deno task serve`: the command reads no environment
 * variable but the folder the task was started in.
 */
const TASK_PERMISSIONS = [
  "--allow-read",
  "--allow-net=127.0.0.1,localhost",
  "--allow-env=CORDON_START_DIR",
];

/** The lines of a stream, read in the background as they come. */
class Lines {
  readonly lines: string[] = [];
  /** Resolves with the whole text once the stream ends. */
  readonly text: Promise<string>;
  #ended = false;
  #changed = Promise.withResolvers<void>();

  constructor(stream: ReadableStream<Uint8Array>) {
    this.text = this.#read(stream);
  }

  /**
   * The first line from `from` on that matches, with its index; fails when
   * the stream ends first.
   */
  async waitFor(
    pattern: RegExp,
    from = 0,
  ): Promise<{ match: RegExpExecArray; index: number }> {
    for (let index = from;;) {
      for (; index < this.lines.length; index++) {
        const match = pattern.exec(this.lines[index]!);
        if (match) return { match, index };
      }
      if (this.#ended) {
        throw new Error(
          `The output ended without ${pattern}:\n${this.lines.join("\n")}`,
        );
      }
      await this.#changed.promise;
    }
  }

  async #read(stream: ReadableStream<Uint8Array>): Promise<string> {
    let all = "";
    let buffer = "";
    for await (const text of stream.pipeThrough(new TextDecoderStream())) {
      all += text;
      buffer += text;
      const parts = buffer.split("\n");
      buffer = parts.pop()!;
      this.lines.push(...parts);
      this.#notify();
    }
    if (buffer !== "") this.lines.push(buffer);
    this.#ended = true;
    this.#notify();
    return all;
  }

  #notify(): void {
    this.#changed.resolve();
    this.#changed = Promise.withResolvers<void>();
  }
}

/** A running `cli/serve.ts` whose output is read line by line. */
class ServerProcess implements AsyncDisposable {
  /** The lines of standard output so far. */
  readonly lines: string[];
  /** The lines of standard error so far. */
  readonly errorLines: string[];
  /** The whole of standard error, once the process has ended. */
  readonly errors: Promise<string>;
  #child: Deno.ChildProcess;
  #out: Lines;
  #err: Lines;
  #searched = 0;
  #errorsSearched = 0;
  #status: Deno.CommandStatus | undefined;

  /**
   * Starts the server with the task's permissions plus `permissions`
   * (such as a `--deny-read`); `fileLimit` runs it under `ulimit -n`,
   * which sets both the soft and the hard limit; `startDir` is the folder
   * `deno task` was started in, as this project's tasks pass it on.
   */
  constructor(
    args: string[],
    options: { fileLimit?: number; permissions?: string[]; startDir?: string } =
      {},
  ) {
    const deno = [
      Deno.execPath(),
      "run",
      ...TASK_PERMISSIONS,
      ...options.permissions ?? [],
      "cli/serve.ts",
      ...args,
    ];
    const [command, commandArgs] = options.fileLimit === undefined
      ? [deno[0]!, deno.slice(1)]
      : [
        "bash",
        [
          "-c",
          `ulimit -n ${options.fileLimit} && exec "$@"`,
          "bash",
          ...deno,
        ],
      ];
    this.#child = new Deno.Command(command, {
      args: commandArgs,
      cwd: ROOT,
      env: {
        NO_COLOR: "1",
        ...options.startDir === undefined
          ? {}
          : { CORDON_START_DIR: options.startDir },
      },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    this.#out = new Lines(this.#child.stdout);
    this.#err = new Lines(this.#child.stderr);
    this.lines = this.#out.lines;
    this.errorLines = this.#err.lines;
    this.errors = this.#err.text;
    this.#child.status.then((status) => this.#status = status);
  }

  /** Whether the process has exited. */
  get exited(): boolean {
    return this.#status !== undefined;
  }

  /**
   * Reads standard output until a line after the last one matched
   * matches; fails when the output ends first.
   */
  async waitFor(pattern: RegExp): Promise<RegExpExecArray> {
    try {
      const { match, index } = await this.#out.waitFor(pattern, this.#searched);
      this.#searched = index + 1;
      return match;
    } catch (error) {
      throw new Error(`${(error as Error).message}\n${await this.errors}`);
    }
  }

  /** Like {@linkcode waitFor}, for standard error. */
  async waitForError(pattern: RegExp): Promise<RegExpExecArray> {
    const { match, index } = await this.#err.waitFor(
      pattern,
      this.#errorsSearched,
    );
    this.#errorsSearched = index + 1;
    return match;
  }

  /** Sends a signal and reads the rest of the output. */
  async stop(signal: Deno.Signal): Promise<Deno.CommandStatus> {
    this.#child.kill(signal);
    return await this.finish();
  }

  /** Reads the rest of the output and the exit status. */
  async finish(): Promise<Deno.CommandStatus> {
    await Promise.all([this.#out.text, this.#err.text]);
    return await this.#child.status;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    if (!this.exited) {
      try {
        this.#child.kill("SIGKILL");
      } catch {
        // Already gone.
      }
    }
    await this.finish();
  }
}

Deno.test("cli/serve.ts reads a relative --packs from the folder deno task was started in", async () => {
  const root = await Deno.makeTempDir({ prefix: "cordon_start_dir_" });
  try {
    await copyTree(fileURLToPath(FIXTURE_PACKS), `${root}/packs`);
    await using server = new ServerProcess(
      ["--packs", "packs", "--port", "0", "--quiet"],
      { startDir: root },
    );
    await server.waitFor(/^Listening on /);
    await server.waitFor(/^\d+ packs installed:$/);
    assert.equal((await server.stop("SIGTERM")).code, 0);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("cli/serve.ts that cannot enter the folder deno task was started in says so in one line and reads paths from its own", async () => {
  await using server = new ServerProcess(["--port", "0", "--quiet"], {
    startDir: "/nonexistent/cordon-start-dir",
  });
  await server.waitForError(
    /^warning: Cannot enter the folder the task was started in \(NotFound\); relative paths are read from the folder of deno\.json$/,
  );
  await server.waitFor(/^Listening on /);
  assert.equal((await server.stop("SIGTERM")).code, 0);
});

Deno.test("cli/serve.ts prints its URL and packs, serves, logs requests and exits 0 on SIGTERM", async () => {
  const root = await Deno.makeTempDir({ prefix: "cordon_main_" });
  try {
    const packs = `${root}/packs`;
    await copyTree(fileURLToPath(FIXTURE_PACKS), packs);
    await Deno.mkdir(`${packs}/broken`);
    await Deno.writeTextFile(`${packs}/broken/package.json`, '{"name": 1}');
    await using server = new ServerProcess([
      "--packs",
      packs,
      "--port",
      "0",
      "--watch",
    ]);
    const [, url] = await server.waitFor(
      /^Listening on (http:\/\/127\.0\.0\.1:\d+\/api\/sandbox-modules)$/,
    );
    await server.waitFor(/^Press Ctrl-C to stop$/);
    const startup = server.lines.join("\n");
    // Whatever the fixture packs hold, each installed pack is printed.
    const expected = (await createDiskCatalog(packs)).summaries();
    assert.ok(expected.length >= 3);
    assert.match(
      startup,
      new RegExp(`^${expected.length} packs installed:$`, "m"),
    );
    for (const pack of expected) {
      const n = pack.modules.length;
      assert.ok(
        server.lines.includes(
          `  ${pack.name}@${pack.version} (${n} module${n === 1 ? "" : "s"})`,
        ),
        pack.name,
      );
    }
    assert.match(
      startup,
      /^ {2}@cordon-fixtures\/math@1\.0\.0 \(3 modules\)$/m,
    );
    assert.match(startup, /^ {2}greet@1\.0\.0 \(1 module\)$/m);
    assert.match(startup, /^ {2}broken: PACK_MANIFEST_INVALID: /m);

    const listing = CatalogListingSchema.parse(
      await (await fetch(url!)).json(),
    );
    const greet = listing.packs.find((p) => p.name === "greet")!.modules[0]!;
    const response = await fetch(`${url}/${greet.id}?digest=x`);
    assert.equal(response.status, 404);
    await response.body?.cancel();
    const module = await fetch(`${url}/${greet.id}`);
    assert.equal(module.status, 200);
    await module.body?.cancel();
    await server.waitFor(
      new RegExp(
        `^GET /api/sandbox-modules/${greet.id} 404 MODULE_NOT_FOUND \\d+\\.\\dms$`,
      ),
    );
    await server.waitFor(
      new RegExp(`^GET /api/sandbox-modules/${greet.id} 200 \\d+\\.\\dms$`),
    );

    await Deno.mkdir(`${packs}/extra`);
    await Deno.writeTextFile(`${packs}/extra/index.js`, "export default 1;\n");
    await Deno.writeTextFile(
      `${packs}/extra/package.json`,
      JSON.stringify({
        name: "extra",
        version: "2.0.0",
        cordon: { exports: { ".": "./index.js" } },
      }),
    );
    await server.waitFor(/^Packs rescanned: added extra@2\.0\.0$/);

    const status = await server.stop("SIGTERM");
    assert.equal(status.code, 0);
    assert.equal(
      server.lines.at(-1) === "" ? server.lines.at(-2) : server.lines.at(-1),
      "Stopped",
    );
    const output = server.lines.join("\n") + (await server.errors);
    assert.ok(!output.includes(root), output);
    assert.ok(!output.includes(await Deno.realPath(root)), output);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("cli/serve.ts serves the fixture packs by default and exits 0 on SIGINT", async () => {
  await using server = new ServerProcess(["--port=0", "--quiet"]);
  const [, url] = await server.waitFor(/^Listening on (\S+)$/);
  await server.waitFor(/^Press Ctrl-C to stop$/);
  const listing = CatalogListingSchema.parse(await (await fetch(url!)).json());
  const fixtures = await createDiskCatalog(
    fileURLToPath(FIXTURE_PACKS),
  );
  assert.deepEqual(
    listing.packs.map((p) => p.name),
    fixtures.summaries().map((p) => p.name),
  );
  assert.ok(listing.packs.some((p) => p.name === "@cordon-fixtures/math"));
  const status = await server.stop("SIGINT");
  assert.equal(status.code, 0);
  assert.ok(!server.lines.some((line) => line.startsWith("GET ")));
});

Deno.test("cli/serve.ts exits 2 with one line on bad flags", async () => {
  for (const args of [["--prot", "1"], ["--port", "eighty"], ["--packs"]]) {
    await using server = new ServerProcess(args);
    const status = await server.finish();
    assert.equal(status.code, 2, args.join(" "));
    assert.match(
      await server.errors,
      /^error: CLI_FLAGS_INVALID: Cannot read the flags: [^\n/]+; run with --help for the flags\n$/,
    );
  }
});

Deno.test("cli/serve.ts exits 1 with one line, PATH_UNUSABLE and no path when the packs folder cannot be read", async () => {
  await using server = new ServerProcess([
    "--packs",
    "/nonexistent/cordon-packs",
    "--port=0",
  ]);
  const status = await server.finish();
  assert.equal(status.code, 1);
  const errors = await server.errors;
  assert.equal(
    errors,
    "error: PATH_UNUSABLE: Cannot read the packs folder: NotFound; check that it exists, is a folder and is readable\n",
  );
});

Deno.test("cli/serve.ts rejects a pack folder it may not read and says to let it read the folder, not to fix the manifest", async () => {
  const root = await Deno.makeTempDir({ prefix: "cordon_sealed_" });
  try {
    const packs = `${root}/packs`;
    await copyTree(fileURLToPath(FIXTURE_PACKS), packs);
    await Deno.mkdir(`${packs}/sealed`);
    await Deno.writeTextFile(`${packs}/sealed/package.json`, "{}");
    await using server = new ServerProcess(
      ["--packs", packs, "--port", "0", "--quiet"],
      { permissions: [`--deny-read=${packs}/sealed`] },
    );
    const [line] = await server.waitFor(/^ {2}sealed: .*$/);
    assert.equal(
      line,
      '  sealed: PACK_MANIFEST_INVALID: Cannot use pack "sealed": the pack folder cannot be read (NotCapable); let the server read the pack folder: check its permissions, and that --allow-read covers it',
    );
    await server.waitFor(/^Press Ctrl-C to stop$/);
    assert.equal((await server.stop("SIGTERM")).code, 0);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("cli/serve.ts rejects a scope folder it may not read and says to let it read the folder, not to fix a manifest", async () => {
  const root = await Deno.makeTempDir({ prefix: "cordon_sealed_" });
  try {
    const packs = `${root}/packs`;
    await copyTree(fileURLToPath(FIXTURE_PACKS), packs);
    await using server = new ServerProcess(
      ["--packs", packs, "--port", "0", "--quiet"],
      { permissions: [`--deny-read=${packs}/@cordon-fixtures`] },
    );
    const [line] = await server.waitFor(/^ {2}@cordon-fixtures: .*$/);
    assert.equal(
      line,
      '  @cordon-fixtures: PACK_MANIFEST_INVALID: Cannot use scope folder "@cordon-fixtures": it cannot be read (NotCapable); let the server read the scope folder: check its permissions, and that --allow-read covers it',
    );
    await server.waitFor(/^Press Ctrl-C to stop$/);
    assert.equal((await server.stop("SIGTERM")).code, 0);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("cli/serve.ts rejects a pack whose manifest or module it may not read and says to let it read them, not to add them", async () => {
  const root = await Deno.makeTempDir({ prefix: "cordon_sealed_" });
  try {
    const packs = `${root}/packs`;
    for (const name of ["hidden-manifest", "hidden-module"]) {
      await Deno.mkdir(`${packs}/${name}`, { recursive: true });
      await Deno.writeTextFile(
        `${packs}/${name}/package.json`,
        JSON.stringify({
          name,
          version: "1.0.0",
          cordon: { exports: { ".": "./index.js" } },
        }),
      );
      await Deno.writeTextFile(
        `${packs}/${name}/index.js`,
        "export default 1;\n",
      );
    }
    await using server = new ServerProcess(
      ["--packs", packs, "--port", "0", "--quiet"],
      {
        permissions: [
          `--deny-read=${packs}/hidden-manifest/package.json,${packs}/hidden-module/index.js`,
        ],
      },
    );
    const [manifestLine] = await server.waitFor(/^ {2}hidden-manifest: .*$/);
    const [moduleLine] = await server.waitFor(/^ {2}hidden-module: .*$/);
    assert.deepEqual([manifestLine, moduleLine], [
      '  hidden-manifest: PACK_MANIFEST_INVALID: Cannot use pack "hidden-manifest": package.json cannot be read (NotCapable); let the server read the file: check its permissions, and that --allow-read covers it',
      '  hidden-module: PACK_FILE_MISSING: Cannot use pack "hidden-module": ./index.js cannot be read (NotCapable); let the server read the file: check its permissions, and that --allow-read covers it',
    ]);
    await server.waitFor(/^Press Ctrl-C to stop$/);
    assert.equal((await server.stop("SIGTERM")).code, 0);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("cli/serve.ts exits 1 with one line and DELIVERY_LISTEN_FAILED when the port is busy", async () => {
  using taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  await using server = new ServerProcess(["--port", String(taken.addr.port)]);
  const status = await server.finish();
  assert.equal(status.code, 1);
  assert.match(
    await server.errors,
    /^error: DELIVERY_LISTEN_FAILED: Cannot start the delivery server: Address already in use \(os error \d+\); pass a free --port, or --port 0 to pick one\n$/,
  );
});

Deno.test("cli/serve.ts exits 1 with one line and DELIVERY_LISTEN_FAILED for a hostname it cannot listen on", async (t) => {
  // One the resolver does not know (a plain Error from the runtime, once
  // allowed), and one it cannot parse (a URIError, before any permission
  // check): neither is one of Deno.errors.
  const hosts: [string, string[]][] = [
    ["no-such-host.invalid", ["--allow-net=no-such-host.invalid"]],
    ["two words", []],
  ];
  for (const [hostname, permissions] of hosts) {
    await t.step(hostname, async () => {
      await using server = new ServerProcess(
        ["--hostname", hostname, "--port", "0"],
        { permissions },
      );
      const status = await server.finish();
      assert.equal(status.code, 1);
      assert.match(
        await server.errors,
        /^error: DELIVERY_LISTEN_FAILED: Cannot start the delivery server: [^\n]+; pass a --hostname this machine has, such as 127\.0\.0\.1\n$/,
      );
    });
  }
});

/**
 * Opens up to `count` connections that each send a request head that never
 * ends, as a slow or hostile client does. Connections the server's kernel
 * refuses or resets are left out.
 */
async function openHeaderless(
  port: number,
  count: number,
): Promise<Deno.TcpConn[]> {
  const head = new TextEncoder().encode("GET / HTTP/1.1\r\nHost: x\r\n");
  const conns: Deno.TcpConn[] = [];
  for (let i = 0; i < count; i++) {
    let conn: Deno.TcpConn;
    try {
      conn = await Deno.connect({ hostname: "127.0.0.1", port });
    } catch {
      continue;
    }
    conns.push(conn);
    await conn.write(head).catch(() => {});
  }
  return conns;
}

/** How many of `conns` the server closes within `ms`; then closes them all. */
async function closeAndCountClosedByServer(
  conns: Deno.Conn[],
  ms: number,
): Promise<number> {
  let closed = 0;
  const reads = conns.map((conn) =>
    conn.read(new Uint8Array(64)).then(
      (n) => {
        if (n === null) closed++;
      },
      () => closed++,
    )
  );
  await new Promise((resolve) => setTimeout(resolve, ms));
  const counted = closed;
  for (const conn of conns) {
    try {
      conn.close();
    } catch {
      // Already closed.
    }
  }
  await Promise.all(reads);
  return counted;
}

/**
 * How long a wait for the server may take before the test calls it a hang:
 * far past anything a loaded machine makes of a start, a retry or a stop,
 * so only a server that never gets there reaches it.
 */
const HANG_MS = 120_000;

/**
 * GETs `url`, retrying while the connection is refused, until
 * {@linkcode HANG_MS} has passed.
 */
async function getWithRetry(url: string): Promise<number> {
  const deadline = Date.now() + HANG_MS;
  for (;;) {
    try {
      const response = await fetch(url);
      await response.body?.cancel();
      return response.status;
    } catch (error) {
      if (Date.now() >= deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

const ACCEPT_FAILED =
  /^Cannot accept connections: Too many open files \(os error 24\); listening again$/;
const LIMIT_LEARNED =
  /^Cannot accept a connection: Too many open files \(os error 24\); keeping at most \d+ connections open from now on$/;

/**
 * Under `ulimit -n 256`, two waves of 240 header-less connections each,
 * with a GET after each wave that must get 200.
 */
async function floodTest(
  args: string[],
  expected: { firstError?: RegExp; errorLine?: RegExp },
): Promise<void> {
  await using server = new ServerProcess(["--port=0", "--quiet", ...args], {
    fileLimit: 256,
  });
  const [, url] = await server.waitFor(/^Listening on (\S+)$/);
  const port = Number(new URL(url!).port);
  for (let wave = 1; wave <= 2; wave++) {
    const conns = await openHeaderless(port, 240);
    if (wave === 1 && expected.firstError) {
      await server.waitForError(expected.firstError);
    }
    assert.equal(await getWithRetry(url!), 200, `wave ${wave}`);
    // Most of the connections were closed to make room; the last few
    // opened are still waiting.
    const closed = await closeAndCountClosedByServer(conns, 500);
    assert.ok(
      closed >= 150 && closed <= conns.length,
      `wave ${wave}: ${closed} of ${conns.length} closed`,
    );
    assert.equal(server.exited, false);
  }
  assert.equal(await getWithRetry(url!), 200);
  const status = await server.stop("SIGTERM");
  assert.equal(status.code, 0);
  assert.equal(server.lines.at(-1), "Stopped");
  // Each failure is one line with no path and no stack trace.
  if (expected.errorLine === undefined) assert.deepEqual(server.errorLines, []);
  for (const line of server.errorLines) {
    assert.match(line, expected.errorLine!);
  }
}

Deno.test({
  name:
    "cli/serve.ts with the connection guard keeps answering when header-less connections would take every file descriptor",
  ignore: Deno.build.os !== "linux",
  async fn(t) {
    await t.step(
      "with --max-connections under the limit, no accept fails",
      () => floodTest(["--max-connections=60"], {}),
    );
    // `deno task serve` may not read the descriptor limit, so the guard
    // learns it from the first accept that fails.
    await t.step(
      "with the limit learned from a failed accept",
      () =>
        floodTest([], {
          firstError: LIMIT_LEARNED,
          errorLine: LIMIT_LEARNED,
        }),
    );
  },
});

Deno.test({
  name:
    "cli/serve.ts with --no-connection-guard keeps answering when header-less connections take every file descriptor",
  ignore: Deno.build.os !== "linux",
  fn: () =>
    floodTest(["--no-connection-guard"], {
      firstError: ACCEPT_FAILED,
      errorLine:
        /^Cannot (?:accept connections|listen again): [^/]+; (?:listening again|retrying in \d+ ms)$/,
    }),
});

Deno.test("cli/serve.ts --header-timeout-ms closes a connection that does not finish its head in time", async () => {
  await using server = new ServerProcess([
    "--port=0",
    "--quiet",
    "--header-timeout-ms=300",
  ]);
  const [, url] = await server.waitFor(/^Listening on (\S+)$/);
  const [conn] = await openHeaderless(Number(new URL(url!).port), 1);
  // Only time tells the flag's 300 ms from the default 10 s deadline: any
  // close well before 10 s is the flag's, however loaded the machine.
  const closed = await closeAndCountClosedByServer([conn!], 6000);
  assert.equal(closed, 1);
  assert.equal(await getWithRetry(url!), 200);
  assert.equal((await server.stop("SIGTERM")).code, 0);
});

Deno.test("cli/serve.ts stops at once on SIGTERM while connections wait for their request heads", async () => {
  // Deadlines of ten minutes: a server that waited for the heads, or for
  // their deadlines, would not stop before HANG_MS.
  await using server = new ServerProcess([
    "--port=0",
    "--quiet",
    "--header-timeout-ms=600000",
    "--idle-timeout-ms=600000",
  ]);
  const [, url] = await server.waitFor(/^Listening on (\S+)$/);
  const conns = await openHeaderless(Number(new URL(url!).port), 20);
  assert.equal(conns.length, 20);
  const closed = conns.map((conn) =>
    conn.read(new Uint8Array(64)).then((n) => n === null, () => true)
  );
  const status = await settleWithin(
    server.stop("SIGTERM"),
    HANG_MS,
    () => assert.fail("the server still waited for the request heads"),
  );
  assert.equal(status.code, 0);
  assert.deepEqual(await Promise.all(closed), conns.map(() => true));
  for (const conn of conns) conn.close();
  assert.equal(await server.errors, "");
});

/**
 * Opens a connection that asks for the module at `url` `count` times in a
 * row and never reads an answer: the answers fill the socket's buffers and
 * the requests behind them stay in flight while the connection is open.
 */
async function openUnread(url: string, count: number): Promise<Deno.TcpConn> {
  const { hostname, port, pathname } = new URL(url);
  const conn = await Deno.connect({ hostname, port: Number(port) });
  const request = `GET ${pathname} HTTP/1.1\r\nHost: x\r\n\r\n`;
  await conn.write(new TextEncoder().encode(request.repeat(count)));
  return conn;
}

/**
 * Serves a packs folder of one pack whose module is 1,000,000 bytes, so
 * that 200 answers to a client that does not read overflow any socket
 * buffer, whenever the stop comes.
 */
async function serveLargeModule(
  root: string,
  flags: string[],
): Promise<{ server: ServerProcess; moduleUrl: string }> {
  const pack = `${root}/packs/large`;
  await Deno.mkdir(pack, { recursive: true });
  await Deno.writeTextFile(
    `${pack}/package.json`,
    JSON.stringify({
      name: "large",
      version: "1.0.0",
      cordon: { exports: { ".": "./index.js" } },
    }),
  );
  await Deno.writeTextFile(
    `${pack}/index.js`,
    `export default "${"x".repeat(1_000_000 - 19)}";\n`,
  );
  const server = new ServerProcess(["--packs", `${root}/packs`, ...flags]);
  const [, url] = await server.waitFor(/^Listening on (\S+)$/);
  const listing = await (await fetch(url!)).json();
  const { id } = listing.packs[0].modules[0];
  return { server, moduleUrl: `${url}/${id}` };
}

Deno.test("cli/serve.ts cuts the requests still in flight when --shutdown-timeout-ms runs out after SIGTERM, warns and exits 0", async () => {
  const root = await Deno.makeTempDir({ prefix: "cordon_grace_" });
  try {
    const { server, moduleUrl } = await serveLargeModule(root, [
      "--port=0",
      "--shutdown-timeout-ms=200",
      "--no-connection-guard",
    ]);
    await using _server = server;
    using _conn = await openUnread(moduleUrl, 200);
    await server.waitFor(/^GET \/api\/sandbox-modules\/\S+ 200 /);
    const status = await settleWithin(
      server.stop("SIGTERM"),
      HANG_MS,
      () => assert.fail("the server waited for a client that does not read"),
    );
    assert.equal(status.code, 0);
    assert.equal(server.lines.at(-1), "Stopped");
    assert.deepEqual(server.errorLines, [
      "warning: Requests still in flight 200 ms after the stop were cut; raise --shutdown-timeout-ms to give them longer",
    ]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("cli/serve.ts cuts the requests still in flight at a second SIGTERM and exits 0", async () => {
  const root = await Deno.makeTempDir({ prefix: "cordon_grace_" });
  try {
    const { server, moduleUrl } = await serveLargeModule(root, [
      "--port=0",
      "--no-connection-guard",
      "--shutdown-timeout-ms=600000",
    ]);
    await using _server = server;
    using _conn = await openUnread(moduleUrl, 200);
    await server.waitFor(/^GET \/api\/sandbox-modules\/\S+ 200 /);
    const stopped = server.stop("SIGTERM");
    // The server is stopping once its listener is closed: a new connection
    // is refused.
    await waitForRefusal(moduleUrl);
    const status = await settleWithin(
      server.stop("SIGTERM").then(() => stopped),
      HANG_MS,
      () => assert.fail("the second SIGTERM did not cut the requests"),
    );
    assert.equal(status.code, 0);
    assert.equal(server.lines.at(-1), "Stopped");
    assert.deepEqual(server.errorLines, [
      "warning: Requests still in flight at a second signal were cut; raise --shutdown-timeout-ms to give them longer",
    ]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

/** Resolves once a connection to `url`'s address is refused. */
async function waitForRefusal(url: string): Promise<void> {
  const { hostname, port } = new URL(url);
  for (;;) {
    try {
      (await Deno.connect({ hostname, port: Number(port) })).close();
    } catch {
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

Deno.test("runServer() prints the usage for --help", async () => {
  const printed: string[] = [];
  const code = await runServer(["--help"], { print: (l) => printed.push(l) });
  assert.equal(code, 0);
  assert.deepEqual(printed, [USAGE]);
  assert.match(USAGE, /--packs DIR/);
});

Deno.test("runServer() stops when its signal aborts", async () => {
  const printed: string[] = [];
  const controller = new AbortController();
  const running = runServer(["--port", "0", "--quiet"], {
    print: (line) => {
      printed.push(line);
      if (line === "Press Ctrl-C to stop") controller.abort();
    },
    signal: controller.signal,
  });
  assert.equal(await running, 0);
  assert.equal(printed.at(-1), "Stopped");
});

Deno.test("runServer() prints a rejected pack's folder and file names escaped, one line each", async () => {
  const dir = await Deno.makeTempDir({ prefix: "cordon_serve_rejected_" });
  try {
    // A folder named with an escape sequence, whose manifest names "esc",
    // and a manifest that lists a file whose name holds a newline, which
    // the manifest's schema refuses.
    for (
      const [folder, name, internal] of [
        ["esc\u001b[2J", "esc", []],
        ["forge", "forge", ["./a\u001b[31m\nFORGED.js"]],
      ] as const
    ) {
      await Deno.mkdir(`${dir}/${folder}`);
      await Deno.writeTextFile(
        `${dir}/${folder}/package.json`,
        JSON.stringify({
          name,
          version: "1.0.0",
          cordon: { exports: { ".": "./index.js" }, internal },
        }),
      );
      await Deno.writeTextFile(`${dir}/${folder}/index.js`, "export {};\n");
    }
    const printed: string[] = [];
    const controller = new AbortController();
    const running = runServer(["--port", "0", "--quiet", "--packs", dir], {
      print: (line) => {
        printed.push(line);
        if (line === "Press Ctrl-C to stop") controller.abort();
      },
      signal: controller.signal,
    });
    assert.equal(await running, 0);
    const start = printed.indexOf("2 problems rejected packs:");
    assert.deepEqual(printed.slice(start + 1, start + 3), [
      '  esc\\x1b[2J: PACK_MANIFEST_INVALID: Cannot use pack "esc\\x1b[2J": package.json names the pack "esc" but its folder is "esc\\x1b[2J"; install the pack in a folder named after it',
      '  forge: PACK_MANIFEST_INVALID: Cannot use pack "forge": package.json does not match the pack manifest schema: cordon.internal.0: A pack file is ./<path>.js or .mjs inside the pack, without empty, . or .. segments, backslashes or control characters; fix the manifest\'s cordon section so it validates against schemas/pack_manifest.json',
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** Runs the server over the fixture packs with `--index` until it is up; its stderr lines. */
async function serveOnceWithIndex(indexPath: string): Promise<string[]> {
  const errors: string[] = [];
  const controller = new AbortController();
  const code = await runServer(
    ["--port", "0", "--quiet", "--index", indexPath],
    {
      print: (line) => {
        if (line === "Press Ctrl-C to stop") controller.abort();
      },
      printError: (line) => errors.push(line),
      signal: controller.signal,
    },
  );
  assert.equal(code, 0);
  return errors;
}

/** An index file's pack lines: all but the header, whose scan time moves. */
async function packLines(indexPath: string): Promise<string[]> {
  return (await Deno.readTextFile(indexPath)).split("\n").slice(1);
}

Deno.test("runServer() with --index over a truncated index warns with DISCOVERY_INDEX_IGNORED and writes the index a clean start writes", async () => {
  const dir = await Deno.makeTempDir({ prefix: "cordon_serve_index_" });
  try {
    const indexPath = `${dir}/index.ndjson`;
    assert.deepEqual(await serveOnceWithIndex(indexPath), []);
    const clean = await packLines(indexPath);
    const bytes = await Deno.readFile(indexPath);
    // Cut inside the second pack line: a write a crash cut short.
    const cut = bytes.indexOf(0x0a, bytes.indexOf(0x0a) + 1) + 20;
    await Deno.writeFile(indexPath, bytes.subarray(0, cut));
    const errors = await serveOnceWithIndex(indexPath);
    assert.equal(errors.length, 1, errors.join("\n"));
    assert.match(
      errors[0]!,
      /^warning: DISCOVERY_INDEX_IGNORED: Cannot use the discovery index: line 3 is not UTF-8 JSON text \(a damaged file\);/,
    );
    assert.equal(errors[0]!.includes(dir), false);
    assert.deepEqual(await packLines(indexPath), clean);
    assert.deepEqual(await serveOnceWithIndex(indexPath), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("runServer() with --index writes the discovery index, and warns without a path when it cannot", async () => {
  const dir = await Deno.makeTempDir({ prefix: "cordon_serve_index_" });
  try {
    for (
      const [indexPath, written] of [
        [`${dir}/index.ndjson`, true],
        [`${dir}/missing/index.ndjson`, false],
      ] as const
    ) {
      const printed: string[] = [];
      const errors: string[] = [];
      const controller = new AbortController();
      const running = runServer([
        "--port",
        "0",
        "--quiet",
        "--index",
        indexPath,
      ], {
        print: (line) => {
          printed.push(line);
          if (line === "Press Ctrl-C to stop") controller.abort();
        },
        printError: (line) => errors.push(line),
        signal: controller.signal,
      });
      assert.equal(await running, 0);
      const exists = await Deno.stat(indexPath).then(() => true, () => false);
      assert.equal(exists, written);
      assert.equal(errors.length, written ? 0 : 1, errors.join("\n"));
      for (const line of errors) {
        assert.match(
          line,
          /^warning: DISCOVERY_INDEX_UNWRITABLE: Cannot write the discovery index: ENOENT;/,
        );
        assert.equal(line.includes(dir), false);
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("parseServeArgs() reads every flag and refuses unknown, repeated or empty ones", () => {
  assert.deepEqual(parseServeArgs([]), {
    port: 8000,
    hostname: "127.0.0.1",
    watch: false,
    quiet: false,
    help: false,
    connectionGuard: true,
  });
  assert.deepEqual(
    parseServeArgs([
      "--packs=./p",
      "--port",
      "0",
      "--hostname",
      "localhost",
      "--watch",
      "--index",
      "./i.ndjson",
      "--quiet",
      "-h",
    ]),
    {
      packsDir: "./p",
      indexPath: "./i.ndjson",
      port: 0,
      hostname: "localhost",
      watch: true,
      quiet: true,
      help: true,
      connectionGuard: true,
    },
  );
  assert.deepEqual(
    parseServeArgs([
      "--header-timeout-ms=500",
      "--idle-timeout-ms",
      "2000",
      "--max-connections",
      "100",
    ]),
    {
      port: 8000,
      hostname: "127.0.0.1",
      watch: false,
      quiet: false,
      help: false,
      connectionGuard: true,
      headerTimeoutMs: 500,
      idleTimeoutMs: 2000,
      maxConnections: 100,
    },
  );
  assert.equal(
    parseServeArgs(["--no-connection-guard"]).connectionGuard,
    false,
  );
  assert.equal(
    parseServeArgs(["--no-connection-guard", "--shutdown-timeout-ms=0"])
      .shutdownTimeoutMs,
    0,
  );
  assert.throws(
    () => parseServeArgs(["--no-connection-guard", "--idle-timeout-ms=5"]),
    {
      name: "TypeError",
      message:
        "Cannot read the flags: --idle-timeout-ms needs the connection guard, which --no-connection-guard turns off",
    },
  );
  for (
    const args of [
      ["--header-timeout-ms=0"],
      ["--idle-timeout-ms=2147483648"],
      ["--max-connections=0"],
      ["--max-connections=1.5"],
    ]
  ) {
    assert.throws(() => parseServeArgs(args), RangeError, args.join(" "));
  }
  for (
    const args of [
      ["--nope"],
      ["packs"],
      ["--port"],
      ["--port="],
      ["--packs", "--watch"],
      ["--watch", "--watch"],
      ["--watch=yes"],
      ["--port", "1", "--port", "2"],
    ]
  ) {
    assert.throws(() => parseServeArgs(args), TypeError, args.join(" "));
  }
  for (const port of ["65536", "1.5", "0x10", "123456"]) {
    assert.throws(() => parseServeArgs(["--port", port]), RangeError, port);
  }
  // A negative number is a value, never a flag: no flag starts with a digit.
  assert.throws(() => parseServeArgs(["--port", "-1"]), RangeError);
  assert.throws(() => parseServeArgs(["--port=-1"]), RangeError);
});

Deno.test("deno task serve grants the serve command the permissions its tests run it with, env for CORDON_START_DIR only, and the usage no env at all", async () => {
  const config = JSON.parse(
    await Deno.readTextFile(new URL("deno.json", ROOT)),
  );
  const permissions = (text: string) =>
    text.split(/\s+/).filter((word) => word.startsWith("--allow-"));
  assert.deepEqual(permissions(config.tasks.serve), TASK_PERMISSIONS);
  // Only the task sets CORDON_START_DIR; run directly, the command reads
  // no environment variable.
  assert.deepEqual(
    permissions(USAGE.slice(USAGE.indexOf("Usage:"), USAGE.indexOf("Flags:"))),
    TASK_PERMISSIONS.filter((flag) => !flag.startsWith("--allow-env")),
  );
});
