/**
 * Watches a packs folder for `serveDelivery({ watch: true })`, and keeps
 * watching when the folder is deleted and recreated, renamed away and back,
 * or replaced by re-pointing a symlink.
 *
 * `Deno.watchFs` follows the folder's inode, not its path: once the folder
 * at the path is another one, the old watcher reports nothing more. So the
 * folder that holds the packs folder is watched too, for events about the
 * packs folder's own entry; a slow poll checks what folder the path leads
 * to (its real path, inode and birth time) and when its entries last
 * changed, which also catches a symlink swap higher up, a parent that
 * cannot be watched and events Deno dropped or never sends (none for a new
 * link to a folder);
 * and whenever the folder is another one, or an event names it, its
 * watcher is opened afresh before the re-scan. Watchers are opened again
 * only then, because Deno (2.9) keeps some state of every watcher a
 * process ever opened.
 *
 * @module
 */

import { isWindowsHost } from "../protocol/host_environment.ts";

/** The default time between two checks of where the packs path leads. */
export const DEFAULT_WATCH_POLL_MS = 1000;

/**
 * How many debounce times a re-scan waits at most after the first event of
 * a burst: a folder that never stays quiet (a log, an editor's swap file,
 * a long copy) is still re-scanned.
 */
const MAX_WAIT_DEBOUNCES = 10;

/** Options of {@linkcode watchPacksFolder}. */
export interface PacksWatcherOptions {
  /** How long the folder must stay quiet before a re-scan, in milliseconds. */
  debounceMs: number;
  /**
   * The time between two checks of where the packs path leads, in
   * milliseconds: how soon a folder that came back, or a swapped symlink,
   * is noticed when no event tells.
   *
   * @default {1000}
   */
  pollMs?: number;
  /** Re-scans the folder; the watcher waits for it before the next one. */
  onChange: () => Promise<void>;
  /**
   * Called when a re-scan fails while the folder is there, or the
   * watcher's own handling of a change throws (another hook included).
   */
  onError: (error: unknown) => void;
  /**
   * Called once when the folder is gone (missing, not a folder or not
   * readable), with why; nothing is re-scanned until it is back. The
   * error's message holds no path.
   */
  onLost: (error: Error) => void;
  /** Called once when the folder is back after `onLost`, before its re-scan. */
  onFound: () => void;
}

/**
 * Starts watching a packs folder. The caller owns the watcher and must
 * close it.
 *
 * @param packsDir The packs folder, as the operator gave it.
 * @param options The debounce and poll times and what to call.
 * @returns The running watcher.
 */
export function watchPacksFolder(
  packsDir: string,
  options: PacksWatcherOptions,
): PacksWatcher {
  return new PacksWatcher(packsDir, options);
}

/** A running packs folder watcher; see {@linkcode watchPacksFolder}. */
export class PacksWatcher implements AsyncDisposable {
  readonly #packsDir: string;
  readonly #entry: FolderEntry | undefined;
  readonly #debounceMs: number;
  readonly #pollMs: number;
  readonly #hooks: PacksWatcherOptions;
  /** Each open `Deno.FsWatcher` and the loop that reads it. */
  readonly #watchers = new Map<Deno.FsWatcher, Promise<void>>();
  #folderWatcher: Deno.FsWatcher | undefined;
  #parentWatcher: Deno.FsWatcher | undefined;
  #debounce: ReturnType<typeof setTimeout> | undefined;
  /** When the first event not yet re-scanned came (`performance.now()`). */
  #burstStart: number | undefined;
  #poll: ReturnType<typeof setTimeout> | undefined;
  #checking: Promise<void> | undefined;
  #settling: Promise<void> | undefined;
  #settleAgain = false;
  /** What the watched folder was when it was last opened. */
  #identity: string | undefined;
  /**
   * The folder's modification and status change times at the last settle:
   * an entry added or removed changes them, also one that no event reports
   * (Deno reports none for a new link to a folder, a pack linked in).
   */
  #stamp: string | undefined;
  /** An event named the packs folder itself: watch it afresh. */
  #reopen = false;
  #lost = false;
  #closing: Promise<void> | undefined;

  constructor(packsDir: string, options: PacksWatcherOptions) {
    this.#packsDir = packsDir;
    this.#entry = folderEntry(packsDir);
    this.#debounceMs = options.debounceMs;
    this.#pollMs = options.pollMs ?? DEFAULT_WATCH_POLL_MS;
    this.#hooks = options;
    try {
      const info = Deno.statSync(packsDir);
      if (!info.isDirectory) throw new Deno.errors.NotADirectory();
      const identity = identityOf(Deno.realPathSync(packsDir), info);
      this.#openNow();
      this.#identity = identity;
      this.#stamp = stampOf(info);
    } catch {
      // Gone since the catalog read it: the first settle says so.
      this.#schedule(0);
    }
    this.#schedulePoll();
  }

