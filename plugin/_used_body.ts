/**
 * A web `Request` standing for one whose body something else already read,
 * such as a framework's body parser ahead of the host. A `Request` cannot be
 * built from a used body, and an empty one would reach the plugin as if its
 * client had sent nothing, so the copy's body is read at once: the handler
 * sees `bodyUsed`, as it would on the request itself.
 *
 * @module
 */

/**
 * A request of `url` and `init` (no body) whose body reads as already used.
 *
 * @param url The request's URL.
 * @param init Its method (one that may carry a body), headers and signal.
 * @returns The request, `bodyUsed` already.
 */
export function requestWithUsedBody(
  url: string,
  init: Omit<RequestInit, "body">,
): Request {
  const request = new Request(url, { ...init, body: new Uint8Array(0) });
  // A read marks the body used at once; the read itself ends the empty body.
  request.body?.getReader().read().catch(() => {});
  return request;
}
