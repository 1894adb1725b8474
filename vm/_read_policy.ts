/**
 * The vm plugin policy, and the reading of one once into a frozen copy
 * that refuses keys it does not know, so the folders and hosts checked are
 * the ones used: a getter or an array the caller changes later cannot
 * widen the policy after the check.
 *
 * @module
 */

import { copyListOption, readOptions } from "../protocol/options.ts";

/** What a vm plugin may reach. Everything not listed is denied. */
export interface VmPluginPolicy {
  /**
   * Hosts the plugin may `fetch`, as `hostname` (the scheme's default port)
   * or `hostname:port`. Only `http:` and `https:` URLs are fetched.
   * @default {[]}
   */
  fetch?: readonly string[] | undefined;
  /** Folders the plugin may read and write, as absolute paths. */
  fs?: {
    /** Folders whose files the plugin may read and list. @default {[]} */
    read?: readonly string[] | undefined;
    /** Folders whose files the plugin may write. @default {[]} */
    write?: readonly string[] | undefined;
  } | undefined;
  /** Capability names the plugin holds. @default {[]} */
  capabilities?: readonly string[] | undefined;
}

const { create, freeze } = Object;

type FsPolicy = NonNullable<VmPluginPolicy["fs"]>;

/**
 * Copies `policy`, its `fs` object and its lists.
 *
 * @param where What was being done, for messages.
 * @param policy The policy given.
 * @returns A frozen copy with a `null` prototype, as is its `fs` copy, so
 * a key added to `Object.prototype` grants nothing; values of the wrong
 * type are kept for the policy checker to refuse with its own message.
 * @throws {TypeError} When a key is unknown or reading the policy throws.
 */
export function readPolicy(
  where: string,
  policy: VmPluginPolicy,
): VmPluginPolicy {
  const read = readOptions(where, policy, {
    fetch: true,
    fs: true,
    capabilities: true,
  }, "policy");
  // Without a prototype, a list the caller left out stays out when the
  // host's Object.prototype has gained a key of that name.
  const copy: VmPluginPolicy = create(null);
  if (read.fetch !== undefined) {
    copy.fetch = copyList(where, "policy.fetch", read.fetch);
  }
  if (read.capabilities !== undefined) {
    copy.capabilities = copyList(
      where,
      "policy.capabilities",
      read.capabilities,
    );
  }
  if (read.fs !== undefined) copy.fs = readFsPolicy(where, read.fs);
  return freeze(copy);
}

function readFsPolicy(where: string, fs: FsPolicy): FsPolicy {
  if (typeof fs !== "object" || fs === null) return fs;
  const read = readOptions(where, fs, { read: true, write: true }, "policy.fs");
  const copy: FsPolicy = create(null);
  if (read.read !== undefined) {
    copy.read = copyList(where, "policy.fs.read", read.read);
  }
  if (read.write !== undefined) {
    copy.write = copyList(where, "policy.fs.write", read.write);
  }
  return freeze(copy);
}

function copyList<T>(
  where: string,
  name: string,
  list: readonly T[],
): readonly T[] {
  const copy = copyListOption(where, name, list) as T[] | null;
  return copy === null ? list : freeze(copy);
}
