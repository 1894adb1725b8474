import assert from "node:assert/strict";

const ROOT = new URL("../", import.meta.url);

/** The markdown files whose links readers follow: the changelog, the README and the guides. */
async function linkingFiles(): Promise<string[]> {
  const guides: string[] = [];
  for await (const entry of Deno.readDir(new URL("docs/", ROOT))) {
    if (entry.isFile && entry.name.endsWith(".md")) {
      guides.push(`docs/${entry.name}`);
    }
  }
  return ["CHANGELOG.md", "README.md", ...guides.sort()];
}

/** The text outside fenced code blocks, where a `#` line is no heading. */
function withoutCodeBlocks(markdown: string): string {
  return markdown.replace(/^```[^\n]*\n[\s\S]*?^```/gm, "");
}

/**
 * The anchor GitHub gives a heading: lower case, punctuation dropped, each
 * space a hyphen, and `-1`, `-2` for the repeats of one text.
 */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (
    const [, text] of withoutCodeBlocks(markdown).matchAll(
      /^#{1,6} +(.+?) *#*$/gm,
    )
  ) {
    const slug = text!.toLowerCase()
      .replace(/`/g, "")
      .replace(/[^\p{L}\p{N}\- _]/gu, "")
      .replace(/ /g, "-");
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** Each `[text](target#anchor)` link to a markdown file or to the page itself. */
function anchorLinks(markdown: string): { target: string; anchor: string }[] {
  return [
    ...withoutCodeBlocks(markdown).matchAll(/\]\(([^)#\s]*)#([^)\s]+)\)/g),
  ]
    .filter(([, target]) => target === "" || target!.endsWith(".md"))
    .map(([, target, anchor]) => ({ target: target!, anchor: anchor! }));
}

Deno.test("every link to a heading of a markdown file resolves to a heading there", async () => {
  const files = await linkingFiles();
  const broken: string[] = [];
  for (const file of files) {
    const fileUrl = new URL(file, ROOT);
    for (
      const { target, anchor } of anchorLinks(await Deno.readTextFile(fileUrl))
    ) {
      const targetUrl = target === "" ? fileUrl : new URL(target, fileUrl);
      const headings = headingAnchors(await Deno.readTextFile(targetUrl));
      if (!headings.has(decodeURIComponent(anchor))) {
        broken.push(`${file}: ${target}#${anchor}`);
      }
    }
  }
  assert.deepEqual(broken, [], "links whose anchor names no heading");
});

Deno.test("the anchor of a heading drops punctuation and code marks as GitHub does", () => {
  const anchors = headingAnchors(
    "# Bundles: the image carries the bundle's digest\n## `cordon:host`\n## Tiers\n## Tiers\n```sh\n# not a heading\n```\n",
  );
  assert.deepEqual([...anchors], [
    "bundles-the-image-carries-the-bundles-digest",
    "cordonhost",
    "tiers",
    "tiers-1",
  ]);
});
