"""browser: page loads in a real, headless browser (Chromium through the DevTools protocol, Firefox through
WebDriver BiDi), timed by the browser itself.

Server (outside the shells, as the invoking user): `site`, a directory, served end to end by Debian's nginx,
HTTP/1.1 with keep-alive on `port` and HTTP/2 over TLS on `tls_port`, with a certificate from a CA made for
that server alone. Everything lives in one state directory (the run directory's browser-server/ under tm-run):
the CA and the server's key and certificate (openssl), nginx.conf, its pid, logs and temporary files; no
system configuration is read or written. nginx runs in the foreground as one process (no master and workers
to orphan), dies with the server (PR_SET_PDEATHSIG) and is stopped on SIGTERM or SIGINT. Every response says
Timing-Allow-Origin: *; objects say Cache-Control: max-age=3600 and pages (.html) no-cache, so a revisit
revalidates the page and takes its objects from a warm cache. With `server`, a server of the user's, nothing
is started.

Client (behind the shells): loads each of `urls` `loads` times, interleaved (load 1 of every URL, then load
2, ...). Each load starts the browser in a fresh profile under a fresh HOME, in a process group of its own,
and waits until it is warm: its protocol answers (over a WebSocket on the browser's own loopback,
python3-websocket) and about:blank is loaded; that start-up time is kept as startup_ms, apart from the page's.
Then it navigates, waits for the load event through the protocol (no sleep, no polling of the page), reads
the page's own timing (Navigation Timing 2, Resource Timing, Paint Timing: page_metrics) in a world of its own
(the page's own prototypes cannot break the read), counts the requests that failed and those the replay could
not answer (the protocol's network events: load_requests), and kills the browser's whole process group, then
any descendant that left the group (the client is the browsers' child subreaper, so such an orphan comes back
to it). With `capture`, each load also keeps the page's DOM and a screenshot as files in the client's directory
(the run's, under tm-run: keep_capture). The browser trusts the run's CA through an NSS database of its
own: $HOME/.pki/nssdb for Chromium, the profile's cert9.db for Firefox. With `warm`, each load first loads its
URL once in that profile (not measured), quits the browser so its disk cache is written, and starts it again in
the same profile: the measured load has a warm cache and cold connections, as a revisit does. Every wait has
a deadline.

A load that fails or times out is a row that says so (completed 0, its error), never a missing one, and so is
a load whose page itself failed (an HTTP error, a network error, a replay's miss); a load whose documents,
style sheets, scripts or fonts failed completed, but degraded, and its row says how many. The run itself
fails only if the workload cannot run at all (no browser, no server)."""
import base64
import collections
import ctypes
import fcntl
import hashlib
import ipaddress
import itertools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

from .. import stats, values
from ..errors import RunError, UsageError
from . import common
from .registry import Param

DEFAULT_PORT = 8080
DEFAULT_TLS_PORT = 8443
STARTUP_TIMEOUT = 60.0  # seconds for a browser to be warm; not part of a load's timeout
HEADLINE = ("plt_ms_p50", "dcl_ms_p50", "fcp_ms_p50", "startup_ms_p50", "transfer_bytes_p50", "requests_p50",
            "connections_p50")
TIMES = ("plt_ms", "dcl_ms", "fcp_ms", "startup_ms")
COUNTS = ("transfer_bytes", "requests", "connections", "cache_hits")
PARAMS = {
    "browser": Param((str,), "chromium", choices=("chromium", "firefox"), help="the browser"),
    "urls": Param((list,), ["/"], help="pages to load: paths on the server (\"/index.html\") or whole URLs"),
    "loads": Param((int,), 5, low=1, high=10000, help="loads of each URL per run"),
    "timeout": Param((float,), 30.0, low=0.1, high=3600, help="seconds a load may take, navigation to timing read",
                     read=values.seconds),
    "warm": Param((bool,), False, help="load each URL once (unmeasured) to fill the cache before each load"),
    "protocol": Param((str,), "h2", choices=("h1", "h2"),
                      help="for site and paths: HTTP/1.1 (http, port) or HTTP/2 over TLS (https, tls_port)"),
    "site": Param((str,), None, help="a directory to serve end to end (relative to the experiment file)"),
    "server": Param((str,), None, help="the base URL of an existing server (e.g. \"http://192.0.2.1:8000\") "
                                        "instead of site"),
    "replay": Param((str,), None, help="a web recording (a directory, or a HAR file) served by tm-webreplay around "
                                       "the stack, its CA trusted; urls are then whole URLs of it"),
    "replay_options": Param((list,), [], help="more options for tm-webreplay (\"--deterministic\", \"--strict\", "
                                              "\"--ignore-param\", \"NAME\"...)"),
    "record": Param((str,), None, help="a directory tm-webrecord, around the stack, records every exchange of the "
                                       "loads into (with server = URL of a live site; ca, if given, checks that "
                                       "site, and the browser trusts the recording's CA)"),
    "ca": Param((str,), None, help="a CA certificate (PEM) the browser trusts for this run, for server = https"),
    "port": Param((int,), None, low=1025, high=65535, help="the site's HTTP/1.1 port (8080)", read=values.port),
    "tls_port": Param((int,), None, low=1025, high=65535, help="the site's HTTP/2 port (8443)", read=values.port),
    "browser_args": Param((list,), [], help="more command-line arguments for the browser"),
    "until": Param((str,), None, help="a JavaScript expression (a promise, or a value) each load waits for after "
                                      "its load event, such as the page's own signal that it is done: until_ms"),
    "https_upgrades": Param((bool,), None, help="let the browser try https:// for an http:// URL (Chromium's "
                                                "HTTPS-Upgrades, Firefox's HTTPS-First): off in replays unless true, "
                                                "the browser's own default otherwise"),
    "capture": Param((list,), [], help="what each load keeps in the run's directory once loaded (and until): "
                                       "\"dom\" (loadN.html, and dom_bytes, text_bytes, dom_sha256 in its row) and "
                                       "\"screenshot\" (loadN.png, the viewport)"),
}
CAPTURES = ("dom", "screenshot")


def check(params):
    urls = params["urls"]
    if not urls or not all(isinstance(u, str) and u for u in urls):
        raise UsageError("[workload] 'urls' must be a non-empty array of paths or URLs")
    for u in urls:
        if "://" in u and not u.startswith(("http://", "https://")):
            raise UsageError(f"[workload] 'urls': {u} is neither http:// nor https://")
        if "://" not in u and not u.startswith("/"):
            raise UsageError(f"[workload] 'urls': a path starts with / (not '{u}')")
    if not all(isinstance(a, str) for a in params["browser_args"]):
        raise UsageError("[workload] 'browser_args' must be an array of strings")
    if params["replay_options"] and not params.get("replay"):
        raise UsageError("[workload] replay_options are tm-webreplay's: give them with replay")
    if not all(isinstance(a, str) and a for a in params["replay_options"]):
        raise UsageError("[workload] 'replay_options' must be an array of non-empty strings")
    for what in params["capture"]:
        if what not in CAPTURES:
            raise UsageError(f"[workload] 'capture': {what!r} is neither \"dom\" nor \"screenshot\"")
    if params.get("site") and params.get("server"):
        raise UsageError("[workload] give site (served by the workload) or server (yours), not both")
    if params.get("replay"):
        if params.get("site") or params.get("server"):
            raise UsageError("[workload] replay serves the recorded site: give no site or server with it")
        if not all("://" in u for u in urls):
            raise UsageError("[workload] with replay, 'urls' are whole URLs of the recording (https://NAME/PATH)")
    if params.get("record"):
        if params.get("replay") or params.get("site") or not params.get("server"):
            raise UsageError("[workload] record records a live site: give server = URL (and no site or replay)")
    server = params.get("server")
    if server and not server.startswith(("http://", "https://")):
        raise UsageError(f"[workload] 'server' must be a URL (http:// or https://), not '{server}'")
    if params.get("port") and params.get("tls_port") and params["port"] == params["tls_port"]:
        raise UsageError("[workload] 'port' and 'tls_port' must differ")


