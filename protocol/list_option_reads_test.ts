import assert from "node:assert/strict";
import { EMPTY_CATALOG } from "../catalog/empty_catalog.ts";
import { createDeliveryHandler } from "../delivery/handler.ts";
import { createProcessSandbox } from "../sandbox/process_sandbox.ts";
import { createVmSandbox } from "../vm/vm_sandbox.ts";

// A list option (or the env record) that throws when read, as a Proxy
// whose trap throws does, is refused with a TypeError that names the
// option and the work, as an options object that throws is, never with
// the error it threw as it was.

/** An array whose every read throws. */
function unreadableList(): string[] {
  return new Proxy(["a.example"], {
    get() {
      throw new Error("trap refused");
    },
  });
}

const pluginModule = {
  kind: "source" as const,
  source: "export function hi() { return 1; }",
  identifier: "p.js",
};

const cases: [string, string, () => unknown][] = [
  ["create a vm sandbox", "policy.fetch", () =>
    createVmSandbox({
      pluginId: "p",
      pluginModule,
      policy: { fetch: unreadableList() },
    })],
  ["create a vm sandbox", "policy.capabilities", () =>
    createVmSandbox({
      pluginId: "p",
      pluginModule,
      policy: { capabilities: unreadableList() },
    })],
  ["create a vm sandbox", "policy.fs.read", () =>
    createVmSandbox({
      pluginId: "p",
      pluginModule,
      policy: { fs: { read: unreadableList() } },
    })],
  [
    "create the process sandbox",
    "allowNet",
    () => createProcessSandbox({ allowNet: unreadableList() }),
  ],
  ["create the process sandbox", "env", () =>
    createProcessSandbox({
      env: new Proxy({}, {
        ownKeys() {
          throw new Error("trap refused");
        },
      }),
    })],
  [
    "create a delivery handler",
    "corsRequestHeaders",
    () =>
      createDeliveryHandler(EMPTY_CATALOG, {
        corsRequestHeaders: unreadableList(),
      }),
  ],
];

for (const [action, option, create] of cases) {
  Deno.test(`${action}: ${option} that throws when read is a TypeError naming it`, () => {
    assert.throws(
      create,
      new TypeError(
        `Cannot ${action}: ${option} could not be read: trap refused`,
      ),
    );
  });
}
