// This module is browser compatible.

/**
 * The one registry of stable error codes. A code is never reused for another
 * meaning; new meanings get new codes.
 *
 * @module
 */

/** What one error code means, what to do about it and where it arises. */
export interface ErrorCodeInfo {
  /** One line: what happened. */
  readonly meaning: string;
  /** One line: what to do next. */
  readonly remedy: string;
  /** One line: the functions, commands or HTTP answers that report it. */
  readonly where: string;
  /**
   * The statuses of the HTTP answers (of the delivery handler and the plugin
   * host) whose problem document carries this code; empty when none does.
   */
  readonly httpStatuses: readonly number[];
}

/** Where a code arises and the HTTP statuses that carry it. */
interface Origin {
  where: string;
  httpStatuses?: readonly number[];
}

function entry(
  meaning: string,
  remedy: string,
  { where, httpStatuses = [] }: Origin,
): ErrorCodeInfo {
  return Object.freeze({
    meaning,
    remedy,
    where,
    httpStatuses: Object.freeze([...httpStatuses]),
  });
}

/**
 * Every stable error code cordon reports, with its meaning, remedy, where it
 * arises and the HTTP statuses that carry it.
 *
 * @example Look up a code
 * ```ts
 * import { ERROR_CODES } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.match(ERROR_CODES.IMPORT_UNDECLARED.meaning, /does not list/);
 * assert.deepEqual(ERROR_CODES.MODULE_NOT_FOUND.httpStatuses, [404]);
 * ```
 */
