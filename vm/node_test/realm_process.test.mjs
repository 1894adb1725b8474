// What a realm process on Node inherits from its host.

import assert from "node:assert/strict";
import fs from "node:fs";
import { test } from "node:test";
import { vm } from "./_helpers.mjs";
import { HAS_PROC, livingChildren } from "./leak_probe.mjs";

test(
  "createVmSandbox() on Node starts its realm process with an empty environment",
  {
    skip: !HAS_PROC && "needs /proc",
  },
  async () => {
    process.env.CORDON_HOST_SECRET = "host-only";
    const sandbox = vm.createVmSandbox({
      pluginId: "env",
      pluginModule: {
        kind: "source",
        source: "export const ping = () => 1;",
        identifier: "env.js",
      },
    });
    try {
      assert.equal((await sandbox.start()).ok, true);
      const [realm] = livingChildren();
      assert.ok(realm !== undefined, "the realm process must be running");
      const environ = fs.readFileSync(`/proc/${realm}/environ`, "utf8");
      // Not assert.equal: a failure would print the host's environment.
      assert.ok(
        environ === "",
        "the realm must not see the host's environment",
      );
    } finally {
      delete process.env.CORDON_HOST_SECRET;
      await sandbox.dispose();
    }
  },
);
