import { newQuickJSWASMModuleFromVariant, type QuickJSSyncVariant } from "quickjs-emscripten-core";
import v from "@jitl/quickjs-singlefile-browser-release-sync";
import { SETUP_SOURCE } from "../loader/_hardening.ts";
const m = await newQuickJSWASMModuleFromVariant(v as unknown as QuickJSSyncVariant);
for (const mode of ["plain", "strip-flag", "use-strip"]) {
  const rt = m.newRuntime(); const ctx = rt.newContext();
  const before = rt.dumpMemoryUsage();
  const src = "function outer() { function inner(a) { return a + 1; } return inner; }\nouter().toString()";
  const code = mode === "use-strip" ? `"use strip";\n${src}` : src;
  const r = ctx.evalCode(code, "x.js", mode === "strip-flag" ? { strip: true } : undefined);
  console.log(mode, JSON.stringify(ctx.dump(ctx.unwrapResult(r))));
  const big = mode === "use-strip" ? `"use strip";\n(${JSON.stringify(0)}, 0);\n` : "";
  const r2 = ctx.evalCode(mode === "use-strip" ? `"use strip";\nvar __s = (function(){ return 1; });\n` + SETUP_SOURCE.slice(0, 0) : "1", "y.js", mode === "strip-flag" ? { strip: true } : undefined);
  ctx.unwrapResult(r2).dispose();
  ctx.dispose(); rt.dispose();
}
