import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const HOST = fileURLToPath(
  new URL("./_host_locale_host_test.ts", import.meta.url),
);
const DENO_JSON = fileURLToPath(new URL("../deno.json", import.meta.url));

/** What V8 guests answer in `en-US`, whatever the host's locale. */
const V8_ANSWER = ["en-US", "1,234.5", "1/1/1970", "I"];
/** QuickJS has no `Intl`: its own fixed formats. */
const QUICKJS_ANSWER = [null, "1234.5", "01/01/1970", "I"];

for (const locale of ["tr_TR.UTF-8", "de_DE.UTF-8", "ja_JP.UTF-8"]) {
  Deno.test(`every tier gives a guest the same default locale when the host runs with LANG=${locale}`, async () => {
    const { code, stdout } = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", `--config=${DENO_JSON}`, HOST],
      env: { LANG: locale, LC_ALL: locale },
      stdout: "piped",
      stderr: "inherit",
    }).output();
    assert.equal(code, 0, "the host ends normally");
    const { host, tiers } = JSON.parse(new TextDecoder().decode(stdout));
    // The host itself reads its locale, so a tier that took it would
    // answer differently.
    assert.equal(host[0], locale.slice(0, 5).replace("_", "-"));
    assert.deepEqual(tiers, {
      worker: V8_ANSWER,
      process: V8_ANSWER,
      "quickjs loader": QUICKJS_ANSWER,
      "quickjs pool (process)": QUICKJS_ANSWER,
    });
  });
}
