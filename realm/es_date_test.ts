import assert from "node:assert/strict";
import vm from "node:vm";
import { realmSource } from "./realm_source.ts";
import { ES_BUILTINS_STEPS, type EsBuiltinsSteps } from "./es_builtins.ts";

/**
 * The zones the local-time cases run under: daylight saving in the north
 * and the south, a change of 30 minutes (Lord Howe), one at midnight
 * (Santiago), a zone 45 minutes off the hour (Chatham), none (Kolkata),
 * and UTC.
 */
const ZONES = [
  "America/New_York",
  "Europe/Berlin",
  "Australia/Lord_Howe",
  "Asia/Kolkata",
  "America/Santiago",
  "Pacific/Chatham",
  "UTC",
];

/** What V8 and a QuickJS guest answer to the cases in `zone`. */
async function answersIn(
  zone: string,
): Promise<{ v8: [string, string][]; quickjs: [string, string][] }> {
  const cases = new URL("./_local_time_cases_test.ts", import.meta.url);
  const { success, stdout, stderr } = await new Deno.Command(
    Deno.execPath(),
    {
      args: ["run", "--allow-all", cases.pathname],
      env: { TZ: zone, NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    },
  ).output();
  assert.ok(success, new TextDecoder().decode(stderr));
  return JSON.parse(new TextDecoder().decode(stdout));
}

for (const zone of ZONES) {
  Deno.test(`a QuickJS guest turns local dates and times into the instants V8 does under TZ=${zone}`, async () => {
    const { v8, quickjs } = await answersIn(zone);
    assert.equal(quickjs.length, v8.length);
    const differing = v8.flatMap(([label, answer], i) =>
      quickjs[i]![1] === answer
        ? []
        : [`${label}: V8 ${answer}, QuickJS ${quickjs[i]![1]}`]
    );
    assert.deepEqual(differing.slice(0, 20), [], `${differing.length} differ`);
  });
}

Deno.test("a node:vm context keeps V8's own Date, Date.parse and local setters, which map local time as the standard does", () => {
  function entry(steps: EsBuiltinsSteps) {
    steps.installEsBuiltins(steps, globalThis);
  }
  const context = vm.createContext({});
  const own = () =>
    vm.runInContext(
      "[Date, Date.parse, Date.prototype.setHours, Date.prototype.constructor]",
      context,
    );
  const before = own();
  vm.runInContext(
    realmSource(entry, { ...ES_BUILTINS_STEPS }, null),
    context,
  )();
  assert.deepEqual(own(), before);
});
