import { createSandboxedVmPluginModule } from "./host_bridge.ts";
import { createHostPluginModule } from "./host_plugin_module.ts";
import { createPluginHost, identifyByTrustedHeaders } from "./plugin_host.ts";
import { createPluginSandbox } from "./plugin_sandbox.ts";
import { registerPerCallerCases } from "./node_test/per_caller_cases.mjs";

// Every case is shared with the Node leg
// (plugin/node_test/per_caller.test.mjs).
registerPerCallerCases(
  {
    createPluginHost,
    createHostPluginModule,
    createSandboxedVmPluginModule,
    createPluginSandbox,
    identifyByTrustedHeaders,
  },
  (name: string, fn: () => Promise<void>) => Deno.test(name, fn),
);
