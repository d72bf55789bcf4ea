#!/usr/bin/env python3
"""web_site: an offline, multi-origin web site for the web record/replay tests (issue 21, tm-webreplay).

Several host names on several addresses, each origin served by Debian's nginx at its own address and port:

    www.replay.test     10.77.0.1      https 443 (HTTP/2 and HTTP/1.1 by ALPN), http 80
    static.replay.test  10.77.0.2      https 443, http 80, and https 8443 (a TLS origin on another port)
    img.replay.test     10.77.0.2      https 443, http 80 (shares its address with static.replay.test)
    api.replay.test     10.77.0.3      https 443, http 80, and http 8080 (a plain origin on another port)
    v6.replay.test      fd77::3        https 443, http 80 (IPv6; with ipv6=True, the default)

The pages:

    https://www.replay.test/           index.html, PAGE_OBJECTS objects over the four IPv4 names, port 443 only,
                                       so that Mahimahi's mm-webrecord (which speaks TLS on 443 only, IPv4
                                       only) records it whole. When every object has loaded and checked out,
                                       its script sets document.title = "complete N" (N = PAGE_OBJECTS) and
                                       <html data-complete="N">; on a failure, "incomplete: WHAT".
    http://www.replay.test/plain.html  a plain-HTTP page: an image from img.replay.test:80 and a script from
                                       api.replay.test:8080; its title becomes "complete 2".

What the main page exercises: CSS (one @imported by another), JS (one loaded by another), PNG images of
sizes from about 100 B to 6 KB (valid PNGs of seeded noise, stored uncompressed: deterministic on any
machine), a font (seeded bytes served as font/woff2, fetched with fetch()), JSON by fetch(); a redirect
(https://www.replay.test/old/logo.png answers 301 to https://img.replay.test/img/logo.png); a cookie
(/login sets session=replay-42, and /account.json answers 200 with it, 403 without); a query string
(https://api.replay.test/api/data?id=3 and ?id=4 are different bodies, any other id is 404); compressed
responses (nginx's gzip for CSS, JSON and HTML: chunked over HTTP/1.1; gzip_static for /js/vendor.js, a
precompressed .gz served with a Content-Length). Every body is Content-Encoding: gzip only when the client
sent Accept-Encoding: gzip.

Use (as root: the addresses are added to a loopback, and nginx listens on 80 and 443):

    site = start_site(workdir)                 # the addresses on the host's lo, nginx in the host namespace
    site = start_site(workdir, netns="NAME")   # the addresses on NAME's lo, nginx in NAME (ip netns)
    ...
    site.stop()                                # nginx stopped, the addresses removed (also on failure)

or `with serving(workdir, netns=None) as site:`, or `with private_netns() as name:` for a namespace of the
test's own (lo up; forwarding on with forward=True, as Mahimahi insists). The Site says what is served: its
origins, names() {name: [addresses]}, addresses(), urls(), objects (each with url, scheme, host, address, port,
path, status, content type, its expected decoded body and what it exercises), expected(url) (the body),
resolver_rules() (Chromium's --host-resolver-rules), curl_resolve(url) (curl's --resolve), hosts() (an
/etc/hosts text), ca (the CA certificate, PEM, to trust), access_log() (what nginx served, one dict a
request). build_site(directory) writes the content alone (no root, no nginx) and returns the same description.

A fixture, for instance:

    @pytest.fixture
    def web_site(tmp_path):
        with serving(tmp_path / "site") as site:  # the host's lo; netns=NAME for a namespace's
            yield site

(pytest's tmp_path is private to root: copy site.ca somewhere public for an unprivileged browser.) The
recordings of this site that other programs made, and how, are in tests/data/web/ (README.md there).

On the host, the IPv4 addresses carry the label lo:tmsite, so a leftover is recognizable; `python3
web_site.py cleanup` removes leftovers (tmsite-labelled and fd77:: addresses on lo, tmsite-* namespaces).
`python3 web_site.py serve [--dir D] [--netns NAME] [--no-ipv6]` serves until Ctrl-C;
`python3 web_site.py build DIR` writes the content and prints the description as JSON.
"""
import argparse
import contextlib
import gzip
import hashlib
import ipaddress
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.parse
import zlib
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Tuple

LABEL = "lo:tmsite"  # the label of the site's IPv4 addresses on a loopback (a leftover is recognizable)
NETNS_PREFIX = "tmsite-"
PAGE_OBJECTS = 38  # the requests index.html makes (and checks), besides its own; its title says "complete 38"
COOKIE = "session=replay-42"
START_TIMEOUT = 15.0