  /**
   * Stops watching and waits for a re-scan in progress. Calling it again is
   * harmless.
   *
   * @returns When nothing of the watcher runs any more.
   */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      clearTimeout(this.#debounce);
      clearTimeout(this.#poll);
      await this.#checking;
      await this.#settling;
      await this.#closeWatcher(this.#folderWatcher);
      await this.#closeWatcher(this.#parentWatcher);
    })();
    return this.#closing;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /**
   * Runs a settle once the folder has been quiet for `delayMs`, or at the
   * latest {@linkcode MAX_WAIT_DEBOUNCES} debounce times after the first
   * event it has not settled yet.
   */
  #schedule(delayMs: number = this.#debounceMs): void {
    if (this.#closing) return;
    clearTimeout(this.#debounce);
    const now = performance.now();
    this.#burstStart ??= now;
    const latest = this.#burstStart +
      this.#debounceMs * MAX_WAIT_DEBOUNCES - now;
    this.#debounce = setTimeout(() => {
      this.#debounce = undefined;
      this.#burstStart = undefined;
      this.#settle();
    }, Math.max(0, Math.min(delayMs, latest)));
  }

  #schedulePoll(): void {
    if (this.#closing) return;
    this.#poll = setTimeout(() => {
      this.#poll = undefined;
      this.#checking = this.#check().finally(() => {
        this.#checking = undefined;
        this.#schedulePoll();
      });
    }, this.#pollMs);
  }

  /**
   * Settles now when the path leads to another folder than the watched
   * one, or to one again after it was lost, or its entries changed: the
   * fallback for events that never came.
   */
  async #check(): Promise<void> {
    const seen = await identify(this.#packsDir);
    if (this.#closing || this.#settling || this.#debounce) return;
    const changed = this.#lost
      ? "identity" in seen
      : !("identity" in seen) || seen.identity !== this.#identity ||
        seen.stamp !== this.#stamp;
    if (changed) this.#settle();
  }

  /** Runs one settle at a time; a request during one runs another after. */
  #settle(): void {
    if (this.#settling) {
      this.#settleAgain = true;
      return;
    }
    this.#settling = (async () => {
      do {
        this.#settleAgain = false;
        try {
          await this.#settleOnce();
        } catch (error) {
          // A throw of the watcher's own code or of a hook is a fault, not
          // of the folder: it is reported as a failed re-scan is, and the
          // watcher carries on.
          this.#report(error);
        }
      } while (this.#settleAgain && !this.#closing);
    })().finally(() => {
      this.#settling = undefined;
    });
  }

  /**
   * Looks at the folder: gone, it is reported once; another folder than
   * the watched one (or named by an event), it is watched afresh; there,
   * it is re-scanned.
   */
  async #settleOnce(): Promise<void> {
    const seen = await identify(this.#packsDir);
    if (this.#closing) return;
    if (!("identity" in seen)) return await this.#markLost(seen.error);
    if (this.#lost || this.#reopen || seen.identity !== this.#identity) {
      this.#reopen = false;
      try {
        await this.#openWatchers();
      } catch (error) {
        return await this.#markLost(asError(error));
      }
      if (this.#closing) return;
      this.#identity = seen.identity;
    }
    if (this.#lost) {
      this.#lost = false;
      this.#hooks.onFound();
    }
    // Taken before the re-scan, which so sees at least these entries.
    this.#stamp = seen.stamp;
    try {
      await this.#hooks.onChange();
    } catch (error) {
      if (this.#closing) return;
      const now = await identify(this.#packsDir);
      if (this.#closing) return;
      if ("identity" in now) this.#hooks.onError(error);
      else await this.#markLost(now.error);
    }
  }

  /** Reports a fault of a settle to `onError`, which may throw in turn. */
  #report(error: unknown): void {
    if (this.#closing) return;
    try {
      this.#hooks.onError(error);
    } catch {
      // The report itself failed: nothing is left to tell.
    }
  }

  async #markLost(error: Error): Promise<void> {
    // The watcher of a folder that is gone reports nothing more.
    await this.#closeWatcher(this.#folderWatcher);
    this.#folderWatcher = undefined;
    this.#identity = undefined;
    if (this.#lost || this.#closing) return;
    this.#lost = true;
    this.#hooks.onLost(error);
  }

  /**
   * Opens the watchers again: the folder, recursively, and the folder that
   * holds it, for events about the packs folder's own entry. Without the
   * latter (the path is `/` or ends in `.`, or the parent cannot be read),
   * the poll alone notices the entry change.
   */
  async #openWatchers(): Promise<void> {
    await this.#closeWatcher(this.#folderWatcher);
    await this.#closeWatcher(this.#parentWatcher);
    this.#folderWatcher = this.#parentWatcher = undefined;
    this.#openNow();
  }

  /** Opens the watchers, none being open. */
  #openNow(): void {
    const entry = this.#entry;
    if (entry !== undefined) {
      try {
        this.#parentWatcher = this.#open(entry.parent, false);
      } catch {
        // Left to the poll.
      }
    }
    this.#folderWatcher = this.#open(this.#packsDir, true);
  }

  #open(path: string, recursive: boolean): Deno.FsWatcher {
    const watcher = Deno.watchFs(path, { recursive });
    const name = this.#entry?.name;
    this.#watchers.set(
      watcher,
      (async () => {
        try {
          for await (const event of watcher) {
            const itself = event.flag === "rescan" ||
              event.paths.some((path) => baseName(path) === name);
            // The parent reports its other entries too; only this one
            // concerns the packs.
            if (!recursive && !itself) continue;
            if (itself) this.#reopen = true;
            this.#schedule();
          }
        } catch {
          // A watcher that fails is opened again by the next settle.
          this.#reopen = true;
          this.#schedule();
        }
      })(),
    );
    return watcher;
  }

  /**
   * Closes a watcher and waits until its loop has ended: Deno (2.9)
   * ignores a watcher of the same path opened before that.
   */
  async #closeWatcher(watcher: Deno.FsWatcher | undefined): Promise<void> {
    if (watcher === undefined) return;
    try {
      watcher.close();
    } catch {
      // Closed already.
    }
    await this.#watchers.get(watcher);
    this.#watchers.delete(watcher);
  }
}

