import { createQuickJSLoader } from "../loader/mod.ts";
console.log(typeof createQuickJSLoader);
