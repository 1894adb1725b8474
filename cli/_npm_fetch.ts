/**
 * Fetches npm packages from a registry for the pack command: reads the
 * registry's metadata, picks versions, downloads each tarball, checks it
 * against the registry's `dist.integrity` and lays the package and its
 * dependencies out as a `node_modules` tree in memory.
 *
 * @module
 */

import { CordonError } from "../protocol/cordon_error.ts";
import { relayAbortToFetch } from "../protocol/deadline.ts";
import { isNpmName } from "../protocol/ids.ts";
import type { IntegerRange } from "../protocol/options.ts";
import { parseRange, pickVersion, type Range, satisfies } from "./_semver.ts";
import {
  readTarball,
  type TarFile,
  type UnpackedTarball,
  UnpackedTooLarge,
} from "./_tar.ts";
import { collectCapped } from "./_capped_bytes.ts";

/** The public npm registry. */
export const DEFAULT_REGISTRY = "https://registry.npmjs.org";

/** How long one registry request may take, body included, by default. */
export const DEFAULT_FETCH_TIMEOUT_MS = 60_000;

const MAX_TARBALL_BYTES = 64 * 1024 * 1024;
/** Past the largest abbreviated metadata npm serves (tens of MB). */
const MAX_PACKUMENT_BYTES = 64 * 1024 * 1024;
const MAX_UNPACKED_BYTES = 256 * 1024 * 1024;
const MAX_PACKAGES = 300;
/** The longest dist-tag a dependency may name: npm's longest package name. */
const MAX_TAG_CHARS = 214;

/**
 * How many bytes of registry metadata a whole package tree may read, in
 * bytes (256 MiB). Each answer is bounded alone, at 64 MiB, but a tree of
 * up to 300 packages could read 300 of those, and each stays in memory for
 * the run (a 60 MiB answer of small versions held 430 MB parsed, 226 MB
 * once cut to what the tree needs): 4 took the command to 2.3 GB. The
 * largest real answers measured: next 21 MB, typescript 10.5 MB.
 */
const MAX_TREE_METADATA_BYTES = 256 * 1024 * 1024;

/**
 * What a whole package tree may unpack to by default, in bytes (512 MiB):
 * every package's files stay in memory until the pack is written, so the
 * bound of one tarball times the packages a tree may hold (75 GiB) is no
 * bound at all. The largest real tree measured, @tensorflow/tfjs 4.22.0's
 * 69 packages, holds 270 MiB of files.
 */
export const DEFAULT_MAX_UNPACKED_BYTES = 512 * 1024 * 1024;

/** The range of `maxUnpackedBytes`: from 1 byte to 8 GiB. */
export const UNPACKED_BYTES_RANGE: IntegerRange = Object.freeze({
  min: 1,
  max: 8 * 1024 * 1024 * 1024,
  unit: "bytes",
});

/** An npm spec as the operator wrote it: `date-fns@4`, `@scope/name`. */
export interface NpmSpec {
  name: string;
  /** The range or dist-tag; `latest` when none was given. */
  wanted: string;
}

/** One package version as fetched and checked. */
export interface FetchedPackage {
  name: string;
  version: string;
  /**
   * The registry's integrity string the tarball matched, `sha512-...`; for
   * a bundled package, that of the tarball it came in.
   */
  integrity: string;
  /** Its `package.json`, parsed. */
  manifest: Record<string, unknown>;
  /** Its files, by path inside the package. */
  files: TarFile[];
  /**
   * The package whose tarball held it under `node_modules/`, as one of its
   * `bundleDependencies` or their dependencies; the registry was not asked.
   */
  bundledBy?: FetchedPackage;
}

/** A package tree: where each package sits (`node_modules/a`) and what. */
export interface PackageTree {
  /** The package the operator named. */
  root: FetchedPackage;
  /** Its folder in the tree, `node_modules/<name>`. */
  rootDir: string;
  /** Every package by folder, the root included, in install order. */
  placed: Map<string, FetchedPackage>;
}