def duration(params):
    """Expected seconds: per load a browser start, the page, and a third of the timeout (so tm-run's default
    run timeout, three times this, lets every load time out and still report)."""
    n = params["loads"] * len(params["urls"])
    return n * (params["timeout"] / 3 + (6.0 if params["warm"] else 3.0))


CHROMIUM = ("chromium", "chromium-browser", "google-chrome")
FIREFOX = ("firefox-esr", "firefox")
INSTALL = {"chromium": "chromium", "firefox": "firefox-esr"}

# Headless and quiet: nothing but the page reaches the network, nothing runs in the background to disturb it.
CHROMIUM_FLAGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-quic",
    "--no-proxy-server", "--disable-breakpad", "--disable-domain-reliability", "--disable-extensions",
    "--disable-default-apps", "--disable-client-side-phishing-detection", "--disable-hang-monitor",
    "--disable-renderer-backgrounding", "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows", "--disable-features=Translate,OptimizationHints,MediaRouter",
    "--metrics-recording-only", "--password-store=basic", "--use-mock-keychain", "--mute-audio",
    "--window-size=1280,800", "--remote-debugging-port=0",
]
FIREFOX_PREFS = {
    "network.proxy.type": 0,
    "network.http.http3.enable": False,  # as Chromium's --disable-quic
    "network.trr.mode": 5,
    "network.captive-portal-service.enabled": False,
    "network.connectivity-service.enabled": False,
    "privacy.reduceTimerPrecision": False,  # the timing entries to the microsecond, not the millisecond
    "security.OCSP.enabled": 0,
    "security.remote_settings.crlite_filters.enabled": False,
    "browser.shell.checkDefaultBrowser": False,
    "browser.startup.page": 0,
    "browser.startup.homepage_override.mstone": "ignore",
    "browser.aboutwelcome.enabled": False,
    "browser.newtabpage.enabled": False,
    "browser.safebrowsing.malware.enabled": False,
    "browser.safebrowsing.phishing.enabled": False,
    "browser.safebrowsing.downloads.enabled": False,
    "browser.safebrowsing.blockedURIs.enabled": False,
    "browser.search.update": False,
    "browser.region.network.url": "",
    "app.update.disabledForTesting": True,
    "extensions.update.enabled": False,
    "extensions.blocklist.enabled": False,
    "datareporting.policy.dataSubmissionEnabled": False,
    "datareporting.healthreport.uploadEnabled": False,
    "toolkit.telemetry.enabled": False,
    "services.settings.server": "data:,",
}
# Firefox's HTTPS-First (on by default in ESR 153, like the two below; all three are in its static pref list,
# not in omni.ja's default files): off when the browser is to load http:// URLs as given (https_upgrades).
FIREFOX_NO_HTTPS_FIRST = {"dom.security.https_first": False, "dom.security.https_first_pbm": False,
                          "dom.security.https_first_schemeless": False}


def https_upgrades(params):
    """Whether the browser may try https:// for an http:// URL: as params say, else not in a replay (a recording
    holds the URLs the page used; an upgraded one is a request the recording cannot answer)."""
    if params.get("https_upgrades") is not None:
        return params["https_upgrades"]
    return not params.get("replay")


def firefox_prefs(upgrades=True):
    """The prefs of a fresh profile: FIREFOX_PREFS, and without UPGRADES no HTTPS-First."""
    return FIREFOX_PREFS if upgrades else {**FIREFOX_PREFS, **FIREFOX_NO_HTTPS_FIRST}


def chromium_arguments(args, upgrades=True):
    """CHROMIUM_FLAGS, then ARGS, with every --disable-features merged into one at the end: Chromium reads only
    the last, so a user's own would turn ours back on. Without UPGRADES, HttpsUpgrades is disabled too."""
    features, rest = [], []
    for arg in [*CHROMIUM_FLAGS, *args]:
        m = re.fullmatch(r"--?disable-features=(.*)", arg)
        if m:
            features += [f for f in m.group(1).split(",") if f]
        else:
            rest.append(arg)
    if not upgrades:
        features.append("HttpsUpgrades")
    return rest + [f"--disable-features={','.join(dict.fromkeys(features))}"] if features else rest


# What the page's own timing says, read once the load event has fired (and, with params' until, once that has
# settled), in a world of our own (Chromium's isolated world, a WebDriver BiDi sandbox): it sees the page's DOM
# and timing but not the page's JavaScript, so a page's own Array.prototype.toJSON or JSON.stringify cannot
# break the read. First contentful paint may come after onload (a headless browser paints on its own frame
# clock): wait for it, at most FCP_WAIT_MS. read_ms, when the read began, bounds until_ms.
FCP_WAIT_MS = 2000
WORLD = "tm-run"
PERFORMANCE_JS = """(async () => {
  const read_ms = performance.now();
  const fcp = () => performance.getEntriesByName('first-contentful-paint').length > 0;
  if (!fcp()) {
    await new Promise(done => {
      const seen = new PerformanceObserver(() => { if (fcp()) done(); });
      seen.observe({type: 'paint', buffered: true});
      setTimeout(done, %(fcp_wait)d);
    });
  }
  const keep = e => { const o = e.toJSON(); delete o.serverTiming; delete o.notRestoredReasons; return o; };
  return JSON.stringify({
    nav: performance.getEntriesByType('navigation').map(keep),
    res: performance.getEntriesByType('resource').map(keep),
    paint: performance.getEntriesByType('paint').map(keep),
    title: document.title,
    read_ms,
  });
})()""" % {"fcp_wait": FCP_WAIT_MS}
# params' until, in the page's own world, since it may name the page's own objects (its "done" promise); it
# returns only a number, the time it settled, which page_metrics checks against the read's own clock.
UNTIL_JS = "(async () => { await (%s); return performance.now(); })()"
# What params' capture keeps of a page, read after the timing in the same world: the page's DOM as serialized
# then, and its text as rendered (innerText: what layout shows, not the source's).
CAPTURE_JS = """JSON.stringify({dom: document.documentElement ? document.documentElement.outerHTML : "",
                               text: document.body ? document.body.innerText : ""})"""

PROTOCOLS = {"http/0.9": "h1", "http/1.0": "h1", "http/1.1": "h1", "h2": "h2", "h2c": "h2", "h3": "h3"}


class LoadFailed(RunError):
    """A load that did not complete: its row says why, the run goes on."""


def exception_text(details):
    """What a script's exception says: its first line (Chromium's text is only "Uncaught"; the error is in its
    exception's description, SyntaxError: ... for a malformed until), else the browser's text."""
    description = (details.get("exception") or {}).get("description")
    if isinstance(description, str) and description:
        return description.splitlines()[0]
    return details.get("text") or "an exception"


class TimedOut(LoadFailed):
    """A load whose browser did not say what was awaited before the load's deadline."""


# ---------------------------------------------------------------------------------------------------------
# Metrics


def protocol_name(alpn):
    """'h1', 'h2' or 'h3' for a nextHopProtocol value (ALPN id), else the value itself ('' when unknown)."""
    alpn = (alpn or "").lower()
    return PROTOCOLS.get(alpn, "h3" if alpn.startswith("h3-") else alpn)


