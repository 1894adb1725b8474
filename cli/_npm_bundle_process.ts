/**
 * The bundler's own process for the pack command: runs `Deno.bundle()` on
 * the entries it is given and prints its outcome as one JSON line. The
 * pack command starts it with read access to the work folder only, so a
 * package that names a file outside it (an absolute path, a climb with
 * `..`, its `browser` field, a text import) is refused by the runtime
 * instead of having that file inlined into its pack; `deno bundle` reads
 * whatever its user may.
 *
 * @module
 */

/** What the pack command asks of this process, as its one argument. */
export interface BundleRequest {
  /** Entry files, relative to the work folder. */
  entrypoints: string[];
  /** The output folder, relative to the work folder. */
  outputDir: string;
  /** Specifiers left as imports. */
  external: string[];
}

/** One error of the bundler. */
export interface BundleError {
  text: string;
  /** The file it is about, relative to the work folder, when it names one. */
  file?: string;
}

/** What this process prints: whether the bundle was written, and why not. */
export interface BundleOutcome {
  success: boolean;
  /** The bundler's errors, in its order. */
  errors: BundleError[];
}

/**
 * The part of `Deno.bundle()` this process calls. It is unstable (this
 * process runs with `--unstable-bundle`), and a published module may not
 * pull in the unstable types with a triple-slash directive.
 */
type Bundle = (options: {
  entrypoints: string[];
  outputDir: string;
  external: string[];
  format: "esm";
  platform: "browser";
  codeSplitting: boolean;
  keepNames: boolean;
}) => Promise<{
  success: boolean;
  errors: { text: string; location?: { file?: string } | null }[];
}>;

async function bundle(request: BundleRequest): Promise<BundleOutcome> {
  const runBundler = (Deno as unknown as { bundle: Bundle }).bundle;
  const result = await runBundler({
    entrypoints: request.entrypoints,
    outputDir: request.outputDir,
    external: request.external,
    format: "esm",
    platform: "browser",
    codeSplitting: true,
    // Scope hoisting renames a class or function whose name another
    // module uses too (`class _Matrix`, `helper2`); code that reads
    // `constructor.name` or `fn.name` needs the name it was written with.
    keepNames: true,
  });
  return {
    success: result.success,
    errors: result.errors.map((error) => ({
      text: error.text,
      ...(error.location?.file ? { file: error.location.file } : {}),
    })),
  };
}

if (import.meta.main) {
  const request = JSON.parse(Deno.args[0]!) as BundleRequest;
  console.log(JSON.stringify(await bundle(request)));
}
