// A node:http server of what cordon's own code wrote from the fixture packs
// (tools/write_node_fixtures.ts, run by `deno task build:node`), for the
// loader's Node tests: Node cannot run the delivery server or the on-disk
// catalog.

import { readFile } from "node:fs/promises";
import { createServer } from "node:http";

export const FIXTURES = new URL("../../dist/fixtures/", import.meta.url);
export const STAGED = new URL("staged/", FIXTURES);
const TAMPERED =
  'console.log("tampered code ran");\nexport const add = () => 666;\n';

export const NOT_FOUND = {
  status: 404,
  headers: [],
  body: Buffer.from("not found"),
};

const CONTENT_TYPES = { ".json": "application/json", ".js": "text/javascript" };

/** Answers a request as a static host of the staged tree would. */
export async function stagedAnswer(url) {
  const path = decodeURIComponent(url.pathname).slice(1);
  if (path.split("/").includes("..")) return NOT_FOUND;
  const type = CONTENT_TYPES[path.slice(path.lastIndexOf("."))];
  try {
    const body = await readFile(new URL(path, STAGED));
    return { status: 200, headers: [["content-type", type]], body };
  } catch {
    return NOT_FOUND;
  }
}

/**
 * Serves `answer(url)` on 127.0.0.1; with `tamperId`, the body of that
 * module is swapped and every header kept. Node sets Content-Length.
 */
export async function serve(answer, { tamperId } = {}) {
  const server = createServer(async (request, response) => {
    const url = new URL(request.url, "http://127.0.0.1");
    const { status, headers, body } = await answer(url);
    const tampered = tamperId !== undefined &&
      url.pathname.split("/").at(-1).startsWith(tamperId);
    for (const [name, value] of headers) {
      if (name !== "content-length") response.setHeader(name, value);
    }
    response.writeHead(status);
    response.end(tampered ? TAMPERED : body);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    origin: `http://127.0.0.1:${server.address().port}`,
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}
