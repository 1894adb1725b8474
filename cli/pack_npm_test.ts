import assert from "node:assert/strict";
import { createDiskCatalog } from "../catalog/disk_catalog.ts";
import { createRemoteCatalog } from "../catalog/remote_catalog.ts";
import type { SandboxModuleCatalog } from "../catalog/types.ts";
import { createDeliveryHandler } from "../delivery/mod.ts";
import { createQuickJSLoader } from "../loader/quickjs_loader.ts";
import { createQuickJSPool, type QuickJSPool } from "../loader/quickjs_pool.ts";
import {
  callModule,
  PACKAGE_CALLS,
  type PackageCalls,
} from "./_npm_calls_test.ts";
import { packNpm, type PackReport } from "./pack.ts";

/** Runs every table module in plain Deno, in a process of its own. */
async function runInDeno(dir: string): Promise<unknown[]> {
  const modules = PACKAGE_CALLS.map((table, i) => {
    const file = `${dir}/plain_${i}.js`;
    const source = callModule(
      table,
      (imported) =>
        `npm:${table.name}@${table.version}${
          imported.slice(table.name.length)
        }`,
    );
    return { file, source };
  });
  for (const { file, source } of modules) {
    await Deno.writeTextFile(file, source);
  }
  await Deno.writeTextFile(
    `${dir}/plain_main.js`,
    modules.map((_, i) => `import r${i} from "./plain_${i}.js";\n`).join("") +
      `console.log(JSON.stringify([${
        modules.map((_, i) => `r${i}`).join(", ")
      }]));\n`,
  );
  // Outside the repository, without its config or lockfile, so the test's
  // npm packages never enter the project's lockfile or node_modules.
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-config", "--no-lock", "--allow-all", "plain_main.js"],
    cwd: dir,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(output.success, new TextDecoder().decode(output.stderr));
  return JSON.parse(new TextDecoder().decode(output.stdout));
}

/** Runs one table module in a fresh loader, or in `runner` when given. */
async function runInSandbox(
  catalog: SandboxModuleCatalog,
  index: number,
  runner?: Pick<QuickJSPool, "run">,
): Promise<unknown> {
  const table = PACKAGE_CALLS[index]!;
  using loader = runner === undefined
    ? await createQuickJSLoader({ catalog })
    : undefined;
  const result = await (runner ?? loader!).run({
    source: callModule(table, (imported) => imported),
    packages: [table.name],
  }, { timeoutMs: 30_000 });
  assert.ok(result.ok, JSON.stringify(!result.ok && result.error));
  return result.value;
}

/**
 * What the sandbox must give for one package: plain Deno's results, with
 * the calls the table says differ by design replaced by their sandbox value.
 */
function sandboxExpectation(table: PackageCalls, plain: unknown): unknown {
  const expected = { ...(plain as Record<string, unknown>) };
  for (const [call, { sandbox }] of Object.entries(table.differs ?? {})) {
    assert.ok(call in expected, `${table.name}: no call ${call}`);
    // A difference plain Deno no longer shows is stale: drop it.
    assert.notDeepEqual(expected[call], sandbox, `${table.name}.${call}`);
    expected[call] = sandbox;
  }
  return expected;
}

Deno.test("packs built from npm give the same JSON as the npm packages in plain Deno, on the disk and the remote catalog and through the QuickJS pool", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "cordon-npm-diff-" });
  try {
    const packsDir = `${dir}/packs`;
    const reports = new Map<string, PackReport>();
    await t.step(
      `pack the ${PACKAGE_CALLS.length} packages from the registry`,
      async () => {
        // Two at a time: one package's download overlaps another's bundling.
        const queue = [...PACKAGE_CALLS];
        const lane = async () => {
          for (let table; (table = queue.shift()) !== undefined;) {
            reports.set(
              table.name,
              await packNpm(`${table.name}@${table.version}`, {
                outDir: packsDir,
                ...(table.subpaths === undefined
                  ? {}
                  : { subpaths: table.subpaths }),
              }),
            );
          }
        };
        await Promise.all([lane(), lane()]);
      },
    );
    const plain = await runInDeno(dir);
    const disk = await createDiskCatalog(packsDir);
    assert.deepEqual(disk.diagnostics(), []);
    await using server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      createDeliveryHandler(disk),
    );
    const remote = createRemoteCatalog({
      baseUrl: `http://127.0.0.1:${server.addr.port}`,
    });
    // The pool's runner process, as `deno task run` uses it.
    await using pool = await createQuickJSPool({ catalog: disk, size: 1 });
    for (const [index, table] of PACKAGE_CALLS.entries()) {
      await t.step(table.name, async () => {
        const report = reports.get(table.name)!;
        // Every entry the table names, or the package's main entry, packs
        // with nothing the sandbox lacks.
        const wanted = new Set(table.subpaths ?? ["."]);
        for (const entry of report.entries) {
          if (!wanted.has(entry.subpath)) continue;
          assert.deepEqual(
            entry.problems,
            [],
            `${table.name} ${entry.subpath}`,
          );
          wanted.delete(entry.subpath);
        }
        assert.deepEqual([...wanted], [], `${table.name}: entries not packed`);
        assert.equal(report.written, true);
        // A call that throws in plain Deno would match by accident.
        assert.doesNotMatch(JSON.stringify(plain[index]), /"threw"/);
        const expected = sandboxExpectation(table, plain[index]);
        assert.deepEqual(await runInSandbox(disk, index), expected);
        assert.deepEqual(await runInSandbox(remote, index), expected);
        assert.deepEqual(await runInSandbox(disk, index, pool), expected);
      });
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