def connection_count(events):
    """Chromium's connections for a page: the distinct connection ids its responses came over (DevTools'
    Network.responseReceived), 0 being a response from the cache. Unlike Resource Timing, this counts a socket
    Chromium opened before the request asked for it (a preconnect), which the entries show as reused."""
    ids = {m["params"]["response"].get("connectionId") for m in events
           if m.get("method") == "Network.responseReceived"}
    return len(ids - {0, None})


def page_metrics(perf):
    """One load's metrics from PERF, the page's timing entries ({"nav": [...], "res": [...], "paint": [...]}):
    times in ms from the navigation's start. Bytes are transferSize (headers and body as received, 0 for a
    cache hit); connections are PERF's own count where the browser gave one (Chromium: connection_count), else
    the entries whose connectEnd > connectStart (cross-origin entries without Timing-Allow-Origin show neither,
    so count none; a preconnected socket counts for none either)."""
    if not perf.get("nav"):
        raise LoadFailed("the page has no navigation timing entry")
    nav, res = perf["nav"][0], perf.get("res", [])
    if not nav.get("loadEventStart"):
        raise LoadFailed("the load event has not started")
    start = nav.get("startTime", 0.0)
    fcp = next((p["startTime"] for p in perf.get("paint", []) if p.get("name") == "first-contentful-paint"), None)
    entries = [nav] + list(res)
    protocols = collections.Counter(protocol_name(e.get("nextHopProtocol")) for e in entries
                                    if e.get("nextHopProtocol"))
    return {
        "plt_ms": nav["loadEventStart"] - start,
        "dcl_ms": nav["domContentLoadedEventStart"] - start,
        "fcp_ms": None if fcp is None else fcp - start,
        "transfer_bytes": int(sum(e.get("transferSize") or 0 for e in entries)),
        "requests": len(entries),
        "connections": perf["connections"] if "connections" in perf else
        sum(1 for e in entries if (e.get("connectEnd") or 0) > (e.get("connectStart") or 0)),
        "cache_hits": sum(1 for e in res if not e.get("transferSize") and e.get("decodedBodySize")),
        "protocol": protocol_name(nav.get("nextHopProtocol")),
        "protocols": dict(protocols),
        "status": nav.get("responseStatus"),
        "title": perf.get("title"),  # what the page says of itself once loaded (a test site's "complete 38")
        "until_ms": until_time(perf, start),
    }


def until_time(perf, start):
    """until_ms from the time PERF's until settled (the page's own performance.now(), which the page could have
    replaced): it must lie between the navigation's START and the moment our read began."""
    until = perf.get("until_ms")
    if until is None:
        return None
    if not isinstance(until, (int, float)) or isinstance(until, bool) or not start <= until <= perf["read_ms"]:
        raise LoadFailed(f"until settled at {until!r} by the page's performance.now(), not between the navigation "
                         f"({start}) and the timing read ({perf['read_ms']}): the page's clock cannot be trusted")
    return until - start


# What a load's requests say of it. A failed document, style sheet, script or font makes another page than the
# one recorded or served (unstyled, without its code or text); a failed image or fetch leaves its layout and
# code as they were, so only those four kinds make a load degraded. tm-webreplay's own 404, for a request
# its recording has no answer to, says REPLAY_MISS: any kind counts then.
CRITICAL = ("document", "style", "script", "font")
REPLAY_MISS = ("x-tm-replay", "miss")
LISTED = 10  # failures named in a load's row
MISSED = 200  # replay misses named in a load's row (replay_misses counts them all)
Request = collections.namedtuple("Request", "url kind status error miss main")


def replay_miss(headers):
    """True if HEADERS ((name, value) pairs) say tm-webreplay had no recording: names in any case (HTTP/1.1)."""
    return any(n.lower() == REPLAY_MISS[0] and str(v).strip().lower() == REPLAY_MISS[1] for n, v in headers)


def failure(request):
    """Why REQUEST failed (its network error, or its HTTP status of 400 or more), or None."""
    if request.error:
        return request.error
    if request.status is not None and request.status >= 400:
        return f"HTTP status {request.status}" + (" (not in the recording)" if request.miss else "")
    return None


def load_requests(requests):
    """(why the page's own document failed or None, the row's fields): degraded, failed_requests (the distinct
    URLs of the failed documents, style sheets, scripts and fonts besides the page), replay_misses (the distinct
    URLs tm-webreplay had no recording of, any kind), failures (the first LISTED of them, each with why) and
    missed (the first MISSED of the replay's misses: which ones, where failures has no room for them all).
    The browser's own requests (kind "own": the page's icon) are not the page's, and data: URLs no request."""
    document, failed, misses = None, {}, {}
    for r in requests:
        why = failure(r)
        if why is None or r.kind == "own" or not r.url.startswith(("http:", "https:")):
            continue
        if r.main:
            document = document or why
        else:
            if r.kind in CRITICAL:
                failed.setdefault(r.url, why)
            if r.miss:
                misses.setdefault(r.url, why)
    named = [f"{why}: {url}" for url, why in {**failed, **misses}.items()]
    return document, {"degraded": int(bool(failed)), "failed_requests": len(failed), "replay_misses": len(misses),
                      "failures": named[:LISTED], "missed": list(misses)[:MISSED]}


# DevTools' resource types of the kinds that count; "Other" is Chromium's request for the page's icon (seen in
# the page's own Network domain, when it pleases), which no page element makes.
CHROMIUM_KINDS = {"Document": "document", "Stylesheet": "style", "Script": "script", "Font": "font", "Other": "own"}


def chromium_requests(events, loader):
    """The Requests in DevTools' Network events: each response (Network.responseReceived), each failure
    (Network.loadingFailed) but a cancellation. Chromium reports a style sheet, script or font answered with a 404
    as canceled right after it: the 404 counts. The page's own request is the one whose id is its LOADER id."""
    urls, out = {}, []
    for m in events:
        p, method = m.get("params", {}), m.get("method")
        kind, main = CHROMIUM_KINDS.get(p.get("type"), "other"), p.get("requestId") == loader
        if method == "Network.requestWillBeSent":
            urls[p["requestId"]] = p["request"]["url"]
        elif method == "Network.responseReceived":
            r = p["response"]
            out.append(Request(r["url"], kind, r.get("status"), None, replay_miss(r.get("headers", {}).items()), main))
        elif method == "Network.loadingFailed" and not p.get("canceled"):
            out.append(Request(urls.get(p["requestId"], ""), kind, None, p.get("errorText") or "failed", False, main))
    return out


# Fetch destinations of the kinds that count, and where a Firefox gives none (153 gives every request's, and
# initiatorType), the kind by the URL's extension, else by the response's content type.
FETCH_KINDS = {"document": "document", "iframe": "document", "frame": "document", "style": "style",
               "script": "script", "font": "font"}
EXTENSION_KINDS = {".css": "style", ".js": "script", ".mjs": "script", ".woff": "font", ".woff2": "font",
                   ".ttf": "font", ".otf": "font", ".html": "document", ".htm": "document"}
MIME_KINDS = {"text/css": "style", "text/javascript": "script", "application/javascript": "script",
              "text/html": "document"}


