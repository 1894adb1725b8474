/**
 * Stamps a bundle of cordon with the digest of its hardening scripts as the
 * bundle computes it. The scripts are the text of the realm's functions
 * (`Function.prototype.toString`), which `deno bundle` reprints, so the
 * bundle's `setupDigest()` is not the one `loader/_hardened_image_data.js`
 * was made with, and its engines would never restore the hardened image:
 * the first engine of each process would harden its context itself.
 *
 * The image's bytes stay as they are: they are the memory of a context
 * hardened by the same functions, and the engine still restores them only
 * where the bundle's digest is the one the image names and the memory at
 * the fork point is the one the image was made from, byte for byte.
 *
 * The digest is computed by the bundle's own code: a copy of the module
 * that defines `setupDigest`, written beside it with one export added, is
 * imported and removed.
 *
 * Usage: `deno run --allow-read=dist --allow-write=dist tools/stamp_hardened_image.ts dist/node dist/cordon.js`
 * (`deno task build:node` and `deno task bundle` run it, after the bundle).
 * A folder is a bundle split into chunks: the module that defines
 * `setupDigest` and the one that holds the image are among its top-level
 * `.js` files.
 *
 * @module
 */

import { join } from "node:path";
import { pathToFileURL } from "node:url";

/** A top-level `setupDigest` function, as `deno bundle` prints it. */
const DEFINES_DIGEST = /^function setupDigest\(/m;
/** The image's object, as `deno bundle` prints it. */
const HOLDS_IMAGE = /\bHARDENED_IMAGE_DATA = \{/;
/** The image's digest of the hardening scripts. */
const DIGEST_FIELD = /(\bsetupDigest:\s*")([0-9a-f]{64})(")/g;

/**
 * `text`, the module that holds the image, with `digest` as the image's
 * digest of the hardening scripts.
 *
 * @param text A bundled module that holds the image, once.
 * @param digest The SHA-256 of the bundle's hardening scripts, in hex.
 * @returns The module's text with that digest.
 * @throws {Error} When the text holds no image field, or more than one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { stampedImage } from "./stamp_hardened_image.ts";
 *
 * const text = `var HARDENED_IMAGE_DATA = {\n  setupDigest: "${"a".repeat(64)}",\n};`;
 * assert.equal(
 *   stampedImage(text, "b".repeat(64)),
 *   `var HARDENED_IMAGE_DATA = {\n  setupDigest: "${"b".repeat(64)}",\n};`,
 * );
 * ```
 */
export function stampedImage(text: string, digest: string): string {
  if (!/^[0-9a-f]{64}$/.test(digest)) {
    throw new Error(`Cannot stamp the image: ${digest} is not a SHA-256`);
  }
  const fields = text.match(DIGEST_FIELD) ?? [];
  if (!HOLDS_IMAGE.test(text) || fields.length !== 1) {
    throw new Error(
      `Cannot stamp the image: the module holds ${fields.length} setupDigest fields, where it should hold one, in HARDENED_IMAGE_DATA`,
    );
  }
  return text.replace(DIGEST_FIELD, `$1${digest}$3`);
}

/** The one module of `files` whose text matches `pattern`. */
async function theOne(
  files: readonly string[],
  pattern: RegExp,
  what: string,
): Promise<string> {
  const found: string[] = [];
  for (const file of files) {
    if (pattern.test(await Deno.readTextFile(file))) found.push(file);
  }
  if (found.length !== 1) {
    throw new Error(
      `Cannot stamp the image: ${found.length} modules of the bundle ${what} (${
        found.join(", ") || "none"
      }), where one should`,
    );
  }
  return found[0]!;
}

/** The bundle's modules: a folder's top-level `.js` files, or the file. */
async function bundleModules(target: string): Promise<string[]> {
  if (!(await Deno.stat(target)).isDirectory) return [target];
  const files: string[] = [];
  for await (const entry of Deno.readDir(target)) {
    if (entry.isFile && entry.name.endsWith(".js")) {
      files.push(join(target, entry.name));
    }
  }
  return files.sort();
}

/**
 * The digest `setupDigest()` answers in `module`, read from a copy of it,
 * beside it so that its relative imports resolve, that exports the answer.
 */
async function builtDigest(module: string): Promise<string> {
  const probe = module.replace(/\.js$/, ".stamp-probe.js");
  const text = await Deno.readTextFile(module);
  await Deno.writeTextFile(
    probe,
    `${text}\nexport const BUILT_SETUP_DIGEST = await setupDigest();\n`,
  );
  try {
    const { BUILT_SETUP_DIGEST } = await import(
      pathToFileURL(await Deno.realPath(probe)).href
    );
    return String(BUILT_SETUP_DIGEST);
  } finally {
    await Deno.remove(probe);
  }
}

/**
 * Stamps the bundle at `target` (a file, or a folder of chunks) and returns
 * the digest.
 */
async function stampBundle(target: string): Promise<string> {
  const modules = await bundleModules(target);
  const definer = await theOne(modules, DEFINES_DIGEST, "define setupDigest");
  const holder = await theOne(modules, HOLDS_IMAGE, "hold the image");
  const digest = await builtDigest(definer);
  const text = await Deno.readTextFile(holder);
  await Deno.writeTextFile(holder, stampedImage(text, digest));
  return digest;
}

if (import.meta.main) {
  for (const target of Deno.args) {
    console.log(`stamped ${target}: setupDigest ${await stampBundle(target)}`);
  }
}
