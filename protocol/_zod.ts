// This module is browser compatible.

/**
 * zod, configured for every schema of `protocol/`: each module here imports
 * `z` from this file, never from `"zod"`, so this module is evaluated, and
 * the configuration set, before any schema exists.
 *
 * `jitless` keeps zod from compiling parsers with `new Function` and, as
 * important, from probing whether it may (zod reads the flag before its
 * probe, when the first object schema is built). Under a
 * Content-Security-Policy without `'unsafe-eval'` that probe is a reported
 * violation even though zod catches the error, on every page and in every
 * pool worker. zod keeps the flag on `globalThis`, so it also applies to
 * other zod schemas of the same realm.
 *
 * @module
 */

import { z } from "zod";

z.config({ jitless: true });

export { z };