export const ERROR_CODES: Readonly<Record<ErrorCode, ErrorCodeInfo>> = Object
  .freeze(
    {
      // Pack discovery (diagnostics of rejected packs).
      PACK_MANIFEST_INVALID: entry(
        "A pack's package.json is missing, unreadable or does not match the pack manifest schema",
        "Fix the manifest's cordon section so it validates against schemas/pack_manifest.json",
        {
          where:
            "Pack discovery: createDiskCatalog() diagnostics, cordon serve and cordon stage",
        },
      ),
      PACK_FILE_OUTSIDE: entry(
        "A pack file resolves outside the pack folder (symlink, absolute path or ..)",
        "Keep every module file inside the pack folder and remove links that leave it",
        {
          where:
            "Pack discovery: createDiskCatalog() diagnostics, cordon serve and cordon stage",
        },
      ),
      PACK_FILE_MISSING: entry(
        "A file named by a pack manifest does not exist or is not a regular file",
        "Add the file or remove it from the manifest",
        {
          where:
            "Pack discovery: createDiskCatalog() diagnostics, cordon serve and cordon stage",
        },
      ),
      PACK_FILE_TOO_LARGE: entry(
        "A pack module is larger than the catalog's size cap",
        "Split the module or raise maxModuleBytes",
        {
          where:
            "Pack discovery: createDiskCatalog() diagnostics, cordon serve and cordon stage",
        },
      ),
      PACK_MODULE_SYNTAX: entry(
        "A pack module could not be parsed as an ES module",
        "Fix the module's syntax",
        {
          where:
            "Pack discovery: createDiskCatalog() diagnostics, cordon serve and cordon stage; the run result of a guest whose pack module does not parse",
        },
      ),
      PACK_DYNAMIC_IMPORT: entry(
        "A pack module uses import() or require",
        "Use static import declarations only",
        {
          where:
            "Pack discovery: createDiskCatalog() diagnostics, cordon serve and cordon stage",
        },
      ),
      PACK_IMPORT_UNDECLARED: entry(
        "A pack module imports a file of its pack that the manifest does not list",
        "List the file under cordon.internal in the manifest",
        {
          where:
            "Pack discovery: createDiskCatalog() diagnostics, cordon serve and cordon stage",
        },
      ),
      PACK_IMPORT_ESCAPE: entry(
        "A pack module imports something outside its own pack",
        "Import only relative files of the same pack",
        {
          where:
            "Pack discovery: createDiskCatalog() diagnostics, cordon serve and cordon stage",
        },
      ),
      PACK_DUPLICATE: entry(
        "Two folders declare the same pack name",
        "Install each pack once",
        {
          where:
            "Pack discovery: createDiskCatalog() diagnostics, cordon serve and cordon stage",
        },
      ),
      PACK_FOLDER_REPLACED: entry(
        "A pack folder, or a file or folder in it, was replaced each time discovery read it",
        "Replace a pack folder with one rename and leave it as it is; the next rescan reads it",
        {
          where:
            "Pack discovery: createDiskCatalog() diagnostics, cordon serve and cordon stage",
        },
      ),
      PACK_GRAPH_TOO_LARGE: entry(
        "A pack's modules import each other through more links than a catalog follows",
        "Bundle the pack into fewer modules (deno task pack does) or split it into several packs",
        {
          where:
            "Pack discovery: createDiskCatalog() diagnostics, cordon serve and cordon stage; createRemoteCatalog() and createStagedCatalog(): prefetch and the run results of their packs",
        },
      ),

      // Resolution of a declaration's packages.
      PACK_NOT_INSTALLED: entry(
        "A declared pack is not installed in the catalog",
        "Install the pack or remove it from the declaration's packages",
        {
          where:
            "Run results of the QuickJS loader and pool: resolving the declaration's packages against the catalog",
        },
      ),
      PACK_VERSION_MISMATCH: entry(
        "A declared pack is installed at another version than the declaration pins",
        "Install the pinned version or update packVersion",
        {
          where:
            "Run results of the QuickJS loader and pool: resolving the declaration's packages against the catalog",
        },
      ),
      PACK_DIGEST_MISMATCH: entry(
        "A declared pack's graph digest differs from the one the declaration pins",
        "Re-pin graphDigest to the installed pack or reinstall the vetted one",
        {
          where:
            "Run results of the QuickJS loader and pool: resolving the declaration's packages against the catalog",
        },
      ),
      PACK_FORBIDDEN: entry(
        "The entitlement policy refused a declared pack to the run's requester",
        "Grant the requester the pack, or declare another pack",
        {
          where:
            "Run results of the QuickJS loader and pool: resolving the declaration's packages against the catalog",
        },
      ),
      DECLARATION_INVALID: entry(
        "A declaration does not match the declaration schema or cannot be read (a getter or Proxy throws, an object of a class), names packs on a tier that runs code without packs, or a run's source or context is larger than maxSourceBytes or maxContextBytes",
        "Pass { source, packages } as plain data, with at most 256 pack names or { specifier } objects; on the worker and process tiers, no packages; pass a smaller source or context, or raise the bound the message names",
        {
          where:
            "Run results of the QuickJS loader and pool, the worker and process sandboxes, and cordon run: every tier that takes a declaration answers the same one alike",
        },
      ),

      // Delivery.
      MODULE_ID_INVALID: entry(
        "A module id is malformed",
        "Use an id exactly as the catalog listed it",
        {
          where: "The delivery handler; createRemoteCatalog()",
          httpStatuses: [404],
        },
      ),
      MODULE_NOT_FOUND: entry(
        "No installed module has this id",
        "List the catalog again; the pack may have been upgraded or removed",
        {
          where:
            "The delivery handler; every catalog's authorizeDelivery(); run results of the QuickJS loader and pool, when the catalog's entitlement check answers it for a declared pack's module",
          httpStatuses: [404],
        },
      ),
      DELIVERY_FORBIDDEN: entry(
        "The entitlement policy refused this module to this requester, or a remote catalog was asked for a requester other than the one its requester option names",
        "Grant the requester the pack, or declare another pack; over a remote catalog, create one for each requester, with its own headers and requester",
        {
          where:
            "The delivery handler; the authorizeDelivery() of createDiskCatalog() and createRemoteCatalog()",
          httpStatuses: [403],
        },
      ),
      DELIVERY_UNAVAILABLE: entry(
        "The module exists but cannot be delivered right now",
        "Retry later",
        {
          where:
            "The delivery handler; createDiskCatalog()'s authorizeDelivery(); cordon stage; run results of a pack the catalog cannot deliver",
          httpStatuses: [503],
        },
      ),
      CATALOG_BUSY: entry(
        "A catalog request was refused at once because as many already wait for one of the catalog's maxConcurrentFetches as its maxQueued allows",
        "Retry once the prefetches in flight finish, start fewer at once, or raise maxQueued (or maxConcurrentFetches)",
        {
          where:
            "createRemoteCatalog() and createStagedCatalog(): prefetch and the run results of their packs",
        },
      ),
      CATALOG_FAILED: entry(
        "A catalog threw, rejected or answered a shape other than SandboxModuleCatalog's while a run was prepared, or gave a pack module no source text",
        "Fix the catalog: its methods answer the interface's shapes, and a failure it means to report is a CordonError with a registered code",
        {
          where:
            "Run results of the QuickJS loader and pool, when their catalog fails",
        },
      ),
      DELIVERY_LISTEN_FAILED: entry(
        "The delivery server cannot listen on its hostname and port: the port is in use or not permitted, or the hostname is not one this machine may listen on",
        "Pass a free --port (--port 0 picks one) and a --hostname this machine has, or stop what holds the port",
        {
          where:
            "cordon serve; serveDelivery() when its connection guard may not listen on 127.0.0.1",
        },
      ),
      DELIVERY_SERVE_NEEDS_DENO: entry(
        "serveDelivery() was called on a runtime other than Deno: the server and the watcher it runs use the Deno namespace",
        "On Node, serve createDeliveryHandler(catalog) with node:http through toNodeListener() of @cordon/cordon/plugin, over the disk catalog of @cordon/cordon/catalog/disk or a remote, staged or own catalog; or run serveDelivery() (cordon serve) on Deno",
        { where: "serveDelivery() on Node" },
      ),
      PACK_FILE_CHANGED: entry(
        "A pack file on disk no longer matches the digest discovery listed for it",
        "Rescan the packs (serve with --watch, or restart); install a changed pack as a new folder",
        {
          where:
            "The delivery handler over createDiskCatalog(); its authorizeDelivery(); run results of the QuickJS loader and pool over it, resolving a pack whose file changed",
          httpStatuses: [503],
        },
      ),
      DISCOVERY_INDEX_IGNORED: entry(
        "The discovery index is damaged or of another version, so discovery read every pack",
        "Nothing to do: it is written again; do not edit it or share it between versions",
        {
          where:
            "createDiskCatalog() warnings with indexPath (cordon serve --index)",
        },
      ),
      DISCOVERY_INDEX_UNWRITABLE: entry(
        "The discovery index could not be written; the next start reads every pack again",
        "Point indexPath (--index) at a file in a folder the server may write",
        {
          where:
            "createDiskCatalog() warnings with indexPath (cordon serve --index)",
        },
      ),
      DISCOVERY_INDEX_INSIDE_PACKS: entry(
        "The discovery index file is inside the packs folder it indexes",
        "Point indexPath (--index) at a file outside the packs folder; each write of a file inside it changes the packs folder, which a watching server rescans",
        {
          where:
            "createDiskCatalog() and serveDelivery() with indexPath, cordon serve --index",
        },
      ),
      LISTING_QUERY_INVALID: entry(
        "The listing request names packs in a malformed way",
        "Pass packs=name,name with 1 to 64 pack names, each as the catalog lists it",
        { where: "The delivery handler's listing route", httpStatuses: [400] },
      ),
      METHOD_NOT_ALLOWED: entry(
        "The HTTP method is not supported on this route",
        "Use GET or HEAD",
        { where: "The delivery handler; the plugin host", httpStatuses: [405] },
      ),
      PRECONDITION_FAILED: entry(
        "A request's If-Match names no entity tag the resource has now",
        "Fetch it again without If-Match, or send the ETag it answers now",
        { where: "The delivery handler", httpStatuses: [412] },
      ),
      FETCH_FAILED: entry(
        "A module could not be fetched from the delivery server",
        "Check the server URL and that the server is running",
        {
          where:
            "createRemoteCatalog() and createStagedCatalog(): prefetch and the run results of their packs",
        },
      ),
      DIGEST_MISMATCH: entry(
        "Delivered bytes do not match their announced digest, or a browser page may not read the digest header of another origin's answer",
        "Do not trust this server or proxy, unless the message names what the host sent instead (gzip data without Content-Encoding, an HTML page) or a Repr-Digest it does not expose: then fix the host; the bytes were not cached or run",
        {
          where:
            "createRemoteCatalog() and createStagedCatalog(): prefetch and the run results of their packs",
        },
      ),
      WEB_CRYPTO_UNAVAILABLE: entry(
        "The runtime has no Web Crypto (crypto.subtle) to check module digests with: browsers give it only to secure contexts, so a page served over plain http has none",
        "Serve the page over https, or from localhost while developing",
        {
          where:
            "createRemoteCatalog() and createStagedCatalog(): prefetch and their packs' run results; the remote one's authorizeDelivery() refusals; sha256Digest() and moduleIdFor()",
        },
      ),
      BYTES_DETACHED: entry(
        "Bytes handed to cordon belong to an ArrayBuffer that was transferred or detached, so they hold nothing to read",
        "Pass the bytes before transferring their buffer (postMessage, structuredClone with transfer, ArrayBuffer.prototype.transfer), or pass a copy",
        { where: "sha256Digest(); writeStagedTree()" },
      ),

      // The command line of every command (deno task run, serve, stage, verify, pack).
      CLI_FLAGS_INVALID: entry(
        "A command's arguments do not parse: an unknown or repeated flag, a missing or malformed value, or a missing or extra argument",
        "Run the command with --help and fix the arguments it names",
        { where: "Every command: cordon run, serve, stage, verify and pack" },
      ),

      // Files and folders given to a catalog or a command.
      PATH_UNUSABLE: entry(
        "A file or folder cordon was given, or one it needs (the temp folder, Deno's cache folder), or a command's standard output, cannot be read or written as it needs: missing, of the wrong kind (a file for a folder, a device), not permitted, too large, not UTF-8 text, or a path a permission flag cannot carry",
        "Pass a path of the kind the message names, one this process may read (or write), or set the variable it names (TMPDIR, DENO_DIR, HOME), and run again",
        {
          where:
            "createDiskCatalog(), readStagedIndex(), verifyStagedTree(), writeStagedTree() and every command",
        },
      ),

      // Staged trees (cordon stage and cordon verify).
      STAGE_OUTPUT_NOT_EMPTY: entry(
        "The folder to stage into exists and is not empty, or another stage or process wrote there once it was found empty (two stages started at once into one folder: one writes its tree, the other stops)",
        "Stage into a new or empty folder that nothing else writes to; staged trees are written whole, never merged",
        { where: "writeStagedTree() and cordon stage" },
      ),
      STAGE_OUTPUT_INSIDE_PACKS: entry(
        "The folder to stage into is inside the packs folder being staged",
        "Stage into a folder outside the packs folder; a tree inside it would be discovered as a pack",
        { where: "writeStagedTree() and cordon stage" },
      ),
      STAGE_PACKS_REJECTED: entry(
        "Discovery rejected packs of the folder being staged",
        "Fix the packs the diagnostics name, or pass --allow-rejected to stage the others",
        { where: "cordon stage" },
      ),
      STAGED_FILE_TAMPERED: entry(
        "A staged file's bytes do not match the digest the staged index gives",
        "Stage the packs again and publish the new tree; do not serve the tampered file",
        { where: "verifyStagedTree() and cordon verify" },
      ),
      STAGED_FILE_MISSING: entry(
        "A file the staged index names is not in the staged tree",
        "Publish the whole staged tree, or stage the packs again",
        { where: "verifyStagedTree(), readStagedIndex() and cordon verify" },
      ),
      STAGED_FILE_EXTRA: entry(
        "The staged tree holds a file its index does not name",
        "Remove the file, or stage the packs again into an empty folder",
        { where: "verifyStagedTree() and cordon verify" },
      ),
      STAGED_INDEX_INVALID: entry(
        "The staged index or a pack index is unreadable or disagrees with itself",
        "Stage the packs again; never edit a staged tree by hand",
        { where: "verifyStagedTree(), readStagedIndex() and cordon verify" },
      ),
      STAGED_PACK_CHANGED: entry(
        "A pack's content changed but its version did not",
        "Give the changed pack a new version number, or restore the released content",
        { where: "verifyStagedTree() and cordon verify" },
      ),

      // Packing npm packages (deno task pack).
      NPM_FETCH_FAILED: entry(
        "The registry or a tarball could not be fetched: unreachable, an HTTP error, over the size bound, not in full within fetchTimeoutMs, or a tarball URL that is not http(s)",
        "Check the network and the registry URL, then pack again; raise fetchTimeoutMs (--fetch-timeout-ms) for a slow registry",
        { where: "cordon pack" },
      ),
      NPM_NOT_FOUND: entry(
        "The registry has no package by this name, or no published version matches the range or tag",
        "Check the package's name and the version range or tag",
        { where: "cordon pack" },
      ),
      NPM_INTEGRITY_MISMATCH: entry(
        "A tarball's bytes do not match the integrity hash or shasum the registry gives for it",
        "Do not install it; check the registry and the network between you and it",
        { where: "cordon pack" },
      ),
      NPM_PACKAGE_INVALID: entry(
        "A package's registry metadata, package.json or archive is malformed or unsafe (not JSON, no tarball or hash, an exports map nested too deep to read, not gzip, truncated, bytes after its gzip stream that are neither zero nor another gzip member, headers that fail their checksums, too large unpacked (alone or with the rest of its tree), paths that leave the package, name a file and a folder, are over 1024 characters or make over 10,000 folders and more than one a file)",
        "Do not use this version; check the registry, or report the package to its authors",
        { where: "cordon pack" },
      ),
      NPM_NOT_BUNDLABLE: entry(
        "A package cannot be made a pack: no JavaScript entry point, a subpath it does not export, a dependency from outside the registry, too many dependencies or too much of their registry metadata, a name that is no pack name or that the import policy denies, or the bundler failed",
        "Name the entry points with --subpaths, or pack another build or version of the package",
        { where: "cordon pack" },
      ),
      NPM_NO_ENTRY_WORKS: entry(
        "No entry of a package works in a sandbox: the pack checks or the load check refused every one, so no pack was written",
        "Read each entry's reasons in the report; pack another build or version, or pass --force to write it with the report",
        { where: "cordon pack (packNpm() reports written: false instead)" },
      ),
      INTERRUPTED: entry(
        "A command was stopped by SIGINT or SIGTERM before it finished: what it had not finished was not written, and its work files and processes were removed",
        "Run the command again for what it names as not done",
        {
          where:
            "cordon pack (packNpm() rejects with its signal's reason instead) and cordon run (its runner process is ended)",
        },
      ),

      // The import policy.
      IMPORT_NODE_BUILTIN: entry(
        "A node: specifier was imported",
        "Declare a pack that provides this instead",
        { where: "Run results of every tier: the import policy" },
      ),
      IMPORT_NPM: entry(
        "An npm: specifier was imported",
        "Vet the package as a pack and declare it",
        { where: "Run results of every tier: the import policy" },
      ),
      IMPORT_JSR: entry(
        "A jsr: specifier was imported",
        "Vet the package as a pack and declare it",
        { where: "Run results of every tier: the import policy" },
      ),
      IMPORT_REMOTE: entry(
        "An http: or https: URL was imported",
        "Vet the module as a pack and declare it",
        { where: "Run results of every tier: the import policy" },
      ),
      IMPORT_FILE: entry(
        "A file: URL or absolute path was imported",
        "Import declared packs by name only",
        { where: "Run results of every tier: the import policy" },
      ),
      IMPORT_DATA: entry(
        "A data: URL was imported",
        "Put the code in the guest source or in a pack",
        { where: "Run results of every tier: the import policy" },
      ),
      IMPORT_BLOB: entry(
        "A blob: URL was imported",
        "Put the code in the guest source or in a pack",
        { where: "Run results of every tier: the import policy" },
      ),
      IMPORT_SCHEME: entry(
        "A URL with an unsupported scheme was imported",
        "Import declared packs by name only",
        { where: "Run results of every tier: the import policy" },
      ),
      IMPORT_COMPAT: entry(
        "A Node built-in or compat module name was imported",
        "Declare a pack that provides this instead",
        { where: "Run results of every tier: the import policy" },
      ),
      IMPORT_UNDECLARED: entry(
        "A pack was imported that the declaration does not list (or is not installed)",
        "Add the pack to the declaration's packages",
        { where: "Run results of every tier: the import policy" },
      ),
      IMPORT_NOT_EXPORTED: entry(
        "A subpath was imported that the pack does not export",
        "Import one of the pack's exported subpaths",
        { where: "Run results of every tier: the import policy" },
      ),
      IMPORT_PATH_ESCAPE: entry(
        "A relative import leaves its pack or is not allowed here",
        "Import declared packs by name; relative imports stay inside a pack",
        { where: "Run results of every tier: the import policy" },
      ),
      IMPORT_DYNAMIC: entry(
        "import() was used",
        "Use static import declarations of declared packs",
        { where: "Run results of every tier: the import policy" },
      ),
      IMPORT_ATTRIBUTES: entry(
        "An import carried attributes (with { type: ... } or assert { type: ... })",
        "Import JavaScript modules without attributes",
        {
          where: "Run results of every tier: the import policy; pack discovery",
        },
      ),

      // Running guest code.
      GUEST_SYNTAX_ERROR: entry(
        "The guest source is not a valid ES module",
        "Fix the syntax error the message names",
        {
          where:
            "Run results of every tier (loader, pool, worker, process and vm sandboxes)",
        },
      ),
      GUEST_ERROR: entry(
        "Guest code threw or rejected",
        "Fix the guest code; the message carries what it threw",
        {
          where:
            "Run results of every tier (loader, pool, worker, process and vm sandboxes)",
        },
      ),
      TIMEOUT: entry(
        "The run exceeded its time limit",
        "Make the code finish sooner or raise timeoutMs",
        {
          where:
            "Run results of every tier (loader, pool, worker, process and vm sandboxes); the plugin host",
          httpStatuses: [504],
        },
      ),
      ABORTED: entry(
        "The caller aborted the run",
        "None; the caller's signal ended it",
        {
          where:
            "Run results of every tier (loader, pool, worker, process and vm sandboxes); createRemoteCatalog() prefetch, and its authorizeDelivery() refusals once their signal aborts; the plugin host",
          httpStatuses: [502],
        },
      ),
      OUT_OF_MEMORY: entry(
        "The run exceeded its memory limit",
        "Use less memory or raise memoryLimitBytes",
        {
          where:
            "Run results of every tier (loader, pool, worker, process and vm sandboxes); the plugin host",
          httpStatuses: [502],
        },
      ),
      STACK_OVERFLOW: entry(
        "The run exceeded its stack limit",
        "Reduce recursion depth or raise maxStackSizeBytes",
        {
          where:
            "Run results of every tier (loader, pool, worker, process and vm sandboxes)",
        },
      ),
      RESULT_NOT_SERIALIZABLE: entry(
        "The guest's result cannot cross the boundary as data",
        "Return JSON-safe data (no functions, symbols or cycles)",
        {
          where:
            "Run results of every tier (loader, pool, worker, process and vm sandboxes); host calls of a vm plugin",
        },
      ),
      SANDBOX_CRASHED: entry(
        "The sandbox ended without an answer",
        "Check the exit code in the result; the guest may have exhausted a limit",
        {
          where:
            "Run results of the pool, worker, process and vm sandboxes; the plugin host",
          httpStatuses: [502],
        },
      ),
      SANDBOX_DISPOSED: entry(
        "A disposed sandbox, loader or server was used, or a plugin its operator stopped or is uninstalling was called",
        "Create a new one; for a plugin, retry once its operator starts or installs it again",
        {
          where:
            "Rejections of a disposed loader, pool, sandbox or plugin module; the plugin host, also for a plugin stopped with stop() while installed; the delivery server's rescan() after shutdown",
          httpStatuses: [503],
        },
      ),
      SANDBOX_BUSY: entry(
        "A run or call was refused at once because as many already wait for a runner as the sandbox's maxQueued allows, or as many of its requester's runs as a QuickJS pool's maxQueuedPerRequester allows",
        "Retry once the runs in flight finish, submit fewer at once, or raise maxQueued (or maxQueuedPerRequester)",
        {
          where:
            "Results of QuickJS pool runs, worker and process sandbox runs, and vm and plugin sandbox calls; the plugin host",
          httpStatuses: [503],
        },
      ),
      SANDBOX_UNAVAILABLE: entry(
        "The runtime cannot host this sandbox tier",
        "Follow the message, for example enable worker-options in deno.json",
        {
          where:
            "createQuickJSPool(), createWorkerSandbox(), process sandbox runs and the vm tier, on a runtime that cannot host them or may not start their subprocess, or whose system refuses it (no file descriptors, processes or memory left); the plugin host",
          httpStatuses: [503],
        },
      ),
      QUICKJS_VARIANT_UNSUPPORTED: entry(
        "The quickjs-emscripten build passed as variant cannot keep the QuickJS loader's guarantees: it is no sync build, it failed to start, its memory cannot be capped, or it lacks what the loader uses",
        "Pass a release sync build of quickjs-emscripten 0.32 on QuickJS (such as @jitl/quickjs-wasmfile-release-sync), or omit variant for the default",
        { where: "createQuickJSLoader()" },
      ),
      REALM_CODE_ALTERED: entry(
        "cordon's realm code, functions whose text runs inside each realm, calls a name from outside them when the realm starts: an app's bundler or coverage tool added a helper of its own to them (esbuild's keepNames, istanbul's counters, a transpiler's helpers)",
        "Bundle cordon without keepNames (esbuild --keep-names) and leave it out of coverage instrumentation and of transpilers that add helpers: exclude node_modules/@cordon/cordon",
        {
          where:
            "createQuickJSLoader(), createQuickJSPool() and vm sandbox calls",
        },
      ),
      SANDBOX_RESTART_LIMITED: entry(
        "A sandbox's realm could not load or start (or ended before any call was sent to it) and its restarts for the current window are used up (limits.maxRestarts per limits.restartWindowMs), so it is not started again yet",
        "Retry after the Retry-After delay (an answer without one, under limits.maxRestarts 0, will not change by waiting); fix what keeps the plugin from loading or starting, then stop and start it, or raise limits.maxRestarts",
        { where: "vm sandboxes and the plugin host", httpStatuses: [503] },
      ),

      // Plugin bridge.
      BRIDGE_INVALID_PLUGIN_SURFACE: entry(
        "A sandboxed plugin does not export the expected functions",
        "Export routes() and handleRequest() from the plugin module",
        {
          where: "installPlugin() and plugin modules' start(); the plugin host",
          httpStatuses: [502],
        },
      ),
      BRIDGE_MARSHAL_FAILED: entry(
        "A host request could not be turned into a SerializedRequest",
        "Send a request whose body and headers are readable",
        {
          where:
            "The plugin host: 413 for a body over maxBodyBytes or maxPayloadBytes, 408 for one slower than bodyTimeoutMs",
          httpStatuses: [400, 408, 413],
        },
      ),
      BRIDGE_UNMARSHAL_FAILED: entry(
        "The plugin's answer is not a valid SerializedResponse",
        "Return { status, headers, body } from handleRequest()",
        { where: "The plugin host", httpStatuses: [502] },
      ),
      BRIDGE_HANDLER_REJECTED: entry(
        "The plugin's handler threw or rejected",
        "Fix the plugin; the cause carries the sandbox-side error",
        {
          where:
            "The plugin host; toNodeListener() when the handler itself rejects (500)",
          httpStatuses: [500, 502],
        },
      ),
      BRIDGE_LIFECYCLE_FAILED: entry(
        "Starting, stopping or disposing a sandboxed plugin failed",
        "See the cause; the plugin may not load",
        {
          where:
            "installPlugin() and plugin modules' start(), stop() and dispose(); the plugin host",
          httpStatuses: [502],
        },
      ),
      PERMISSION_DENIED: entry(
        "A capability, host or path was used that the policy does not grant",
        "Grant it in the plugin's policy or stop using it",
        {
          where:
            "Host calls of a vm plugin; the plugin host (also when identify refuses)",
          httpStatuses: [403],
        },
      ),
      PROXY_CALL_FAILED: entry(
        "A vm plugin's host call (fetch, fs or a capability) failed for a reason other than permission",
        "Read the message; check the URL, path or capability arguments",
        {
          where:
            "Host calls of a vm plugin (fetch, fs, capabilities), inside the plugin",
        },
      ),
      PLUGIN_NOT_FOUND: entry(
        "No installed plugin has this id or route",
        "Install the plugin or check the URL",
        { where: "The plugin host", httpStatuses: [404] },
      ),
      PLUGIN_BUSY: entry(
        "A plugin has as many requests in flight as its host allows, or as many of this caller's as the host's maxConcurrentRequestsPerCaller allows",
        "Retry after the Retry-After delay, or raise the host's maxConcurrentRequests (or maxConcurrentRequestsPerCaller)",
        { where: "The plugin host", httpStatuses: [503] },
      ),
      REQUEST_INVALID: entry(
        "A request's URL, Host header or method is malformed, or its path holds . or .. segments",
        "Send the path a URL parser resolves to, a Host of host[:port] and a standard method",
        {
          where:
            "The delivery handler; the plugin host; toNodeListener() (431 for too many header fields)",
          httpStatuses: [400, 431],
        },
      ),
      PROXY_FS_UNAVAILABLE: entry(
        "The default file proxy cannot check where what it opens is: on Linux the host may not read /proc/self/fd (a Deno host needs every permission, -A, for that, and without it Deno also opens a symbolic link despite O_NOFOLLOW)",
        "Run the Deno host with -A, or give the sandbox proxies.fs, or grant no folders in policy.fs",
        {
          where:
            "createVmSandbox() and createPluginSandbox() with folders in policy.fs; fs host calls of a vm plugin, inside the plugin, once its host gave up a permission",
        },
      ),
      PROXY_LIMIT_EXCEEDED: entry(
        "A plugin's fetch, file read or write, or capability call went past its byte, time or concurrency bounds, its files would hold more than maxWriteBytes, or the answers of its calls in flight would hold more than maxProxyAnswerBytesInFlight on the host",
        "Ask for less data, write less or to fewer files, or make fewer (large) host calls at once, or raise the limit that its message names (read limits in docs/vm.md)",
        { where: "Host calls of a vm plugin, inside the plugin" },
      ),
      BRIDGE_RESPONSE_HEADER_DENIED: entry(
        "A plugin's answer sets a response header the host's header policy does not allow",
        "Drop the header from the plugin's answer, or allow it in responseHeaders",
        { where: "The plugin host", httpStatuses: [502] },
      ),
      VM_MODULES_UNAVAILABLE: entry(
        "Node runs without --experimental-vm-modules, which the vm tier's thread isolation needs to load a plugin module",
        "Start the host with node --experimental-vm-modules, or use the default isolation (a realm process, started with the flag)",
        {
          where:
            "installPlugin() of a vm plugin on Node without --experimental-vm-modules",
        },
      ),
    },
  );

