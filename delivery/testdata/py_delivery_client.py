"""A delivery client written from docs/delivery.md, docs/remote.md,
docs/catalog.md and schemas/ alone, in Python's standard library, to check
that a delivery server keeps the contract as a client on another platform
reads it: every status, header and problem document the guide names.

usage: py_delivery_client.py BASE_URL [PREFIX]

BASE_URL is the server's origin (http://127.0.0.1:8000); PREFIX is its route
prefix (default /api/sandbox-modules; "" serves the listing at /). The server
must serve cordon's fixture packs with no entitlement policy. The client
prints one "FAIL <statement>: <what it saw>" line per broken statement, then
"CHECKED <n> FAILED <m>", and exits 1 when any failed.
"""

import base64
import gzip
import hashlib
import http.client
import json
import os
import re
import socket
import sys
import time
import urllib.parse

SCHEMAS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "schemas")
CORS = (("access-control-allow-origin", "*"), ("access-control-expose-headers", "*"))
PINNED_CACHE = "public, max-age=31536000, immutable"
UNKNOWN_ID = "AAAAAAAAAAAAAAAAAAAAAA"


class Answer:
    """One response: status, header list (names as sent) and body."""

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def header(self, name):
        """The field's values joined by ", ", as RFC 9110 combines them, or None."""
        values = [v for k, v in self.headers if k.lower() == name]
        return ", ".join(values) if values else None

    def names(self):
        return {k.lower() for k, _ in self.headers} - {"date", "connection", "keep-alive"}