@dataclass(frozen=True)
class Origin:
    name: str
    address: str
    https_ports: Tuple[int, ...] = (443,)
    http_ports: Tuple[int, ...] = (80,)
    cors: bool = True  # Access-Control-Allow-Origin: * (fetch() and fonts from another origin)


ORIGINS = (
    Origin("www.replay.test", "10.77.0.1", cors=False),
    Origin("static.replay.test", "10.77.0.2", https_ports=(443, 8443)),
    Origin("img.replay.test", "10.77.0.2"),
    Origin("api.replay.test", "10.77.0.3", http_ports=(80, 8080)),
)
ORIGIN6 = Origin("v6.replay.test", "fd77::3")


@dataclass
class SiteObject:
    """One URL the site serves and what it must answer. body is the decoded body (what a client has once any
    Content-Encoding is undone), None when not compared (nginx's own redirect page)."""

    url: str
    scheme: str
    host: str
    address: str
    port: int
    path: str  # with the query string
    status: int = 200
    content_type: str = ""
    body: Optional[bytes] = None
    page: str = ""  # the page that loads it ("index", "plain"), "" for an extra
    features: List[str] = field(default_factory=list)  # "redirect", "cookie", "query", "gzip", "gzip_static"
    location: str = ""  # a redirect's target
    file: str = ""  # the file served, relative to the content directory

    def describe(self):
        d = asdict(self)
        d["body_sha256"] = None if self.body is None else hashlib.sha256(self.body).hexdigest()
        d["body_size"] = None if self.body is None else len(self.body)
        del d["body"]
        return d


# ---------------------------------------------------------------------------------------------------------
# Content: deterministic bytes


def seeded(seed: str, n: int) -> bytes:
    """N bytes that depend on SEED alone (SHA-256 in counter mode: the same on any machine and Python)."""
    out, i = bytearray(), 0
    while len(out) < n:
        out += hashlib.sha256(f"{seed}/{i}".encode()).digest()
        i += 1
    return bytes(out[:n])


def _zlib_stored(data: bytes) -> bytes:
    """A zlib stream of stored (uncompressed) blocks: no dependence on the zlib library's choices."""
    out = bytearray(b"\x78\x01")
    blocks = [data[i:i + 65535] for i in range(0, len(data), 65535)] or [b""]
    for i, b in enumerate(blocks):
        out.append(1 if i == len(blocks) - 1 else 0)
        out += struct.pack("<HH", len(b), 0xFFFF ^ len(b)) + b
    return bytes(out + struct.pack(">I", zlib.adler32(data)))


