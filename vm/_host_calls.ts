/**
 * The host side of `cordon:host`: checks each proxy call a plugin realm
 * sends against the policy and the host's checker, performs it, and
 * answers with JSON text only.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import { constants as fsConstants, readlinkSync } from "node:fs";
import fsPromises, { type FileHandle } from "node:fs/promises";
import { STATUS_CODES } from "node:http";
import os from "node:os";
import path from "node:path";
import { CordonError } from "../protocol/cordon_error.ts";
import { endToEndHeaders, isFieldName } from "../protocol/hop_by_hop.ts";
import type { JsonValue } from "../protocol/sandbox_result.ts";
import { MAX_NESTING_DEPTH } from "../protocol/nesting.ts";
import { createMarshallers, type Marshallers } from "../realm/marshal.ts";
import { settleWithin } from "../protocol/deadline.ts";
import { fieldOf } from "../protocol/host_fields.ts";
import { replaceFile } from "../protocol/replace_file.ts";
import {
  createPolicyChecker,
  normalizePluginPath,
  type PermissionChecker,
  type PermissionDecision,
  type PermissionRequest,
  type VmPluginPolicy,
} from "./vm_policy.ts";
import { failureJson } from "./_line_codec.ts";
import { type AnswerShare, AnswersInFlight } from "./_answers_in_flight.ts";
import {
  WRITE_BLOCK_BYTES,
  WriteFootprint,
  type WriteShare,
} from "./_write_footprint.ts";

/** One entry of a folder listing. */
export interface VmDirEntry {
  /** The entry's name inside the folder. */
  name: string;
  /** Whether it is a regular file. */
  isFile: boolean;
  /** Whether it is a folder. */
  isDirectory: boolean;
  /** Whether it is a symbolic link. */
  isSymlink: boolean;
}

/** The file operations a plugin reaches through `fs` in `cordon:host`. */
export interface VmFsProxy {
  /** Reads a UTF-8 file. */
  readTextFile(path: string): Promise<string>;
  /** Writes a UTF-8 file, replacing it. */
  writeTextFile(path: string, text: string): Promise<void>;
  /** Lists a folder. */
  readDir(path: string): Promise<VmDirEntry[]>;
}

/** What a capability handler learns about its caller. */
export interface CapabilityContext {
  /** The calling plugin. */
  pluginId: string;
  /** Aborts when the plugin's realm ends. */
  signal: AbortSignal;
}

/**
 * A host function a plugin may call by name through
 * `capabilities.call(name, args)`. It receives and returns JSON data;
 * throwing a `CordonError` with code `PERMISSION_DENIED` denies the call.
 * The result is written as a plugin's answer is: `toJSON()` is called and
 * `undefined` left out, but a function, symbol, BigInt or cycle anywhere
 * in it fails the call (`PROXY_CALL_FAILED`, `TypeError`), where
 * `JSON.stringify` would leave a function or symbol out.
 */
export type CapabilityHandler = (
  args: JsonValue,
  context: CapabilityContext,
) => JsonValue | void | Promise<JsonValue | void>;

/**
 * Request headers a plugin's fetch does not send, beyond the hop-by-hop
 * ones: the host's HTTP client sets them from the URL and the body
 * (`host`, `content-length`), or acts on them itself (`expect`, and
 * `accept-encoding`, whose coding it decodes), and Deno's and Node's
 * clients do each differently with a plugin's value (ignore it, send it,
 * or fail the fetch). Any `sec-*` field too: Node's client replaces
 * `sec-fetch-mode` with its own. And `__proto__`, which Node's client
 * drops without a word where Deno's sends it.
 */
const CLIENT_OWNED_HEADERS: ReadonlySet<string> = new Set([
  "host",
  "content-length",
  "expect",
  "accept-encoding",
  "__proto__",
]);

/** A plugin's fetch headers without those its host's client owns. */
function pluginFetchHeaders(pairs: [string, string][]): [string, string][] {
  return endToEndHeaders(new Headers(pairs)).filter(([name]) =>
    !CLIENT_OWNED_HEADERS.has(name) && !name.startsWith("sec-")
  );
}

/**
 * Whether an upstream answer is one that Deno's client hands on and Node's
 * refuses, or the other way round, so that it fails on both: a 1xx final
 * status (Deno hands on a 101), a `content-length` that is not one number
 * (Deno joins two into `2, 2`) and a field name that is not a token (Node
 * hands on `x bad`).
 */
function unreadableAnswer(response: Response): boolean {
  if (response.status < 200) return true;
  const length = response.headers.get("content-length");
  if (length !== null && !/^[0-9]+$/.test(length)) return true;
  for (const [name] of response.headers) {
    if (!isFieldName(name)) return true;
  }
  return false;
}

