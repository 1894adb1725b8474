import * as p from "../protocol/mod.ts";
console.log(typeof p);
