import { test } from "node:test";
import { plugin, serve } from "./_helpers.mjs";
import { registerHostileClientCases } from "./hostile_client_cases.mjs";

// Every case is shared with plugin/hostile_client_test.ts, which serves with
// Deno.serve.
registerHostileClientCases({
  createPluginHost: plugin.createPluginHost,
  createHostPluginModule: plugin.createHostPluginModule,
  identifyAnonymously: plugin.identifyAnonymously,
  serve,
}, test);