/** A folder's parent and its own name in it. */
interface FolderEntry {
  parent: string;
  name: string;
}

const SEPARATORS = isWindowsHost() ? /[\\/]/ : /\//;

/**
 * Splits a folder path into its parent and name, or `undefined` when the
 * path names no entry of a parent it can spell (`/`, `.`, `..`).
 */
export function folderEntry(path: string): FolderEntry | undefined {
  let end = path.length;
  while (end > 1 && SEPARATORS.test(path[end - 1]!)) end--;
  const trimmed = path.slice(0, end);
  let cut = trimmed.length - 1;
  while (cut >= 0 && !SEPARATORS.test(trimmed[cut]!)) cut--;
  const name = trimmed.slice(cut + 1);
  if (name === "" || name === "." || name === "..") return undefined;
  if (cut < 0) return { parent: ".", name };
  const parent = trimmed.slice(0, cut);
  // `/packs` and `C:\packs` live in a root, which keeps its separator.
  return {
    parent: parent === "" || parent.endsWith(":")
      ? trimmed.slice(0, cut + 1)
      : parent,
    name,
  };
}

function baseName(path: string): string {
  const parts = path.split(SEPARATORS);
  return parts.at(-1) === "" ? parts.at(-2) ?? "" : parts.at(-1)!;
}

/**
 * What folder the path leads to now: its real path, device, inode and
 * birth time, so a folder recreated at the same place (even on a reused
 * inode) or a re-pointed symlink reads as another folder; or why it leads
 * to none.
 */
async function identify(
  path: string,
): Promise<{ identity: string; stamp: string } | { error: Error }> {
  try {
    const info = await Deno.stat(path);
    if (!info.isDirectory) {
      return { error: asError(new Deno.errors.NotADirectory("Not a folder")) };
    }
    return {
      identity: identityOf(await Deno.realPath(path), info),
      stamp: stampOf(info),
    };
  } catch (error) {
    return { error: asError(error) };
  }
}

/** Keeps the error's name and drops its message, which may hold a path. */
function asError(error: unknown): Error {
  const name = error instanceof Error ? error.name : "Error";
  const lost = new Error(`The packs folder cannot be read: ${name}`, {
    cause: error,
  });
  lost.name = name;
  return lost;
}

function stampOf(info: Deno.FileInfo): string {
  return `${info.mtime?.getTime()}:${info.ctime?.getTime()}`;
}

function identityOf(realPath: string, info: Deno.FileInfo): string {
  return `${realPath}\n${info.dev}:${info.ino}:${info.birthtime?.getTime()}`;
}
