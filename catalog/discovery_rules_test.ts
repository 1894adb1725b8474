import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { DISCOVERY_RULES } from "./_discovery_index.ts";

/**
 * The modules whose decisions a discovery index records: the manifest's
 * schema, how a pack's files are read and scanned for imports, and how
 * ids, digests and graphs are made. An index of other rules is ignored,
 * so a change to what these modules decide must move `DISCOVERY_RULES`;
 * a server upgraded over an old index would otherwise keep the old
 * decisions until each pack's files change.
 */
const RULE_SOURCES = [
  "../protocol/pack_manifest.ts",
  "../policy/import_specifier.ts",
  "../policy/misread_imports.ts",
  "../policy/module_syntax.ts",
  "../policy/pack_import.ts",
  "../policy/parsed_imports.ts",
  "../policy/scan_module.ts",
  "../policy/scan_pack.ts",
  "../policy/source_text.ts",
  "./_pack_files.ts",
  "./_utf8.ts",
  "./digest.ts",
  "./graph.ts",
];

/**
 * The rules version and the digest of the sources above when it was last
 * looked at. Update both by hand, as the failure message says.
 */
const RECORDED = {
  rules: "cordon-discovery-7",
  sources: "f0bbbaf96d38e788090a747b57857e80a37c7acae110af318681972b579ac9e5",
};

async function sourcesDigest(): Promise<string> {
  const hash = createHash("sha256");
  for (const path of RULE_SOURCES) {
    const text = await Deno.readTextFile(new URL(path, import.meta.url));
    hash.update(`${path}\n${text.length}\n${text}`);
  }
  return hash.digest("hex");
}

Deno.test("a change to what pack discovery decides moves DISCOVERY_RULES, so a discovery index of the old rules is read again", async () => {
  const digest = await sourcesDigest();
  assert.equal(
    digest,
    RECORDED.sources,
    `The sources of pack discovery changed (${RULE_SOURCES.join(", ")}). ` +
      "If what discovery decides for any pack changed (which packs install, " +
      "their imports, ids or digests), move DISCOVERY_RULES in " +
      "catalog/_discovery_index.ts. Then record here the rules version and " +
      `this digest: ${digest}`,
  );
  assert.equal(
    DISCOVERY_RULES,
    RECORDED.rules,
    `DISCOVERY_RULES moved: record ${DISCOVERY_RULES} here with the sources' digest`,
  );
});
