"""A delivery server written from docs/delivery.md, docs/catalog.md and
schemas/ alone, in Python's standard library, to check that the contract is
enough for a platform that implements it in another language.

It serves the packs under --packs on 127.0.0.1 and prints "LISTENING <port>"
once it accepts connections. The flags after --port pick the liberties the
contract allows a server, so a test can check that cordon's client accepts
each of them:

  --http10            answer as HTTP/1.0 and close each connection
  --chunked           send bodies chunked, without Content-Length
  --header-case C     write header names in "lower" or "upper" case
  --content-type T    the modules' media type (default text/javascript)
  --weak-etag         tag modules W/"sha256-..." instead of "sha256-..."
  --repr-digest M     "sha-256" (default), "sha-512-first" or "sha-256-first"
                      (both algorithms, in that member order)
  --no-packs-query    ignore ?packs= and always list every pack
  --forbid NAME       refuse the modules of pack NAME (403 problem)
  --reverse-order     list packs, modules, exports and imports in reverse
  --problem-extras    add RFC 9457 "instance" and an extension member to
                      problem documents
  --opaque-ids        give modules ids of the server's own (not derived)
  --close-delimited   with --http10: no Content-Length, the close ends a body
  --gzip-listing      gzip the listing for clients that accept gzip
  --bare-304          send a 304 without ETag and Cache-Control
  --no-dependencies   leave out X-Cordon-Dependencies (allowed when long)
  --log FILE          append "METHOD target STATUS" per request to FILE

Only fixture-sized packs are in scope: imports are found with a regular
expression, not a JavaScript parser.
"""

import argparse
import base64
import gzip
import hashlib
import http.server
import json
import os
import posixpath
import re
import sys
import threading
import urllib.parse

PREFIX = "/api/sandbox-modules"
MODULE_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
PACK_NAME = re.compile(r"(?:@[a-z0-9][a-z0-9._-]*/)?[a-z0-9][a-z0-9._-]*")
DIGEST = re.compile(r"sha256-[A-Za-z0-9+/]{43}=")
# Static imports and re-exports: `import x from "s"`, `import "s"`,
# `export { x } from "s"`. Enough for the fixture packs.
STATIC_IMPORT = re.compile(
    r"""^\s*(?:import|export)\s+(?:[^'";]*?\s+from\s+)?["']([^"']+)["']""",
    re.MULTILINE,
)
TITLES = {
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
}


def sha256_digest(data: bytes) -> str:
    """The digest in data form: sha256-<base64> (docs/catalog.md)."""
    return "sha256-" + base64.b64encode(hashlib.sha256(data).digest()).decode()


def module_id(name: str, version: str, path: str) -> str:
    """First 22 characters of base64url SHA-256 of name@version:path."""
    raw = hashlib.sha256(f"{name}@{version}:{path}".encode()).digest()
    return base64.urlsafe_b64encode(raw).decode()[:22]


def utf16_order(text: str) -> bytes:
    """The sort key of JavaScript's string order (UTF-16 code units)."""
    return text.encode("utf-16-be")


def json_digest(value) -> str:
    """SHA-256 of a JSON value written as JSON.stringify writes it."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return sha256_digest(text.encode())


def resolve_import(referrer: str, specifier: str, files: set) -> str | None:
    """A relative import's file: exact, then .js, .mjs, /index.js."""
    if not specifier.startswith("./") and not specifier.startswith("../"):
        return None
    joined = posixpath.normpath(
        posixpath.join(posixpath.dirname(referrer[2:]), specifier)
    )
    base = "./" + joined
    for candidate in (base, base + ".js", base + ".mjs", base + "/index.js"):
        if candidate in files:
            return candidate
    return None


def opaque_id(name: str, version: str, path: str) -> str:
    """An id of the server's own, as the word "opaque" allows."""
    return "srv_" + hashlib.sha1(f"{path}|{version}|{name}".encode()).hexdigest()


