import assert from "node:assert/strict";
import { localPath } from "./local_path.ts";

const OPTION = { where: "stage", name: "outDir", kind: "folder" } as const;

Deno.test("localPath() decodes a file: URL into its path, a space, #, % and é included, and keeps a path as it is", () => {
  assert.equal(
    localPath(
      new URL("file:///srv/my%20packs%20%231%20%2541%20%C3%A9"),
      OPTION,
    ),
    "/srv/my packs #1 %41 é",
  );
  assert.equal(localPath("./my packs", OPTION), "./my packs");
});

Deno.test("localPath() refuses with a TypeError naming the option another URL, a file: URL that names no local path and anything not a non-empty string", () => {
  assert.throws(
    () => localPath(new URL("https://example.com/packs"), OPTION),
    new TypeError(
      "Cannot stage: outDir must be a folder path or a file: URL, not a https: URL",
    ),
  );
  assert.throws(
    () => localPath(new URL("file:///srv/a%2Fb"), OPTION),
    (error: Error) =>
      error instanceof TypeError &&
      error.message.startsWith(
        "Cannot stage: outDir is a file: URL that names no local folder: ",
      ),
  );
  for (const value of ["", undefined, 7, { href: "file:///srv" }]) {
    assert.throws(
      () => localPath(value, OPTION),
      new TypeError(
        "Cannot stage: outDir must be a non-empty folder path or a file: URL",
      ),
    );
  }
});
