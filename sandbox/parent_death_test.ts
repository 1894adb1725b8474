import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { SETPRIV } from "./parent_death.ts";

/** Whether this machine's setpriv knows `--pdeathsig`. */
async function setprivWorks(): Promise<boolean> {
  try {
    const probe = await new Deno.Command(SETPRIV, {
      args: ["--pdeathsig", "KILL", "--version"],
      stdout: "null",
      stderr: "null",
    }).output();
    return probe.success;
  } catch {
    return false;
  }
}

Deno.test({
  name:
    "dyingWithParent() starts children under setpriv again once descriptors are free, after a first try the system refused",
  // The caller lowers its own descriptor limit and holds every descriptor
  // left while it asks first, so setpriv's probe cannot start; it then lets
  // them go and asks again.
  ignore: Deno.build.os !== "linux" || !(await setprivWorks()),
  async fn() {
    const mod = new URL("./parent_death.ts", import.meta.url).href;
    const code = `
      import { dyingWithParent } from ${JSON.stringify(mod)};
      const limit = await new Deno.Command("prlimit", {
        args: ["--nofile=256", "--pid", String(Deno.pid)],
      }).output();
      if (!limit.success) Deno.exit(3);
      const held = [];
      try {
        for (;;) held.push(Deno.openSync("/dev/null"));
      } catch {
        // Every descriptor is taken.
      }
      const [starved] = dyingWithParent(Deno.execPath(), []);
      for (const file of held) file.close();
      const [freed] = dyingWithParent(Deno.execPath(), []);
      console.log(JSON.stringify([starved, freed]));`;
    const { code: exit, stdout } = await new Deno.Command(Deno.execPath(), {
      args: [
        "eval",
        `--config=${fileURLToPath(new URL("../deno.json", import.meta.url))}`,
        code,
      ],
      stdout: "piped",
      stderr: "inherit",
    }).output();
    assert.equal(exit, 0);
    const [starved, freed] = JSON.parse(new TextDecoder().decode(stdout));
    assert.equal(starved, Deno.execPath());
    assert.equal(freed, SETPRIV);
  },
});
