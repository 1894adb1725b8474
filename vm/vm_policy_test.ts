import assert from "node:assert/strict";
import { withPollutedPrototype } from "../protocol/_test_hostile_test.ts";
import { createPolicyChecker } from "./vm_policy.ts";

Deno.test("createPolicyChecker() refuses a policy.fetch entry that is no host or has no port a URL can name, quoting it escaped", () => {
  const entries = [
    "a b:80",
    "exa%mple.com",
    "[zz]:80",
    "x\u0000y",
    "127.0.0.1:0",
    "127.0.0.1:65536",
    "127.0.0.1:99999",
    "example.com\n",
    "\texample.com",
    "example.com ",
    "exa mple.com",
  ];
  for (const entry of entries) {
    assert.throws(
      () => createPolicyChecker({ fetch: [entry] }),
      (error: unknown) =>
        error instanceof TypeError &&
        error.message.startsWith(
          `Cannot read policy.fetch entry ${JSON.stringify(entry)}: `,
        ),
      entry,
    );
  }
});

Deno.test("createPolicyChecker() reads a policy.fetch entry in the form a URL's host takes", () => {
  const check = createPolicyChecker({
    fetch: ["EXAMPLE.com:080", "[::1]:65535", "127.1"],
  });
  const allowed = (url: string) =>
    check({ pluginId: "p", kind: "fetch", url, method: "GET" }).allowed;
  assert.equal(allowed("http://example.com:80/"), true);
  assert.equal(allowed("http://[::1]:65535/"), true);
  assert.equal(allowed("http://127.0.0.1/"), true);
  assert.equal(allowed("http://127.0.0.1:8080/"), false);
});

Deno.test("createPolicyChecker() grants nothing a polluted Object.prototype names for lists the policy left out", async () => {
  const polluted = {
    capabilities: ["secret.read"],
    fetch: ["evil.example"],
    fs: { read: ["/"], write: ["/"] },
    read: ["/"],
    write: ["/"],
  };
  const requests = [
    { kind: "capability", pluginId: "p", name: "secret.read" },
    {
      kind: "fetch",
      pluginId: "p",
      url: "http://evil.example/",
      method: "GET",
    },
    { kind: "fs", pluginId: "p", access: "read", path: "/etc/hostname" },
    { kind: "fs", pluginId: "p", access: "write", path: "/tmp/x" },
  ] as const;
  for (const policy of [{}, { fs: {} }]) {
    const check = await withPollutedPrototype(
      polluted,
      () => createPolicyChecker(policy),
    );
    for (const request of requests) {
      assert.equal(check(request).allowed, false, JSON.stringify(request));
    }
  }
});
