import assert from "node:assert/strict";
import { createDiskCatalog } from "../catalog/disk_catalog.ts";
import { CatalogListingSchema } from "../protocol/mod.ts";
import { parseServeArgs, runServer, USAGE } from "./main.ts";
import { copyTree } from "./_test_copy_tree_test.ts";

const ROOT = new URL("../", import.meta.url);
const FIXTURE_PACKS = new URL("../fixtures/packs/", import.meta.url);
/** The permissions of `deno task serve`. */
const TASK_PERMISSIONS = [
  "--allow-read",
  "--allow-net=127.0.0.1,localhost",
  "--allow-env",
];

/** A running `delivery/main.ts` whose output is read line by line. */
class ServerProcess implements AsyncDisposable {
  readonly lines: string[] = [];
  readonly errors: Promise<string>;
  #child: Deno.ChildProcess;
  #reader: ReadableStreamDefaultReader<string>;
  #buffer = "";
  #done = false;

  constructor(args: string[]) {
    this.#child = new Deno.Command(Deno.execPath(), {
      args: ["run", ...TASK_PERMISSIONS, "delivery/main.ts", ...args],
      cwd: ROOT,
      env: { NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    this.#reader = this.#child.stdout.pipeThrough(new TextDecoderStream())
      .getReader();
    this.errors = new Response(this.#child.stderr).text();
  }

  /** Reads lines until one matches; fails when the output ends first. */
  async waitFor(pattern: RegExp): Promise<RegExpExecArray> {
    let searched = 0;
    for (;;) {
      for (; searched < this.lines.length; searched++) {
        const match = pattern.exec(this.lines[searched]!);
        if (match) {
          searched++;
          return match;
        }
      }
      if (this.#done) {
        throw new Error(
          `The server's output ended without ${pattern}:\n${
            this.lines.join("\n")
          }\n${await this.errors}`,
        );
      }
      const { value, done } = await this.#reader.read();
      if (done) this.#done = true;
      else {
        this.#buffer += value;
        const parts = this.#buffer.split("\n");
        this.#buffer = parts.pop()!;
        this.lines.push(...parts);
      }
    }
  }

  /** Sends a signal and reads the rest of the output. */
  async stop(signal: Deno.Signal): Promise<Deno.CommandStatus> {
    this.#child.kill(signal);
    return await this.finish();
  }

  /** Reads the rest of the output and the exit status. */
  async finish(): Promise<Deno.CommandStatus> {
    while (!this.#done) {
      const { value, done } = await this.#reader.read();
      if (done) this.#done = true;
      else this.#buffer += value;
    }
    if (this.#buffer !== "") this.lines.push(...this.#buffer.split("\n"));
    this.#buffer = "";
    await this.errors;
    return await this.#child.status;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    if (!this.#done) {
      try {
        this.#child.kill("SIGKILL");
      } catch {
        // Already gone.
      }
      await this.finish();
    }
  }
}

Deno.test("delivery/main.ts prints its URL and packs, serves, logs requests and exits 0 on SIGTERM", async () => {
  const root = await Deno.makeTempDir({ prefix: "cordon_main_" });
  try {
    const packs = `${root}/packs`;
    await copyTree(decodeURIComponent(FIXTURE_PACKS.pathname), packs);
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

Deno.test("delivery/main.ts serves the fixture packs by default and exits 0 on SIGINT", async () => {
  await using server = new ServerProcess(["--port=0", "--quiet"]);
  const [, url] = await server.waitFor(/^Listening on (\S+)$/);
  await server.waitFor(/^Press Ctrl-C to stop$/);
  const listing = CatalogListingSchema.parse(await (await fetch(url!)).json());
  const fixtures = await createDiskCatalog(
    decodeURIComponent(FIXTURE_PACKS.pathname),
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

Deno.test("delivery/main.ts exits 2 with a clear message on bad flags", async () => {
  for (const args of [["--prot", "1"], ["--port", "eighty"], ["--packs"]]) {
    await using server = new ServerProcess(args);
    const status = await server.finish();
    assert.equal(status.code, 2, args.join(" "));
    const errors = await server.errors;
    assert.match(errors, /^error: Cannot read the flags: /m);
    assert.match(errors, /Run with --help for the flags/);
  }
});

Deno.test("delivery/main.ts exits 1 when the packs folder cannot be read", async () => {
  await using server = new ServerProcess([
    "--packs",
    "/nonexistent/cordon-packs",
    "--port=0",
  ]);
  const status = await server.finish();
  assert.equal(status.code, 1);
  assert.match(
    await server.errors,
    /^error: Cannot start the delivery server: /m,
  );
});

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

Deno.test("parseServeArgs() reads every flag and refuses unknown, repeated or empty ones", () => {
  assert.deepEqual(parseServeArgs([]), {
    port: 8000,
    hostname: "127.0.0.1",
    watch: false,
    quiet: false,
    help: false,
  });
  assert.deepEqual(
    parseServeArgs([
      "--packs=./p",
      "--port",
      "0",
      "--hostname",
      "localhost",
      "--watch",
      "--quiet",
      "-h",
    ]),
    {
      packsDir: "./p",
      port: 0,
      hostname: "localhost",
      watch: true,
      quiet: true,
      help: true,
    },
  );
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
  for (const port of ["65536", "-1", "1.5", "0x10", "123456"]) {
    assert.throws(() => parseServeArgs(["--port", port]), RangeError, port);
  }
});
