/// <reference lib="deno.worker" />
/**
 * The worker of the sandbox benchmark's hop baseline: imports each source
 * it is sent as a module and answers with its default export, as a pooled
 * sandbox's worker does, without any of the sandbox's work.
 *
 * @module
 */

self.onmessage = async (event: MessageEvent<string>) => {
  const url = URL.createObjectURL(
    new Blob([event.data], { type: "text/javascript" }),
  );
  const { default: value } = await import(url);
  URL.revokeObjectURL(url);
  self.postMessage(value);
};
