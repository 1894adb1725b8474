import { test } from "node:test";
import { plugin, serve } from "./_helpers.mjs";
import { registerAdversarialCases } from "./adversarial_cases.mjs";

const {
  createPluginHost,
  createSandboxedVmPluginModule,
  createPluginSandbox,
  createHostPluginModule,
  identifyAnonymously,
} = plugin;

// The table is shared with plugin/adversarial_test.ts (every tier on Deno);
// Node hosts the vm and process tiers.
registerAdversarialCases(
  {
    createPluginHost,
    createSandboxedVmPluginModule,
    createPluginSandbox,
    createHostPluginModule,
    identifyAnonymously,
    serve,
    tiers: ["vm", "process"],
  },
  (name, ...rest) => {
    const [options, fn] = rest.length === 1
      ? [{ ignore: false }, ...rest]
      : rest;
    test(
      name,
      { skip: options.ignore },
      (t) => fn({ step: (n, f) => t.test(n, f) }),
    );
  },
);