class Client:
    def __init__(self, base_url, prefix):
        parts = urllib.parse.urlsplit(base_url)
        self.host, self.port = parts.hostname, parts.port
        self.prefix = prefix
        self.listing_path = prefix or "/"
        self.checked = 0
        self.failures = []

    def expect(self, holds, statement, saw=""):
        self.checked += 1
        if not holds:
            self.failures.append(f"{statement}: {saw}")

    def request(self, method, target, headers=None):
        connection = http.client.HTTPConnection(self.host, self.port, timeout=10)
        try:
            connection.putrequest(method, target, skip_accept_encoding=True)
            for name, value in (headers or {}).items():
                connection.putheader(name, value)
            connection.endheaders()
            response = connection.getresponse()
            return Answer(response.status, response.getheaders(), response.read())
        finally:
            connection.close()

    def raw_status_line(self, head):
        """Sends a hand-written request head, for what http.client will not send."""
        with socket.create_connection((self.host, self.port), timeout=10) as sock:
            sock.sendall(head)
            received = b""
            while b"\r\n" not in received:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                received += chunk
            while True:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                received += chunk
        return received

    # ------------------------------------------------------------ shared checks

    def expect_cors(self, answer, label):
        for name, value in CORS:
            self.expect(answer.header(name) == value, f"{label} sends {name}: {value}", answer.header(name))

    def expect_same_head(self, get, head, label):
        self.expect(head.status == get.status, f"{label}: HEAD answers GET's status", (head.status, get.status))
        self.expect(head.body == b"", f"{label}: HEAD has no body", head.body[:40])
        for name in get.names() | head.names():
            self.expect(
                get.header(name) == head.header(name),
                f"{label}: HEAD sends GET's {name}",
                (get.header(name), head.header(name)),
            )

    def expect_problem(self, answer, status, code, label):
        """A problem document (RFC 9457) as docs/delivery.md's Errors section gives it."""
        self.expect(answer.status == status, f"{label} answers {status}", answer.status)
        self.expect(
            answer.header("content-type") == "application/problem+json",
            f"{label} is application/problem+json",
            answer.header("content-type"),
        )
        self.expect(answer.header("cache-control") == "no-store", f"{label} is no-store", answer.header("cache-control"))
        self.expect_cors(answer, label)
        if answer.status == 405:
            self.expect(answer.header("allow") == "GET, HEAD, OPTIONS", f"{label} sends Allow", answer.header("allow"))
        try:
            document = json.loads(answer.body)
        except ValueError:
            self.expect(False, f"{label} has a JSON body", answer.body[:80])
            return
        errors = validate(document, SCHEMA["problem"])
        self.expect(not errors, f"{label} matches schemas/problem.json", errors)
        self.expect(document.get("code") == code, f"{label} has code {code}", document.get("code"))
        self.expect(document.get("status") == answer.status, f"{label} repeats its status", document.get("status"))
        self.expect(
            document.get("type") == f"urn:cordon:error:{code}", f"{label} has type urn:cordon:error:{code}", document.get("type")
        )

    # ------------------------------------------------------------ the listing

    def check_listing(self):
        listing = self.request("GET", self.listing_path)
        self.expect(listing.status == 200, "the listing answers 200", listing.status)
        self.expect(
            listing.header("content-type") == "application/json; charset=utf-8",
            "the listing is JSON",
            listing.header("content-type"),
        )
        self.expect(listing.header("cache-control") == "no-cache", "the listing is no-cache", listing.header("cache-control"))
        self.expect(listing.header("vary") == "accept-encoding", "the listing varies on Accept-Encoding", listing.header("vary"))
        self.expect(
            listing.header("etag") == f'"sha256-{b64_sha256(listing.body)}"',
            "the listing's ETag is the SHA-256 of its body",
            listing.header("etag"),
        )
        self.expect_cors(listing, "the listing")
        body = json.loads(listing.body)
        errors = validate(body, SCHEMA["catalog_listing"])
        self.expect(not errors, "the listing matches schemas/catalog_listing.json", errors[:3])
        for pack in body["packs"]:
            self.check_digests(pack)
        self.expect_same_head(listing, self.request("HEAD", self.listing_path), "the listing")
        slash = self.request("GET", f"{self.prefix}/")
        self.expect(slash.status == 200 and slash.body == listing.body, "{prefix}/ answers the listing", slash.status)
        self.check_listing_conditions(listing.header("etag"))
        self.check_listing_gzip(listing)
        return body

    def check_digests(self, pack):
        """Ids and graph digests as docs/catalog.md's "Ids and digests" defines them."""
        by_id = {module["id"]: module for module in pack["modules"]}
        for module in pack["modules"]:
            key = f"{pack['name']}@{pack['version']}:{module['path']}".encode()
            module_id = base64.urlsafe_b64encode(hashlib.sha256(key).digest()).decode()[:22]
            self.expect(module["id"] == module_id, f"{module['path']}'s id is derived", module["id"])
            closure, stack = set(), list(module["dependencyIds"])
            while stack:
                dependency = stack.pop()
                if dependency not in closure and dependency != module["id"]:
                    closure.add(dependency)
                    stack.extend(by_id[dependency]["dependencyIds"])
            others = sorted((by_id[d] for d in closure), key=lambda m: utf16(m["path"]))
            pairs = [[m["path"], m["digest"]] for m in [module, *others]]
            self.expect(
                module["graphDigest"] == "sha256-" + b64_sha256(canonical(pairs)),
                f"{module['path']}'s graph digest adds up",
                module["graphDigest"],
            )
        exported = sorted(
            ([subpath, module["graphDigest"]] for module in pack["modules"] for subpath in module["exportedAs"]),
            key=lambda pair: utf16(pair[0]),
        )
        self.expect(
            pack["graphDigest"] == "sha256-" + b64_sha256(canonical(exported)),
            f"{pack['name']}'s graph digest adds up",
            pack["graphDigest"],
        )

    def check_listing_conditions(self, etag):
        for tag in [etag, f"W/{etag}", f'"other", {etag}', "*"]:
            for method in ["GET", "HEAD"]:
                answer = self.request(method, self.listing_path, {"If-None-Match": tag})
                label = f"{method} listing with If-None-Match {tag}"
                self.expect(answer.status == 304 and answer.body == b"", f"{label} answers 304", answer.status)
                self.expect(answer.header("etag") == etag, f"{label} repeats the ETag", answer.header("etag"))
                self.expect(answer.header("cache-control") == "no-cache", f"{label} repeats Cache-Control")
                self.expect(answer.header("vary") == "accept-encoding", f"{label} repeats Vary", answer.header("vary"))
                self.expect_cors(answer, label)
        answer = self.request("GET", self.listing_path, {"If-None-Match": '"other"'})
        self.expect(answer.status == 200, "the listing answers 200 to another tag", answer.status)
        answer = self.request("GET", self.listing_path, {"If-Match": etag})
        self.expect(answer.status == 200, "the listing answers 200 to If-Match with its tag", answer.status)
        answer = self.request("GET", self.listing_path, {"If-Match": '"other"'})
        self.expect_problem(answer, 412, "PRECONDITION_FAILED", "the listing with If-Match of another tag")

    def check_listing_gzip(self, plain):
        """Listings of 1 KiB or more are gzipped once the background compression is done."""
        packed = None
        for _ in range(100):
            answer = self.request("GET", self.listing_path, {"Accept-Encoding": "gzip"})
            if answer.header("content-encoding") == "gzip":
                packed = answer
                break
            time.sleep(0.02)
        self.expect(packed is not None, "a large listing is sent gzipped to a client that accepts gzip")
        if packed is None:
            return
        plain_tag, packed_tag = plain.header("etag"), packed.header("etag")
        self.expect(gzip.decompress(packed.body) == plain.body, "the gzip listing decodes to the plain one")
        self.expect(packed_tag == plain_tag[:-1] + '.gz"', "the gzip listing's ETag is sha256-….gz", packed_tag)
        self.expect(packed.header("vary") == "accept-encoding", "the gzip listing varies on Accept-Encoding")
        self.expect_same_head(packed, self.request("HEAD", self.listing_path, {"Accept-Encoding": "gzip"}), "the gzip listing")
        for accept, encoded in [
            ("gzip", True),
            ("x-gzip", True),
            ("GZIP;q=0.5", True),
            ("br, *", True),
            ("identity;q=0, gzip", True),
            ("gzip;q=0", False),
            ("gzip; q=0.000", False),
            ("gzip;q=0, *", False),
            ("*;q=0", False),
            ("br, deflate", False),
            ("", False),
        ]:
            answer = self.request("GET", self.listing_path, {"Accept-Encoding": accept})
            saw = answer.header("content-encoding")
            self.expect((saw == "gzip") == encoded, f"Accept-Encoding {accept!r} gets {'gzip' if encoded else 'identity'}", saw)
        # Each request is compared with the tag of the body it would get.
        for accept, tag, status, answered in [
            ("gzip", packed_tag, 304, packed_tag),
            ("identity", plain_tag, 304, plain_tag),
            ("gzip", plain_tag, 200, packed_tag),
            ("identity", packed_tag, 200, plain_tag),
        ]:
            answer = self.request("GET", self.listing_path, {"Accept-Encoding": accept, "If-None-Match": tag})
            label = f"the listing with Accept-Encoding {accept} and If-None-Match {tag}"
            self.expect(answer.status == status, f"{label} answers {status}", answer.status)
            self.expect(answer.header("etag") == answered, f"{label} answers {answered}", answer.header("etag"))

    # ------------------------------------------------------------ modules

    def check_module(self, pack, module):
        url = f"{self.prefix}/{module['id']}"
        label = f"{module['path']} of {pack['name']}"
        answer = self.request("GET", url)
        digest = b64_sha256(answer.body)
        self.expect(answer.status == 200, f"{label} answers 200", answer.status)
        self.expect(f"sha256-{digest}" == module["digest"], f"{label}'s bytes hash to the listed digest")
        expected = {
            "content-type": "text/javascript; charset=utf-8",
            "content-length": str(len(answer.body)),
            "repr-digest": f"sha-256=:{digest}:",
            "etag": f'"sha256-{digest}"',
            "x-cordon-graph-digest": module["graphDigest"],
            "x-cordon-dependencies": ",".join(module["dependencyIds"]),
            "x-cordon-pack": f"{pack['name']}@{pack['version']}",
            "x-content-type-options": "nosniff",
            "cache-control": "public, no-cache",
        }
        for name, value in expected.items():
            self.expect(answer.header(name) == value, f"{label} sends {name}: {value}", answer.header(name))
        self.expect(
            re.fullmatch(r"sha-256=:[A-Za-z0-9+/]{43}=:", answer.header("repr-digest") or "") is not None,
            f"{label}'s Repr-Digest is RFC 9530 syntax",
        )
        self.expect_cors(answer, label)
        self.expect_same_head(answer, self.request("HEAD", url), label)
        etag = answer.header("etag")
        self.check_module_conditions(url, etag, "public, no-cache", label)
        for pinned in [
            f"{url}?digest={module['digest']}",
            f"{url}?digest={urllib.parse.quote(module['digest'], safe='')}",
            f"{url}?digest={module['digest']}&digest={module['digest']}",
        ]:
            answer = self.request("GET", pinned)
            pinned_label = f"{label} at {pinned[len(url):]}"
            self.expect(answer.status == 200, f"{pinned_label} answers 200", answer.status)
            self.expect(answer.header("cache-control") == PINNED_CACHE, f"{pinned_label} is immutable", answer.header("cache-control"))
        self.check_module_conditions(f"{url}?digest={module['digest']}", etag, PINNED_CACHE, f"{label} pinned")

    def check_module_conditions(self, url, etag, cache_control, label):
        for tag in [etag, f"W/{etag}", f'"other", {etag}', f'"a,b" ,W/{etag}', "*"]:
            for method in ["GET", "HEAD"]:
                answer = self.request(method, url, {"If-None-Match": tag})
                tag_label = f"{method} {label} with If-None-Match {tag}"
                self.expect(answer.status == 304 and answer.body == b"", f"{tag_label} answers 304", answer.status)
                self.expect(answer.header("etag") == etag, f"{tag_label} repeats the ETag", answer.header("etag"))
                self.expect(answer.header("cache-control") == cache_control, f"{tag_label} repeats Cache-Control")
                self.expect_cors(answer, tag_label)
        for tag in ['"other"', etag[1:-1], "", f'"x", *']:
            answer = self.request("GET", url, {"If-None-Match": tag})
            self.expect(answer.status == 200, f"{label} answers 200 to If-None-Match {tag!r}", answer.status)
        for tag, status in [(etag, 200), ("*", 200), (f'"other", {etag}', 200), (f"W/{etag}", 412), ('"other"', 412)]:
            answer = self.request("GET", url, {"If-Match": tag})
            if status == 412:
                self.expect_problem(answer, 412, "PRECONDITION_FAILED", f"{label} with If-Match {tag}")
            else:
                self.expect(answer.status == status, f"{label} answers {status} to If-Match {tag}", answer.status)
        answer = self.request("GET", url, {"If-Match": '"other"', "If-None-Match": etag})
        self.expect(answer.status == 412, f"{label} weighs If-Match before If-None-Match", answer.status)
        # No Last-Modified and no ranges (docs/delivery.md, caching rules).
        whole = self.request("GET", url).body
        for headers in [
            {"If-Modified-Since": "Fri, 01 Jan 2100 00:00:00 GMT"},
            {"If-Unmodified-Since": "Thu, 01 Jan 1970 00:00:00 GMT"},
            {"Range": "bytes=0-3"},
            {"Range": "bytes=0-3", "If-Range": etag},
        ]:
            answer = self.request("GET", url, headers)
            self.expect(answer.status == 200 and answer.body == whole, f"{label} answers the whole 200 to {headers}", answer.status)
            self.expect(answer.header("accept-ranges") is None, f"{label} sends no Accept-Ranges")

    # ------------------------------------------------------------ refusals

    def check_refusals(self, module):
        url = f"{self.prefix}/{module['id']}"
        spelled = "".join(f"%{ord(c):02X}" for c in module["id"])
        answer = self.request("GET", f"{self.prefix}/{spelled}")
        self.expect(answer.status == 200, "a percent-encoded id is decoded once", answer.status)
        for target, code in [
            (f"{self.prefix}/{UNKNOWN_ID}", "MODULE_NOT_FOUND"),
            (f"{self.prefix}/{'A' * 129}", "MODULE_ID_INVALID"),
            (f"{self.prefix}/%2e%2e", "MODULE_ID_INVALID"),
            (f"{self.prefix}/a%2Fb", "MODULE_ID_INVALID"),
            (f"{self.prefix}/{module['id']}/", "MODULE_ID_INVALID"),
            (f"{self.prefix}/%00", "MODULE_ID_INVALID"),
            (f"{self.prefix}/%ZZ", "MODULE_ID_INVALID"),
            (f"{self.prefix}/%2541", "MODULE_ID_INVALID"),
            (f"{self.prefix}/a%5Cb", "MODULE_ID_INVALID"),
            (f"{url}?digest=sha256-{b64_sha256(b'other')}", "MODULE_NOT_FOUND"),
            (f"{url}?digest=sha256-abc", "MODULE_NOT_FOUND"),
            (f"{url}?digest={module['digest']}&digest=sha256-{b64_sha256(b'other')}", "MODULE_NOT_FOUND"),
        ]:
            get = self.request("GET", target)
            self.expect_problem(get, 404, code, f"GET {target}")
            self.expect_same_head(get, self.request("HEAD", target), f"{target}")
        gone = json.loads(self.request("GET", f"{url}?digest=sha256-{b64_sha256(b'other')}").body)
        self.expect(
            "This version of the module is no longer installed: list the catalog again" in gone.get("detail", ""),
            "a pinned URL with another digest says the version is gone",
            gone.get("detail"),
        )
        if self.prefix:
            self.expect_problem(self.request("GET", f"{self.prefix}x/{module['id']}"), 404, "MODULE_NOT_FOUND", "a path outside the prefix")
        for method in ["POST", "PUT", "DELETE", "PATCH", "TRACE", "PROPFIND"]:
            for target in [self.listing_path, url, f"{self.prefix}/{UNKNOWN_ID}"]:
                self.expect_problem(self.request(method, target), 405, "METHOD_NOT_ALLOWED", f"{method} {target}")
        for host in [b"h/api/sandbox-modules", b"a b", b"h:80:90"]:
            head = b"GET " + url.encode() + b" HTTP/1.1\r\nHost: " + host + b"\r\nConnection: close\r\n\r\n"
            received = self.raw_status_line(head)
            self.expect(
                received.startswith(b"HTTP/1.1 400 ") and b'"code":"REQUEST_INVALID"' in received,
                f"Host {host!r} answers 400 REQUEST_INVALID",
                received[:60],
            )

    def check_preflight(self, module):
        for target in [self.listing_path, f"{self.prefix}/{module['id']}", f"{self.prefix}/{module['id']}?digest={module['digest']}"]:
            answer = self.request(
                "OPTIONS",
                target,
                {
                    "Origin": "https://page.example",
                    "Access-Control-Request-Method": "GET",
                    "Access-Control-Request-Headers": "if-none-match, authorization",
                },
            )
            label = f"the preflight of {target}"
            self.expect(answer.status == 204 and answer.body == b"", f"{label} answers 204", answer.status)
            self.expect(answer.header("access-control-allow-origin") == "*", f"{label} allows any origin")
            self.expect(answer.header("access-control-allow-methods") == "GET, HEAD", f"{label} allows GET, HEAD")
            allowed = {h.strip().lower() for h in (answer.header("access-control-allow-headers") or "").split(",")}
            self.expect({"if-none-match", "authorization"} <= allowed, f"{label} allows If-None-Match and Authorization", allowed)
            self.expect(answer.header("access-control-max-age") == "86400", f"{label} is kept a day")
        answer = self.request("GET", f"{self.prefix}/{UNKNOWN_ID}", {"Origin": "https://page.example"})
        self.expect_cors(answer, "a refusal to another origin")

    def check_packs_query(self, names):
        def listed(query):
            answer = self.request("GET", self.listing_path + query)
            if answer.status != 200:
                return answer, None
            return answer, sorted(pack["name"] for pack in json.loads(answer.body)["packs"])

        scoped = next(name for name in names if name.startswith("@"))
        plain = next(name for name in names if not name.startswith("@"))
        encoded = urllib.parse.quote(scoped, safe="")
        for query, expected in [
            (f"?packs={plain}", [plain]),
            (f"?packs={plain},{encoded}", sorted([plain, scoped])),
            (f"?packs={plain}&packs={encoded}", sorted([plain, scoped])),
            (f"?packs={plain},{plain}", [plain]),
            ("?packs=not-installed", []),
            ("?packs=" + ",".join(f"p{i}" for i in range(64)), []),
            ("?other=1", sorted(names)),
        ]:
            answer, got = listed(query)
            self.expect(got == expected, f"the listing of {query[:40]} lists {expected}", (answer.status, got))
        answer, _ = listed(f"?packs={plain}")
        tag = answer.header("etag")
        self.expect(tag == f'"sha256-{b64_sha256(answer.body)}"', "a selection's ETag is the SHA-256 of its body", tag)
        again = self.request("GET", f"{self.listing_path}?packs={plain}", {"If-None-Match": tag})
        self.expect(again.status == 304, "a selection answers 304 to its tag", again.status)
        for query in [
            "?packs=",
            "?packs",
            "?packs=,",
            f"?packs={plain},",
            "?packs=Upper",
            "?packs=%ZZ",
            "?packs=" + ",".join(f"p{i}" for i in range(65)),
        ]:
            self.expect_problem(self.request("GET", self.listing_path + query), 400, "LISTING_QUERY_INVALID", f"the listing of {query[:40]}")

    def run(self):
        listing = self.check_listing()
        modules = [(pack, module) for pack in listing["packs"] for module in pack["modules"]]
        for pack, module in modules:
            self.check_module(pack, module)
        self.check_refusals(modules[0][1])
        self.check_preflight(modules[0][1])
        self.check_packs_query([pack["name"] for pack in listing["packs"]])


