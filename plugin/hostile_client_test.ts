import { createHostPluginModule } from "./host_plugin_module.ts";
import { createPluginHost, identifyAnonymously } from "./plugin_host.ts";
import { registerHostileClientCases } from "./node_test/hostile_client_cases.mjs";
import { serve } from "./_test_serve_test.ts";

// Every case is shared with the Node leg
// (plugin/node_test/hostile_client.test.mjs), which serves with node:http.
registerHostileClientCases(
  {
    createPluginHost,
    createHostPluginModule,
    identifyAnonymously,
    serve,
  },
  (name: string, fn: () => Promise<void>) => Deno.test(name, fn),
);
