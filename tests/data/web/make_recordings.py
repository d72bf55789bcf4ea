#!/usr/bin/env python3
"""Makes tests/data/web/mahimahi-site/ (Mahimahi's own mm-webrecord, recording headless Chromium loading the
test site) and tests/data/web/site.har (headless Chromium loading the site directly, its DevTools protocol
events written as HAR 1.2, as "Save all as HAR with content" writes them). README.md here says what came out.

    make_recordings.py all [--out DIR]     as root: everything (needs Mahimahi's mm-webrecord, mm-webreplay,
                                           mm-replayserver and libmod_deepcgi installed, mm-* setuid root, the
                                           user mmuser, chromium, nginx, apache2, dnsmasq)
    make_recordings.py load [--har FILE] [--rules RULES] URL...
                                           the client: loads each URL in one fresh headless Chromium, waiting
                                           until the page's title says "complete N" (or "incomplete: ...");
                                           with --har, writes what the browser saw as HAR
    make_recordings.py list [DIR]          one line per file of a Mahimahi directory (mahimahi-site/)
    make_recordings.py check [DIR]         as root: Mahimahi's mm-replayserver answers each recorded request
                                           with its recorded response?
    make_recordings.py replay [DIR] [URL...]
                                           as root: mm-webreplay's setup by hand (this kernel has no dummy
                                           interfaces, which mm-webreplay needs), Chromium loading the pages

`all` does, in a network namespace of its own (tmsite-PID-X: IPv4 forwarding on in it, as Mahimahi insists;
the host is not touched):
  1. the site of tests/integration/web_site.py, IPv4 only (Mahimahi's proxy is IPv4-only) and TLS 1.2 only
     (Mahimahi's proxy hangs on a TLS 1.3 origin), then as mmuser:
     mm-webrecord REC /usr/bin/python3 make_recordings.py load --rules RULES https://www.replay.test/
     http://www.replay.test/plain.html  (Chromium maps every name to its address itself: no DNS needed)
  2. as mmuser: mm-webreplay REC ... (it fails here: no CONFIG_DUMMY), its outcome reported
  3. the site again (TLS 1.2 and 1.3), and as root: make_recordings.py load --har site.har --rules RULES
     (both pages, straight to the site: HTTP/2 over TLS for the first)
  4. check and replay on the copied directory.
Only the Mahimahi tools come from outside the project; nothing here is needed to run the tests.
"""
import argparse
import base64
import collections
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
MM_USER = "mmuser"
PAGES = ["https://www.replay.test/", "http://www.replay.test/plain.html"]
MM_REPLAYSERVER = shutil.which("mm-replayserver", path="/usr/local/bin:/usr/bin") or "/usr/local/bin/mm-replayserver"
CHROMIUM_FLAGS = [  # as tracemod_run's browser workload: nothing but the page reaches the network
    "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-quic",
    "--no-proxy-server", "--disable-breakpad", "--disable-domain-reliability", "--disable-extensions",
    "--disable-default-apps", "--disable-client-side-phishing-detection", "--disable-hang-monitor",
    "--disable-features=Translate,OptimizationHints,MediaRouter,HttpsUpgrades,HttpsFirstBalancedModeAutoEnable",
    "--metrics-recording-only", "--password-store=basic", "--use-mock-keychain", "--mute-audio",
    "--window-size=1280,800", "--remote-debugging-port=0", "--ignore-certificate-errors",
]
LOAD_TIMEOUT = 40.0


# ---------------------------------------------------------------------------------------------------------
# The client: Chromium through its DevTools protocol