/** Where and how to fetch. */
export interface FetchOptions {
  /** The registry's base URL. */
  registry: string;
  /**
   * How long one request may take, from sending it to the last byte of its
   * body, in milliseconds.
   */
  fetchTimeoutMs: number;
  /**
   * How many bytes the tarballs of the whole tree may unpack to together,
   * tar headers included.
   */
  maxUnpackedBytes: number;
  /** Aborts the downloads. */
  signal?: AbortSignal;
}

/** Where a version's tarball is and how to check it. */
interface Dist {
  tarball?: string;
  integrity?: string;
  shasum?: string;
}

/**
 * What the tree needs of a package's registry metadata, kept for the run:
 * its tags and where each version's tarball is. `versions` is `null` when
 * the registry gave something other than an object.
 */
interface Packument {
  "dist-tags": Record<string, string>;
  versions?: Record<string, { dist?: Dist }> | null;
}

/** The string fields of `record` named in `keys`, in an object of its own. */
function stringsOf(
  record: unknown,
  keys?: readonly string[],
): Record<string, string> {
  // No prototype: a tag or version named `__proto__` is a key like another.
  const out: Record<string, string> = Object.create(null);
  if (!isRecord(record)) return out;
  for (const key of keys ?? Object.keys(record)) {
    const value = stringAt(record, key);
    if (value !== undefined) out[key] = value;
  }
  return out;
}

/**
 * Keeps of parsed metadata only the tags and each version's tarball and
 * hashes: the rest (descriptions, every version's dependencies, a readme)
 * would stay in memory for the run, held once per package of the tree.
 */
function slimmed(packument: Record<string, unknown>): Packument {
  const { versions } = packument;
  const slim: Packument = { "dist-tags": stringsOf(packument["dist-tags"]) };
  if (versions === undefined) return slim;
  if (!isRecord(versions)) return { ...slim, versions: null };
  const kept: Record<string, { dist?: Dist }> = Object.create(null);
  for (const [version, meta] of Object.entries(versions)) {
    kept[version] = isRecord(meta) && isRecord(meta.dist)
      ? { dist: stringsOf(meta.dist, ["tarball", "integrity", "shasum"]) }
      : {};
  }
  return { ...slim, versions: kept };
}

/**
 * Reads `name`, `name@range`, `@scope/name@tag`.
 *
 * @throws {TypeError} When the spec does not name an npm package.
 */
export function parseNpmSpec(spec: string): NpmSpec {
  const at = spec.indexOf("@", 1);
  const name = at === -1 ? spec : spec.slice(0, at);
  const wanted = at === -1 ? "latest" : spec.slice(at + 1);
  if (!isNpmName(name) || wanted === "") {
    throw new TypeError(
      `Cannot read the package spec ${
        JSON.stringify(spec.slice(0, 80))
      }: write an npm name with an optional version, such as date-fns@4`,
    );
  }
  return { name, wanted };
}

function registryUrl(registry: string, path: string): string {
  return `${registry.replace(/\/+$/, "")}/${path}`;
}

/** What a request is, for messages, and what to do when it fails. */
interface RegistryRequest {
  url: string;
  /** `the registry metadata of x`, `the tarball of x@1.0.0`. */
  what: string;
  maxBytes: number;
  accept?: string;
  /** Whether a 404 means the registry has no such package. */
  notFoundIsAnswer?: boolean;
}

/**
 * Fetches a registry answer and reads its body, at most `maxBytes` of it
 * (a registry that sends more, or never stops, is cut off there, not read
 * into memory), within `fetchTimeoutMs` for the whole request.
 *
 * @throws {CordonError} `NPM_FETCH_FAILED` when the request fails, is
 * answered with an HTTP error, sends more than `maxBytes` or does not end
 * in time; `NPM_NOT_FOUND` for a 404 where that means no such package.
 * The caller's abort rejects with its signal's reason.
 */
