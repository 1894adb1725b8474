// This module is browser compatible.

import type { HardenedImageData } from "./_hardened_image.ts";

/** The shipped hardened image (see `_hardened_image.ts`). */
export declare const HARDENED_IMAGE_DATA: HardenedImageData;