class CDP:
    def __init__(self, url):
        import websocket  # python3-websocket
        self.ws = websocket.create_connection(url, timeout=60, suppress_origin=True)
        self.n = 0
        self.events = collections.deque()

    def call(self, method, params=None, session=None):
        self.n += 1
        msg = {"id": self.n, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        self.ws.settimeout(60)
        while True:
            m = json.loads(self.ws.recv())
            if m.get("id") == self.n:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def pump(self, timeout):
        self.ws.settimeout(timeout)
        try:
            self.events.append(json.loads(self.ws.recv()))
        except Exception:  # noqa: BLE001 - a timeout: nothing came
            pass


def start_chromium(rules, home):
    exe = shutil.which("chromium") or "/usr/bin/chromium"
    argv = [exe, *CHROMIUM_FLAGS, f"--user-data-dir={os.path.join(home, 'profile')}"]
    if rules:
        argv.append(f"--host-resolver-rules={rules}")
    env = {"PATH": "/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8", "XDG_CONFIG_HOME": os.path.join(home, ".config"),
           "XDG_CACHE_HOME": os.path.join(home, ".cache")}
    proc = subprocess.Popen(argv + ["about:blank"], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 60
    for raw in proc.stderr:
        line = raw.decode(errors="replace")
        if "DevTools listening on " in line:
            return proc, line.split("DevTools listening on ", 1)[1].strip()
        if time.monotonic() > deadline:
            break
    proc.kill()
    raise RuntimeError("chromium did not start")


def load_pages(urls, rules=None):
    """Loads each of URLS in one browser (one tab, one after the other); returns [(url, title, events, bodies)]."""
    home = tempfile.mkdtemp(prefix="tmsite-chromium-")
    proc, endpoint = start_chromium(rules, home)
    out = []
    try:
        cdp = CDP(endpoint)
        target = next(t for t in cdp.call("Target.getTargets")["targetInfos"] if t["type"] == "page")
        s = cdp.call("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})["sessionId"]
        for m in ("Page.enable", "Network.enable", "Runtime.enable"):
            cdp.call(m, {}, s)
        for url in urls:
            cdp.events.clear()
            cdp.call("Page.navigate", {"url": url}, s)
            deadline, title = time.monotonic() + LOAD_TIMEOUT, ""
            while time.monotonic() < deadline:
                cdp.pump(0.2)
                title = cdp.call("Runtime.evaluate", {"expression": "document.title", "returnByValue": True},
                                 s)["result"].get("value", "")
                if title.startswith(("complete", "incomplete")):
                    break
            end = time.monotonic() + 0.5  # the stragglers' loadingFinished
            while time.monotonic() < end:
                cdp.pump(0.1)
            events = list(cdp.events)
            cdp.events.clear()
            bodies = {}
            for e in events:
                if e.get("method") == "Network.loadingFinished":
                    rid = e["params"]["requestId"]
                    try:
                        bodies[rid] = cdp.call("Network.getResponseBody", {"requestId": rid}, s)
                    except RuntimeError:
                        pass
            events += list(cdp.events)
            cdp.events.clear()
            out.append((url, title, events, bodies))
            print(f"{url}: {title}", file=sys.stderr, flush=True)
    finally:
        try:
            os.killpg(proc.pid, 9)
        except OSError:
            pass
        proc.wait()
        shutil.rmtree(home, ignore_errors=True)
    return out


# ---------------------------------------------------------------------------------------------------------
# HAR 1.2 from the protocol's events


def _iso(wall):
    return datetime.datetime.fromtimestamp(wall, datetime.timezone.utc).isoformat(timespec="milliseconds") \
        .replace("+00:00", "Z")


def _headers(d):
    out = []
    for k, v in (d or {}).items():
        for one in str(v).split("\n"):  # the protocol joins repeated headers with a newline
            out.append({"name": k, "value": one})
    return out


def _cookies_request(headers):
    for h in headers:
        if h["name"].lower() == "cookie":
            return [{"name": c.split("=", 1)[0].strip(), "value": c.split("=", 1)[1] if "=" in c else ""}
                    for c in h["value"].split(";") if c.strip()]
    return []


def _cookies_response(headers):
    out = []
    for h in headers:
        if h["name"].lower() == "set-cookie":
            parts = [p.strip() for p in h["value"].split(";")]
            name, _, value = parts[0].partition("=")
            c = {"name": name, "value": value}
            for p in parts[1:]:
                k, _, v = p.partition("=")
                k = k.lower()
                if k == "path":
                    c["path"] = v
                elif k == "domain":
                    c["domain"] = v
                elif k == "httponly":
                    c["httpOnly"] = True
                elif k == "secure":
                    c["secure"] = True
                elif k == "samesite":
                    c["sameSite"] = v
            out.append(c)
    return out


def _version(protocol):
    return {"h2": "http/2.0", "h3": "http/3.0"}.get((protocol or "").lower(), (protocol or "http/1.1").lower())


TEXT_TYPES = ("text/", "application/javascript", "application/json", "application/xml", "image/svg+xml")


def har_from(loads):
    """HAR 1.2 (as Chromium's DevTools write it, their underscored extras included) of LOADS."""
    pages, entries = [], []
    for n, (url, title, events, bodies) in enumerate(loads, 1):
        page_id = f"page_{n}"
        sent, extra_req, extra_resp, finished, received, chain = {}, {}, {}, {}, collections.Counter(), []
        first_wall = None
        lifecycle = {}
        for e in events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Network.requestWillBeSent":
                rid = p["requestId"]
                if "redirectResponse" in p and rid in sent:  # the previous hop ends in a redirect
                    chain.append((sent.pop(rid), p["redirectResponse"], extra_req.pop(rid, None),
                                  extra_resp.pop(rid, None), None, p["timestamp"], 0))
                sent[rid] = p
                first_wall = first_wall or p["wallTime"]
            elif m == "Network.requestWillBeSentExtraInfo":
                extra_req[p["requestId"]] = p
            elif m == "Network.responseReceivedExtraInfo":
                extra_resp[p["requestId"]] = p
            elif m == "Network.responseReceived":
                sent.setdefault(p["requestId"], {})["_response"] = p["response"]
                sent[p["requestId"]]["_type"] = p.get("type")
            elif m == "Network.dataReceived":
                received[p["requestId"]] += p.get("encodedDataLength", 0)
            elif m == "Network.loadingFinished":
                finished[p["requestId"]] = p
            elif m == "Page.domContentEventFired":
                lifecycle["dcl"] = p["timestamp"]
            elif m == "Page.loadEventFired":
                lifecycle["load"] = p["timestamp"]
        done = []
        for rid, req in sent.items():
            if rid in finished and "_response" in req:
                done.append((req, req["_response"], extra_req.get(rid), extra_resp.get(rid), bodies.get(rid),
                             finished[rid]["timestamp"], received[rid] or finished[rid].get("encodedDataLength", 0)))
        start_ts = min((r[0]["timestamp"] for r in done + chain), default=0)
        pages.append({"startedDateTime": _iso(first_wall or time.time()), "id": page_id, "title": url,
                      "pageTimings": {"onContentLoad": round((lifecycle["dcl"] - start_ts) * 1000, 3)
                                      if "dcl" in lifecycle else -1,
                                      "onLoad": round((lifecycle["load"] - start_ts) * 1000, 3)
                                      if "load" in lifecycle else -1}})
        for req, resp, xreq, xresp, body, end_ts, encoded in sorted(chain + done, key=lambda r: r[0]["timestamp"]):
            entries.append(_entry(page_id, req, resp, xreq, xresp, body, end_ts, encoded))
    version = "unknown"
    try:
        version = subprocess.run(["chromium", "--version"], capture_output=True, text=True).stdout.split()[1]
    except (OSError, IndexError):
        pass
    return {"log": {"version": "1.2", "creator": {"name": "WebInspector", "version": "537.36"},
                    "browser": {"name": "Chromium", "version": version},
                    "comment": "made by tracemod's tests/data/web/make_recordings.py from Chromium's DevTools "
                               "protocol events",
                    "pages": pages, "entries": entries}}


def _entry(page_id, req, resp, xreq, xresp, body, end_ts, encoded):
    r = req["request"]
    url = r["url"] + r.get("urlFragment", "")
    req_headers = _headers(xreq["headers"] if xreq else r.get("headers"))
    resp_headers = _headers(xresp["headers"] if xresp else resp.get("headers"))
    status = resp["status"]
    t = resp.get("timing") or {}

    def span(a, b):
        return round(t[b] - t[a], 3) if t.get(a, -1) >= 0 and t.get(b, -1) >= 0 else -1

    send_end = t.get("sendEnd", 0)
    first = next((t[k] for k in ("dnsStart", "connectStart", "sendStart") if t.get(k, -1) >= 0), 0)
    wait = round(t.get("receiveHeadersEnd", send_end) - send_end, 3)
    receive = round(max(0.0, (end_ts - t.get("requestTime", end_ts)) * 1000 - t.get("receiveHeadersEnd", 0)), 3)
    blocked = round(first + max(0.0, (t.get("requestTime", req["timestamp"]) - req["timestamp"]) * 1000), 3)
    timings = {"blocked": blocked, "dns": span("dnsStart", "dnsEnd"), "ssl": span("sslStart", "sslEnd"),
               "connect": span("connectStart", "connectEnd"), "send": span("sendStart", "sendEnd"),
               "wait": wait, "receive": receive}
    total = round(sum(v for k, v in timings.items() if k != "ssl" and v > 0), 3)
    mime = (resp.get("mimeType") or "").split(";")[0]
    content = {"size": 0, "mimeType": resp.get("mimeType") or "x-unknown"}
    if body is not None:
        raw = base64.b64decode(body["body"]) if body.get("base64Encoded") else body["body"].encode()
        content["size"] = len(raw)
        if mime.startswith(TEXT_TYPES):
            content["text"] = raw.decode("utf-8", errors="replace")
        else:
            content["text"], content["encoding"] = base64.b64encode(raw).decode(), "base64"
    headers_text = (xresp or {}).get("headersText")
    headers_size = len(headers_text) if headers_text else -1
    body_size = encoded - (headers_size if headers_size > 0 and encoded > headers_size else 0) \
        if status not in (204, 304) and not (300 <= status < 400) else 0
    if content["size"] and body_size > 0:
        content["compression"] = content["size"] - body_size
    query = [{"name": k, "value": v} for k, v in urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query,
                                                                          keep_blank_values=True)]
    location = next((h["value"] for h in resp_headers if h["name"].lower() == "location"), "")
    if location:
        location = urllib.parse.urljoin(url, location)
    return {
        "_initiator": req.get("initiator", {}).get("type"),
        "_priority": r.get("initialPriority"),
        "_resourceType": (req.get("_type") or req.get("type") or "other").lower(),
        "cache": {},
        "connection": str(resp.get("connectionId", "")),
        "pageref": page_id,
        "request": {"method": r["method"], "url": url, "httpVersion": _version(resp.get("protocol")),
                    "headers": req_headers, "queryString": query, "cookies": _cookies_request(req_headers),
                    "headersSize": -1, "bodySize": len(r.get("postData", "") or "")},
        "response": {"status": status, "statusText": resp.get("statusText", ""),
                     "httpVersion": _version(resp.get("protocol")), "headers": resp_headers,
                     "cookies": _cookies_response(resp_headers), "content": content, "redirectURL": location,
                     "headersSize": headers_size, "bodySize": body_size, "_transferSize": encoded,
                     "_error": None},
        "serverIPAddress": (resp.get("remoteIPAddress") or "").strip("[]"),
        "startedDateTime": _iso(req["wallTime"]),
        "time": total,
        "timings": timings,
    }


def write_har(har, path):
    """HAR as JSON, one entry a line (small, and a diff shows which entry changed)."""
    entries = har["log"].pop("entries")
    head = json.dumps(har, ensure_ascii=False)
    assert head.endswith("}}")
    with open(path, "w", encoding="utf-8") as f:
        f.write(head[:-2] + ', "entries": [\n' + ",\n".join(json.dumps(e, ensure_ascii=False) for e in entries)
                + "\n]}}\n")
    har["log"]["entries"] = entries


# ---------------------------------------------------------------------------------------------------------
# Everything, as root


def run(argv, **kw):
    print("+ " + " ".join(argv), file=sys.stderr, flush=True)
    return subprocess.run(argv, **kw)


def as_mmuser(netns, argv, cwd):
    """ARGV as mmuser in NETNS (a clean environment; Mahimahi's tools refuse to run with ruid 0)."""
    inner = " ".join(_q(a) for a in argv)
    return run(["ip", "netns", "exec", netns, "su", MM_USER, "-s", "/bin/sh", "-c", f"cd {_q(cwd)} && {inner}"],
               capture_output=True, text=True, timeout=300)


def _q(s):
    return "'" + s.replace("'", "'\\''") + "'"


def _mahimahi(web_site, ns, work, client, rec, urls, expect, report):
    """Steps 1 and 2: mm-webrecord, then mm-webreplay, with the site offering TLS 1.2 only: Mahimahi's proxy
    waits forever on a TLS 1.3 origin (its blocking SSL_read takes the post-handshake NewSessionTicket for
    data, ravinet/mahimahi#150)."""
    with web_site.serving(os.path.join(work, "site"), netns=ns, ipv6=False, tls=("TLSv1.2",)) as site:
        rules, pub = site.resolver_rules(), os.path.dirname(client)
        # 1. Mahimahi records Chromium loading both pages.
        r = as_mmuser(ns, ["mm-webrecord", rec, "/usr/bin/python3", client, "load", "--rules", rules, *urls], pub)
        print(r.stdout + r.stderr, file=sys.stderr)
        titles = [l.split(": ", 1)[1] for l in r.stderr.splitlines() if l.startswith(tuple(u + ": " for u in urls))]
        report["record"] = titles
        if r.returncode != 0 or titles != expect:
            raise SystemExit(f"mm-webrecord: status {r.returncode}, titles {titles} (want {expect})")
        log_lines = len(site.access_log())
        # 2. Mahimahi replays it (the live site in this namespace is out of its reach: its own namespace).
        r = as_mmuser(ns, ["mm-webreplay", rec, "/usr/bin/python3", client, "load", *urls], pub)
        print(r.stdout + r.stderr, file=sys.stderr)
        titles = [l.split(": ", 1)[1] for l in r.stderr.splitlines() if l.startswith(tuple(u + ": " for u in urls))]
        report["mm-webreplay"] = {"status": r.returncode, "titles": titles,
                                  "error": (r.stderr.strip().splitlines() or [""])[-1] if r.returncode else "",
                                  "site_requests_during_replay": len(site.access_log()) - log_lines}


# ---------------------------------------------------------------------------------------------------------
# Mahimahi's files: RequestResponse messages (Mahimahi's src/protobufs/http_record.proto), read without
# python3-protobuf


def _fields(buf):
    """(field number, value) of a protobuf message: ints for varints, bytes for length-delimited fields."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 2:
            n, i = _varint(buf, i)
            value, i = bytes(buf[i:i + n]), i + n
        else:
            raise ValueError(f"wire type {wire} (field {number}): not in http_record.proto")
        yield number, value


def _varint(buf, i):
    out = shift = 0
    while True:
        b = buf[i]
        i += 1
        out |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return out, i


def _message(buf):
    m = {"first_line": b"", "headers": [], "body": b""}
    for number, value in _fields(buf):
        if number == 1:
            m["first_line"] = value
        elif number == 2:
            h = dict(_fields(value))
            m["headers"].append((h.get(1, b""), h.get(2, b"")))
        elif number == 3:
            m["body"] = value
    return m


def read_record(path):
    """One Mahimahi file: {ip, port, scheme ("HTTP"/"HTTPS"), request, response}, each message
    {first_line, headers [(key, value)], body} in bytes."""
    with open(path, "rb") as f:
        buf = f.read()
    r = {"ip": "", "port": 0, "scheme": None, "request": None, "response": None}
    for number, value in _fields(buf):
        if number == 1:
            r["ip"] = value.decode()
        elif number == 2:
            r["port"] = value
        elif number == 3:
            r["scheme"] = {1: "HTTP", 2: "HTTPS"}[value]
        elif number == 4:
            r["request"] = _message(value)
        elif number == 5:
            r["response"] = _message(value)
    return r


def listing(directory):
    """One line a file of a Mahimahi directory: scheme, ip:port, Host, first line, status, framing, encoding,
    body bytes as stored, and the file's name (sorted by Host and first line)."""
    rows = []
    for name in sorted(os.listdir(directory)):
        r = read_record(os.path.join(directory, name))
        rq, rs = r["request"], r["response"]

        def h(m, key):
            return next((v.decode() for k, v in m["headers"] if k.lower() == key), "")

        framing = "chunked" if h(rs, b"transfer-encoding") == "chunked" else f"length {h(rs, b'content-length')}"
        rows.append((h(rq, b"host"), rq["first_line"].decode(),
                     f"{r['scheme']:5} {r['ip']}:{r['port']:<5} {h(rq, b'host'):21} {rq['first_line'].decode():33} "
                     f"{rs['first_line'].decode().split(' ', 1)[1]:19} {framing:12} "
                     f"{h(rs, b'content-encoding') or '-':5} "
                     f"{len(rs['body']):6} {name}"))
    return [r[2] for r in sorted(rows)]


def _wire(m):
    """A message as Mahimahi's HTTPMessage::str() writes it."""
    return m["first_line"] + b"\r\n" + b"".join(k + b": " + v + b"\r\n" for k, v in m["headers"]) + b"\r\n" + m["body"]


def replayserver_check(directory):
    """Mahimahi's own mm-replayserver (the CGI program mm-webreplay's Apache runs for every request), given
    each recorded request as its Apache would, must answer the recorded response byte for byte. Returns
    (matched, total); prints each mismatch. As root (it runs the server as mmuser, which it insists on)."""
    work = tempfile.mkdtemp(prefix="tmsite-rs-")
    os.chmod(work, 0o755)
    rec = os.path.join(work, "rec")
    shutil.copytree(directory, rec)
    for root, dirs, files in os.walk(work):
        os.chmod(root, 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o644)
    matched = total = 0
    try:
        for name in sorted(os.listdir(rec)):
            r = read_record(os.path.join(rec, name))
            method, uri, proto = r["request"]["first_line"].decode().split(" ", 2)
            headers = {k.decode().lower(): v.decode() for k, v in r["request"]["headers"]}
            env = {"MAHIMAHI_CHDIR": work, "MAHIMAHI_RECORD_PATH": rec + "/", "REQUEST_METHOD": method,
                   "REQUEST_URI": uri, "SERVER_PROTOCOL": proto, "PATH": "/usr/bin:/bin"}
            if r["scheme"] == "HTTPS":
                env["HTTPS"] = "on"
            if "host" in headers:  # mod_deepcgi passes Apache's r->hostname: lower case, no port
                env["HTTP_HOST"] = urllib.parse.urlsplit("//" + headers["host"]).hostname
            if "user-agent" in headers:
                env["HTTP_USER_AGENT"] = headers["user-agent"]
            out = subprocess.run(["setpriv", f"--reuid={MM_USER}", f"--regid={MM_USER}", "--clear-groups",
                                  MM_REPLAYSERVER], env=env, capture_output=True, cwd=work).stdout
            total += 1
            if out == _wire(r["response"]):
                matched += 1
            else:
                print(f"mm-replayserver: {name} ({r['request']['first_line'].decode()}): answered "
                      f"{out[:80]!r}", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return matched, total


def replay_by_hand(directory, urls):
    """What mm-webreplay does, step for step, but with the recorded addresses on a namespace's loopback instead
    of on dummy interfaces (this machine's kernel has no CONFIG_DUMMY: `ip link add sharded0 type dummy` fails,
    and so does mm-webreplay): in a namespace of its own, one Apache per recorded address and port with
    Mahimahi's own configuration (apache_configuration.hh, web_server.cc: mod_deepcgi running mm-replayserver,
    mod_ssl with the snakeoil certificate on 443), dnsmasq answering every recorded Host with its address on
    the nameserver's address, and the client (Chromium, no resolver rules: names through dnsmasq) as mmuser.
    Returns the titles the pages ended with. As root."""
    import pwd
    mm = pwd.getpwnam(MM_USER)
    with open("/etc/resolv.conf") as f:
        nameservers = [l.split()[1] for l in f if l.startswith("nameserver") and len(l.split()) > 1]
    work = tempfile.mkdtemp(prefix="tmsite-replay-")
    os.chmod(work, 0o755)
    rec = os.path.join(work, "rec")
    shutil.copytree(directory, rec)
    client = os.path.join(work, "make_recordings.py")
    shutil.copy(os.path.abspath(__file__), client)
    for root, dirs, files in os.walk(work):
        os.chmod(root, 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o644)
    records = [read_record(os.path.join(rec, n)) for n in sorted(os.listdir(rec))]
    endpoints = sorted({(r["ip"], r["port"]) for r in records})
    hosts = {}
    for r in records:
        host = next((v.decode() for k, v in r["request"]["headers"] if k.lower() == b"host"), None)
        if host:
            hosts[host] = r["ip"]  # as replayshell: the Host header's whole value (a port in it stays)
    ns = f"tmsite-replay-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    apaches, procs = [], []
    try:
        nsexec = ["ip", "netns", "exec", ns]
        subprocess.run(nsexec + ["ip", "link", "set", "lo", "up"], check=True)
        for a in sorted({ip for ip, _ in endpoints} | set(nameservers)):
            subprocess.run(nsexec + ["ip", "addr", "add", f"{a}/32", "dev", "lo"], check=True)
        config_h = {}
        for ip, port in endpoints:
            conf = os.path.join(work, f"apache-{ip}-{port}.conf")
            with open(conf, "w") as f:
                f.write("LoadModule mpm_prefork_module /usr/lib/apache2/modules/mod_mpm_prefork.so\n"
                        "LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so\n"
                        "Mutex pthread\nLoadFile /usr/local/lib/libmod_deepcgi.so\n"
                        "LoadModule deepcgi_module /usr/local/lib/libmod_deepcgi.so\nSetHandler deepcgi-handler\n"
                        f"WorkingDir {work}\nRecordingDir {rec}/\n")
                if port == 443:
                    f.write("LoadModule ssl_module /usr/lib/apache2/modules/mod_ssl.so\nSSLEngine on\n"
                            "SSLCertificateFile      /etc/ssl/certs/ssl-cert-snakeoil.pem\n"
                            "SSLCertificateKeyFile /etc/ssl/private/ssl-cert-snakeoil.key\n")
                f.write(f"PidFile {work}/apache-{ip}-{port}.pid\nServerName mahimahi.\n"
                        f"ErrorLog {work}/apache-error.log\n"
                        f"CustomLog {work}/apache-access.log common\nUser #{mm.pw_uid}\nGroup #{mm.pw_gid}\n"
                        f"Listen {ip}:{port}")
            r = run(nsexec + ["/usr/sbin/apache2", "-f", conf, "-k", "start"], capture_output=True, text=True)
            if r.returncode != 0:
                raise SystemExit(f"apache2 for {ip}:{port}: {r.stderr.strip()}")
            apaches.append(conf)
        with open(os.path.join(work, "hosts"), "w") as f:
            f.write("".join(f"{ip} {h}\n" for h, ip in hosts.items()))
        procs.append(subprocess.Popen(nsexec + ["/usr/sbin/dnsmasq", "--keep-in-foreground", "--no-resolv",
                                                "--no-hosts", "-C", "/dev/null", "-H", os.path.join(work, "hosts")],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(1)
        r = run(nsexec + ["setpriv", f"--reuid={mm.pw_uid}", f"--regid={mm.pw_gid}", "--clear-groups", "env", "-i",
                          "PATH=/usr/bin:/bin", f"HOME={work}", "/usr/bin/python3", client, "load", *urls],
                capture_output=True, text=True, timeout=300)
        print(r.stdout + r.stderr, file=sys.stderr)
        if os.environ.get("REPLAY_DEBUG"):  # a command to run in the replay's namespace, for debugging
            subprocess.run(nsexec + ["sh", "-c", os.environ["REPLAY_DEBUG"]])
        return [l.split(": ", 1)[1] for l in r.stderr.splitlines() if l.startswith(tuple(u + ": " for u in urls))]
    finally:
        for conf in apaches:
            subprocess.run(["ip", "netns", "exec", ns, "/usr/sbin/apache2", "-f", conf, "-k", "stop"],
                           capture_output=True)
        for p in procs:
            p.terminate()
            p.wait()
        time.sleep(0.5)
        subprocess.run(["ip", "netns", "delete", ns])
        shutil.rmtree(work, ignore_errors=True)


def make_all(out):
    sys.path.insert(0, os.path.join(HERE, "..", "..", "integration"))
    import web_site

    urls = PAGES
    expect = [f"complete {web_site.PAGE_OBJECTS}", "complete 2"]
    work = tempfile.mkdtemp(prefix="tmsite-rec-")
    os.chmod(work, 0o755)
    pub = os.path.join(work, "pub")
    os.mkdir(pub)
    os.chmod(pub, 0o1777)
    client = os.path.join(pub, "make_recordings.py")
    shutil.copy(os.path.abspath(__file__), client)
    os.chmod(client, 0o755)
    rec = os.path.join(pub, "rec")
    report = {}
    try:
        with web_site.private_netns(forward=True) as ns:
            _mahimahi(web_site, ns, work, client, rec, urls, expect, report)
            # 3. The HAR: Chromium straight to the site (HTTP/2 over TLS 1.3, HTTP/1.1 for the plain page).
            with web_site.serving(os.path.join(work, "site-har"), netns=ns, ipv6=False) as site:
                har = os.path.join(work, "site.har")
                r = run(["ip", "netns", "exec", ns, "/usr/bin/python3", os.path.abspath(__file__), "load", "--har",
                         har, "--rules", site.resolver_rules(), *urls], capture_output=True, text=True, timeout=300)
                print(r.stdout + r.stderr, file=sys.stderr)
                if r.returncode != 0 or not os.path.exists(har):
                    raise SystemExit("the HAR load failed")
        os.makedirs(out, exist_ok=True)
        dest = os.path.join(out, "mahimahi-site")
        if os.path.exists(dest):
            shutil.rmtree(dest)
        os.mkdir(dest)
        for i, name in enumerate(sorted(os.listdir(rec), key=lambda n: os.stat(os.path.join(rec, n)).st_mtime_ns)):
            shutil.copyfile(os.path.join(rec, name), os.path.join(dest, name))  # Mahimahi's own file names
        shutil.copyfile(har, os.path.join(out, "site.har"))
        report["files"] = len(os.listdir(dest))
        report["mm-replayserver matched"] = "%d of %d" % replayserver_check(dest)
        report["mm-webreplay's setup by hand"] = replay_by_hand(dest, urls)
        print(json.dumps(report, indent=1))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("all")
    a.add_argument("--out", default=HERE)
    ls = sub.add_parser("list")
    ls.add_argument("dir", nargs="?", default=os.path.join(HERE, "mahimahi-site"))
    c = sub.add_parser("check")
    c.add_argument("dir", nargs="?", default=os.path.join(HERE, "mahimahi-site"))
    rp = sub.add_parser("replay")
    rp.add_argument("dir", nargs="?", default=os.path.join(HERE, "mahimahi-site"))
    rp.add_argument("urls", nargs="*")
    l = sub.add_parser("load")
    l.add_argument("--har")
    l.add_argument("--rules")
    l.add_argument("urls", nargs="+")
    args = ap.parse_args()
    if args.cmd == "all":
        make_all(args.out)
        return 0
    if args.cmd == "replay":
        titles = replay_by_hand(args.dir, args.urls or PAGES)
        print(f"replayed (mm-webreplay's setup by hand): {titles}")
        return 0 if titles and all(t.startswith("complete") for t in titles) else 1
    if args.cmd == "list":
        for line in listing(args.dir):
            print(line)
        return 0
    if args.cmd == "check":
        matched, total = replayserver_check(args.dir)
        print(f"mm-replayserver answered {matched} of {total} recorded requests with the recorded response")
        return 0 if matched == total else 1
    loads = load_pages(args.urls, args.rules)
    if args.har:
        write_har(har_from(loads), args.har)
    return 0 if all(t.startswith("complete") for _, t, _, _ in loads) else 1


if __name__ == "__main__":
    sys.exit(main())