def firefox_kind(request, response):
    """A BiDi request's kind. An image without an initiatorType is Firefox's own request for the page's icon
    (/favicon.ico when the page names none), which it makes after the load when it pleases."""
    if "destination" in request:
        if request["destination"] == "image" and not request.get("initiatorType"):
            return "own"
        return FETCH_KINDS.get(request["destination"], "other")
    extension = os.path.splitext(urllib.parse.urlsplit(request["url"]).path)[1].lower()
    mime = (response.get("mimeType") or "").split(";")[0].strip().lower()
    return EXTENSION_KINDS.get(extension) or ("font" if mime.startswith("font/") else MIME_KINDS.get(mime, "other"))


def firefox_requests(events, navigation):
    """The Requests in WebDriver BiDi's network.responseCompleted and network.fetchError events but a cancellation
    (NS_BINDING_ABORTED). The page's own request is the one of the NAVIGATION's id."""
    out = []
    for m in events:
        if m.get("method") not in ("network.responseCompleted", "network.fetchError"):
            continue
        p = m["params"]
        request, response = p["request"], p.get("response") or {}
        error = p.get("errorText") or "failed" if m["method"] == "network.fetchError" else None
        if error == "NS_BINDING_ABORTED":
            continue
        headers = [(h["name"], (h.get("value") or {}).get("value", "")) for h in response.get("headers", [])]
        out.append(Request(request["url"], firefox_kind(request, response), None if error else response.get("status"),
                           error, replay_miss(headers), navigation is not None and p.get("navigation") == navigation))
    return out


def unfinished(events, began, ended):
    """The URLs of the requests in EVENTS that began (BEGAN(message): (id, url) or None) and never ended
    (ENDED(message): id or None), in the order they began."""
    urls = {}
    for m in events:
        if (b := began(m)) is not None:
            urls.setdefault(b[0], b[1])
        elif (e := ended(m)) is not None:
            urls[e] = None
    return [url for url in urls.values() if url is not None]


def unloaded(events, began, loaded, main):
    """The URLs of the frames in EVENTS whose last navigation began (BEGAN(message): (frame, navigation, url) or
    None) and never reached its load event (LOADED(message): (frame, navigation) or None), the page's own frame
    MAIN left out."""
    last, done = {}, set()
    for m in events:
        if (b := began(m)) is not None:
            last[b[0]] = b[1:]
        elif (d := loaded(m)) is not None:
            done.add(d)
    return [url for frame, (navigation, url) in last.items() if frame != main and (frame, navigation) not in done]


def awaited(timeout, requests, frames):
    """TIMEOUT's message with what the load was still waiting for: the REQUESTS seen begin and never end, and
    the FRAMES (other than the page's) whose load event never came."""
    parts = [f"{len(requests)} request{'s' * (len(requests) != 1)} unfinished ({', '.join(requests[:3])}"
             f"{', ...' if len(requests) > 3 else ''})" if requests else "every request seen finished"]
    if frames:
        parts.append(f"{len(frames)} frame{'s' * (len(frames) != 1)} never loaded ({', '.join(frames[:3])}"
                     f"{', ...' if len(frames) > 3 else ''})")
    return f"{timeout}: {'; '.join(parts)}"


def chromium_awaited(timeout, events, main):
    """TIMEOUT's message with what DevTools' events say the load of frame MAIN was still waiting for."""
    def began(m):
        p = m.get("params", {})
        return (p["requestId"], p["request"]["url"]) if m.get("method") == "Network.requestWillBeSent" else None

    def ended(m):
        return m["params"]["requestId"] if m.get("method") in ("Network.loadingFinished", "Network.loadingFailed") \
            else None

    def navigated(m):
        f = m.get("params", {}).get("frame", {})
        return (f["id"], f.get("loaderId"), f.get("url", "")) if m.get("method") == "Page.frameNavigated" else None

    def loaded(m):
        p = m.get("params", {})
        return (p["frameId"], p.get("loaderId")) if m.get("method") == "Page.lifecycleEvent" and \
            p.get("name") == "load" else None

    return awaited(timeout, unfinished(events, began, ended), unloaded(events, navigated, loaded, main))


def firefox_awaited(timeout, events, main):
    """TIMEOUT's message with what WebDriver BiDi's events say the load of context MAIN was still waiting for."""
    def began(m):
        r = m.get("params", {}).get("request", {})
        return (r["request"], r["url"]) if m.get("method") == "network.beforeRequestSent" else None

    def ended(m):
        return m["params"]["request"]["request"] if m.get("method") in ("network.responseCompleted",
                                                                        "network.fetchError") else None

    def navigated(m):
        p = m.get("params", {})
        return (p["context"], p.get("navigation"), p.get("url", "")) \
            if m.get("method") == "browsingContext.navigationStarted" else None

    def loaded(m):
        p = m.get("params", {})
        return (p["context"], p.get("navigation")) if m.get("method") == "browsingContext.load" else None

    return awaited(timeout, unfinished(events, began, ended), unloaded(events, navigated, loaded, main))


# ---------------------------------------------------------------------------------------------------------
# Processes


def _libc():
    return ctypes.CDLL(None, use_errno=True)


PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36


def become_subreaper():
    """Orphaned descendants (a browser's helper that left its process group) are reparented to us."""
    try:
        _libc().prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def die_with_parent():
    """For a child between fork and exec: SIGKILL when its parent dies."""
    _libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def children_of(pid):
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2:].split()
            if int(fields[1]) == pid:
                out.append(int(entry))
    return out


def reap_orphans(keep=()):
    """Kills and reaps every child of ours but KEEP (the orphans a killed browser left to its subreaper)."""
    for _ in range(50):
        strays = [p for p in children_of(os.getpid()) if p not in keep]
        if not strays:
            return
        for pid in strays:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in strays:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