async function fetchBytes(
  request: RegistryRequest,
  options: FetchOptions,
): Promise<Uint8Array<ArrayBuffer>> {
  const { url, what, maxBytes, accept } = request;
  const caller = options.signal;
  caller?.throwIfAborted();
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), options.fetchTimeoutMs);
  const stopRelaying = relayAbortToFetch(caller, deadline, what);
  try {
    const response = await fetch(url, {
      headers: accept === undefined ? {} : { accept },
      signal: deadline.signal,
    });
    if (!response.ok) {
      await response.body?.cancel().catch(() => {});
      if (response.status === 404 && request.notFoundIsAnswer === true) {
        throw new CordonError(
          "NPM_NOT_FOUND",
          `Cannot fetch ${what}: the registry answered 404; check the name and version`,
        );
      }
      throw new CordonError(
        "NPM_FETCH_FAILED",
        `Cannot fetch ${what}: the registry answered ${response.status}; check the name and version`,
      );
    }
    return await readCapped(response, maxBytes, what);
  } catch (error) {
    // The caller's reason comes first, and is never inspected: it may be
    // any value, even a proxy whose every trap throws.
    caller?.throwIfAborted();
    if (error instanceof CordonError) throw error;
    if (deadline.signal.aborted) {
      throw new CordonError(
        "NPM_FETCH_FAILED",
        `Cannot fetch ${what}: the registry did not send it in full within ${options.fetchTimeoutMs} ms; check the network and the --registry URL, or raise --fetch-timeout-ms (fetchTimeoutMs)`,
        { cause: error },
      );
    }
    throw new CordonError(
      "NPM_FETCH_FAILED",
      `Cannot fetch ${what}: ${
        error instanceof Error ? error.message : String(error)
      }; check the network and the --registry URL`,
      { cause: error },
    );
  } finally {
    clearTimeout(timer);
    stopRelaying();
  }
}

