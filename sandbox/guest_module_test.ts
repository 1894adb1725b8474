import assert from "node:assert/strict";
import type { SandboxResult } from "../protocol/sandbox_result.ts";
import { createProcessSandbox } from "./process_sandbox.ts";
import { createWorkerSandbox } from "./worker_sandbox.ts";

const TIERS = [
  { name: "worker", create: () => createWorkerSandbox() },
  { name: "process", create: () => createProcessSandbox() },
];

function messageOf(result: SandboxResult): string {
  return result.ok ? "" : result.error.message;
}

Deno.test("syntax errors name the guest source's own line and column", async (t) => {
  const cases: [string, RegExp][] = [
    ["let a = 1; let a = 2;", /at line 1, column 16; fix the syntax error$/],
    [
      "export default 1;\nlet b; let b;",
      /at line 2, column 12; fix the syntax error$/,
    ],
    ["#!/usr/bin/env -S deno run\nlet c; let c;", /at line 2, column 12; /],
    ["export default {", /at line 1, column 17; /],
  ];
  for (const tier of TIERS) {
    await t.step(tier.name, async () => {
      await using sandbox = tier.create();
      for (const [source, position] of cases) {
        const result = await sandbox.run(source);
        assert.equal(!result.ok && result.error.code, "GUEST_SYNTAX_ERROR");
        assert.match(messageOf(result), position, source);
        assert.doesNotMatch(messageOf(result), /blob:|cordon/, source);
      }
    });
  }
});

Deno.test("a guest module may start with a hashbang line", async (t) => {
  for (const tier of TIERS) {
    await t.step(tier.name, async () => {
      await using sandbox = tier.create();
      const result = await sandbox.run(
        "#!/usr/bin/env -S deno run\nexport default new Error().stack.includes(':2:');",
      );
      assert.equal(result.ok && result.value, true);
      const bare = await sandbox.run("#!/usr/bin/env node");
      assert.equal(bare.ok && bare.value, null);
    });
  }
});

Deno.test("a guest may give a function its own constructor property, as in Deno, while the Function constructor stays denied", async (t) => {
  // jstat (bundled by @formulajs/formulajs and fast-formula-parser) sets
  // `jStat._init.constructor = jStat` in strict code when it loads.
  const source =
    '"use strict";\nfunction init() {}\nfunction jStat() {}\ninit.constructor = jStat;\nlet denied;\ntry { init.constructor.constructor("return 1"); } catch (e) { denied = e.name; }\nlet still;\ntry { (function () {}).constructor("return 1"); } catch (e) { still = e.name; }\nexport default [init.constructor === jStat, Object.hasOwn(init, "constructor"), denied, still];';
  for (const tier of TIERS) {
    await t.step(tier.name, async () => {
      await using sandbox = tier.create();
      const result = await sandbox.run(source);
      assert.deepEqual(result.ok ? result.value : result.error, [
        true,
        true,
        "EvalError",
        "EvalError",
      ]);
    });
  }
});
