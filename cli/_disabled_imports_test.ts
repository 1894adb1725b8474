import assert from "node:assert/strict";
import { withDisabledImportsResolved } from "./_disabled_imports.ts";

// Modules as `deno bundle --code-splitting` writes them for a package
// whose browser field maps `worker_threads` to `false` (flexsearch's shape:
// the disabled module is shared with a `require()` through a chunk).
const RUNTIME = `var __commonJS = (cb, mod) => function __require() {
  return mod || (0, cb[Object.getOwnPropertyNames(cb)[0]])((mod = { exports: {} }).exports, mod), mod.exports;
};
export {
  __commonJS
};
`;

function stub(name: string, body = "module.exports = {};"): string {
  return `// deno:deno-browser-disabled:${name}
var require_${name} = __commonJS({
  "deno:\\0deno-browser-disabled:${name}"(exports, module) {
    ${body}
  }
});
`;
}

const CHUNK = `import {
  __commonJS
} from "./chunk-runtime.js";

${stub("worker_threads")}
export {
  require_worker_threads
};
`;

const DISABLED = `import {
  require_worker_threads
} from "./chunk-stub.js";
export default require_worker_threads();
`;

function importer(call: string): string {
  return `import {
  require_worker_threads
} from "./chunk-stub.js";

// node_modules/pkg/index.js
function start(node) {
  return node ? ${call} : new (require_worker_threads()).Worker("x");
}
export {
  start
};
`;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

async function resolved(
  modules: Record<string, string>,
): Promise<Record<string, string>> {
  const files = new Map(
    Object.entries(modules).map(([path, text]) => [path, encoder.encode(text)]),
  );
  const out = await withDisabledImportsResolved(files);
  return Object.fromEntries(
    [...out].map(([path, bytes]) => [path, decoder.decode(bytes)]),
  );
}

function tree(entry: string, disabled = DISABLED, chunk = CHUNK) {
  return {
    "chunk-runtime.js": RUNTIME,
    "chunk-stub.js": chunk,
    "deno-browser-disabled_worker_threads-X.js": disabled,
    "index.js": entry,
  };
}

Deno.test("withDisabledImportsResolved() gives an import() of a browser-disabled module a promise of its namespace, imported after every other import", async () => {
  const out = await resolved(
    tree(importer('import("./deno-browser-disabled_worker_threads-X.js")')),
  );
  assert.equal(
    out["index.js"],
    importer("Promise.resolve(__disabledModule0)") +
      'import * as __disabledModule0 from "./deno-browser-disabled_worker_threads-X.js";\n',
  );
  assert.equal(
    out["deno-browser-disabled_worker_threads-X.js"],
    DISABLED,
  );
});

Deno.test("withDisabledImportsResolved() takes a disabled module the bundler wrote whole into the imported one, and a file the browser field disables", async () => {
  const own = `import {
  __commonJS
} from "./chunk-runtime.js";

${stub("node")}export default require_node();
`;
  const entry = `import "./chunk-runtime.js";
export const load = () => import("./node-Y.js");
`;
  const out = await resolved({
    "chunk-runtime.js": RUNTIME,
    "node-Y.js": own,
    "index.js": entry,
  });
  assert.match(out["index.js"]!, /=> Promise\.resolve\(__disabledModule0\);/);
  assert.match(
    out["index.js"]!,
    /\nimport \* as __disabledModule0 from "\.\/node-Y\.js";\n$/,
  );
});

Deno.test("withDisabledImportsResolved() leaves every other import() as written", async (t) => {
  const target = "./deno-browser-disabled_worker_threads-X.js";
  const unchanged = async (modules: Record<string, string>) => {
    const out = await resolved(modules);
    assert.deepEqual(out, modules);
  };
  await t.step("an import() of a module of the package", () =>
    unchanged({
      "other-Z.js": "export const b = 2;\n",
      "index.js": 'export const load = () => import("./other-Z.js");\n',
    }));
  await t.step(
    "a computed import(), one with options, one in a string",
    () =>
      unchanged(tree(importer(
        `[import(name), import("${target}", { with: {} }), "import('${target}')"]`,
      ))),
  );
  await t.step("a stub with a statement more", () =>
    unchanged(tree(
      importer(`import("${target}")`),
      DISABLED.replace("export default", "globalThis.x = 1;\nexport default"),
    )));
  await t.step("a stub that also re-exports a module", () =>
    unchanged(tree(
      importer(`import("${target}")`),
      `export * from "./chunk-runtime.js";\n${DISABLED}`,
    )));
  await t.step("a CommonJS module that is not empty", () =>
    unchanged(tree(
      importer(`import("${target}")`),
      DISABLED,
      CHUNK.replace("module.exports = {};", "module.exports = { a: 1 };"),
    )));
  await t.step(
    "a name the chunk exports from another binding",
    () =>
      unchanged(tree(
        importer(`import("${target}")`),
        DISABLED,
        CHUNK.replace(
          "  require_worker_threads\n};",
          "  require_worker_threads as unused,\n  other as require_worker_threads\n};\nvar other = () => globalThis;",
        ),
      )),
  );
  await t.step(
    "a disabled module that imports a module the importer does not run first",
    () =>
      unchanged({
        ...tree(
          `export const load = () => import("${target}");\n`,
        ),
      }),
  );
});

Deno.test("withDisabledImportsResolved() names its binding past every run of underscores the module's text puts after the name", async () => {
  const held = `"__disabledModule0${
    "_".repeat(30_000)
  }", "__disabledModule0__"`;
  const text = importer('import("./deno-browser-disabled_worker_threads-X.js")')
    .replace("function start", `const held = [${held}];\nfunction start`);
  const out = await resolved(tree(text));
  const binding = `__disabledModule0${"_".repeat(30_001)}`;
  assert.equal(
    out["index.js"],
    text.replace(
      'import("./deno-browser-disabled_worker_threads-X.js")',
      `Promise.resolve(${binding})`,
    ) +
      `import * as ${binding} from "./deno-browser-disabled_worker_threads-X.js";\n`,
  );
});