/** Reads a response's body, at most `maxBytes` of it. */
async function readCapped(
  response: Response,
  maxBytes: number,
  what: string,
): Promise<Uint8Array<ArrayBuffer>> {
  const tooLarge = () =>
    new CordonError(
      "NPM_FETCH_FAILED",
      `Cannot use ${what}: it is over ${
        maxBytes / 1024 / 1024
      } MiB; check the registry`,
    );
  if (Number(response.headers.get("content-length")) > maxBytes) {
    await response.body?.cancel().catch(() => {});
    throw tooLarge();
  }
  return await collectCapped(response.body ?? [], maxBytes, tooLarge);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A field of registry metadata that must be a string, else `undefined`. */
function stringAt(
  record: unknown,
  key: string,
): string | undefined {
  if (!isRecord(record) || !Object.hasOwn(record, key)) return undefined;
  const value = record[key];
  return typeof value === "string" ? value : undefined;
}

function base64(bytes: ArrayBuffer): string {
  let binary = "";
  for (const byte of new Uint8Array(bytes)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/**
 * Checks bytes against an SRI integrity string (the strongest of its
 * `sha512-` / `sha256-` / `sha1-` entries), or against a hex SHA-1
 * `shasum` when the registry gives nothing else.
 *
 * @returns The integrity entry the bytes matched.
 * @throws {CordonError} `NPM_INTEGRITY_MISMATCH` when they do not match;
 * `NPM_PACKAGE_INVALID` when the registry gives nothing to check.
 */
export async function checkIntegrity(
  bytes: Uint8Array<ArrayBuffer>,
  expected: { integrity?: string; shasum?: string; what: string },
): Promise<string> {
  const { integrity, shasum, what } = expected;
  const algorithms = { sha512: "SHA-512", sha256: "SHA-256", sha1: "SHA-1" };
  const entries = (integrity ?? "").split(/\s+/).map((entry) =>
    /^(sha512|sha256|sha1)-([A-Za-z0-9+/=]+)$/.exec(entry)
  ).filter((match) => match !== null);
  const best = Object.keys(algorithms)
    .map((name) => entries.find((match) => match[1] === name))
    .find((match) => match !== undefined);
  if (best !== undefined) {
    const algorithm = algorithms[best[1] as keyof typeof algorithms];
    const actual = base64(await crypto.subtle.digest(algorithm, bytes));
    if (actual !== best[2]) {
      throw new CordonError(
        "NPM_INTEGRITY_MISMATCH",
        `Cannot use ${what}: its tarball does not match the registry's integrity ${
          best[1]
        }; do not install it, and check the registry`,
      );
    }
    return best[0];
  }
  if (shasum !== undefined && /^[0-9a-f]{40}$/.test(shasum)) {
    const digest = await crypto.subtle.digest("SHA-1", bytes);
    const hex = [...new Uint8Array(digest)].map((byte) =>
      byte.toString(16).padStart(2, "0")
    ).join("");
    if (hex !== shasum) {
      throw new CordonError(
        "NPM_INTEGRITY_MISMATCH",
        `Cannot use ${what}: its tarball does not match the registry's shasum; do not install it, and check the registry`,
      );
    }
    return `sha1-${base64(digest)}`;
  }
  throw new CordonError(
    "NPM_PACKAGE_INVALID",
    `Cannot use ${what}: the registry gives no integrity hash to check its tarball against; pack another version, or use a registry that publishes integrity hashes`,
  );
}

/** Fetches registry metadata once per name per tree. */
class Registry {
  readonly #options: FetchOptions;
  readonly #packuments = new Map<string, Promise<Packument>>();
  /** The package the tree is fetched for, for messages. */
  readonly #root: string;
  /** What the tarballs fetched so far unpacked to, together. */
  #unpackedBytes = 0;
  /** The bytes of registry metadata read so far, together. */
  #metadataBytes = 0;

  constructor(options: FetchOptions, root: string) {
    this.#options = options;
    this.#root = root;
  }

  packument(name: string): Promise<Packument> {
    let found = this.#packuments.get(name);
    if (found === undefined) {
      const path = name.startsWith("@") ? name.replace("/", "%2f") : name;
      const what = `the registry metadata of ${name}`;
      found = fetchBytes({
        url: registryUrl(this.#options.registry, path),
        what,
        maxBytes: MAX_PACKUMENT_BYTES,
        accept: "application/vnd.npm.install-v1+json",
        notFoundIsAnswer: true,
      }, this.#options).then((bytes) => {
        this.#countMetadata(bytes.length);
        let packument: unknown;
        try {
          packument = JSON.parse(new TextDecoder().decode(bytes));
        } catch {
          packument = undefined;
        }
        if (!isRecord(packument)) {
          throw new CordonError(
            "NPM_PACKAGE_INVALID",
            `Cannot use ${what}: it is not a JSON object; check the --registry URL`,
          );
        }
        return slimmed(packument);
      });
      this.#packuments.set(name, found);
    }
    return found;
  }

  /**
   * Adds an answer's bytes to the tree's metadata.
   *
   * @throws {CordonError} `NPM_NOT_BUNDLABLE` past
   * {@linkcode MAX_TREE_METADATA_BYTES}.
   */
  #countMetadata(bytes: number): void {
    this.#metadataBytes += bytes;
    if (this.#metadataBytes > MAX_TREE_METADATA_BYTES) {
      throw new CordonError(
        "NPM_NOT_BUNDLABLE",
        `Cannot install ${this.#root}: the registry metadata of its packages is over ${
          MAX_TREE_METADATA_BYTES / 1024 / 1024
        } MiB together; pack a package with fewer dependencies, or check the --registry URL`,
      );
    }
  }

  async version(name: string, wanted: string): Promise<string> {
    const packument = await this.packument(name);
    // An unpublished package's metadata has no versions at all; a value that
    // is no object is metadata no registry should send.
    if (packument.versions !== undefined && !isRecord(packument.versions)) {
      throw new CordonError(
        "NPM_PACKAGE_INVALID",
        `Cannot resolve ${name}@${
          wanted.slice(0, 60)
        }: the registry's metadata of the package lists its versions as no object; check the --registry URL`,
      );
    }
    const versions = isRecord(packument.versions)
      ? Object.keys(packument.versions)
      : [];
    const tags = packument["dist-tags"];
    const tagged = stringAt(tags, wanted);
    const range: Range | null = tagged === undefined
      ? parseRange(wanted)
      : parseRange(tagged);
    if (range === null) {
      throw new CordonError(
        "NPM_NOT_FOUND",
        `Cannot resolve ${name}@${
          wanted.slice(0, 60)
        }: it is neither a version range nor a tag of the package; write a range such as ^1.2.0`,
      );
    }
    const version = pickVersion(versions, range, stringAt(tags, "latest"));
    if (version === undefined) {
      throw new CordonError(
        "NPM_NOT_FOUND",
        `Cannot resolve ${name}@${
          wanted.slice(0, 60)
        }: no published version is in that range; pass a range or tag that a published version matches`,
      );
    }
    return version;
  }

  async fetch(name: string, version: string): Promise<FetchedPackage> {
    const packument = await this.packument(name);
    const versions = packument.versions;
    const meta = isRecord(versions) && Object.hasOwn(versions, version)
      ? versions[version]
      : undefined;
    const dist = isRecord(meta) ? meta.dist : undefined;
    const what = `${name}@${version}`;
    const tarball = stringAt(dist, "tarball");
    if (tarball === undefined) {
      throw new CordonError(
        "NPM_PACKAGE_INVALID",
        `Cannot fetch ${what}: the registry lists no tarball; pack another version, or report it to the package's authors`,
      );
    }
    if (!/^https?:\/\//i.test(tarball)) {
      throw new CordonError(
        "NPM_FETCH_FAILED",
        `Cannot fetch ${what}: the registry gives a tarball URL that is not http(s); check the --registry URL`,
      );
    }
    const bytes = await fetchBytes({
      url: tarball,
      what: `the tarball of ${what}`,
      maxBytes: MAX_TARBALL_BYTES,
    }, this.#options);
    const integrity = await checkIntegrity(bytes, {
      ...(stringAt(dist, "integrity") === undefined
        ? {}
        : { integrity: stringAt(dist, "integrity")! }),
      ...(stringAt(dist, "shasum") === undefined
        ? {}
        : { shasum: stringAt(dist, "shasum")! }),
      what,
    });
    let unpacked: UnpackedTarball;
    const { maxUnpackedBytes } = this.#options;
    const left = maxUnpackedBytes - this.#unpackedBytes;
    try {
      unpacked = await readTarball(bytes, Math.min(MAX_UNPACKED_BYTES, left));
    } catch (error) {
      if (error instanceof UnpackedTooLarge && left < MAX_UNPACKED_BYTES) {
        throw new CordonError(
          "NPM_PACKAGE_INVALID",
          `Cannot unpack ${what}: with it the package tree of ${this.#root} unpacks to over ${maxUnpackedBytes} bytes (maxUnpackedBytes, --max-unpacked-bytes); pack a package with fewer or smaller dependencies, or raise that bound if you trust the packages`,
          { cause: error },
        );
      }
      throw new CordonError(
        "NPM_PACKAGE_INVALID",
        `Cannot unpack ${what}: ${
          error instanceof Error ? error.message : error
        }`,
        { cause: error },
      );
    }
    this.#unpackedBytes += unpacked.unpackedBytes;
    const { files } = unpacked;
    const manifest = manifestOf(files);
    if (manifest === undefined) {
      throw new CordonError(
        "NPM_PACKAGE_INVALID",
        `Cannot use ${what}: its package.json is missing or not a JSON object; pack another version, or report it to the package's authors`,
      );
    }
    return { name, version, integrity, manifest, files };
  }
}

/** The folders a package in `dir` looks in for `name`, nearest first. */
function lookupDirs(dir: string, name: string): string[] {
  const out: string[] = [];
  let current = dir;
  for (;;) {
    out.push(`${current}/node_modules/${name}`);
    const index = current.lastIndexOf("/node_modules/");
    if (index === -1) break;
    current = current.slice(0, index);
  }
  return out.map((path) => path.slice(1));
}

function dependenciesOf(pkg: FetchedPackage): [string, string][] {
  const deps = pkg.manifest.dependencies;
  if (!isRecord(deps)) return [];
  return Object.entries(deps)
    .filter((entry): entry is [string, string] => typeof entry[1] === "string");
}

/** What npm installs for a dependency: which package, in what range. */
interface Wanted {
  /** The package fetched, which an `npm:` alias names. */
  name: string;
  range: string;
}

/**
 * Reads a dependency's spec as npm does: a range, or `npm:name@range` (an
 * alias, installed under the dependency's own name; no range is `*`).
 *
 * @returns `null` for an alias that names no npm package.
 */
function wantedOf(name: string, spec: string): Wanted | null {
  if (!spec.startsWith("npm:")) return { name, range: spec };
  const target = spec.slice("npm:".length);
  const at = target.indexOf("@", 1);
  const real = at === -1 ? target : target.slice(0, at);
  if (!isNpmName(real)) return null;
  return { name: real, range: at === -1 ? "*" : target.slice(at + 1) };
}

/**
 * A dependency's range, or for a dist-tag (`latest`, `next`: what is no
 * range and stays as it is in a URL, as npm tells a tag) the version the
 * registry's tag names, as npm installs it.
 */
async function rangeOrTag(
  registry: Registry,
  name: string,
  spec: string,
): Promise<Range | null> {
  const range = parseRange(spec);
  if (range !== null || !isTagName(spec)) return range;
  return parseRange(await registry.version(name, spec));
}

function isTagName(spec: string): boolean {
  return spec.length > 0 && spec.length <= MAX_TAG_CHARS &&
    encodeURIComponent(spec) === spec;
}

/**
 * The names a package bundles, as npm reads its `bundleDependencies` (or
 * the older `bundledDependencies`): a list of names, or `true` for every
 * dependency.
 */
function bundledNamesOf(pkg: FetchedPackage): Set<string> {
  const { manifest } = pkg;
  const field = Object.hasOwn(manifest, "bundleDependencies")
    ? manifest.bundleDependencies
    : manifest.bundledDependencies;
  if (field === true) return new Set(dependenciesOf(pkg).map(([name]) => name));
  if (!Array.isArray(field)) return new Set();
  return new Set(field.filter((name) => typeof name === "string"));
}

/**
 * The package folders below a tarball's `node_modules/`, nested ones too
 * (`node_modules/a/node_modules/@s/b`), as npm finds a bundle's packages:
 * each holds a `package.json`.
 */
function bundledFolders(files: readonly TarFile[]): Set<string> {
  const folders = new Set<string>();
  for (const { path } of files) {
    if (!path.endsWith("/package.json")) continue;
    const folder = path.slice(0, -"/package.json".length);
    if (folderSteps(`${folder}/x`).at(-1) === folder) folders.add(folder);
  }
  return folders;
}

/**
 * The folders a bundle's path could be a package's, following
 * `node_modules/<name>` steps only from the package's top, outermost first:
 * `node_modules/a` and `node_modules/a/node_modules/@s/b` for a file of
 * `b`.
 */
function folderSteps(path: string): string[] {
  const segments = path.split("/");
  const steps: string[] = [];
  let at = 0;
  while (segments[at] === "node_modules") {
    const end = at + (segments[at + 1]?.startsWith("@") ? 3 : 2);
    if (end >= segments.length) break;
    steps.push(segments.slice(0, end).join("/"));
    at = end;
  }
  return steps;
}

/**
 * The deepest package folder of a bundle that holds `path`; `undefined`
 * for a file of the package itself.
 */
function ownerOf(
  path: string,
  folders: ReadonlySet<string>,
): string | undefined {
  return folderSteps(path).findLast((folder) => folders.has(folder));
}

/**
 * Refuses a package folder of a bundle inside a folder that is no package
 * (`node_modules/a/node_modules/b` where `a` has no `package.json`): npm
 * would install `b` under a package it cannot read, and its files would
 * belong to no package of the tree.
 *
 * @throws {CordonError} `NPM_PACKAGE_INVALID`.
 */
function refuseFoldersOutsidePackages(
  pkg: FetchedPackage,
  folders: ReadonlySet<string>,
): void {
  for (const folder of folders) {
    const missing = folderSteps(folder).find((step) => !folders.has(step));
    if (missing !== undefined) {
      throw new CordonError(
        "NPM_PACKAGE_INVALID",
        `Cannot use ${
          bundledWhat(pkg, missing)
        }: it holds a package folder but no package.json; pack another version, or report it to the package's authors`,
      );
    }
  }
}

/** How a message names a folder of `pkg`'s bundle. */
function bundledWhat(pkg: FetchedPackage, folder: string): string {
  return `${pkg.name}@${pkg.version}'s bundled ${
    JSON.stringify(folder.slice(0, 120))
  }`;
}

/**
 * Takes the packages a package bundles out of its files, as npm installs
 * them from its tarball and never from the registry: each package folder
 * below its `node_modules/` becomes a package of the tree, read from its
 * own `package.json` with the distrust of any other.
 *
 * @returns The bundled packages by folder inside `pkg`'s, outermost first;
 * `pkg`'s files are left without theirs.
 * @throws {CordonError} `NPM_PACKAGE_INVALID` for a bundled folder that is
 * no npm name, or whose `package.json` is no JSON object with a version.
 */
function unbundle(pkg: FetchedPackage): Map<string, FetchedPackage> {
  const bundled = new Map<string, FetchedPackage>();
  if (bundledNamesOf(pkg).size === 0) return bundled;
  const folders = bundledFolders(pkg.files);
  refuseFoldersOutsidePackages(pkg, folders);
  const filesOf = new Map<string, TarFile[]>();
  const own: TarFile[] = [];
  for (const file of pkg.files) {
    const owner = ownerOf(file.path, folders);
    if (owner === undefined) {
      own.push(file);
      continue;
    }
    const list = filesOf.get(owner) ?? [];
    list.push({ ...file, path: file.path.slice(owner.length + 1) });
    filesOf.set(owner, list);
  }
  for (const folder of [...folders].sort(byDepth)) {
    const name = folder.slice(folder.lastIndexOf("node_modules/") + 13);
    const files = filesOf.get(folder)!;
    const what = bundledWhat(pkg, folder);
    if (!isNpmName(name)) {
      throw new CordonError(
        "NPM_PACKAGE_INVALID",
        `Cannot use ${what}: its folder is not named as an npm package; pack another version, or report it to the package's authors`,
      );
    }
    const manifest = manifestOf(files);
    const version = stringAt(manifest, "version");
    if (manifest === undefined || version === undefined) {
      throw new CordonError(
        "NPM_PACKAGE_INVALID",
        `Cannot use ${what}: its package.json is not a JSON object with a version; pack another version, or report it to the package's authors`,
      );
    }
    bundled.set(folder, {
      name,
      version,
      integrity: pkg.integrity,
      manifest,
      files,
      bundledBy: pkg,
    });
  }
  pkg.files = own;
  return bundled;
}

/** Orders folders outermost first, so a package precedes its bundle's. */
function byDepth(a: string, b: string): number {
  return a.split("/").length - b.split("/").length || (a < b ? -1 : 1);
}

/** A package's parsed `package.json`, or `undefined` when it has none. */
function manifestOf(
  files: readonly TarFile[],
): Record<string, unknown> | undefined {
  const packageJson = files.find((file) => file.path === "package.json");
  try {
    const manifest = JSON.parse(new TextDecoder().decode(packageJson?.bytes));
    return isRecord(manifest) ? manifest : undefined;
  } catch {
    return undefined;
  }
}

/** The folder name a package is installed under: `a`, `@s/b`. */
function folderName(dir: string): string {
  return dir.slice(dir.lastIndexOf("node_modules/") + "node_modules/".length);
}

/**
 * The package names a tree's packages declare as peer or optional
 * dependencies that the tree does not hold: the bundler leaves their
 * imports as they are, so the checks name the entries that need them
 * instead of the whole bundle failing.
 *
 * @param tree The fetched tree.
 * @returns The names, sorted.
 */
export function uninstalledPeers(tree: PackageTree): string[] {
  // By folder: an alias installs a package under another name.
  const installed = new Set<string>();
  for (const dir of tree.placed.keys()) installed.add(folderName(dir));
  const missing = new Set<string>();
  for (const pkg of tree.placed.values()) {
    for (const field of ["peerDependencies", "optionalDependencies"]) {
      const deps = pkg.manifest[field];
      if (typeof deps !== "object" || deps === null) continue;
      for (const name of Object.keys(deps)) {
        if (isNpmName(name) && !installed.has(name)) missing.add(name);
      }
    }
  }
  return [...missing].sort();
}

/**
 * Fetches a package and its dependencies (not optional or peer ones) and
 * places them as npm would in a `node_modules` tree: each dependency at the
 * top when no other version holds that place, else next to its dependent.
 *
 * @throws {CordonError} With a one-line reason: `NPM_FETCH_FAILED`,
 * `NPM_NOT_FOUND`, `NPM_INTEGRITY_MISMATCH`, `NPM_PACKAGE_INVALID` or
 * `NPM_NOT_BUNDLABLE` (a dependency from outside the registry, too many
 * packages, or registry metadata over 256 MiB together); `NPM_PACKAGE_INVALID` also when the tree's tarballs unpack to
 * over `maxUnpackedBytes` together. The caller's abort rejects with its
 * signal's reason.
 */
export async function fetchPackageTree(
  spec: NpmSpec,
  options: FetchOptions,
): Promise<PackageTree> {
  const registry = new Registry(options, spec.name);
  const root = await registry.fetch(
    spec.name,
    await registry.version(spec.name, spec.wanted),
  );
  const rootDir = `node_modules/${root.name}`;
  const placed = new Map<string, FetchedPackage>();
  const queue: [string, FetchedPackage][] = [];
  // A package, then the packages its tarball bundles, each counted.
  const place = (where: string, pkg: FetchedPackage) => {
    const bundled = [...unbundle(pkg)].map(([folder, inner]) =>
      [`${where}/${folder}`, inner] as const
    );
    for (const [at, each] of [[where, pkg] as const, ...bundled]) {
      if (placed.size >= MAX_PACKAGES) {
        throw new CordonError(
          "NPM_NOT_BUNDLABLE",
          `Cannot install ${root.name}: it needs over ${MAX_PACKAGES} packages; pack a package with fewer dependencies, or a build that bundles them`,
        );
      }
      placed.set(at, each);
      queue.push([at, each]);
    }
  };
  place(rootDir, root);
  while (queue.length > 0) {
    const [dir, pkg] = queue.shift()!;
    const bundledNames = bundledNamesOf(pkg);
    for (const [name, spec] of dependenciesOf(pkg)) {
      if (!isNpmName(name)) {
        throw new CordonError(
          "NPM_PACKAGE_INVALID",
          `Cannot install ${pkg.name}@${pkg.version}: it depends on ${
            JSON.stringify(name.slice(0, 60))
          }, which is not an npm name; pack another version, or report it to the package's authors`,
        );
      }
      // npm takes a bundled dependency as the tarball holds it, whatever
      // its version.
      if (bundledNames.has(name) && placed.has(`${dir}/node_modules/${name}`)) {
        continue;
      }
      const wanted = wantedOf(name, spec);
      const range = wanted === null
        ? null
        : await rangeOrTag(registry, wanted.name, wanted.range);
      if (wanted === null || range === null) {
        throw new CordonError(
          "NPM_NOT_BUNDLABLE",
          `Cannot install ${pkg.name}@${pkg.version}: its dependency ${name}@${
            spec.slice(0, 60)
          } is not a registry version range; pack a version whose dependencies all come from the registry`,
        );
      }
      const candidates = lookupDirs(`/${dir}`, name);
      const nearest = candidates.find((path) => placed.has(path));
      const found = nearest === undefined ? undefined : placed.get(nearest)!;
      if (
        found !== undefined && found.name === wanted.name &&
        satisfies(found.version, range)
      ) {
        continue;
      }
      const where = nearest === undefined
        ? candidates[candidates.length - 1]!
        : candidates[0]!;
      if (placed.has(where)) continue;
      if (placed.size >= MAX_PACKAGES) {
        throw new CordonError(
          "NPM_NOT_BUNDLABLE",
          `Cannot install ${root.name}: it needs over ${MAX_PACKAGES} packages; pack a package with fewer dependencies, or a build that bundles them`,
        );
      }
      place(
        where,
        await registry.fetch(
          wanted.name,
          await registry.version(wanted.name, wanted.range),
        ),
      );
    }
  }
  return { root, rootDir, placed };
}