/** The host implementations behind `cordon:host`. */
export interface VmHostProxies {
  /** Performs a permitted fetch. @default {globalThis.fetch} */
  fetch?: ((request: Request) => Promise<Response>) | undefined;
  /**
   * Performs permitted file operations. The default uses `node:fs`,
   * re-checks the policy after resolving symbolic links (a missing path's
   * too, as far as it exists) and, on Linux, where what it opened is, and
   * reads and writes regular files only; a
   * custom one must do its own link handling. Writes through either count
   * against `limits.maxWriteBytes`; a custom one's write that rejects is
   * taken to have written nothing.
   */
  fs?: VmFsProxy | undefined;
  /** Capability implementations by name. @default {{}} */
  capabilities?: Record<string, CapabilityHandler> | undefined;
}

/** What the host calls of one sandbox check against and use. */
interface HostCallEnvironment {
  pluginId: string;
  policy: VmPluginPolicy;
  checker: PermissionChecker | undefined;
  proxies: VmHostProxies;
  limits: {
    maxFetchResponseBytes: number;
    maxFileReadBytes: number;
    maxDirEntries: number;
    maxWriteBytes: number;
    maxCapabilityResultBytes: number;
    maxProxyAnswerBytesInFlight: number;
    proxyTimeoutMs: number;
  };
  onDenied(): void;
}

class CallFailure extends Error {
  constructor(
    readonly code: string,
    override readonly name: string,
    message: string,
  ) {
    super(message);
  }
}

function failed(name: string, message: string): CallFailure {
  return new CallFailure("PROXY_CALL_FAILED", name, message);
}

function overLimit(name: string, message: string): CallFailure {
  return new CallFailure("PROXY_LIMIT_EXCEEDED", name, message);
}

/**
 * The longest file path and fetch URL a plugin may pass, in characters.
 * The host normalises a path and parses a URL on its own thread, which
 * every plugin and request share, before any check: within the default
 * maxPayloadBytes, a 2 MB path of short segments held that thread 170 to
 * 380 ms and a 3 MB URL 90 to 280 ms, each call. No file system opens a
 * path over 4096 bytes (Linux's PATH_MAX), and servers refuse a request
 * line far shorter than 32 KiB (Node reads a head of 16 KiB).
 */
const MAX_PATH_CHARS = 4096;
const MAX_URL_CHARS = 32 * 1024;

/** The refusal of a path or URL over its bound, or `null` within it. */
function overlongText(
  verb: string,
  what: "path" | "URL",
  text: string,
  max: number,
): CallFailure | null {
  return text.length <= max ? null : overLimit(
    "RangeError",
    `Cannot ${verb} a ${what} of ${text.length} characters: the host takes ${what}s of at most ${max}; pass a shorter one`,
  );
}

function tooLarge(what: string, limit: string, bytes: number): CallFailure {
  return overLimit(
    "RangeError",
    `Cannot use ${what}: it is larger than ${bytes} bytes; ask for less or raise limits.${limit}`,
  );
}

/**
 * The refusal of a call whose answer would make the sandbox's answers in
 * flight pass their limit: the calls in flight at once, not this one
 * alone, are what to change.
 */
function inFlightFull(what: string, limit: number): CallFailure {
  return overLimit(
    "RangeError",
    `Cannot use ${what}: the plugin's host calls in flight would hold more than ${limit} bytes of answers on the host; make fewer large calls at once or raise limits.maxProxyAnswerBytesInFlight`,
  );
}

/** Writes the answers of fetch and file calls, which have bounds of their own. */
const ANSWERS: Marshallers = createMarshallers();

function answerTooDeep(op: string): CallFailure {
  return new CallFailure(
    "RESULT_NOT_SERIALIZABLE",
    "RangeError",
    `The host's answer to ${op} is nested deeper than ${MAX_NESTING_DEPTH} levels: fix the capability to return flatter data, or the deeper part as JSON text`,
  );
}

function isAFolder(given: string): CallFailure {
  return failed("IsADirectory", `Cannot use "${given}": it is a folder`);
}

function notAFile(given: string): CallFailure {
  return failed(
    "NotAFile",
    `Cannot use "${given}": it is not a regular file but a pipe, socket or device; use a regular file`,
  );
}

function errorCode(error: unknown): unknown {
  return (error as { code?: unknown })?.code;
}

