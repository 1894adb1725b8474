// What a realm process on Node inherits from its host, and whether it can
// outlive it: the host's environment, and a host killed while a plugin loops.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { vm } from "./_helpers.mjs";
import { HAS_PROC, livingChildren } from "./leak_probe.mjs";
import { until } from "./until.mjs";

/** The children of `pid` that have not ended. */
function childrenOf(pid) {
  const found = [];
  for (const name of fs.readdirSync("/proc")) {
    if (!/^[0-9]+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, "utf8");
      const [state, ppid] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(ppid) === pid && state !== "Z") found.push(Number(name));
    } catch {
      // It ended while the folder was read.
    }
  }
  return found;
}

function isRunning(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

test(
  "createVmSandbox() on Node starts its realm process with no environment but the host's TZ",
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
      const zone = process.env.TZ;
      assert.ok(
        environ === (zone === undefined ? "" : `TZ=${zone}\0`),
        "the realm must not see the host's environment",
      );
    } finally {
      delete process.env.CORDON_HOST_SECRET;
      await sandbox.dispose();
    }
  },
);

test(
  "a realm process whose plugin loops ends when its Node host is killed with SIGKILL",
  {
    skip: (!HAS_PROC || !fs.existsSync("/usr/bin/setpriv")) &&
      "needs Linux and util-linux's setpriv",
  },
  async () => {
    const host = spawn(process.execPath, [
      fileURLToPath(new URL("./orphan_host.mjs", import.meta.url)),
    ], { stdio: ["ignore", "pipe", "inherit"] });
    let realms = [];
    try {
      let output = "";
      host.stdout.setEncoding("utf8");
      host.stdout.on("data", (text) => output += text);
      await until(
        () => output.includes("looping"),
        "the plugin's loop",
        30_000,
      );
      realms = childrenOf(host.pid);
      assert.equal(realms.length, 1, "one realm process runs the plugin");
    } finally {
      host.kill("SIGKILL");
      await new Promise((resolve) =>
        host.exitCode !== null || host.signalCode !== null
          ? resolve()
          : host.once("exit", resolve)
      );
    }
    try {
      await until(
        () => !realms.some(isRunning),
        "the end of the orphaned realm process",
        120_000,
      );
    } finally {
      for (const pid of realms.filter(isRunning)) process.kill(pid, "SIGKILL");
    }
  },
);

test(
  "createVmSandbox() on Node answers SANDBOX_UNAVAILABLE, as the sandboxes do, when the system refuses its realm process descriptors, answers again once it has them, and answers SANDBOX_CRASHED for a realm that started and died",
  {
    skip:
      (process.platform !== "linux" || !fs.existsSync("/usr/bin/prlimit")) &&
      "needs Linux and util-linux's prlimit",
  },
  async () => {
    const host = spawn(process.execPath, [
      fileURLToPath(new URL("./refused_host.mjs", import.meta.url)),
    ], { stdio: ["ignore", "pipe", "inherit"] });
    let output = "";
    host.stdout.setEncoding("utf8");
    host.stdout.on("data", (text) => output += text);
    const code = await new Promise((resolve) => host.once("close", resolve));
    assert.equal(code, 0, "the host ends normally");
    const printed = JSON.parse(output);
    assert.equal(printed.refused, "SANDBOX_UNAVAILABLE", printed.message);
    assert.equal(printed.name, "NotSupportedError");
    // The sandboxes' shape: what could not start, the system's reason,
    // and what to do.
    assert.match(
      printed.message,
      /^Cannot start the plugin's realm: the system refused its Node subprocess \(Too many open files \(EMFILE\)\); free what the system lacks \(file descriptors, processes, memory\) and call again$/,
    );
    assert.equal(printed.answered, 3);
    assert.equal(printed.died, "SANDBOX_CRASHED");
  },
);