# ---------------------------------------------------------------- helpers


def b64_sha256(data):
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


def canonical(value):
    """JSON as JavaScript's JSON.stringify writes it, as UTF-8 bytes."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def utf16(text):
    """A sort key in UTF-16 code unit order, JavaScript's < on strings."""
    return text.encode("utf-16-be")


def validate(value, schema, path="$"):
    """The JSON Schema keywords schemas/ uses, by hand: a list of what fails."""
    errors = []
    kind = schema.get("type")
    if kind == "object":
        if not isinstance(value, dict):
            return [f"{path} is no object"]
        errors += [f"{path} lacks {key}" for key in schema.get("required", []) if key not in value]
        properties = schema.get("properties", {})
        for key, member in value.items():
            if key in properties:
                errors += validate(member, properties[key], f"{path}.{key}")
            elif schema.get("additionalProperties") is False:
                errors.append(f"{path} has {key}, which the schema does not allow")
    elif kind == "array":
        if not isinstance(value, list):
            return [f"{path} is no array"]
        for index, item in enumerate(value):
            errors += validate(item, schema.get("items", {}), f"{path}[{index}]")
    elif kind == "string" and not isinstance(value, str):
        return [f"{path} is no string"]
    elif kind == "integer":
        if not isinstance(value, int) or isinstance(value, bool):
            return [f"{path} is no integer"]
        if not schema.get("minimum", value) <= value <= schema.get("maximum", value):
            errors.append(f"{path} is out of range")
    if isinstance(value, str):
        if "maxLength" in schema and len(utf16(value)) // 2 > schema["maxLength"]:
            errors.append(f"{path} is too long")
        # ECMA-262 patterns, unanchored; the schemas add "not \n$" for $.
        if "pattern" in schema and re.search(schema["pattern"], value) is None:
            errors.append(f"{path} does not match {schema['pattern']}")
    if "not" in schema and not validate(value, schema["not"], path):
        errors.append(f"{path} matches what the schema excludes")
    return errors


def load_schema(name):
    with open(os.path.join(SCHEMAS, f"{name}.json"), encoding="utf-8") as file:
        return json.load(file)


SCHEMA = {name: load_schema(name) for name in ["problem", "catalog_listing"]}


def main():
    base_url = sys.argv[1]
    prefix = sys.argv[2] if len(sys.argv) > 2 else "/api/sandbox-modules"
    client = Client(base_url, prefix)
    client.run()
    for failure in client.failures:
        print(f"FAIL {failure}")
    print(f"CHECKED {client.checked} FAILED {len(client.failures)}")
    sys.exit(1 if client.failures else 0)


if __name__ == "__main__":
    main()