const {
  O_DIRECTORY,
  O_NOFOLLOW,
  O_NONBLOCK,
  O_RDONLY,
  O_WRONLY,
} = fsConstants;
// A checked path's last part may not have become a link since, and a FIFO
// or device opens without waiting for the other end, which would hold a
// thread of the host's file pool. A file written is opened without O_CREAT
// or O_TRUNC, only to check it: its new text goes to a temporary file
// created beside it (protocol's replaceFile), which no link or other file
// can already be.
const READ_FLAGS = O_RDONLY | O_NOFOLLOW | O_NONBLOCK;
const CHECK_WRITE_FLAGS = O_WRONLY | O_NOFOLLOW | O_NONBLOCK;
const FOLDER_FLAGS = O_RDONLY | O_DIRECTORY;
const READ_CHUNK_BYTES = 64 * 1024;
/**
 * Where Linux shows each open file of the process, by descriptor, as the
 * path it is at. A folder on a checked path can be swapped for a link out
 * of the policy's folders (by anything else that writes the tree) between
 * the check and the open, so what was opened is checked again where it
 * is, and a folder is listed and a file created only through a folder
 * opened and checked first. Other systems have no such view.
 */
const OPEN_FILES: string | null = os.platform() === "linux"
  ? "/proc/self/fd"
  : null;

/**
 * Why the default file proxy cannot check what it opens on this host, or
 * `null` when it can. On Linux the check reads `/proc/self/fd`, and Deno
 * (2.9.6) lets a process read it only with every permission granted
 * (`-A`); with fewer it also opens a symbolic link despite O_NOFOLLOW, so
 * a link put in place of a checked file between the check and the open
 * would be followed unchecked. Asked of the folder itself, which is no
 * link: the system's EINVAL says the host may read it.
 */
export function openFilesRefusal(): string | null {
  if (OPEN_FILES === null) return null;
  try {
    readlinkSync(OPEN_FILES);
  } catch (error) {
    if (errorCode(error) === "EINVAL") return null;
  }
  return `the host may not read ${OPEN_FILES}, where the default file proxy checks what it opened (a Deno host reads it only with every permission, and with fewer opens a symbolic link even when told not to); run the host with -A, give the sandbox proxies.fs, or grant no folders in policy.fs`;
}

/** The most symbolic links followed for one path, as Linux does. */
const MAX_LINKS = 40;

/**
 * Where `target` leads: its links resolved as far as it exists (a dangling
 * link's target included), the missing rest appended. So a missing path
 * behind a link out of a folder is denied as an existing one is, and the
 * plugin cannot tell what exists there.
 */
async function whereItLeads(target: string, links = 0): Promise<string> {
  try {
    return await fsPromises.realpath(target);
  } catch (error) {
    const code = errorCode(error);
    if (code !== "ENOENT" && code !== "ENOTDIR") throw error;
  }
  const parent = path.dirname(target);
  if (parent === target) return target;
  const leads = path.join(
    await whereItLeads(parent, links),
    path.basename(target),
  );
  const link = await fsPromises.readlink(leads).catch(() => null);
  // Past the bound the link itself is checked, and opening it fails.
  if (link === null || links >= MAX_LINKS) return leads;
  return await whereItLeads(path.resolve(path.dirname(leads), link), links + 1);
}

/**
 * What a checker's answer to `request` tells the plugin, or `null` when it
 * allows the call: only `true` and `{ allowed: true }` do.
 */
function checkerRefusal(
  request: PermissionRequest,
  answer: unknown,
): string | null {
  // Read as options are: an answer without allowed or message does not
  // take them from Object.prototype.
  const isObject = typeof answer === "object" && answer !== null;
  const allowed = isObject ? fieldOf(answer, "allowed") : undefined;
  const message = isObject ? fieldOf(answer, "message") : undefined;
  if (answer === true || (isObject && allowed === true)) return null;
  const call =
    `Cannot complete this ${request.kind} call from plugin "${request.pluginId}"`;
  if (answer === false || (isObject && allowed === false)) {
    return typeof message === "string"
      ? message
      : `${call}: the host's permission checker refused it`;
  }
  return `${call}: the host's permission checker answered neither true nor { allowed: true }; fix the checker to answer true, false or a PermissionDecision`;
}

/**
 * `request` as the host performs it, for the host's checker: the URL the
 * host's client fetches (as WHATWG parses it: `..` and `%2e%2e` segments,
 * case, tabs and the default port resolved) and the path it opens (`.` and
 * `..` resolved). A checker shown the plugin's own text would judge
 * `/public/../private` by its `/public/` prefix. Called once the policy
 * allowed `request`, so the URL parses and the path is absolute.
 */
function asPerformed(request: PermissionRequest): PermissionRequest {
  switch (request.kind) {
    case "fetch":
      return { ...request, url: new URL(request.url).href };
    case "fs":
      return { ...request, path: normalizePluginPath(request.path)! };
    case "capability":
      return request;
  }
}

