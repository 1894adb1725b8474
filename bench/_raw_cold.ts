/**
 * The raw baseline of the cold start in `loader_bench.ts`: in a fresh
 * process, imports quickjs-emscripten with the loader's default variant,
 * creates a runtime and a context, evaluates one module and prints its
 * default export: what a process pays before its first result without
 * cordon.
 *
 * @module
 */

import {
  newQuickJSWASMModuleFromVariant,
  type QuickJSSyncVariant,
} from "quickjs-emscripten-core";
import singlefileVariant from "@jitl/quickjs-singlefile-browser-release-sync";

const module = await newQuickJSWASMModuleFromVariant(
  singlefileVariant as unknown as QuickJSSyncVariant,
);
const runtime = module.newRuntime();
const context = runtime.newContext();
const namespace = context.unwrapResult(
  context.evalCode("export default 1 + 1;", "guest.js", { type: "module" }),
);
const state = context.getPromiseState(namespace);
if (state.type !== "fulfilled") throw new Error("the raw run failed");
const value = context.getProp(state.value, "default");
console.log(JSON.stringify(context.dump(value)));