class Process:
    """A browser in its own process group, its stderr read by a thread: the last lines are kept for errors, and
    the first line matching ENDPOINT (the protocol's address) is handed to wait_endpoint()."""

    def __init__(self, argv, env, endpoint):
        self.started = time.monotonic()
        try:
            self.proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.PIPE, start_new_session=True)
        except OSError as e:
            raise LoadFailed(f"{argv[0]}: cannot start: {e.strerror}") from None
        self.tail = collections.deque(maxlen=20)
        self.endpoint, self.found = None, threading.Event()
        self.thread = threading.Thread(target=self._read, args=(re.compile(endpoint),), daemon=True)
        self.thread.start()

    def _read(self, pattern):
        for raw in self.proc.stderr:
            line = raw.decode(errors="replace").rstrip()
            self.tail.append(line)
            m = pattern.search(line) if self.endpoint is None else None
            if m:
                self.endpoint = m.group(1)
                self.found.set()
        self.found.set()

    def wait_endpoint(self, deadline):
        if not self.found.wait(max(0.0, deadline - time.monotonic())):
            raise LoadFailed(f"the browser did not start within its deadline{self.said()}")
        if self.endpoint is None:
            self.proc.wait()
            raise LoadFailed(f"the browser exited with status {self.proc.returncode} before listening{self.said()}")
        return self.endpoint

    def said(self):
        lines = [l for l in self.tail if l.strip()]
        return f": {lines[-1]}" if lines else ""

    def wait_exit(self, deadline):
        try:
            self.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            return True
        except subprocess.TimeoutExpired:
            return False

    def kill(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        reap_orphans()
        self.thread.join(5)
        self.proc.stderr.close()


# ---------------------------------------------------------------------------------------------------------
# The protocol: JSON messages over a WebSocket, commands answered by id, events in between


class Channel:
    def __init__(self, url, deadline):
        import websocket  # python3-websocket (websocket-client)

        self.websocket = websocket
        self.ids = itertools.count(1)
        self.events = collections.deque()
        try:
            self.ws = websocket.create_connection(url, timeout=max(0.1, deadline - time.monotonic()),
                                                  suppress_origin=True)
        except (OSError, websocket.WebSocketException) as e:
            raise LoadFailed(f"cannot reach the browser's protocol at {url}: {e}") from None

    def _recv(self, deadline, what):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimedOut(f"timed out waiting for {what}")
        self.ws.settimeout(left)
        try:
            return json.loads(self.ws.recv())
        except (socket.timeout, self.websocket.WebSocketTimeoutException):
            raise TimedOut(f"timed out waiting for {what}") from None
        except (OSError, self.websocket.WebSocketException, ValueError) as e:
            raise LoadFailed(f"the browser's protocol broke while waiting for {what}: {e or type(e).__name__}") \
                from None

    def call(self, method, params, deadline, what=None, **extra):
        """The result of one command; a protocol error raises LoadFailed with the browser's message, and running out
        of time TimedOut naming WHAT the command waits for (its method if not given)."""
        number = next(self.ids)
        try:
            self.ws.send(json.dumps(dict(extra, id=number, method=method, params=params)))
        except (OSError, self.websocket.WebSocketException) as e:
            raise LoadFailed(f"the browser's protocol broke sending {method}: {e}") from None
        while True:
            msg = self._recv(deadline, what or method)
            if msg.get("id") == number:
                if "error" in msg:
                    err = msg["error"]
                    text = err.get("message", err) if isinstance(err, dict) else f"{err}: {msg.get('message', '')}"
                    raise LoadFailed(f"{method}: {text}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def event(self, match, deadline, what, seen=None):
        """The first event (queued or to come) for which MATCH(message) is true; SEEN, if given, is shown every
        event passed over on the way."""
        while True:
            while self.events:
                msg = self.events.popleft()
                if match(msg):
                    return msg
                if seen:
                    seen(msg)
            msg = self._recv(deadline, what)
            if "method" in msg:
                self.events.append(msg)

    def close(self):
        try:
            self.ws.close(timeout=0.2)
        except Exception:  # noqa: BLE001 - the browser is being killed anyway
            pass


# ---------------------------------------------------------------------------------------------------------
# Browsers


def find(name):
    for candidate in CHROMIUM if name == "chromium" else FIREFOX:
        path = shutil.which(candidate, path=os.environ.get("PATH", "") + ":/usr/bin:/usr/local/bin")
        if path:
            return path
    raise RunError(f"no {name} here: install Debian's {INSTALL[name]} (scripts/install-deps does)")


class Browser:
    """Start (warm: protocol up, about:blank loaded), load() one URL, close(). PROFILE is a fresh directory of
    ours (or one a previous start filled, for a warm cache); NSSDB a certificate database to trust, or None;
    UPGRADES whether it may try https:// for an http:// URL (see https_upgrades)."""

    name = ""

    def __init__(self, exe, profile, nssdb, args, deadline, upgrades=True):
        self.exe, self.profile, self.nssdb, self.args, self.upgrades = exe, profile, nssdb, list(args), upgrades
        self.home = os.path.join(profile, "home")
        os.makedirs(self.home, exist_ok=True)
        self.process = self.channel = None
        try:
            self._start(deadline)
            self.startup_ms = (time.monotonic() - self.process.started) * 1000
        except BaseException:
            self.close()
            raise

    def environment(self):
        env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
        env.update(HOME=self.home, XDG_CONFIG_HOME=os.path.join(self.home, ".config"),
                   XDG_CACHE_HOME=os.path.join(self.home, ".cache"), XDG_DATA_HOME=os.path.join(self.home, ".local"))
        # The temporary files a browser makes (Chromium's singleton socket directory, Firefox's start-up bundles)
        # go with the profile: a browser ended with SIGKILL cannot remove what it made in /tmp (over 2000
        # /tmp/org.chromium.Chromium.* were left on a test machine).
        env["TMPDIR"] = os.path.join(self.home, "tmp")
        os.makedirs(env["TMPDIR"], exist_ok=True)
        env.pop("DBUS_SESSION_BUS_ADDRESS", None)
        return env

    def close(self, graceful_deadline=None):
        """Ends the browser: with GRACEFUL_DEADLINE, asks it to quit first (so its disk cache is written)."""
        if graceful_deadline and self.channel:
            try:
                self._quit(graceful_deadline)
                self.process.wait_exit(graceful_deadline)
            except LoadFailed:
                pass
        if self.channel:
            self.channel.close()
        if self.process:
            self.process.kill()
        self.channel = self.process = None

    def _copy_nssdb(self, target):
        os.makedirs(target, exist_ok=True)
        for name in os.listdir(self.nssdb):
            shutil.copy(os.path.join(self.nssdb, name), target)

    def capture(self, what, deadline, world):
        """What WHAT (params' capture) asks of the loaded page: its DOM and text (read in WORLD), a PNG."""
        out = {}
        if "dom" in what:
            out.update(json.loads(self._evaluate(CAPTURE_JS, deadline, world=world, what="the DOM could not be read")))
        if "screenshot" in what:
            out["png"] = base64.b64decode(self._screenshot(deadline))
        return out

    def _wait_blank(self, evaluate, deadline):
        """Until about:blank's document is complete (the browser is warm)."""
        while evaluate("document.readyState", deadline) != "complete":
            if time.monotonic() > deadline:
                raise LoadFailed("about:blank did not finish loading")
            time.sleep(0.01)


class Chromium(Browser):
    name = "chromium"

    def _start(self, deadline):
        data = os.path.join(self.profile, "chromium")
        if self.nssdb and not os.path.exists(os.path.join(self.home, ".pki", "nssdb")):
            self._copy_nssdb(os.path.join(self.home, ".pki", "nssdb"))  # Chromium on Linux trusts $HOME's NSS db
        argv = [self.exe, *chromium_arguments([f"--user-data-dir={data}", *self.args], self.upgrades), "about:blank"]
        self.process = Process(argv, self.environment(), r"DevTools listening on (ws://\S+)")
        self.channel = Channel(self.process.wait_endpoint(deadline), deadline)
        targets = self.channel.call("Target.getTargets", {}, deadline)["targetInfos"]
        page = next((t for t in targets if t["type"] == "page"), None)
        if page is None:
            page = {"targetId": self.channel.call("Target.createTarget", {"url": "about:blank"}, deadline)["targetId"]}
        self.session = self.channel.call("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True},
                                         deadline)["sessionId"]
        self._call("Page.enable", {}, deadline)
        self._call("Page.setLifecycleEventsEnabled", {"enabled": True}, deadline)
        self._call("Network.enable", {}, deadline)  # each response's connection id: see connection_count
        self._call("Network.setCacheDisabled", {"cacheDisabled": False}, deadline)
        self._wait_blank(self._evaluate, deadline)

    def _call(self, method, params, deadline):
        return self.channel.call(method, params, deadline, sessionId=self.session)

    def _evaluate(self, expression, deadline, wait=False, world=None, what="the page's timing could not be read"):
        """EXPRESSION's value, in the page's main world or the isolated WORLD (an execution context id)."""
        params = {"expression": expression, "returnByValue": True, "awaitPromise": wait}
        if world is not None:
            params["contextId"] = world
        r = self._call("Runtime.evaluate", params, deadline)
        if "exceptionDetails" in r:
            raise LoadFailed(f"{what}: {exception_text(r['exceptionDetails'])}")
        return r["result"].get("value")

    def load(self, url, deadline, until=None, capture=()):
        nav = self._call("Page.navigate", {"url": url}, deadline)
        if nav.get("errorText"):
            raise LoadFailed(f"{url}: {nav['errorText']}")
        loader, frame = nav.get("loaderId"), nav.get("frameId")
        seen = []
        try:
            self.channel.event(lambda m: m.get("method") == "Page.lifecycleEvent" and m["params"]["name"] == "load"
                               and m["params"]["frameId"] == frame and m["params"]["loaderId"] == loader,
                               deadline, "the load event", seen=seen.append)
        except TimedOut as e:
            raise TimedOut(chromium_awaited(e, seen + list(self.channel.events), frame)) from None
        until_ms = self._evaluate(UNTIL_JS % until, deadline, wait=True, what="until") if until else None
        world = self._call("Page.createIsolatedWorld", {"frameId": frame, "worldName": WORLD,
                                                        "grantUniversalAccess": False}, deadline)["executionContextId"]
        perf = json.loads(self._evaluate(PERFORMANCE_JS, deadline, wait=True, world=world))
        events = seen + list(self.channel.events)
        perf.update(connections=connection_count(events), requests=chromium_requests(events, loader), until_ms=until_ms,
                    capture=self.capture(capture, deadline, world))
        return perf

    def _screenshot(self, deadline):
        return self._call("Page.captureScreenshot", {"format": "png"}, deadline)["data"]

    def _quit(self, deadline):
        self.channel.call("Browser.close", {}, deadline)


class Firefox(Browser):
    name = "firefox"

    def _start(self, deadline):
        data = os.path.join(self.profile, "firefox")
        if not os.path.exists(data):
            os.makedirs(data)
            with open(os.path.join(data, "user.js"), "w") as f:
                for key, value in firefox_prefs(self.upgrades).items():
                    f.write(f"user_pref({json.dumps(key)}, {json.dumps(value)});\n")
            if self.nssdb:
                self._copy_nssdb(data)  # the profile's own cert9.db: trusted by this profile only
        argv = [self.exe, "--headless", "--no-remote", "--profile", data, "--remote-debugging-port=0", *self.args,
                "about:blank"]
        env = self.environment()
        env.update(MOZ_CRASHREPORTER_DISABLE="1", MOZ_DISABLE_AUTO_SAFE_MODE="1")
        self.process = Process(argv, env, r"WebDriver BiDi listening on (ws://\S+)")
        self.channel = Channel(self.process.wait_endpoint(deadline) + "/session", deadline)
        self.channel.call("session.new", {"capabilities": {}}, deadline)
        tree = self.channel.call("browsingContext.getTree", {"maxDepth": 0}, deadline)["contexts"]
        if not tree:
            raise LoadFailed("the browser has no window")
        self.context = tree[0]["context"]
        self.channel.call("session.subscribe", {"events": ["network.beforeRequestSent", "network.responseCompleted",
                                                           "network.fetchError", "browsingContext.navigationStarted",
                                                           "browsingContext.load"],
                                                "contexts": [self.context]}, deadline)  # see firefox_requests, load
        self._wait_blank(self._evaluate, deadline)

    def _evaluate(self, expression, deadline, wait=False, world=None, what="the page's timing could not be read"):
        """EXPRESSION's value, in the page's main world or the sandbox named WORLD."""
        target = {"context": self.context} if world is None else {"context": self.context, "sandbox": world}
        r = self.channel.call("script.evaluate", {"expression": expression, "target": target, "awaitPromise": wait},
                              deadline)
        if r.get("type") == "exception":
            raise LoadFailed(f"{what}: {exception_text(r['exceptionDetails'])}")
        return r["result"].get("value")

    def load(self, url, deadline, until=None, capture=()):
        # Firefox 153 can answer navigate's "complete" before the page's load event (at a history update the page
        # makes while it loads, as yahoo.com's does): the navigation's own load event is what ends the load.
        seen = []
        try:
            nav = self.channel.call("browsingContext.navigate", {"context": self.context, "url": url,
                                                                 "wait": "complete"}, deadline, what="the load event")
            self.channel.event(lambda m: m.get("method") == "browsingContext.load" and m["params"].get("context") ==
                               self.context and m["params"].get("navigation") == nav.get("navigation"),
                               deadline, "the load event", seen=seen.append)
        except TimedOut as e:
            raise TimedOut(firefox_awaited(e, seen + list(self.channel.events), self.context)) from None
        until_ms = self._evaluate(UNTIL_JS % until, deadline, wait=True, what="until") if until else None
        perf = json.loads(self._evaluate(PERFORMANCE_JS, deadline, wait=True, world=WORLD))
        events = seen + list(self.channel.events)
        perf.update(requests=firefox_requests(events, nav.get("navigation")), until_ms=until_ms,
                    capture=self.capture(capture, deadline, WORLD))
        return perf

    def _screenshot(self, deadline):
        return self.channel.call("browsingContext.captureScreenshot", {"context": self.context}, deadline)["data"]

    def _quit(self, deadline):
        self.channel.call("browser.close", {}, deadline)


BROWSERS = {"chromium": Chromium, "firefox": Firefox}


# ---------------------------------------------------------------------------------------------------------
# The server: nginx, outside the shells

# The addresses a client reaches a server outside the shells at (TM_OUTSIDE/6, TM_BASE/6), and loopback.
CERT_ADDRESSES = ("100.64.0.1", "fd74:6d00::1", "100.127.255.1", "fd74:6d00:1::1", "127.0.0.1", "::1")
CA_FILE = "ca.pem"
STATE_DIR = "browser-server"  # beside the ready file, where tm-run's client (run in that directory) finds ca.pem
TYPES = {"html": "text/html", "htm": "text/html", "css": "text/css", "js": "application/javascript",
         "mjs": "application/javascript", "json": "application/json", "png": "image/png", "jpg": "image/jpeg",
         "jpeg": "image/jpeg", "gif": "image/gif", "svg": "image/svg+xml", "webp": "image/webp", "ico": "image/x-icon",
         "woff": "font/woff", "woff2": "font/woff2", "txt": "text/plain", "wasm": "application/wasm",
         "mp4": "video/mp4", "webm": "video/webm"}


def _openssl(args, cwd):
    exe = shutil.which("openssl")
    if not exe:
        raise RunError("openssl is not installed: apt-get install openssl (scripts/install-deps does)")
    out = subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if out.returncode != 0:
        raise RunError(f"openssl {args[0]}: {(out.stderr.strip().splitlines() or ['failed'])[-1]}")


def make_certificates(directory, hosts=()):
    """A CA (ca.pem) and a server key and certificate it signed (server.key, server.pem) in DIRECTORY, valid for
    CERT_ADDRESSES, localhost and HOSTS (addresses or names). Returns the CA's path."""
    names, addresses = ["localhost"], list(CERT_ADDRESSES)
    for h in hosts:
        try:
            addresses.append(str(ipaddress.ip_address(h)))
        except ValueError:
            names.append(h)
    san = ",".join([f"DNS:{n}" for n in dict.fromkeys(names)] + [f"IP:{a}" for a in dict.fromkeys(addresses)])
    with open(os.path.join(directory, "server.ext"), "w") as f:
        f.write(f"subjectAltName={san}\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                "extendedKeyUsage=serverAuth\n")
    tag = os.urandom(6).hex()  # each server's CA is its own: a browser trusting one run's CA trusts no other's
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl(["req", "-x509", *ec, "-keyout", "ca.key", "-out", CA_FILE, "-days", "7", "-subj",
              f"/CN=tracemod tm-run browser workload CA {tag}", "-addext", "basicConstraints=critical,CA:TRUE",
              "-addext", "keyUsage=critical,keyCertSign,cRLSign"], directory)
    _openssl(["req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=tm-run site"], directory)
    _openssl(["x509", "-req", "-in", "server.csr", "-CA", CA_FILE, "-CAkey", "ca.key", "-CAcreateserial",
              "-out", "server.pem", "-days", "7", "-extfile", "server.ext"], directory)
    os.unlink(os.path.join(directory, "ca.key"))  # nothing more is ever signed with it
    return os.path.join(directory, CA_FILE)


def _has_ipv6():
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def nginx_config(state, site, port, tls_port, host=None):
    """nginx.conf for SITE: HTTP/1.1 on PORT, HTTP/2 over TLS on TLS_PORT, all paths in STATE."""
    def listen(p, extra=""):
        if host:
            h = f"[{host}]" if ":" in host else host
            return f"    listen {h}:{p}{extra};\n"
        six = f"    listen [::]:{p}{extra};\n" if _has_ipv6() else ""
        return f"    listen {p}{extra};\n" + six

    q = lambda p: '"' + p.replace("\\", "\\\\").replace('"', '\\"') + '"'  # noqa: E731
    tmp = os.path.join(state, "tmp")
    types = "".join(f"    {t} {ext};\n" for ext, t in TYPES.items())
    common_server = (f"    root {q(site)};\n    index index.html;\n    expires 1h;\n"
                     f"    add_header Timing-Allow-Origin \"*\" always;\n"
                     "    location ~* \\.html?$ { expires epoch; }\n")  # pages revalidated, objects kept
    return (
        "daemon off;\nmaster_process off;\nworker_processes 1;\n"
        f"pid {q(os.path.join(state, 'nginx.pid'))};\nerror_log {q(os.path.join(state, 'error.log'))} warn;\n"
        "events { worker_connections 4096; }\n"
        "http {\n"
        f"  types {{\n{types}  }}\n  default_type application/octet-stream;\n"
        f"  access_log {q(os.path.join(state, 'access.log'))};\n"
        + "".join(f"  {k}_temp_path {q(os.path.join(tmp, k))};\n"
                  for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")) +
        "  sendfile on;\n  tcp_nodelay on;\n  keepalive_timeout 65s;\n  keepalive_requests 10000;\n  gzip off;\n"
        "  server_tokens off;\n"
        f"  server {{\n{listen(port)}{common_server}  }}\n"
        f"  server {{\n{listen(tls_port, ' ssl http2')}{common_server}"
        f"    ssl_certificate {q(os.path.join(state, 'server.pem'))};\n"
        f"    ssl_certificate_key {q(os.path.join(state, 'server.key'))};\n"
        "    ssl_protocols TLSv1.2 TLSv1.3;\n    ssl_session_tickets off;\n  }\n"
        "}\n")


def find_nginx():
    for path in (shutil.which("nginx"), "/usr/sbin/nginx"):
        if path and os.access(path, os.X_OK):
            return path
    raise UsageError("the browser workload serves its site with nginx, which is not installed: "
                     "apt-get install nginx-light (scripts/install-deps does), or give server = \"URL\"")


def state_directory(ready_file):
    if ready_file:
        d = os.path.join(os.path.dirname(os.path.abspath(ready_file)), STATE_DIR)
        if os.path.exists(d):
            shutil.rmtree(d)
        os.makedirs(d)
        return d
    return tempfile.mkdtemp(prefix="tm-browser-server-")


def serve(params, port, host=None, ready_file=None, once=False, stopped=None):
    """Serves params["site"] until SIGTERM or SIGINT (or the event STOPPED is set); with params["server"] (a
    server of the user's), only says it is ready and waits."""
    if once:
        raise UsageError("--once: the browser workload's server serves until it is stopped")
    stopped = stopped or threading.Event()
    if threading.current_thread() is threading.main_thread():  # (tests serve from a thread)
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stopped.set())
    if params.get("server") or not params.get("site") and all("://" in u for u in params.get("urls", ["/"])):
        common.mark_ready(ready_file)  # the pages are elsewhere: nothing to serve
        stopped.wait()
        return
    site = params.get("site")
    if not site:
        raise UsageError("the browser workload needs site = \"DIRECTORY\" (served end to end) or server = \"URL\"")
    site = os.path.abspath(site)
    if not os.path.isdir(site):
        raise UsageError(f"site {site}: no such directory")
    nginx = find_nginx()
    tls_port = int(params.get("tls_port") or 8443)
    state = state_directory(ready_file)
    os.makedirs(os.path.join(state, "tmp"))
    ca = make_certificates(state, [host] if host else [])
    conf = os.path.join(state, "nginx.conf")
    with open(conf, "w") as f:
        f.write(nginx_config(state, site, port, tls_port, host))
    proc = subprocess.Popen([nginx, "-p", state, "-e", os.path.join(state, "error.log"), "-c", conf],
                            stdin=subprocess.DEVNULL, preexec_fn=die_with_parent)
    try:
        deadline = common.now() + 15
        while not (_listening(port) and _listening(tls_port)):
            if proc.poll() is not None:
                raise RunError(f"nginx exited with status {proc.returncode} before listening: "
                               f"{_last_line(os.path.join(state, 'error.log'))}")
            if common.now() > deadline:
                raise RunError(f"nginx did not listen on ports {port} and {tls_port} within 15 s")
            stopped.wait(0.005)
        print(f"tm-run workload browser: serving {site} at http://HOST:{port}/ (HTTP/1.1) and "
              f"https://HOST:{tls_port}/ (HTTP/2); clients trust {ca}", flush=True)
        common.mark_ready(ready_file)
        while not stopped.wait(0.5):
            if proc.poll() is not None:
                raise RunError(f"nginx exited with status {proc.returncode}: "
                               f"{_last_line(os.path.join(state, 'error.log'))}")
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()




def _listening(port):
    from .command import listening

    return listening(port)


def _last_line(path):
    try:
        with open(path) as f:
            lines = [l.strip() for l in f if l.strip()]
        return lines[-1] if lines else "(nothing in its error log)"
    except OSError:
        return "(no error log)"


# ---------------------------------------------------------------------------------------------------------
# Client


def _host_text(host):
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def page_urls(params, host, port):
    """The URLs to load: whole URLs as given, paths on the server (params' server, else the site's at HOST)."""
    if params.get("server"):
        base = params["server"].rstrip("/")
    elif params["protocol"] == "h2":
        base = f"https://{_host_text(host)}:{params.get('tls_port') or DEFAULT_TLS_PORT}"
    else:
        base = f"http://{_host_text(host)}:{port}"
    return [u if "://" in u else base + u for u in params["urls"]]


def server_host(explicit=None):
    """The server's address: --host, else $TM_RUN_SERVER, else $TM_OUTSIDE (the outermost shell's far end, where
    its --outside server runs, reached on the kernel path, with pasta and isolated, through any nesting), else
    $TM_BASE, else loopback."""
    for value in (explicit, os.environ.get("TM_RUN_SERVER"), os.environ.get("TM_OUTSIDE"), os.environ.get("TM_BASE")):
        if value:
            return value
    return "127.0.0.1"


def find_ca(params):
    """The CA the browser trusts: params' ca, else the one tm-run's server left in the run directory."""
    if params.get("ca"):
        if not os.path.isfile(params["ca"]):
            raise UsageError(f"ca {params['ca']}: no such file")
        return os.path.abspath(params["ca"])
    made = os.path.join(STATE_DIR, CA_FILE)
    if not params.get("server") and os.path.isfile(made):
        return os.path.abspath(made)
    return None


def make_nssdb(directory, ca):
    """An NSS certificate database (cert9.db, key4.db, pkcs11.txt) in DIRECTORY trusting CA for TLS servers."""
    certutil = shutil.which("certutil", path=os.environ.get("PATH", "") + ":/usr/bin")
    if not certutil:
        raise RunError("certutil is not installed: apt-get install libnss3-tools (scripts/install-deps does)")
    os.makedirs(directory)
    for args in (["-N", "--empty-password"], ["-A", "-n", "tm-run browser workload CA", "-t", "C,,", "-i", ca]):
        out = subprocess.run([certutil, "-d", f"sql:{directory}", *args], capture_output=True, text=True,
                             stdin=subprocess.DEVNULL)
        if out.returncode != 0:
            raise RunError(f"certutil {args[0]}: {out.stderr.strip() or out.stdout.strip()}")
    return directory


WORKDIR_PREFIX = "tm-browser-"


def make_workdir(parent=None):
    """A directory for this client's profiles in $TMPDIR (a short path: Firefox does not start from a profile
    whose path is much over 100 characters). Its lock file stays locked while the client lives, so that the
    next client removes the directories of clients killed outright (which could not remove their own)."""
    parent = parent or tempfile.gettempdir()
    sweep_workdirs(parent)
    workdir = tempfile.mkdtemp(prefix=WORKDIR_PREFIX, dir=parent)
    lock = os.open(os.path.join(workdir, "lock"), os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)  # held until this process ends (never released, never inherited)
    return workdir


def sweep_workdirs(parent, min_age=60.0):
    """Removes the workdirs in PARENT whose client is gone: their lock is free (and they are over MIN_AGE
    seconds old, so a client between making its directory and locking it is left alone)."""
    for name in os.listdir(parent):
        path = os.path.join(parent, name)
        if not name.startswith(WORKDIR_PREFIX) or name.startswith("tm-browser-server-"):
            continue
        try:
            if time.time() - os.stat(path).st_mtime < min_age:
                continue
            fd = os.open(os.path.join(path, "lock"), os.O_RDWR | os.O_CLOEXEC)
        except OSError:
            continue  # not ours to judge (another user's, or no lock)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            shutil.rmtree(path, ignore_errors=True)
        except OSError:
            pass  # its client is alive
        finally:
            os.close(fd)


class _Stop(Exception):
    pass


def _raise_stop(signum, frame):
    raise _Stop(signal.Signals(signum).name)


def one_load(kind, exe, url, params, workdir, nssdb, number):
    """One load's row: its metrics, or completed 0 and the error."""
    row = {"load": number, "url": url, "completed": 0, "error": None}
    profile = tempfile.mkdtemp(prefix="load-", dir=workdir)
    browser = None

    def start():
        return kind(exe, profile, nssdb, params["browser_args"], time.monotonic() + STARTUP_TIMEOUT,
                    https_upgrades(params))

    try:
        if params["warm"]:
            browser = start()
            browser.load(url, time.monotonic() + params["timeout"])
            browser.close(graceful_deadline=time.monotonic() + 10)
        browser = start()
        row["startup_ms"] = browser.startup_ms
        perf = browser.load(url, time.monotonic() + params["timeout"], params.get("until"), params["capture"])
        row.update(keep_capture(perf["capture"], number))
        document, counts = load_requests(perf["requests"])
        row.update(counts)
        if document:
            raise LoadFailed(f"{url}: {document}")
        row.update(page_metrics(perf))
        if row["status"] and row["status"] >= 400:  # the events should have said so: the timing does
            raise LoadFailed(f"{url}: HTTP status {row['status']}")
        row["completed"] = 1
    except LoadFailed as e:
        row["completed"], row["error"] = 0, str(e)
    finally:
        if browser:
            browser.close()
        shutil.rmtree(profile, ignore_errors=True)
    return row


def utf8(text):
    """TEXT in UTF-8; a lone surrogate (a JavaScript string may hold one) as U+FFFD, as TextEncoder makes it."""
    try:
        return text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode()


def keep_capture(captured, number):
    """The row's fields of what load NUMBER captured (Browser.capture), its files written in the current directory
    (tm-run's client runs in the run's directory): loadN.html, the DOM in UTF-8, and loadN.png."""
    row = {}
    if "dom" in captured:
        dom = utf8(captured["dom"])
        row.update(dom_file=save(f"load{number}.html", dom), dom_bytes=len(dom),
                   text_bytes=len(utf8(captured["text"])), dom_sha256=hashlib.sha256(dom).hexdigest())
    if "png" in captured:
        row["screenshot_file"] = save(f"load{number}.png", captured["png"])
    return row


def save(name, data):
    try:
        with open(name, "wb") as f:
            f.write(data)
    except OSError as e:
        raise LoadFailed(f"cannot keep {os.path.abspath(name)}: {e.strerror}") from None
    return name


def run_client(params, host, port, seed):
    kind = BROWSERS[params["browser"]]
    exe = find(params["browser"])
    urls = page_urls(params, host, port)
    become_subreaper()
    old = {s: signal.signal(s, _raise_stop) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    workdir = make_workdir()
    rows = []
    try:
        ca = find_ca(params)
        nssdb = make_nssdb(os.path.join(workdir, "nssdb"), ca) if ca else None
        for i in range(params["loads"]):
            for url in urls:
                rows.append(one_load(kind, exe, url, params, workdir, nssdb, len(rows) + 1))
                row = rows[-1]
                print(f"tm-run workload browser: load {row['load']} of {url}: {outcome(row)}", file=sys.stderr,
                      flush=True)
    except _Stop as e:
        raise RunError(f"stopped by {e}") from None
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        reap_orphans()
        shutil.rmtree(workdir, ignore_errors=True)
    return summarize(rows, params)


def outcome(row):
    """A load's row in a few words, for the client's log."""
    if not row["completed"]:
        return f"failed: {row['error']}"
    text = f"{row['plt_ms']:.1f} ms"
    if row["degraded"] or row["replay_misses"]:
        text += (f" ({'degraded: ' if row['degraded'] else ''}{row['failed_requests']} failed requests, "
                 f"{row['replay_misses']} replay misses: {'; '.join(row['failures'][:3])})")
    return text


def summarize(rows, params):
    """The client's result: per-run metrics over the completed loads, per-load samples, and the rows."""
    done = [r for r in rows if r["completed"]]
    metrics = {"loads": len(rows), "loads_completed": len(done), "loads_failed": len(rows) - len(done)}
    samples = {}
    for name in TIMES + COUNTS:
        values = [r[name] for r in done if r.get(name) is not None]
        samples[name] = values
        if values:
            metrics[f"{name}_p50"] = stats.median(values)
            if name in TIMES:
                metrics[f"{name}_mean"] = stats.mean(values)
    plt = samples["plt_ms"]
    if len(plt) > 1 and stats.mean(plt) > 0:
        metrics["plt_cov"] = stats.sd(plt) / stats.mean(plt)
    for proto in ("h1", "h2", "h3"):
        metrics[f"loads_{proto}"] = sum(1 for r in done if r.get("protocol") == proto)
    # Degraded loads completed, so they are among the medians above: these say how many, and what failed.
    metrics["loads_degraded"] = sum(r.get("degraded", 0) for r in done)
    metrics["failed_requests"] = sum(r.get("failed_requests", 0) for r in done)
    metrics["replay_misses"] = sum(r.get("replay_misses", 0) for r in done)
    samples["completed"] = [r["completed"] for r in rows]
    samples["degraded"] = [r.get("degraded", 0) for r in done]
    return {"metrics": metrics, "samples": samples, "series": {}, "loads": rows, "browser": params["browser"]}