def read_pack(folder: str, options) -> dict:
    """One pack's summary, as the listing shows it."""
    with open(os.path.join(folder, "package.json"), encoding="utf-8") as file:
        manifest = json.load(file)
    name, version = manifest["name"], manifest["version"]
    exports = manifest["cordon"]["exports"]
    paths = list(dict.fromkeys([*exports.values(), *manifest["cordon"].get("internal", [])]))
    files = set(paths)
    bodies, imports = {}, {}
    for path in paths:
        with open(os.path.join(folder, path[2:]), "rb") as file:
            bodies[path] = file.read()
        found = (
            resolve_import(path, specifier, files)
            for specifier in STATIC_IMPORT.findall(bodies[path].decode("utf-8"))
        )
        imports[path] = list(dict.fromkeys(p for p in found if p is not None))
    digests = {path: sha256_digest(body) for path, body in bodies.items()}
    make_id = opaque_id if options.opaque_ids else module_id
    ids = {path: make_id(name, version, path) for path in paths}

    def closure(path: str) -> list:
        seen, todo = set(), [path]
        while todo:
            for dependency in imports[todo.pop()]:
                if dependency not in seen and dependency != path:
                    seen.add(dependency)
                    todo.append(dependency)
        return sorted(seen, key=utf16_order)

    graph = {
        path: json_digest(
            [[p, digests[p]] for p in [path, *closure(path)]]
        )
        for path in paths
    }
    modules = [
        {
            "id": ids[path],
            "path": path,
            "exportedAs": sorted(s for s, p in exports.items() if p == path),
            "digest": digests[path],
            "graphDigest": graph[path],
            "dependencyIds": [ids[d] for d in imports[path]],
        }
        for path in paths
    ]
    pack_graph = json_digest([[s, graph[exports[s]]] for s in sorted(exports, key=utf16_order)])
    if options.reverse_order:
        modules.reverse()
        for module in modules:
            module["exportedAs"].reverse()
            module["dependencyIds"].reverse()
    summary = {"name": name, "version": version, "graphDigest": pack_graph, "modules": modules}
    return {"summary": summary, "bodies": {ids[p]: bodies[p] for p in paths}}


def discover(packs_dir: str, options) -> dict:
    """Every pack under packs_dir (name or @scope/name folders), by name."""
    packs = {}
    for root, _dirs, names in os.walk(packs_dir):
        if "package.json" in names and root != packs_dir:
            pack = read_pack(root, options)
            packs[pack["summary"]["name"]] = pack
    return packs


def entity_tag(data: bytes, weak: bool = False) -> str:
    return ("W/" if weak else "") + '"' + sha256_digest(data) + '"'


def tag_matches(if_none_match: str | None, tag: str) -> bool:
    """The weak comparison of RFC 9110: W/ ignored, lists and * allowed."""
    if if_none_match is None:
        return False
    if if_none_match.strip() == "*":
        return True
    bare = tag.removeprefix("W/")
    return any(t.strip().removeprefix("W/") == bare for t in if_none_match.split(","))