def png(size: int, seed: str) -> bytes:
    """A valid RGB PNG of seeded noise, about SIZE bytes (its pixel data stored, not compressed)."""
    width = max(1, int((max(size - 70, 4) / 3) ** 0.5))
    height = max(1, (size - 70) // (1 + 3 * width))
    noise = seeded(seed, height * 3 * width)
    raw = b"".join(b"\x00" + noise[r * 3 * width:(r + 1) * 3 * width] for r in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", _zlib_stored(raw)) + chunk(b"IEND", b""))


WORDS = ("replay record origin packet window stream header cookie query redirect trace delay link queue "
         "browser socket frame chunk mahimahi tracemod").split()


def text(seed: str, n: int, line: str) -> str:
    """About N characters of compressible, seeded filler: lines LINE.format(i=..., w=...)."""
    out, i = [], 0
    noise = seeded(seed, 4096)
    while sum(map(len, out)) < n:
        w = " ".join(WORDS[noise[(i * 3 + k) % len(noise)] % len(WORDS)] for k in range(3))
        out.append(line.format(i=i, w=w) + "\n")
        i += 1
    return "".join(out)


IMAGE_SIZES = (100, 150, 200, 300, 400, 500, 600, 700, 800, 1000, 1200, 1400, 1600, 1800, 2000, 2300, 2600,
               3000, 3500, 4000, 5000, 6000)

INDEX_JS = r"""
(function () {
  var expected = %(expected)d;
  var done = 0, failed = [];
  function ok(what) { done += 1; }
  function bad(what) { failed.push(what); }
  function check(cond, what) { if (cond) ok(what); else bad(what); }
  function finish() {
    if (failed.length === 0 && done === expected) {
      document.title = "complete " + done;
      document.documentElement.setAttribute("data-complete", String(done));
    } else {
      document.title = "incomplete: " + (failed.join(", ") || (done + " of " + expected));
      document.documentElement.setAttribute("data-incomplete", failed.join(" "));
    }
  }
  function text(url, opts) {
    return fetch(url, opts).then(function (r) { return r.text().then(function (t) { return [r.status, t]; }); });
  }
  var fetches = [
    text("https://api.replay.test/api/data?id=3").then(function (r) {
      check(r[0] === 200 && JSON.parse(r[1]).id === 3, "query id=3"); }),
    text("https://api.replay.test/api/data?id=4").then(function (r) {
      check(r[0] === 200 && JSON.parse(r[1]).id === 4, "query id=4"); }),
    text("https://api.replay.test/api/config.json").then(function (r) {
      check(r[0] === 200 && JSON.parse(r[1]).site === "replay", "config.json"); }),
    text("/login", {credentials: "same-origin"}).then(function (r) {
      check(r[0] === 200, "login");
      return text("/account.json", {credentials: "same-origin"});
    }).then(function (r) { check(r[0] === 200 && JSON.parse(r[1]).user === "replay", "cookie account.json"); }),
    fetch("https://static.replay.test/fonts/replay.woff2").then(function (r) { return r.arrayBuffer(); })
      .then(function (b) { check(b.byteLength === %(font_size)d, "font"); }),
  ].map(function (p) { return p.catch(function (e) { bad(String(e)); }); });
  window.addEventListener("load", function () {
    Promise.all(fetches).then(function () {
      var imgs = document.querySelectorAll("img");
      for (var i = 0; i < imgs.length; i++) {
        var src = imgs[i].getAttribute("src"), loaded = imgs[i].complete && imgs[i].naturalWidth > 0;
        check(loaded, "img " + src);
        if (src.indexOf("/old/") >= 0) check(loaded, "redirect " + src);  // two requests: the 301 and its target
      }
      var css = getComputedStyle(document.documentElement);
      ["main", "theme", "print"].forEach(function (n) {
        check(css.getPropertyValue("--css-" + n).trim() === "1", "css " + n); });
      var scripts = window.__scripts || [];
      ["vendor", "util", "app", "analytics", "late"].forEach(function (n) {
        check(scripts.indexOf(n) >= 0, "js " + n); });
      finish();
    });
  });
})();
"""


def _object(origin: Origin, scheme: str, port: int, path: str, **kw) -> SiteObject:
    default = 443 if scheme == "https" else 80
    url = f"{scheme}://{origin.name}{'' if port == default else f':{port}'}{path}"
    return SiteObject(url=url, scheme=scheme, host=origin.name, address=origin.address, port=port, path=path, **kw)


def build_site(directory, ipv6=True):
    """Writes the site's content under DIRECTORY (one directory per host name, and the nginx snippets' bodies)
    and returns its Site description (not started)."""
    directory = os.path.abspath(str(directory))
    www, static, img, api = ORIGINS
    objects: List[SiteObject] = []
    files: Dict[str, bytes] = {}

    def put(origin, path, body, scheme="https", port=None, page="index", ctype="", file=None, **kw):
        """An object at PATH on ORIGIN and the file it is served from (FILE, relative to the origin's root:
        by default PATH; "" for a body nginx.conf itself holds)."""
        port = port or (443 if scheme == "https" else 80)
        rel = "" if file == "" else os.path.join(origin.name, file or path.split("?")[0].lstrip("/"))
        if rel:
            files[rel] = body
        o = _object(origin, scheme, port, path, body=body, page=page, content_type=ctype, file=rel, **kw)
        objects.append(o)
        return o

    # Images (img.replay.test), one on static.replay.test and one on www (same-origin).
    images = []
    for i, size in enumerate(IMAGE_SIZES):
        origin = static if i == 5 else www if i == 9 else img
        o = put(origin, f"/img/{i:02d}.png", png(size, f"img{i}"), ctype="image/png")
        images.append(o)
    logo = put(img, "/img/logo.png", png(700, "logo"), ctype="image/png")
    redirect = _object(www, "https", 443, "/old/logo.png", status=301, content_type="text/html", body=None,
                       page="index", features=["redirect"], location=logo.url)
    objects.append(redirect)

    # Style sheets: main.css is big and compressible (gzip on the fly); print.css is theme.css's @import.
    main_css = (":root { --css-main: 1; }\nbody { font-family: sans-serif; }\n"
                + text("css", 4000, ".c{i} {{ margin: {i}px; /* {w} */ }}")).encode()
    put(static, "/css/main.css", main_css, ctype="text/css", features=["gzip"])
    put(static, "/css/theme.css", ("@import url(print.css);\n:root { --css-theme: 1; }\nh1 { color: #234; }\n"
                                   + text("theme", 1200, ".t{i} {{ padding: {i}px; }}")).encode(), ctype="text/css",
        features=["gzip"])
    put(static, "/css/print.css", b":root { --css-print: 1; }\n@media print { img { display: none; } }\n",
        ctype="text/css")

    # Scripts: vendor.js precompressed (gzip_static), late.js loaded by app.js.
    def script(name, n):
        return (f"window.__scripts = (window.__scripts || []).concat([{json.dumps(name)}]);\n"
                + text(name, n, "function f_" + name + "_{i}() {{ return '{w}'; }}")).encode()

    vendor = script("vendor", 6000)
    put(static, "/js/vendor.js", vendor, ctype="application/javascript", features=["gzip", "gzip_static"])
    files[os.path.join(static.name, "js/vendor.js.gz")] = gzip.compress(vendor, 9, mtime=0)
    put(static, "/js/util.js", script("util", 900), ctype="application/javascript")
    late_url = f"https://{static.name}/js/late.js"
    app = script("app", 2500) + (
        "(function () { var s = document.createElement('script'); s.src = " + json.dumps(late_url)
        + "; document.head.appendChild(s); })();\n").encode()
    put(static, "/js/app.js", app, ctype="application/javascript", features=["gzip"])
    put(static, "/js/late.js", script("late", 300), ctype="application/javascript")
    put(static, "/js/analytics.js", script("analytics", 400), ctype="application/javascript")

    # A font (seeded bytes), JSON, the query string and the cookie.
    font = seeded("font", 2000)
    put(static, "/fonts/replay.woff2", font, ctype="font/woff2")
    for i in (3, 4):
        data = json.dumps({"id": i, "items": [f"item-{i}-{k}" for k in range(12 * i)]}).encode() + b"\n"
        put(api, f"/api/data?id={i}", data, ctype="application/json", features=["query", "gzip"],
            file=f"api/data-{i}.json")
    put(api, "/api/config.json", json.dumps({"site": "replay", "version": 1}).encode() + b"\n",
        ctype="application/json")
    put(www, "/login", b'{"login":"ok"}\n', ctype="application/json", features=["cookie"], file="")
    put(www, "/account.json", b'{"user":"replay","plan":"test"}\n', ctype="application/json",
        features=["cookie"])

    # The page.
    imgs = "".join(f'  <img src="{o.url}" alt="{os.path.basename(o.path)}">\n' for o in images)
    index_js = INDEX_JS % {"expected": PAGE_OBJECTS, "font_size": len(font)}
    index = ("<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"utf-8\">\n<title>loading</title>\n"
             '<link rel="icon" href="data:,">\n'
             + "".join(f'<link rel="stylesheet" href="https://{static.name}/css/{n}.css">\n'
                       for n in ("main", "theme"))
             + "".join(f'<script src="https://{static.name}/js/{n}.js"></script>\n' for n in ("vendor", "util"))
             + f"<script>{index_js}</script>\n</head>\n<body>\n<h1>tracemod replay test site</h1>\n"
             + "<p>" + text("index", 800, "{w} {i}.") .replace("\n", " ") + "</p>\n"
             + imgs + f'  <img src="{redirect.url}" alt="logo (redirected)">\n'
             + "".join(f'<script src="https://{static.name}/js/{n}.js" async></script>\n'
                       for n in ("app", "analytics"))
             + "</body>\n</html>\n").encode()
    put(www, "/", index, ctype="text/html", page="", features=["gzip"], file="index.html")

    # The plain-HTTP page and its two objects.
    plain_img = put(img, "/img/plain.png", png(1500, "plain"), scheme="http", page="plain", ctype="image/png")
    plain_js = put(api, "/api/plain.js", b"window.__plain = 1;\n", scheme="http", port=8080, page="plain",
                   ctype="application/javascript")
    plain = ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>loading</title>"
             '<link rel="icon" href="data:,">'
             f'<script src="{plain_js.url}"></script></head>\n<body>\n<img id="i" src="{plain_img.url}">\n'
             "<script>window.addEventListener('load', function () {\n"
             "  var i = document.getElementById('i');\n"
             "  var n = (window.__plain === 1 ? 1 : 0) + (i.complete && i.naturalWidth > 0 ? 1 : 0);\n"
             "  document.title = n === 2 ? 'complete 2' : 'incomplete: ' + n + ' of 2';\n"
             "  if (n === 2) document.documentElement.setAttribute('data-complete', '2');\n"
             "});</script>\n</body></html>\n").encode()
    put(www, "/plain.html", plain, scheme="http", page="", ctype="text/html", features=["gzip"])

    # Extras, not on a page: a TLS origin on another port, and the IPv6 origin.
    put(static, "/js/port.js", script("port", 200), port=8443, page="", ctype="application/javascript")
    origins = list(ORIGINS)
    if ipv6:
        origins.append(ORIGIN6)
        put(ORIGIN6, "/v6.json", b'{"family":"inet6"}\n', page="", ctype="application/json")

    assert sum(1 for o in objects if o.page == "index") == PAGE_OBJECTS, \
        (sum(1 for o in objects if o.page == "index"), PAGE_OBJECTS)
    objects.sort(key=lambda o: o.url != "https://www.replay.test/")  # the main page first
    content = os.path.join(directory, "content")
    for rel, body in files.items():
        path = os.path.join(content, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(body)
    for root, dirs, names in os.walk(directory):  # readable by nginx whatever its user
        os.chmod(root, 0o755)
        for n in names:
            os.chmod(os.path.join(root, n), 0o644)
    return Site(directory=directory, origins=origins, objects=objects)


# ---------------------------------------------------------------------------------------------------------
# The description


@dataclass
class Site:
    directory: str
    origins: List[Origin]
    objects: List[SiteObject]
    netns: Optional[str] = None
    ca: str = ""
    proc: Optional[subprocess.Popen] = None
    added: List[Tuple[str, str]] = field(default_factory=list)  # (address, netns or "") we put on a lo

    @property
    def content(self):
        return os.path.join(self.directory, "content")

    @property
    def index_url(self):
        return "https://www.replay.test/"

    @property
    def plain_url(self):
        return "http://www.replay.test/plain.html"

    def names(self) -> Dict[str, List[str]]:
        out: Dict[str, List[str]] = {}
        for o in self.origins:
            out.setdefault(o.name, [])
            if o.address not in out[o.name]:
                out[o.name].append(o.address)
        return out

    def addresses(self) -> List[str]:
        return list(dict.fromkeys(o.address for o in self.origins))

    def endpoints(self) -> List[Tuple[str, str, int]]:
        """(scheme, address, port) of every listening socket."""
        out = []
        for o in self.origins:
            out += [("https", o.address, p) for p in o.https_ports] + [("http", o.address, p) for p in o.http_ports]
        return list(dict.fromkeys(out))

    def urls(self, page=None) -> List[str]:
        """Every URL served (the main page first), or those PAGE ("index", "plain") loads."""
        if page is None:
            return [o.url for o in self.objects]
        return [o.url for o in self.objects if o.page == page]

    def object(self, url) -> SiteObject:
        for o in self.objects:
            if o.url == url:
                return o
        raise KeyError(url)

    def expected(self, url) -> Optional[bytes]:
        """URL's decoded body, byte for byte (None: not compared)."""
        return self.object(url).body

    def resolver_rules(self) -> str:
        """Chromium's --host-resolver-rules: every name to its address (no DNS needed)."""
        return ", ".join(f"MAP {n} {'[' + a[0] + ']' if ':' in a[0] else a[0]}" for n, a in self.names().items())

    def curl_resolve(self, url=None) -> List[str]:
        """curl's --resolve options for URL's host and port (for every name and port without URL)."""
        want = None
        if url:
            u = urllib.parse.urlsplit(url)
            want = (u.hostname, u.port or (443 if u.scheme == "https" else 80))
        out = []
        for o in self.origins:
            addr = f"[{o.address}]" if ":" in o.address else o.address
            for p in o.https_ports + o.http_ports:
                if want is None or want == (o.name, p):
                    out += ["--resolve", f"{o.name}:{p}:{addr}"]
        return out

    def hosts(self) -> str:
        return "".join(f"{a} {n}\n" for n, addrs in self.names().items() for a in addrs)

    def describe(self) -> dict:
        return {"directory": self.directory, "ca": self.ca, "netns": self.netns, "index": self.index_url,
                "plain": self.plain_url, "page_objects": PAGE_OBJECTS, "names": self.names(),
                "endpoints": self.endpoints(), "resolver_rules": self.resolver_rules(),
                "objects": [o.describe() for o in self.objects]}

    def access_log(self) -> List[dict]:
        """What nginx has served: one dict a request (host, addr, port, scheme, protocol, request, status,
        bytes, encoding, cookie)."""
        out = []
        try:
            with open(os.path.join(self.directory, "access.log"), encoding="utf-8") as f:
                for line in f:
                    if line.strip():
                        out.append(json.loads(line))
        except FileNotFoundError:
            pass
        return out

    def stop(self):
        """Stops nginx and removes the addresses this Site added. Safe to call twice."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            self.proc = None
        for address, netns in reversed(self.added):
            _ip(netns, "addr", "del", _prefix(address), "dev", "lo", check=False)
        self.added = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


# ---------------------------------------------------------------------------------------------------------
# Serving


def _ip(netns, *args, check=True):
    argv = ["ip"] + (["-n", netns] if netns else []) + list(args)
    out = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if check and out.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {out.stderr.strip()}")
    return out


def _prefix(address):
    return f"{address}/{128 if ':' in address else 32}"


def _openssl(args, cwd):
    out = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if out.returncode != 0:
        raise RuntimeError(f"openssl {args[0]}: {(out.stderr.strip().splitlines() or ['failed'])[-1]}")


def make_certificates(directory, names, addresses):
    """A CA made for this site alone (ca.pem; its key is deleted once used) and one server certificate for
    every NAME and ADDRESS (server.pem, server.key), as tracemod_run's browser workload makes them."""
    san = ",".join([f"DNS:{n}" for n in names] + [f"IP:{a}" for a in addresses])
    with open(os.path.join(directory, "server.ext"), "w") as f:
        f.write(f"subjectAltName={san}\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                "extendedKeyUsage=serverAuth\n")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl(["req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "30", "-subj",
              f"/CN=tracemod replay test site CA {os.urandom(6).hex()}", "-addext",
              "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"], directory)
    _openssl(["req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=replay.test"], directory)
    _openssl(["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
              "-out", "server.pem", "-days", "30", "-extfile", "server.ext"], directory)
    os.unlink(os.path.join(directory, "ca.key"))
    return os.path.join(directory, "ca.pem")


TYPES = {"html": "text/html", "css": "text/css", "js": "application/javascript", "json": "application/json",
         "png": "image/png", "woff2": "font/woff2", "txt": "text/plain"}


def nginx_config(site: Site, tls=("TLSv1.2", "TLSv1.3")) -> str:
    d = site.directory
    q = lambda p: '"' + p.replace("\\", "\\\\").replace('"', '\\"') + '"'  # noqa: E731
    tmp = os.path.join(d, "tmp")
    types = "".join(f"    {t} {ext};\n" for ext, t in TYPES.items())
    log = ('escape=json \'{"host":"$host","addr":"$server_addr","port":"$server_port","scheme":"$scheme",'
           '"protocol":"$server_protocol","request":"$request","status":$status,"bytes":$body_bytes_sent,'
           '"encoding":"$sent_http_content_encoding","cookie":"$http_cookie"}\'')
    conf = [
        "daemon off;", "master_process off;", "worker_processes 1;", f"pid {q(os.path.join(d, 'nginx.pid'))};",
        f"error_log {q(os.path.join(d, 'error.log'))} warn;", "events { worker_connections 1024; }", "http {",
        f"  types {{\n{types}  }}", "  default_type application/octet-stream;",
        f"  log_format site {log};", f"  access_log {q(os.path.join(d, 'access.log'))} site;",
        *[f"  {k}_temp_path {q(os.path.join(tmp, k))};" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")],
        "  sendfile on;", "  tcp_nodelay on;", "  keepalive_timeout 65s;", "  server_tokens off;",
        "  gzip on;", "  gzip_min_length 20;", "  gzip_comp_level 6;", "  gzip_vary on;",
        "  gzip_types text/css application/javascript application/json;",
        f"  ssl_certificate {q(os.path.join(d, 'server.pem'))};",
        f"  ssl_certificate_key {q(os.path.join(d, 'server.key'))};",
        f"  ssl_protocols {' '.join(tls)};", "  ssl_session_tickets off;",
    ]
    for o in site.origins:
        a = f"[{o.address}]" if ":" in o.address else o.address
        conf.append("  server {")
        conf += [f"    listen {a}:{p} ssl http2;" for p in o.https_ports]
        conf += [f"    listen {a}:{p};" for p in o.http_ports]
        conf += [f"    server_name {o.name};", f"    root {q(os.path.join(site.content, o.name))};",
                 "    index index.html;", "    add_header Timing-Allow-Origin \"*\" always;"]
        if o.cors:
            conf.append("    add_header Access-Control-Allow-Origin \"*\" always;")
        if o.name == "www.replay.test":
            logo = site.object("https://www.replay.test/old/logo.png").location
            conf += [
                f"    location = /old/logo.png {{ return 301 {logo}; }}",
                "    location = /login {",
                f"      add_header Set-Cookie \"{COOKIE}; Path=/; SameSite=Lax\" always;",
                "      default_type application/json;",
                "      return 200 '{\"login\":\"ok\"}\\n';",
                "    }",
                "    location = /account.json {",
                f"      if ($cookie_session != \"{COOKIE.split('=', 1)[1]}\") {{ return 403; }}",
                "    }",
            ]
        if o.name == "static.replay.test":
            conf.append("    location = /js/vendor.js { gzip_static on; }")
        if o.name == "api.replay.test":
            conf += [
                "    location = /api/data {",
                "      if ($arg_id !~ \"^[0-9]+$\") { return 400; }",
                "      rewrite ^ /api/data-$arg_id.json? break;",
                "    }",
            ]
        conf.append("  }")
    conf.append("}")
    return "\n".join(conf) + "\n"


def _die_with_parent():
    import ctypes
    ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


def _connectable(netns, endpoints) -> bool:
    """Whether every (address, port) accepts a connection (in NETNS: through `ip netns exec`)."""
    if netns:
        script = ("import socket,sys\nfor a,p in %r:\n s=socket.socket(socket.AF_INET6 if ':' in a else "
                  "socket.AF_INET)\n s.settimeout(1)\n try: s.connect((a,p))\n except OSError: sys.exit(1)\n"
                  " finally: s.close()\n" % (endpoints,))
        return subprocess.run(["ip", "netns", "exec", netns, sys.executable, "-c", script],
                              capture_output=True).returncode == 0
    for a, p in endpoints:
        with socket.socket(socket.AF_INET6 if ":" in a else socket.AF_INET) as s:
            s.settimeout(1)
            try:
                s.connect((a, p))
            except OSError:
                return False
    return True


def _existing(netns) -> set:
    out = _ip(netns, "-o", "addr", "show", "dev", "lo").stdout
    return {line.split()[3].split("/")[0] for line in out.splitlines() if len(line.split()) > 3}


def start_site(workdir, netns=None, ipv6=True, tls=("TLSv1.2", "TLSv1.3")) -> Site:
    """Builds the site in WORKDIR (a directory that may exist; made if not), puts its addresses on the
    loopback of NETNS (a name `ip netns` knows; None: the host's), and starts nginx there in the foreground
    (one process, killed if we die). TLS: the protocol versions offered (nginx's ssl_protocols): Mahimahi's
    mm-webrecord needs ("TLSv1.2",), see tests/data/web/README.md. Returns the Site, serving; Site.stop()
    undoes it all. As root."""
    if os.geteuid() != 0:
        raise PermissionError("the site needs root: its addresses go on a loopback and nginx listens on 80/443")
    workdir = os.path.abspath(str(workdir))
    os.makedirs(workdir, exist_ok=True)
    site = build_site(workdir, ipv6=ipv6)
    site.netns = netns
    for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        os.makedirs(os.path.join(workdir, "tmp", k), exist_ok=True)
    try:
        if netns:
            _ip(netns, "link", "set", "lo", "up")
        present = _existing(netns)
        taken = [a for a in site.addresses() if a in present]
        if taken:
            raise RuntimeError(f"{', '.join(taken)} already on lo{' in ' + netns if netns else ''}: another site "
                               f"is running there, or a leftover (python3 {os.path.abspath(__file__)} cleanup)")
        for a in site.addresses():
            extra = ["label", LABEL] if ":" not in a else ["nodad"]
            _ip(netns, "addr", "add", _prefix(a), "dev", "lo", *extra)
            site.added.append((a, netns or ""))
        site.ca = make_certificates(workdir, list(site.names()), site.addresses())
        conf = os.path.join(workdir, "nginx.conf")
        with open(conf, "w") as f:
            f.write(nginx_config(site, tls))
        argv = ["nginx", "-p", workdir, "-e", os.path.join(workdir, "error.log"), "-c", conf]
        if netns:
            argv = ["ip", "netns", "exec", netns] + argv
        site.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, preexec_fn=_die_with_parent)
        endpoints = [(a, p) for _, a, p in site.endpoints()]
        deadline = time.monotonic() + START_TIMEOUT
        while not _connectable(netns, endpoints):
            if site.proc.poll() is not None:
                err = site.proc.stderr.read().decode(errors="replace").strip()
                try:
                    with open(os.path.join(workdir, "error.log")) as f:
                        err += f.read()
                except OSError:
                    pass
                raise RuntimeError(f"nginx exited with status {site.proc.returncode}: {err.strip()[-500:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"nginx did not listen on {endpoints} within {START_TIMEOUT} s")
            time.sleep(0.05)
        return site
    except BaseException:
        site.stop()
        raise


@contextlib.contextmanager
def serving(workdir, netns=None, ipv6=True, tls=("TLSv1.2", "TLSv1.3")):
    """with serving(dir) as site: ... (stopped and its addresses removed however the block ends)."""
    site = start_site(workdir, netns=netns, ipv6=ipv6, tls=tls)
    try:
        yield site
    finally:
        site.stop()


@contextlib.contextmanager
def private_netns(forward=False):
    """A network namespace of our own (tmsite-PID-N, loopback up), deleted at the end; FORWARD: IPv4
    forwarding on in it (Mahimahi's shells refuse to start without)."""
    name = f"{NETNS_PREFIX}{os.getpid()}-{os.urandom(2).hex()}"
    subprocess.run(["ip", "netns", "add", name], check=True, capture_output=True)
    try:
        _ip(name, "link", "set", "lo", "up")
        if forward:
            subprocess.run(["ip", "netns", "exec", name, "sysctl", "-qw", "net.ipv4.ip_forward=1"], check=True,
                           capture_output=True)
        yield name
    finally:
        subprocess.run(["ip", "netns", "delete", name], capture_output=True)


def cleanup():
    """Removes leftovers: the tmsite-labelled and fd77:: addresses on the host's lo, tmsite-* namespaces."""
    removed = []
    for line in _ip(None, "-o", "addr", "show", "dev", "lo").stdout.splitlines():
        f = line.split()
        if len(f) > 3 and (line.rstrip().endswith(LABEL) or f[3].startswith("fd77::")):
            _ip(None, "addr", "del", f[3], "dev", "lo", check=False)
            removed.append(f[3])
    for line in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        if name.startswith(NETNS_PREFIX):
            subprocess.run(["ip", "netns", "delete", name], capture_output=True)
            removed.append(f"netns {name}")
    return removed


def main(argv=None):
    ap = argparse.ArgumentParser(description="the replay test site (tests/integration/web_site.py)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="serve until Ctrl-C or SIGTERM")
    s.add_argument("--dir", help="the work directory (default: a new one in $TMPDIR, removed at the end)")
    s.add_argument("--netns", help="serve in this network namespace (ip netns) instead of the host")
    s.add_argument("--no-ipv6", action="store_true", help="leave out v6.replay.test (fd77::3)")
    s.add_argument("--ready", help="write the description (JSON) to this file once serving")
    s.add_argument("--tls12", action="store_true", help="TLS 1.2 only (what Mahimahi's mm-webrecord needs)")
    b = sub.add_parser("build", help="write the content to DIR and print the description (JSON)")
    b.add_argument("dir")
    b.add_argument("--no-ipv6", action="store_true")
    sub.add_parser("cleanup", help="remove leftover addresses and namespaces")
    args = ap.parse_args(argv)
    if args.cmd == "build":
        print(json.dumps(build_site(args.dir, ipv6=not args.no_ipv6).describe(), indent=1))
        return 0
    if args.cmd == "cleanup":
        for r in cleanup():
            print(f"removed {r}")
        return 0
    workdir = args.dir or tempfile.mkdtemp(prefix="tmsite-")
    stop = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.append(1))
    try:
        tls = ("TLSv1.2",) if args.tls12 else ("TLSv1.2", "TLSv1.3")
        with serving(workdir, netns=args.netns, ipv6=not args.no_ipv6, tls=tls) as site:
            desc = site.describe()
            if args.ready:
                with open(args.ready + ".tmp", "w") as f:
                    json.dump(desc, f, indent=1)
                os.rename(args.ready + ".tmp", args.ready)
            print(f"serving {site.index_url} and {site.plain_url}\n  names: "
                  + ", ".join(f"{n} {' '.join(a)}" for n, a in site.names().items())
                  + f"\n  CA: {site.ca}\n  chromium --host-resolver-rules=\"{site.resolver_rules()}\" "
                  f"--ignore-certificate-errors ...\n  curl {' '.join(site.curl_resolve(site.index_url))} "
                  f"--cacert {site.ca} {site.index_url}\nCtrl-C stops", flush=True)
            while not stop:
                if site.proc.poll() is not None:
                    print(f"nginx exited with status {site.proc.returncode}", file=sys.stderr)
                    return 1
                time.sleep(0.2)
    finally:
        if not args.dir:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
