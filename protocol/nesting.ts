// This module is browser compatible.

/**
 * The one cap on how deeply a value that crosses a realm's edge may nest:
 * a run's context, result and thrown value, console arguments, plugin
 * requests, answers and capability calls.
 *
 * @module
 */

/**
 * The most levels of arrays and objects a value crossing a realm's edge
 * may nest: `[[1]]` is two levels deep, `1` none. Deeper values are
 * refused on every tier alike, with a message naming this cap, instead of
 * meeting whichever engine's stack gives out first (QuickJS's, with the
 * default `maxStackSizeBytes`, at about 800 levels of a result). The
 * marshalling inside each realm (`realm/marshal.ts`) keeps its own copy of
 * this number, since it runs as source text there; a test holds the two
 * equal.
 *
 * @example
 * ```ts
 * import { MAX_NESTING_DEPTH } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(MAX_NESTING_DEPTH, 512);
 * ```
 */
export const MAX_NESTING_DEPTH = 512;