/** One of the stable error codes of {@linkcode ERROR_CODES}. */
export type ErrorCode =
  | "PACK_MANIFEST_INVALID"
  | "PACK_FILE_OUTSIDE"
  | "PACK_FILE_MISSING"
  | "PACK_FILE_TOO_LARGE"
  | "PACK_MODULE_SYNTAX"
  | "PACK_DYNAMIC_IMPORT"
  | "PACK_IMPORT_UNDECLARED"
  | "PACK_IMPORT_ESCAPE"
  | "PACK_DUPLICATE"
  | "PACK_FOLDER_REPLACED"
  | "PACK_GRAPH_TOO_LARGE"
  | "PACK_NOT_INSTALLED"
  | "PACK_VERSION_MISMATCH"
  | "PACK_DIGEST_MISMATCH"
  | "PACK_FORBIDDEN"
  | "DECLARATION_INVALID"
  | "MODULE_ID_INVALID"
  | "MODULE_NOT_FOUND"
  | "DELIVERY_FORBIDDEN"
  | "DELIVERY_UNAVAILABLE"
  | "CATALOG_BUSY"
  | "CATALOG_FAILED"
  | "DELIVERY_LISTEN_FAILED"
  | "DELIVERY_SERVE_NEEDS_DENO"
  | "PACK_FILE_CHANGED"
  | "DISCOVERY_INDEX_IGNORED"
  | "DISCOVERY_INDEX_UNWRITABLE"
  | "DISCOVERY_INDEX_INSIDE_PACKS"
  | "LISTING_QUERY_INVALID"
  | "METHOD_NOT_ALLOWED"
  | "PRECONDITION_FAILED"
  | "FETCH_FAILED"
  | "DIGEST_MISMATCH"
  | "WEB_CRYPTO_UNAVAILABLE"
  | "BYTES_DETACHED"
  | "CLI_FLAGS_INVALID"
  | "PATH_UNUSABLE"
  | "STAGE_OUTPUT_NOT_EMPTY"
  | "STAGE_OUTPUT_INSIDE_PACKS"
  | "STAGE_PACKS_REJECTED"
  | "STAGED_FILE_TAMPERED"
  | "STAGED_FILE_MISSING"
  | "STAGED_FILE_EXTRA"
  | "STAGED_INDEX_INVALID"
  | "STAGED_PACK_CHANGED"
  | "NPM_FETCH_FAILED"
  | "NPM_NOT_FOUND"
  | "NPM_INTEGRITY_MISMATCH"
  | "NPM_PACKAGE_INVALID"
  | "NPM_NOT_BUNDLABLE"
  | "NPM_NO_ENTRY_WORKS"
  | "INTERRUPTED"
  | "IMPORT_NODE_BUILTIN"
  | "IMPORT_NPM"
  | "IMPORT_JSR"
  | "IMPORT_REMOTE"
  | "IMPORT_FILE"
  | "IMPORT_DATA"
  | "IMPORT_BLOB"
  | "IMPORT_SCHEME"
  | "IMPORT_COMPAT"
  | "IMPORT_UNDECLARED"
  | "IMPORT_NOT_EXPORTED"
  | "IMPORT_PATH_ESCAPE"
  | "IMPORT_DYNAMIC"
  | "IMPORT_ATTRIBUTES"
  | "GUEST_SYNTAX_ERROR"
  | "GUEST_ERROR"
  | "TIMEOUT"
  | "ABORTED"
  | "OUT_OF_MEMORY"
  | "STACK_OVERFLOW"
  | "RESULT_NOT_SERIALIZABLE"
  | "SANDBOX_CRASHED"
  | "SANDBOX_DISPOSED"
  | "SANDBOX_BUSY"
  | "SANDBOX_UNAVAILABLE"
  | "QUICKJS_VARIANT_UNSUPPORTED"
  | "REALM_CODE_ALTERED"
  | "SANDBOX_RESTART_LIMITED"
  | "BRIDGE_INVALID_PLUGIN_SURFACE"
  | "BRIDGE_MARSHAL_FAILED"
  | "BRIDGE_UNMARSHAL_FAILED"
  | "BRIDGE_HANDLER_REJECTED"
  | "BRIDGE_LIFECYCLE_FAILED"
  | "PERMISSION_DENIED"
  | "PROXY_CALL_FAILED"
  | "PROXY_FS_UNAVAILABLE"
  | "PROXY_LIMIT_EXCEEDED"
  | "BRIDGE_RESPONSE_HEADER_DENIED"
  | "VM_MODULES_UNAVAILABLE"
  | "PLUGIN_NOT_FOUND"
  | "PLUGIN_BUSY"
  | "REQUEST_INVALID";

/**
 * The code of a wire shape another version of cordon may have written (a
 * delivery server's refusal or problem document, a remote catalog's pack
 * status): one of {@linkcode ErrorCode}, or a code this version does not
 * know, which a reader must accept and may treat as a generic failure.
 * Editors still complete the known codes.
 *
 * @example
 * ```ts
 * import { isErrorCode, type WireErrorCode } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const code: WireErrorCode = "CODE_OF_A_LATER_VERSION";
 * assert.equal(isErrorCode(code), false);
 * ```
 */
// `string & Record<never, never>` is `string` that keeps the literals
// beside it from being absorbed into it (deno lint bans the `{}` form).
export type WireErrorCode = ErrorCode | (string & Record<never, never>);

/**
 * Whether a string is a registered error code.
 *
 * @param code The string to check.
 * @returns `true` when `code` is a key of {@linkcode ERROR_CODES}.
 *
 * @example
 * ```ts
 * import { isErrorCode } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(isErrorCode("TIMEOUT"), true);
 * assert.equal(isErrorCode("toString"), false);
 * ```
 */
export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERROR_CODES, code);
}