def make_handler(options, packs: dict):
    modules = {}
    for pack in packs.values():
        for module in pack["summary"]["modules"]:
            modules[module["id"]] = (pack["summary"], module, pack["bodies"][module["id"]])
    log_lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0" if options.http10 else "HTTP/1.1"

        def log_message(self, *_args):
            pass

        def header(self, name: str, value: str):
            if options.header_case == "lower":
                name = name.lower()
            elif options.header_case == "upper":
                name = name.upper()
            self.send_header(name, value)

        def answer(self, status: int, headers: dict, body: bytes = b""):
            self.send_response_only(status)
            cors = {"Access-Control-Allow-Origin": "*", "Access-Control-Expose-Headers": "*"}
            for name, value in {**cors, **headers}.items():
                self.header(name, value)
            has_body = status not in (204, 304)
            if has_body and options.chunked and not options.http10:
                self.header("Transfer-Encoding", "chunked")
            elif has_body and not options.close_delimited:
                self.header("Content-Length", str(len(body)))
            self.end_headers()
            if has_body and self.command != "HEAD":
                self.write_body(body)
            if options.log:
                with log_lock, open(options.log, "a", encoding="utf-8") as file:
                    file.write(f"{self.command} {self.path} {status}\n")

        def write_body(self, body: bytes):
            if not options.chunked or options.http10:
                self.wfile.write(body)
                return
            for start in range(0, len(body), 64):
                chunk = body[start:start + 64]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.write(b"0\r\n\r\n")

        def problem(self, status: int, code: str, detail: str, extra: dict | None = None):
            document = {
                "type": "urn:cordon:error:" + code,
                "title": TITLES[status],
                "status": status,
                "code": code,
                "detail": detail,
            }
            if options.problem_extras:
                document |= {"instance": self.path, "traceId": "00-abc-01"}
            body = json.dumps(document).encode()
            headers = {"Content-Type": "application/problem+json", "Cache-Control": "no-store"}
            self.answer(status, {**headers, **(extra or {})}, body)

        def do_GET(self):
            target, _, query = self.path.partition("?")
            if target == PREFIX:
                return self.listing(query)
            if target.startswith(PREFIX + "/"):
                return self.module(target[len(PREFIX) + 1:], query)
            self.problem(404, "MODULE_NOT_FOUND", "No such route")

        do_HEAD = do_GET

        def do_OPTIONS(self):
            self.answer(204, {
                "Access-Control-Allow-Methods": "GET, HEAD",
                "Access-Control-Allow-Headers": "If-None-Match, Authorization",
                "Access-Control-Max-Age": "86400",
            })

        def refuse_method(self):
            self.problem(405, "METHOD_NOT_ALLOWED", "Use GET, HEAD or OPTIONS",
                         {"Allow": "GET, HEAD, OPTIONS"})

        do_POST = do_PUT = do_DELETE = do_PATCH = refuse_method

        def listing(self, query: str):
            names = None
            if not options.no_packs_query:
                values = [v for k, v in parse_query(query) if k == "packs"]
                if values:
                    names = [urllib.parse.unquote(n) for v in values for n in v.split(",")]
                    if not 1 <= len(names) <= 64 or not all(PACK_NAME.fullmatch(n) for n in names):
                        return self.problem(400, "LISTING_QUERY_INVALID", "Name 1 to 64 packs")
            chosen = sorted(packs) if names is None else sorted(n for n in set(names) if n in packs)
            if options.reverse_order:
                chosen.reverse()
            body = json.dumps({"packs": [packs[n]["summary"] for n in chosen]}).encode()
            headers = {"Content-Type": "application/json"}
            if options.gzip_listing and "gzip" in self.headers.get("Accept-Encoding", ""):
                body = gzip.compress(body)
                headers |= {"Content-Encoding": "gzip", "Vary": "Accept-Encoding"}
            tag = entity_tag(body, options.weak_etag)
            validators = {"ETag": tag, "Cache-Control": "no-cache"}
            if tag_matches(self.headers.get("If-None-Match"), tag):
                return self.answer(304, {} if options.bare_304 else validators)
            self.answer(200, {**validators, **headers}, body)

        def module(self, raw_id: str, query: str):
            module_id = urllib.parse.unquote(raw_id)
            if "/" in module_id or not MODULE_ID.fullmatch(module_id):
                return self.problem(404, "MODULE_ID_INVALID", "Use an id the listing gave")
            if module_id not in modules:
                return self.problem(404, "MODULE_NOT_FOUND", "No installed module has this id")
            pack, module, body = modules[module_id]
            pins = {urllib.parse.unquote(v) for k, v in parse_query(query) if k == "digest"}
            if pins and pins != {module["digest"]}:
                return self.problem(404, "MODULE_NOT_FOUND",
                                    "This version of the module is no longer installed: list the catalog again")
            if pack["name"] in options.forbid:
                return self.problem(403, "DELIVERY_FORBIDDEN", "This requester may not have this module")
            tag = entity_tag(body, options.weak_etag)
            cache = "public, max-age=31536000, immutable" if pins else "public, no-cache"
            headers = {"ETag": tag, "Cache-Control": cache}
            if tag_matches(self.headers.get("If-None-Match"), tag):
                return self.answer(304, {} if options.bare_304 else headers)
            dependencies = {} if options.no_dependencies else {
                "X-Cordon-Dependencies": ",".join(module["dependencyIds"]),
            }
            self.answer(200, {
                **dependencies,
                **headers,
                "Content-Type": options.content_type + "; charset=utf-8",
                "Repr-Digest": repr_digest(body, options.repr_digest),
                "X-Cordon-Graph-Digest": module["graphDigest"],
                "X-Cordon-Pack": f"{pack['name']}@{pack['version']}",
                "X-Content-Type-Options": "nosniff",
            }, body)

    return Handler


def parse_query(query: str) -> list:
    """Raw key=value pairs; values stay percent-encoded (a + stays a +)."""
    return [tuple(p.partition("=")[::2]) for p in query.split("&") if p]


def repr_digest(body: bytes, mode: str) -> str:
    """Repr-Digest (RFC 9530): one or two algorithms, in the mode's order."""
    sha256 = "sha-256=:" + base64.b64encode(hashlib.sha256(body).digest()).decode() + ":"
    sha512 = "sha-512=:" + base64.b64encode(hashlib.sha512(body).digest()).decode() + ":"
    return {
        "sha-256": sha256,
        "sha-512-first": f"{sha512}, {sha256}",
        "sha-256-first": f"{sha256}, {sha512}",
    }[mode]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--packs", required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--http10", action="store_true")
    parser.add_argument("--chunked", action="store_true")
    parser.add_argument("--header-case", default="as-written")
    parser.add_argument("--content-type", default="text/javascript")
    parser.add_argument("--weak-etag", action="store_true")
    parser.add_argument("--repr-digest", default="sha-256")
    parser.add_argument("--no-packs-query", action="store_true")
    parser.add_argument("--forbid", action="append", default=[])
    for flag in ("--reverse-order", "--problem-extras", "--opaque-ids", "--close-delimited",
                 "--gzip-listing", "--bare-304", "--no-dependencies"):
        parser.add_argument(flag, action="store_true")
    parser.add_argument("--log")
    options = parser.parse_args()
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", options.port), make_handler(options, discover(options.packs, options))
    )
    server.daemon_threads = True
    # One write, so a reader that stops at the newline never sees half a line.
    sys.stdout.write(f"LISTENING {server.server_address[1]}\n")
    sys.stdout.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    sys.exit(0)


if __name__ == "__main__":
    main()