/** The checks and the default file proxy of one sandbox. */
export class HostCalls {
  readonly #env: HostCallEnvironment;
  readonly #policyCheck: (request: PermissionRequest) => PermissionDecision;
  readonly #capabilityResults: Marshallers;
  /**
   * What the plugin's writes hold on disk. It lives as long as the sandbox,
   * which keeps its HostCalls across realms: a restarted realm does not
   * start it anew, and only a new sandbox (a new install) does.
   */
  readonly #written: WriteFootprint;
  /** The last write of each path begun, which the next one waits for. */
  readonly #writing = new Map<string, Promise<void>>();
  /**
   * The answers the host holds for the plugin's calls in flight. It lives
   * as long as the sandbox, as the write footprint does: a call of an
   * ended realm still holds its answer until it settles.
   */
  readonly #answers: AnswersInFlight;
  #realCheck: ((request: PermissionRequest) => PermissionDecision) | null =
    null;

  constructor(env: HostCallEnvironment) {
    this.#env = env;
    this.#policyCheck = createPolicyChecker(env.policy);
    this.#capabilityResults = createMarshallers({
      maxJsonChars: env.limits.maxCapabilityResultBytes,
    });
    this.#written = new WriteFootprint(env.limits.maxWriteBytes);
    this.#answers = new AnswersInFlight(
      env.limits.maxProxyAnswerBytesInFlight,
    );
  }

  /** The bytes of answers held now for calls in flight, and the most at once. */
  get answerBytes(): { held: number; peak: number } {
    return { held: this.#answers.held, peak: this.#answers.peak };
  }

  /**
   * Takes `bytes` of `what` in the call's `share`, or refuses the call and
   * gives back what it held at once: a call's body ends only some turns
   * later, and the chunks of the other calls that come meanwhile would
   * find the bound still full and fail too.
   */
  #takeAnswer(share: AnswerShare, what: string, bytes: number): void {
    if (share.take(bytes)) return;
    share.end();
    throw inFlightFull(what, this.#answers.limit);
  }

  /** A refusal, counted in the sandbox's denials. */
  #denied(message: string): CallFailure {
    this.#env.onDenied();
    return new CallFailure("PERMISSION_DENIED", "PermissionDenied", message);
  }

  async #check(request: PermissionRequest): Promise<void> {
    const decision = this.#policyCheck(request);
    if (!decision.allowed) throw this.#denied(decision.message);
    if (this.#env.checker === undefined) return;
    let answer: unknown;
    try {
      answer = await this.#env.checker(asPerformed(request));
    } catch {
      // A broken checker denies, as any answer but an allowance does.
      answer = undefined;
    }
    const refusal = checkerRefusal(request, answer);
    if (refusal !== null) throw this.#denied(refusal);
  }

  /**
   * The check of the policy's folders with their links resolved as far as
   * each exists, as a plugin's path is. It is kept once every folder
   * exists, and made again for each call until then: a folder the host
   * makes later behind a link (as `/var/run` leads to `/run`) is where the
   * link leads, not a way out.
   */
  async #resolvePolicyFolders(): Promise<
    (request: PermissionRequest) => PermissionDecision
  > {
    let allExist = true;
    const resolveOne = async (root: string) => {
      try {
        return await fsPromises.realpath(root);
      } catch {
        allExist = false;
        return await whereItLeads(root).catch(() => root);
      }
    };
    const resolve = (roots: readonly string[] = []) =>
      Promise.all(roots.map(resolveOne));
    const check = createPolicyChecker({
      fs: {
        read: await resolve(this.#env.policy.fs?.read),
        write: await resolve(this.#env.policy.fs?.write),
      },
    });
    if (allExist) this.#realCheck = check;
    return check;
  }

  /** Checks `real` against the policy's folders with their links resolved. */
  async #checkRealPath(
    access: "read" | "write",
    given: string,
    real: string,
  ): Promise<void> {
    const { pluginId } = this.#env;
    const check = this.#realCheck ?? await this.#resolvePolicyFolders();
    if (!check({ kind: "fs", pluginId, access, path: real }).allowed) {
      throw this.#denied(
        `Cannot ${access} "${given}" from plugin "${pluginId}": it leads outside the folders of policy.fs.${access} through a symbolic link`,
      );
    }
  }

  /** Refuses a handle opened outside the folders of `access`. */
  async #checkOpened(
    access: "read" | "write",
    given: string,
    handle: FileHandle,
  ): Promise<void> {
    if (OPEN_FILES === null) return;
    const where = await fsPromises.readlink(`${OPEN_FILES}/${handle.fd}`);
    await this.#checkRealPath(access, given, where);
  }

  /** Runs `use` on the checked folder `real`, opened, by a path to it. */
  async #inFolder<T>(
    access: "read" | "write",
    given: string,
    real: string,
    use: (folder: string) => Promise<T>,
  ): Promise<T> {
    const handle = await fsPromises.open(real, FOLDER_FLAGS);
    try {
      await this.#checkOpened(access, given, handle);
      return await use(
        OPEN_FILES === null ? real : `${OPEN_FILES}/${handle.fd}`,
      );
    } finally {
      await handle.close();
    }
  }

  #fsFailure(
    access: "read" | "write",
    given: string,
    error: unknown,
  ): CallFailure {
    switch (errorCode(error)) {
      // A write makes its file, so what is missing is its folder, which a
      // plugin has no call to make.
      case "ENOENT":
        return access === "write"
          ? failed(
            "NotFound",
            `Cannot write "${given}": its folder does not exist; a plugin cannot make folders, so the host makes them`,
          )
          : failed("NotFound", `Cannot find "${given}": no such file`);
      case "EISDIR":
        return isAFolder(given);
      case "ENXIO": // A FIFO opened for writing with no reader, or a socket.
        return notAFile(given);
      case "ENOTDIR":
        return failed("NotADirectory", `Cannot list "${given}": not a folder`);
      case "EACCES":
      case "EPERM":
        return failed(
          "PermissionDenied",
          `Cannot open "${given}": the host may not open it`,
        );
      // A name past the file system's bound (255 bytes on most), or a path
      // past the system's: the plugin can fix it, where "failed" says
      // nothing it can act on.
      case "ENAMETOOLONG":
        return failed(
          "Error",
          `Cannot use "${given}": a name in the path is longer than the file system allows; use a shorter name`,
        );
      default:
        return failed("Error", `Cannot use "${given}": the host call failed`);
    }
  }

  #checkFileBytes(given: string, bytes: number): void {
    const limit = this.#env.limits.maxFileReadBytes;
    if (bytes > limit) throw tooLarge(`"${given}"`, "maxFileReadBytes", limit);
  }

  /** Opens the checked `real`, refusing a link put in its place. */
  async #open(
    access: "read" | "write",
    given: string,
    real: string,
    flags: number,
  ): Promise<FileHandle> {
    try {
      return await fsPromises.open(real, flags, 0o666);
    } catch (error) {
      if (errorCode(error) !== "ELOOP") throw error;
      throw this.#denied(
        `Cannot ${access} "${given}" from plugin "${this.#env.pluginId}": it is a symbolic link; ${access} a regular file`,
      );
    }
  }

  /** Refuses an open file that is not a regular one. */
  async #checkRegularFile(given: string, handle: FileHandle): Promise<number> {
    const stats = await handle.stat();
    if (stats.isDirectory()) throw isAFolder(given);
    if (!stats.isFile()) throw notAFile(given);
    return stats.size;
  }

  // One handle is checked and read: a file may grow after its size was
  // read, or report none (/proc), so one byte over the bound is the most
  // read, never the whole file.
  async #readTextFile(
    given: string,
    real: string,
    share: AnswerShare,
  ): Promise<string> {
    const handle = await this.#open("read", given, real, READ_FLAGS);
    try {
      await this.#checkOpened("read", given, handle);
      this.#checkFileBytes(given, await this.#checkRegularFile(given, handle));
      const limit = this.#env.limits.maxFileReadBytes;
      const chunks: Buffer[] = [];
      for (let size = 0;;) {
        const chunk = Buffer.alloc(
          Math.min(READ_CHUNK_BYTES, limit + 1 - size),
        );
        const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
        if (bytesRead === 0) break;
        size += bytesRead;
        this.#checkFileBytes(given, size);
        this.#takeAnswer(share, `"${given}"`, bytesRead);
        chunks.push(chunk.subarray(0, bytesRead));
      }
      return Buffer.concat(chunks).toString("utf8");
    } finally {
      await handle.close();
    }
  }

  // The new text is written whole to a temporary file beside the file,
  // synced, then renamed over it: a full disk, a host that ends part way or
  // a power loss leaves the old text (or no file), never part of the new
  // one.
  async #writeTextFile(
    given: string,
    normalized: string,
    text: string,
    changing: () => void,
  ): Promise<void> {
    // The policy let the path through but not its parent: it is a folder of
    // policy.fs.write itself, whose parent the link check below would call
    // a way out.
    const parent = path.dirname(normalized);
    const { pluginId } = this.#env;
    const request: PermissionRequest = {
      kind: "fs",
      pluginId,
      access: "write",
      path: parent,
    };
    if (!this.#policyCheck(request).allowed) {
      throw isAFolder(given);
    }
    const real = await whereItLeads(parent);
    await this.#checkRealPath("write", given, real);
    await this.#inFolder("write", given, real, async (folder) => {
      const file = path.join(folder, path.basename(normalized));
      const mode = await this.#modeOfWritable(given, file);
      // Made as a new file is (0666 less the umask); one it replaces keeps
      // its permissions.
      await replaceFile(folder, path.basename(normalized), async (handle) => {
        await handle.writeFile(text);
        if (mode !== undefined) await handle.chmod(mode);
      }, { temporaryPrefix: ".cordon-", renaming: changing });
    });
  }

  /**
   * The permission bits of the regular file the host may write at `file`,
   * which its new text keeps, or `undefined` when there is no file yet.
   * Refuses a link, a folder, a pipe, a socket or a device, and a file the
   * host may not write, as opening it to write would.
   */
  async #modeOfWritable(
    given: string,
    file: string,
  ): Promise<number | undefined> {
    let handle: FileHandle;
    try {
      handle = await this.#open("write", given, file, CHECK_WRITE_FLAGS);
    } catch (error) {
      if (errorCode(error) === "ENOENT") return undefined;
      throw error;
    }
    try {
      await this.#checkRegularFile(given, handle);
      return (await handle.stat()).mode & 0o777;
    } finally {
      await handle.close();
    }
  }

  /**
   * Runs the writes of one path one after another: each holds a temporary
   * file of its text until it ends, so writes of one path at once would
   * hold that many copies on disk, which the footprint counts once.
   */
  async #inTurn(normalized: string, write: () => Promise<void>) {
    const before = this.#writing.get(normalized) ?? Promise.resolve();
    const mine = before.then(write);
    const ended = mine.then(() => {}, () => {});
    this.#writing.set(normalized, ended);
    try {
      await mine;
    } finally {
      if (this.#writing.get(normalized) === ended) {
        this.#writing.delete(normalized);
      }
    }
  }

  /**
   * Takes the share of writing `text` to `normalized` in the plugin's write
   * footprint, before anything is written, or refuses the write.
   */
  #takeWriteShare(given: string, normalized: string, text: string): WriteShare {
    const share = this.#written.take(normalized, Buffer.byteLength(text));
    if (share !== null) return share;
    const limit = this.#env.limits.maxWriteBytes;
    throw overLimit(
      "RangeError",
      `Cannot write "${given}": the plugin's files would hold more than ${limit} bytes on disk (each file it wrote counts its last write, at least ${WRITE_BLOCK_BYTES} bytes); write less or to fewer files, or raise limits.maxWriteBytes`,
    );
  }

  /**
   * Writes `text` through `write` within the plugin's write footprint. A
   * write that fails gives its share back, unless `write` had begun to
   * change the file, which may then hold any part of the text.
   */
  async #withinFootprint(
    given: string,
    normalized: string,
    text: string,
    write: (changing: () => void) => Promise<void>,
  ): Promise<void> {
    const share = this.#takeWriteShare(given, normalized, text);
    let changed = false;
    try {
      await write(() => {
        changed = true;
      });
      share.end(true);
    } catch (error) {
      share.end(changed);
      throw error;
    }
  }

  #checkDirEntries(given: string, count: number): void {
    const limit = this.#env.limits.maxDirEntries;
    if (count > limit) {
      throw overLimit(
        "RangeError",
        `Cannot list "${given}": it has more than ${limit} entries; list a smaller folder or raise limits.maxDirEntries`,
      );
    }
  }

  // Read entry by entry: a folder of millions must not fill the host's heap
  // before the bound is checked.
  async #readDir(given: string, real: string): Promise<JsonValue> {
    return await this.#inFolder("read", given, real, async (folder) => {
      const entries: JsonValue[] = [];
      for await (const entry of await fsPromises.opendir(folder)) {
        this.#checkDirEntries(given, entries.length + 1);
        entries.push({
          name: entry.name,
          isFile: entry.isFile(),
          isDirectory: entry.isDirectory(),
          isSymlink: entry.isSymbolicLink(),
        });
      }
      return entries;
    });
  }

  async #fs(
    op: string,
    args: Record<string, unknown>,
    share: AnswerShare,
  ): Promise<JsonValue> {
    const { pluginId } = this.#env;
    const given = String(args.path ?? "");
    const access = op === "fs.writeTextFile" ? "write" : "read";
    const overlong = overlongText(
      op === "fs.readDir" ? "list" : access,
      "path",
      given,
      MAX_PATH_CHARS,
    );
    if (overlong !== null) throw overlong;
    await this.#check({ kind: "fs", pluginId, access, path: given });
    const normalized = normalizePluginPath(given)!;
    const custom = this.#env.proxies.fs;
    // Checked for each call too: a Deno host may give up a permission
    // after the install (Deno.permissions.revoke).
    const refusal = custom === undefined ? openFilesRefusal() : null;
    if (refusal !== null) {
      throw new CallFailure(
        "PROXY_FS_UNAVAILABLE",
        "Error",
        `Cannot ${access} "${given}": ${refusal}`,
      );
    }
    try {
      if (access === "write") {
        const text = String(args.text ?? "");
        await this.#withinFootprint(
          given,
          normalized,
          text,
          (changing) =>
            custom === undefined
              ? this.#inTurn(
                normalized,
                () => this.#writeTextFile(given, normalized, text, changing),
              )
              : custom.writeTextFile(normalized, text),
        );
        return null;
      }
      if (custom !== undefined) {
        if (op === "fs.readTextFile") {
          const text = await custom.readTextFile(normalized);
          const bytes = Buffer.byteLength(text);
          this.#checkFileBytes(given, bytes);
          this.#takeAnswer(share, `"${given}"`, bytes);
          return text;
        }
        const listed = await custom.readDir(normalized);
        this.#checkDirEntries(given, listed.length);
        return listed as unknown as JsonValue;
      }
      const real = await whereItLeads(normalized);
      await this.#checkRealPath(access, given, real);
      return op === "fs.readTextFile"
        ? await this.#readTextFile(given, real, share)
        : await this.#readDir(given, real);
    } catch (error) {
      if (error instanceof CallFailure) throw error;
      throw this.#fsFailure(access, given, error);
    }
  }

  async #fetch(
    args: Record<string, unknown>,
    signal: AbortSignal,
    share: AnswerShare,
  ): Promise<JsonValue> {
    const { pluginId } = this.#env;
    const url = String(args.url ?? "");
    const overlong = overlongText("fetch", "URL", url, MAX_URL_CHARS);
    if (overlong !== null) throw overlong;
    const method = String(args.method ?? "GET").toUpperCase();
    await this.#check({ kind: "fetch", pluginId, url, method });
    const pairs = Array.isArray(args.headers)
      ? (args.headers as [string, string][])
      : [];
    const body = typeof args.bodyBase64 === "string"
      ? Buffer.from(args.bodyBase64, "base64")
      : undefined;
    // The runtimes' own messages differ ("Method is forbidden", "'TRACE'
    // HTTP method is unsupported."): the plugin gets the host's.
    const cannotBuild = (why: string) =>
      failed("TypeError", `Cannot build the request to "${url}": ${why}`);
    let headers: [string, string][];
    try {
      headers = pluginFetchHeaders(pairs);
    } catch {
      throw cannotBuild(
        "a header name is not a token or a value holds CR, LF or NUL",
      );
    }
    let request: Request;
    try {
      // The URL the policy and the checker judged, as they parsed it.
      request = new Request(new URL(url).href, {
        method,
        headers,
        body: method === "GET" || method === "HEAD" ? undefined : body,
        redirect: "manual",
        signal,
      });
    } catch {
      throw cannotBuild("its method is not one a web Request carries");
    }
    const doFetch = this.#env.proxies.fetch ?? globalThis.fetch;
    // One failure for both: Node's client throws for an answer it cannot
    // read where Deno's may hand it on.
    const unreachable = () =>
      failed(
        "NetworkError",
        `Cannot fetch "${url}": the connection failed or its answer could not be read; check that the server is up and answers HTTP/1.1`,
      );
    let response: Response;
    try {
      response = await doFetch(request);
    } catch {
      throw unreachable();
    }
    if (unreadableAnswer(response)) {
      await response.body?.cancel().catch(() => {});
      throw unreachable();
    }
    const limit = this.#env.limits.maxFetchResponseBytes;
    const chunks: Uint8Array[] = [];
    let size = 0;
    try {
      // Leaving the loop early cancels the body.
      for await (const chunk of response.body ?? []) {
        size += chunk.byteLength;
        if (size > limit) {
          throw tooLarge(
            `the response of "${url}"`,
            "maxFetchResponseBytes",
            limit,
          );
        }
        this.#takeAnswer(share, `the response of "${url}"`, chunk.byteLength);
        chunks.push(chunk);
      }
    } catch (error) {
      if (error instanceof CallFailure) throw error;
      throw failed(
        "NetworkError",
        `Cannot fetch "${url}": the response body broke off`,
      );
    }
    return {
      status: response.status,
      // The status's standard phrase: Deno's client reports no other, Node's
      // the server's own.
      statusText: STATUS_CODES[response.status] ?? "",
      url: response.url || url,
      headers: endToEndHeaders(response.headers),
      bodyBase64: Buffer.concat(chunks).toString("base64"),
    };
  }

  async #capability(
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<JsonValue> {
    const { pluginId } = this.#env;
    const name = String(args.name ?? "");
    await this.#check({ kind: "capability", pluginId, name });
    const handlers = this.#env.proxies.capabilities ?? {};
    const handler = Object.hasOwn(handlers, name) ? handlers[name] : undefined;
    if (typeof handler !== "function") {
      throw failed(
        "NotImplemented",
        `Cannot use capability "${name}": the host grants it but does not implement it; add proxies.capabilities["${name}"]`,
      );
    }
    let result: JsonValue | void;
    try {
      result = await handler((args.args ?? null) as JsonValue, {
        pluginId,
        signal,
      });
    } catch (error) {
      if (error instanceof CordonError && error.code === "PERMISSION_DENIED") {
        throw this.#denied(error.message);
      }
      throw failed(
        "Error",
        error instanceof CordonError
          ? error.message
          : `Capability "${name}" failed on the host: the host's logs have the details`,
      );
    }
    return result === undefined ? null : result;
  }

  /** Runs `work` within the time bound; its signal aborts when it runs out. */
  async #bounded(
    op: string,
    signal: AbortSignal,
    work: (signal: AbortSignal) => Promise<JsonValue>,
  ): Promise<JsonValue> {
    const limit = new AbortController();
    const ms = this.#env.limits.proxyTimeoutMs;
    return await settleWithin(
      work(AbortSignal.any([signal, limit.signal])),
      ms,
      () => {
        limit.abort();
        throw overLimit(
          "TimeoutError",
          `Cannot complete ${op}: no answer within ${ms} ms; ask for less or raise limits.proxyTimeoutMs`,
        );
      },
    );
  }

  /**
   * The JSON text of an answer, which crosses into the realm as any value
   * does: written by the realms' own marshalling, so it nests at most
   * MAX_NESTING_DEPTH levels and each getter, `toJSON` and proxy trap runs
   * once, and a capability's result is counted while it is copied, so one
   * far over maxCapabilityResultBytes (a wide array, a string longer than
   * the engine can write as JSON) is refused at the bound, not once the
   * host has written all of it. A capability's result and a listing, which
   * the host gets whole, take their JSON's bytes in `share` here; a fetch's
   * body and a file's text took theirs as they arrived.
   */
  #answerJson(
    op: string,
    args: Record<string, unknown>,
    value: JsonValue,
    share: AnswerShare,
  ): string {
    const capability = op === "capability";
    const marshal = capability ? this.#capabilityResults : ANSWERS;
    const limit = this.#env.limits.maxCapabilityResultBytes;
    const resultTooLarge = () =>
      tooLarge(
        `the result of capability "${String(args.name)}"`,
        "maxCapabilityResultBytes",
        limit,
      );
    let json: string;
    try {
      json = marshal.toWireJson(value);
    } catch (error) {
      if (marshal.isTooDeep(error)) throw answerTooDeep(op);
      if (marshal.isTooLarge(error)) throw resultTooLarge();
      // Not JSON data (a BigInt, a cycle), or a getter of it threw.
      throw failed(
        "TypeError",
        `The host's answer to ${op} is not JSON data: fix the capability to return JSON`,
      );
    }
    // The count is in UTF-16 code units, a floor of the UTF-8 bytes.
    if (capability && Buffer.byteLength(json) > limit) throw resultTooLarge();
    if (capability || op === "fs.readDir") {
      const what = capability
        ? `the result of capability "${String(args.name)}"`
        : `the listing of "${String(args.path)}"`;
      this.#takeAnswer(share, what, Buffer.byteLength(json));
    }
    return json;
  }

  /**
   * Checks and performs one call; `signal` aborts when the realm ends. The
   * outcome is JSON text for the realm. The answer's bytes count in the
   * sandbox's answers in flight until the outcome is returned, which its
   * session hands to the realm's channel in the same turn.
   */
  async perform(
    op: string,
    argsJson: string,
    signal: AbortSignal,
  ): Promise<{ ok: boolean; json: string }> {
    const share = this.#answers.open();
    try {
      const parsed = JSON.parse(argsJson) as Record<string, unknown> | null;
      const args = typeof parsed === "object" && parsed !== null ? parsed : {};
      const value = await this.#bounded(op, signal, (bounded) => {
        switch (op) {
          case "fetch":
            return this.#fetch(args, bounded, share);
          case "fs.readTextFile":
          case "fs.writeTextFile":
          case "fs.readDir":
            return this.#fs(op, args, share);
          case "capability":
            return this.#capability(args, bounded);
          default:
            throw failed(
              "TypeError",
              `Cannot perform "${op}": unknown host call`,
            );
        }
      });
      return { ok: true, json: this.#answerJson(op, args, value, share) };
    } catch (error) {
      const failure = error instanceof CallFailure
        ? error
        : failed("Error", `The host call ${op} failed`);
      return {
        ok: false,
        json: failureJson(failure.code, failure.name, failure.message),
      };
    } finally {
      share.end();
    }
  }
}
