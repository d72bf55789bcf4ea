"""The browser workload's logic without a browser: metrics from the page's timing entries (as Chromium and
Firefox give them), parameters, URLs and addresses, the per-load rows in results.csv and summary.md, the
certificates and nginx's configuration, nginx serving a site on loopback (HTTP/1.1 and HTTP/2 over TLS with the
run's CA), and the committed example site being what make-site writes."""
import base64
import collections
import filecmp
import hashlib
import itertools
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.request

import pytest
import websocket

from tracemod_run import results
from tracemod_run.errors import ConfigError, UsageError
from tracemod_run.workloads import browser, common, registry

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
MAKE_SITE = os.path.join(ROOT, "examples", "sites", "make-site")


def entry(name, start, end, size, proto="h2", connect=(0, 0), **more):
    return dict({"name": name, "startTime": start, "responseEnd": end, "transferSize": size,
                 "decodedBodySize": size - 300 if size else 1000, "nextHopProtocol": proto,
                 "connectStart": connect[0], "connectEnd": connect[1]}, **more)


# What Chromium gave for a page of two objects over one fresh HTTP/2 connection (trimmed to the fields read).
CHROMIUM = {
    "nav": [dict(entry("https://100.64.0.1:8443/", 0, 95.3, 1781, connect=(4.2, 64.9)),
                 domContentLoadedEventStart=180.5, loadEventStart=412.6, responseStatus=200)],
    "res": [entry("https://100.64.0.1:8443/a.css", 96.1, 150.2, 14314),
            entry("https://100.64.0.1:8443/b.png", 96.4, 399.0, 30987)],
    "paint": [{"name": "first-paint", "startTime": 201.0}, {"name": "first-contentful-paint", "startTime": 201.0}],
}
# Firefox: times to the microsecond with privacy.reduceTimerPrecision off; HTTP/1.1 over two connections.
FIREFOX = {
    "nav": [dict(entry("http://100.64.0.1:8080/", 0, 61.0, 1630, proto="http/1.1", connect=(1.5, 41.7)),
                 domContentLoadedEventStart=154.25, loadEventStart=415.5, responseStatus=200)],
    "res": [entry("http://100.64.0.1:8080/a.css", 150, 363, 314, proto="http/1.1"),
            entry("http://100.64.0.1:8080/b.png", 150, 364, 20300, proto="http/1.1", connect=(151.0, 191.5)),
            entry("http://100.64.0.1:8080/c.png", 150, 151, 0, proto="http/1.1")],  # from the cache
    "paint": [{"name": "first-contentful-paint", "startTime": 479.0}],
}


def test_metrics_from_chromium_timing():
    m = browser.page_metrics(CHROMIUM)
    assert m["plt_ms"] == 412.6 and m["dcl_ms"] == 180.5 and m["fcp_ms"] == 201.0
    assert m["transfer_bytes"] == 1781 + 14314 + 30987 and m["requests"] == 3
    assert m["connections"] == 1 and m["protocol"] == "h2" and m["protocols"] == {"h2": 3}
    assert m["cache_hits"] == 0 and m["status"] == 200


def response(connection_id, method="Network.responseReceived"):
    return {"method": method, "params": {"response": {"connectionId": connection_id}}}


def test_chromium_connections_are_the_connections_its_responses_came_over():
    # An HTTP/2 page over one preconnected socket (Resource Timing shows every entry as reused), two objects
    # from the cache (id 0), and an event of another kind: one connection.
    events = [response(17), response(17), response(0), response(17), response(0), response(9, "Network.dataReceived")]
    assert browser.connection_count(events) == 1
    assert browser.connection_count(events + [response(23)]) == 2
    assert browser.connection_count([]) == 0
    # The count Chromium's client gives replaces the one from the entries.
    assert browser.page_metrics(dict(CHROMIUM, connections=1))["connections"] == 1
    assert browser.page_metrics(dict(CHROMIUM, connections=4))["connections"] == 4


def test_metrics_from_firefox_timing():
    m = browser.page_metrics(FIREFOX)
    assert m["plt_ms"] == 415.5 and m["dcl_ms"] == 154.25 and m["fcp_ms"] == 479.0  # FCP may follow onload
    assert m["transfer_bytes"] == 1630 + 314 + 20300 and m["requests"] == 4
    assert m["connections"] == 2 and m["protocol"] == "h1" and m["cache_hits"] == 1


def test_metrics_without_paint_or_load():
    no_paint = dict(CHROMIUM, paint=[])
    assert browser.page_metrics(no_paint)["fcp_ms"] is None
    with pytest.raises(browser.LoadFailed, match="no navigation timing"):
        browser.page_metrics({"nav": [], "res": []})
    unloaded = {"nav": [dict(CHROMIUM["nav"][0], loadEventStart=0)]}
    with pytest.raises(browser.LoadFailed, match="load event"):
        browser.page_metrics(unloaded)


def test_until_is_the_pages_time_only_between_the_navigation_and_the_read():
    # until settles in the page's own world, on its own performance.now(), which a page can replace.
    perf = dict(CHROMIUM, read_ms=2500.0)
    assert browser.page_metrics(dict(perf, until_ms=900.5))["until_ms"] == 900.5
    assert browser.page_metrics(perf)["until_ms"] is None
    for lie in (3000.0, -1.0, "900", True):
        with pytest.raises(browser.LoadFailed, match="cannot be trusted"):
            browser.page_metrics(dict(perf, until_ms=lie))


def test_the_merged_disable_features_flag():
    """Chromium reads only the last --disable-features: ours and the user's become one, at the end."""
    ours = "Translate,OptimizationHints,MediaRouter"
    plain = browser.chromium_arguments([])
    assert [a for a in plain if "disable-features" in a] == [f"--disable-features={ours}"]
    assert plain[:-1] == [a for a in browser.CHROMIUM_FLAGS if "disable-features" not in a]
    mine = browser.chromium_arguments(["--user-data-dir=/p", "--disable-features=Foo,Translate", "--lang=de",
                                       "-disable-features=Bar"], upgrades=False)
    assert [a for a in mine if "disable-features" in a] == [f"--disable-features={ours},Foo,Bar,HttpsUpgrades"]
    assert mine[-1].startswith("--disable-features=") and mine.index("--user-data-dir=/p") < mine.index("--lang=de")
    assert "--enable-features=X" in browser.chromium_arguments(["--enable-features=X"])


def test_https_upgrades_are_off_in_replays_unless_asked_for():
    p = registry.validate({"kind": "browser", "site": "s"})
    assert browser.https_upgrades(p) is True and "https_upgrades" not in p
    replay = registry.validate({"kind": "browser", "replay": "rec.har", "urls": ["https://a.test/"]})
    assert browser.https_upgrades(replay) is False
    assert browser.https_upgrades(dict(replay, https_upgrades=True)) is True
    assert browser.https_upgrades(dict(p, https_upgrades=False)) is False
    off = browser.firefox_prefs(upgrades=False)
    assert {k: off[k] for k in browser.FIREFOX_NO_HTTPS_FIRST} == dict.fromkeys(browser.FIREFOX_NO_HTTPS_FIRST, False)
    assert len(browser.FIREFOX_NO_HTTPS_FIRST) == 3 and "dom.security.https_first" in off
    assert not set(browser.FIREFOX_NO_HTTPS_FIRST) & set(browser.firefox_prefs(upgrades=True))


# DevTools' Network events as Chromium 156 gave them for a page with a 404'd style sheet and script (each also
# reported canceled right after its 404), a missing image, and its icon; trimmed to the fields read.
def devtools(method, rid, kind, url=None, status=None, headers=None, **more):
    p = dict({"requestId": rid, "type": kind}, **more)
    if method == "requestWillBeSent":
        p["request"] = {"url": url}
    elif method == "responseReceived":
        p["response"] = {"url": url, "status": status, "headers": headers or {}, "connectionId": 1}
    return {"method": f"Network.{method}", "params": p}


PAGE = "https://h/"
CHROMIUM_EVENTS = [
    devtools("requestWillBeSent", "L1", "Document", PAGE),
    devtools("responseReceived", "L1", "Document", PAGE, 200),
    devtools("requestWillBeSent", "7.2", "Stylesheet", PAGE + "gone.css"),
    devtools("responseReceived", "7.2", "Stylesheet", PAGE + "gone.css", 404),
    devtools("loadingFailed", "7.2", "Stylesheet", errorText="net::ERR_ABORTED", canceled=True),
    devtools("requestWillBeSent", "7.3", "Script", PAGE + "miss.js"),
    devtools("responseReceived", "7.3", "Script", PAGE + "miss.js", 404, {"x-tm-replay": "miss"}),
    devtools("loadingFailed", "7.3", "Script", errorText="net::ERR_ABORTED", canceled=True),
    devtools("requestWillBeSent", "7.4", "Font", PAGE + "f.woff2"),
    devtools("loadingFailed", "7.4", "Font", errorText="net::ERR_CONNECTION_RESET", canceled=False),
    devtools("requestWillBeSent", "7.5", "Image", PAGE + "a.png"),
    devtools("responseReceived", "7.5", "Image", PAGE + "a.png", 404, {"X-TM-Replay": "Miss"}),  # HTTP/1.1's case
    devtools("requestWillBeSent", "7.6", "Script", PAGE + "cancelled.js"),
    devtools("loadingFailed", "7.6", "Script", errorText="net::ERR_ABORTED", canceled=True),  # by the page
    devtools("requestWillBeSent", "7.7", "Other", PAGE + "favicon.ico"),
    devtools("responseReceived", "7.7", "Other", PAGE + "favicon.ico", 404, {"x-tm-replay": "miss"}),
    devtools("requestWillBeSent", "7.8", "Stylesheet", PAGE + "ok.css"),
    devtools("responseReceived", "7.8", "Stylesheet", PAGE + "ok.css", 200, {"x-tm-replay": "hit"}),
]


def test_chromium_failed_requests_and_replay_misses():
    requests = browser.chromium_requests(CHROMIUM_EVENTS, "L1")
    document, row = browser.load_requests(requests)
    assert document is None
    assert row["degraded"] == 1 and row["failed_requests"] == 3 and row["replay_misses"] == 2
    assert row["failures"] == ["HTTP status 404: https://h/gone.css", "HTTP status 404 (not in the recording): "
                               "https://h/miss.js", "net::ERR_CONNECTION_RESET: https://h/f.woff2",
                               "HTTP status 404 (not in the recording): https://h/a.png"]
    # The page's own document: its failure is the load's, not a degraded page's.
    missing = [devtools("responseReceived", "L1", "Document", PAGE, 404, {"x-tm-replay": "miss"})]
    assert browser.load_requests(browser.chromium_requests(missing, "L1"))[0] == \
        "HTTP status 404 (not in the recording)"
    assert browser.load_requests(browser.chromium_requests(missing, "L2"))[1]["failed_requests"] == 1  # an iframe's
    clean = browser.load_requests(browser.chromium_requests(CHROMIUM_EVENTS[:2] + CHROMIUM_EVENTS[-2:], "L1"))
    assert clean == (None, {"degraded": 0, "failed_requests": 0, "replay_misses": 0, "failures": [], "missed": []})
    assert browser.load_requests(requests)[1]["missed"] == ["https://h/miss.js", "https://h/a.png"]  # not the icon


def test_missed_names_every_miss_that_failures_has_no_room_for():
    def misses(n):
        return [browser.Request(f"https://h/{i}.png", "other", 404, None, True, False) for i in range(n)]

    row = browser.load_requests(misses(15) + misses(15))[1]  # each asked for twice: counted once
    assert row["replay_misses"] == 15 and len(row["failures"]) == browser.LISTED
    assert row["missed"] == [f"https://h/{i}.png" for i in range(15)]
    row = browser.load_requests(misses(250))[1]
    assert row["replay_misses"] == 250 and row["missed"] == [f"https://h/{i}.png" for i in range(browser.MISSED)]


def bidi(method, url, destination, initiator=None, status=None, headers=(), error=None, navigation=None):
    request = {"request": url, "url": url, "destination": destination, "initiatorType": initiator}
    p = {"request": request, "navigation": navigation}
    if method == "network.fetchError":
        p["errorText"] = error
    else:
        p["response"] = {"status": status, "mimeType": "text/html",
                         "headers": [{"name": n, "value": {"type": "string", "value": v}} for n, v in headers]}
    return {"method": method, "params": p}


# What Firefox ESR 153 gave through WebDriver BiDi for the same page: its preload scanner asks for a style sheet
# twice, it asks for the page's icon itself (an image without initiatorType), and an error page loads data: fonts.
FIREFOX_EVENTS = [
    bidi("network.responseCompleted", PAGE, "document", status=200, navigation="n1"),
    bidi("network.responseCompleted", PAGE + "gone.css", "style", "link", 404),
    bidi("network.responseCompleted", PAGE + "gone.css", "style", "link", 404),
    bidi("network.responseCompleted", PAGE + "miss.js", "script", "script", 404, [("x-tm-replay", "miss")]),
    bidi("network.fetchError", PAGE + "f.woff2", "font", error="NS_ERROR_NET_RESET"),
    bidi("network.responseCompleted", PAGE + "a.png", "image", "img", 404, [("x-tm-replay", "miss")]),
    bidi("network.fetchError", PAGE + "cancelled.js", "script", "script", error="NS_BINDING_ABORTED"),
    bidi("network.responseCompleted", PAGE + "favicon.ico", "image", None, 404, [("x-tm-replay", "miss")]),
    bidi("network.responseCompleted", "data:font/woff2;base64,AAAA", "font", None, 200),
    bidi("network.responseCompleted", PAGE + "bg.png", "image", "css", 200),
]


def test_firefox_failed_requests_and_replay_misses():
    document, row = browser.load_requests(browser.firefox_requests(FIREFOX_EVENTS, "n1"))
    assert document is None
    assert row["degraded"] == 1 and row["failed_requests"] == 3 and row["replay_misses"] == 2
    assert row["failures"][2] == "NS_ERROR_NET_RESET: https://h/f.woff2"
    gone = [bidi("network.fetchError", PAGE, "document", error="NS_ERROR_CONNECTION_REFUSED", navigation="n1")]
    assert browser.load_requests(browser.firefox_requests(gone, "n1"))[0] == "NS_ERROR_CONNECTION_REFUSED"
    assert browser.load_requests(browser.firefox_requests(gone, None))[0] is None  # no navigation: no page


class Socket:
    """A WebSocket whose peer answers each command from SCRIPT: method -> (events before, result, events after).
    unread[method] is how many messages were still unread when the command was sent."""

    def __init__(self, script):
        self.script, self.inbox, self.unread = script, collections.deque(), {}

    def send(self, text):
        msg = json.loads(text)
        before, result, after = self.script[msg["method"]]
        self.unread[msg["method"]] = len(self.inbox)
        self.inbox.extend(json.dumps(m) for m in [*before, {"id": msg["id"], "result": result}, *after])

    def recv(self):
        return self.inbox.popleft()

    def settimeout(self, seconds):
        pass


class TimingOutSocket(Socket):
    """A Socket whose peer, once it has said all it had to, says nothing more: the wait times out."""

    def recv(self):
        if not self.inbox:
            raise websocket.WebSocketTimeoutException("timed out")
        return super().recv()


def channel_on(socket_):
    channel = browser.Channel.__new__(browser.Channel)
    channel.websocket, channel.ws, channel.ids, channel.events = websocket, socket_, itertools.count(1), \
        collections.deque()
    return channel


def bidi_event(method, context, navigation=None):
    return {"method": method, "params": {"context": context, "navigation": navigation}}


def test_a_firefox_load_ends_with_its_navigations_load_event_not_navigates_answer():
    """Firefox 153 answered navigate's wait "complete" for yahoo.com before the page's load event: the load waits
    for browsingContext.load of its own navigation (not an iframe's, not about:blank's), and the network events
    that came on the way still count."""
    perf = json.dumps({"nav": [], "res": [], "paint": []})
    page = bidi("network.responseCompleted", PAGE, "document", status=200, navigation="n1")
    socket_ = Socket({
        "browsingContext.navigate": ([], {"navigation": "n1", "url": PAGE}, [
            bidi_event("browsingContext.load", "frame", "n2"), bidi_event("browsingContext.load", "top"), page,
            bidi_event("browsingContext.load", "top", "n1")]),
        "script.evaluate": ([], {"type": "success", "result": {"type": "string", "value": perf}}, [])})
    firefox = browser.Firefox.__new__(browser.Firefox)
    firefox.channel, firefox.context = channel_on(socket_), "top"
    result = firefox.load(PAGE, time.monotonic() + 5)
    assert socket_.unread["script.evaluate"] == 0  # the page's load event was read before its timing was
    assert [r.url for r in result["requests"]] == [PAGE] and result["requests"][0].main


def test_a_chromium_load_that_times_out_says_which_requests_and_frames_it_waited_for():
    frames = [{"method": "Page.frameNavigated", "params": {"frame": {"id": f, "loaderId": loader, "url": url}}}
              for f, loader, url in [("top", "L1", PAGE), ("ad", "L2", PAGE + "ad.html"), ("ad", "L3", PAGE + "ad2")]]
    loads = [{"method": "Page.lifecycleEvent", "params": {"frameId": "ad", "loaderId": "L2", "name": "load"}}]
    finished = [{"method": "Network.loadingFinished", "params": {"requestId": i}} for i in ("L1", "7.5", "7.7")]
    said = browser.chromium_awaited("timed out waiting for the load event", CHROMIUM_EVENTS + frames + loads +
                                    finished, "top")
    # ok.css has its answer but not its body; the ad frame's first document loaded, its second did not
    assert said == (f"timed out waiting for the load event: 1 request unfinished ({PAGE}ok.css); 1 frame never "
                    f"loaded ({PAGE}ad2)")


def test_a_firefox_load_that_times_out_says_what_it_waited_for():
    """yahoo.com in Firefox, now and then on a busy machine: every request answered, and one ad frame (a
    document-writing r-csc.html) at readyState interactive for good, its load event and so the page's never
    coming. The row says so."""
    began = [{"method": "network.beforeRequestSent", "params": {"request": {"request": PAGE + i, "url": PAGE + i}}}
             for i in ("1", "2", "3", "4")]
    socket_ = TimingOutSocket({"browsingContext.navigate": ([], {"navigation": "n1", "url": PAGE}, [
        bidi_event("browsingContext.navigationStarted", "top", "n1"), *began[:2],
        dict(bidi_event("browsingContext.navigationStarted", "csc", "n2"), params={
            "context": "csc", "navigation": "n2", "url": PAGE + "r-csc.html"}),
        dict(bidi_event("browsingContext.navigationStarted", "sf", "n3"), params={
            "context": "sf", "navigation": "n3", "url": PAGE + "r-sf.html"}),
        bidi_event("browsingContext.load", "sf", "n3"), *began[2:],
        *(bidi("network.responseCompleted", PAGE + i, "script", status=200) for i in ("1", "2", "4"))])})
    firefox = browser.Firefox.__new__(browser.Firefox)
    firefox.channel, firefox.context = channel_on(socket_), "top"
    with pytest.raises(browser.TimedOut) as e:
        firefox.load(PAGE, time.monotonic() + 5)
    assert str(e.value) == (f"timed out waiting for the load event: 1 request unfinished ({PAGE}3); 1 frame never "
                            f"loaded ({PAGE}r-csc.html)")
    socket_.script["browsingContext.navigate"][2].append(  # the last request ends too; the frames as before
        bidi("network.fetchError", PAGE + "3", "script", error="NS_ERROR_NET_RESET"))
    with pytest.raises(browser.TimedOut, match=r"load event: every request seen finished; 1 frame never loaded"):
        firefox.load(PAGE, time.monotonic() + 5)


@pytest.mark.parametrize("url,mime,kind", [
    ("https://h/a.CSS?v=1", "", "style"), ("https://h/app.mjs", "", "script"), ("https://h/f.woff2", "", "font"),
    ("https://h/x", "font/woff2", "font"), ("https://h/x", "text/css; charset=utf-8", "style"),
    ("https://h/x", "image/png", "other"), ("https://h/", "text/html", "document")])
def test_firefox_kind_without_a_destination(url, mime, kind):
    # A Firefox older than 153 may give no destination: the URL's extension, else the content type, say.
    assert browser.firefox_kind({"url": url}, {"mimeType": mime}) == kind


@pytest.mark.parametrize("alpn,name", [("http/1.1", "h1"), ("http/1.0", "h1"), ("h2", "h2"), ("h3", "h3"),
                                       ("h3-29", "h3"), ("", ""), (None, ""), ("HTTP/1.1", "h1")])
def test_protocol_names(alpn, name):
    assert browser.protocol_name(alpn) == name


def test_parameters_defaults_and_refusals():
    p = registry.validate({"kind": "browser", "site": "sites/page"})
    assert p["browser"] == "chromium" and p["urls"] == ["/"] and p["loads"] == 5 and p["protocol"] == "h2"
    assert p["warm"] is False and p["timeout"] == 30.0 and p["capture"] == []
    assert registry.validate({"kind": "browser", "timeout": "1.5min", "tls_port": "9443"})["timeout"] == 90.0
    for bad, why in (({"browser": "lynx"}, "must be one of chromium, firefox"),
                     ({"urls": []}, "non-empty"), ({"urls": ["index.html"]}, "starts with /"),
                     ({"urls": ["ftp://x/"]}, "neither http"), ({"server": "host:80"}, "must be a URL"),
                     ({"server": "http://h/", "site": "d"}, "not both"), ({"loads": 0}, "from 1"),
                     ({"port": 80}, "from 1025"), ({"port": 9000, "tls_port": 9000}, "must differ"),
                     ({"browser_args": [1]}, "array of strings"), ({"warm": 1}, "true or false"),
                     ({"capture": ["dom", "pdf"]}, "'pdf' is neither"), ({"capture": "dom"}, "must be")):
        with pytest.raises((ConfigError, UsageError), match=why):
            registry.validate(dict({"kind": "browser"}, **bad))


class Captured(browser.Chromium):
    """A Chromium without a browser: what it is asked to evaluate, and in which world, is answered from PAGE."""

    def __init__(self, page):
        self.page, self.asked = page, []

    def _evaluate(self, expression, deadline, wait=False, world=None, what=""):
        self.asked.append(world)
        return json.dumps(self.page)

    def _screenshot(self, deadline):
        return base64.b64encode(PNG).decode()


PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(40))


def test_capture_reads_the_dom_in_the_timings_world_and_keeps_it_in_the_run_directory(tmp_path, monkeypatch):
    page = {"dom": "<html><body><p>Grüße \ud800</p></body></html>", "text": "Grüße \ud800"}  # a lone surrogate
    fake = Captured(page)
    assert fake.capture([], 0, world=7) == {} and fake.asked == []
    captured = fake.capture(["dom", "screenshot"], 0, world=7)
    assert fake.asked == [7] and captured["png"] == PNG
    monkeypatch.chdir(tmp_path)  # tm-run's client runs in the run's directory
    row = browser.keep_capture(captured, 3)
    saved = (tmp_path / "load3.html").read_bytes()
    assert saved == page["dom"].replace("\ud800", "\ufffd").encode()
    assert row == {"dom_file": "load3.html", "dom_bytes": len(saved), "dom_sha256": hashlib.sha256(saved).hexdigest(),
                   "text_bytes": len("Grüße \ufffd".encode()), "screenshot_file": "load3.png"}
    assert row["text_bytes"] == 11 and (tmp_path / "load3.png").read_bytes() == PNG
    assert browser.keep_capture({}, 4) == {} and not (tmp_path / "load4.html").exists()
    assert browser.keep_capture({"dom": "<html></html>", "text": ""}, 5)["text_bytes"] == 0


def test_a_capture_that_cannot_be_kept_fails_its_load(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.mkdir(tmp_path / "load1.png")  # where the file should go
    with pytest.raises(browser.LoadFailed, match="cannot keep .*load1.png: Is a directory"):
        browser.keep_capture({"png": PNG}, 1)


def test_urls_and_the_address_behind_the_stack(monkeypatch):
    p = registry.validate({"kind": "browser", "urls": ["/", "/b.html", "http://192.0.2.9/x"]})
    assert browser.page_urls(p, "100.64.0.1", 8080) == ["https://100.64.0.1:8443/", "https://100.64.0.1:8443/b.html",
                                                         "http://192.0.2.9/x"]
    h1 = dict(p, protocol="h1")
    assert browser.page_urls(h1, "fd74:6d00::1", 9000)[0] == "http://[fd74:6d00::1]:9000/"
    assert browser.page_urls(dict(p, tls_port=9443), "h", 1)[0] == "https://h:9443/"
    assert browser.page_urls(dict(p, server="http://10.0.0.1:81/"), "h", 1)[1] == "http://10.0.0.1:81/b.html"
    # Behind a stack the server is at $TM_OUTSIDE, which reaches the outermost --outside on every path (not
    # $TM_BASE, the host on the kernel path); an address given explicitly stays, $TM_BASE included.
    monkeypatch.setenv("TM_BASE", "100.127.255.1")
    monkeypatch.setenv("TM_OUTSIDE", "100.64.0.1")
    monkeypatch.delenv("TM_RUN_SERVER", raising=False)
    assert browser.server_host(None) == "100.64.0.1"
    assert browser.server_host("100.127.255.1") == "100.127.255.1"
    monkeypatch.delenv("TM_OUTSIDE")
    assert browser.server_host(None) == "100.127.255.1"


def rows_of_loads(degraded=False):
    ok = {"load": 1, "url": "https://h/", "completed": 1, "error": None, "startup_ms": 500.0, "plt_ms": 400.0,
          "dcl_ms": 200.0, "fcp_ms": 210.0, "transfer_bytes": 1000, "requests": 3, "connections": 1, "cache_hits": 0,
          "protocol": "h2", "protocols": {"h2": 3}, "status": 200, "degraded": 0, "failed_requests": 0,
          "replay_misses": 0, "failures": []}
    second = dict(ok, load=2, plt_ms=440.0)
    if degraded:
        second.update(degraded=1, failed_requests=2, replay_misses=1, failures=[
            "HTTP status 404: https://h/a.css", "HTTP status 404 (not in the recording): https://h/b.js"])
    return [ok, second, {"load": 3, "url": "https://h/", "completed": 0,
                         "error": "timed out waiting for the load event", "startup_ms": 480.0}]


def test_summarize_keeps_failed_loads_as_rows():
    res = browser.summarize(rows_of_loads(), {"browser": "firefox"})
    m, s = res["metrics"], res["samples"]
    assert m["loads"] == 3 and m["loads_completed"] == 2 and m["loads_failed"] == 1 and m["loads_h2"] == 2
    assert m["plt_ms_p50"] == 420.0 and s["plt_ms"] == [400.0, 440.0] and s["completed"] == [1, 1, 0]
    assert s["startup_ms"] == [500.0, 500.0]  # the failed load's numbers are in its row, not among the samples
    assert m["plt_cov"] == pytest.approx(0.0673, abs=1e-4)
    assert len(res["loads"]) == 3 and res["loads"][2]["error"].startswith("timed out")
    for name in browser.HEADLINE:
        assert name in m


def test_results_csv_and_summary_have_a_row_per_load(tmp_path):
    client = browser.summarize(rows_of_loads(), {"browser": "chromium"})
    result = {"run": "default/r1", "config": "default", "values": {}, "replication": 1, "seed": 7,
              "metrics": client["metrics"], "samples": client["samples"], "loads": client["loads"]}
    table = results.rows([result], [])
    by = {r["metric"]: r["value"] for r in table}
    assert by["plt_ms_p50"] == 420.0 and by["load2.plt_ms"] == 440.0 and by["load1.protocol"] == "h2"
    assert by["load3.completed"] == 0 and by["load3.error"] == "timed out waiting for the load event"
    assert by["load1.error"] == "" and "load1.protocols" not in by and "load1.load" not in by
    lines = results.loads_markdown([result])
    assert "Loads: 2 of 3 completed (h2 2)." in lines
    assert "- default/r1 load 3: timed out waiting for the load event" in lines
    assert by["load2.degraded"] == 0 and by["loads_degraded"] == 0


def degraded_result():
    client = browser.summarize(rows_of_loads(degraded=True), {"browser": "chromium"})
    return {"run": "default/r1", "config": "default", "values": {}, "replication": 1, "seed": 7,
            "metrics": client["metrics"], "samples": client["samples"], "loads": client["loads"]}


def test_degraded_loads_are_counted_among_the_completed():
    """A degraded load completed: its times are among the medians, and the run and the rows say that it was
    degraded and how many of its requests failed."""
    result = degraded_result()
    m, s = result["metrics"], result["samples"]
    assert m["loads_completed"] == 2 and m["plt_ms_p50"] == 420.0 and s["plt_ms"] == [400.0, 440.0]
    assert m["loads_degraded"] == 1 and m["failed_requests"] == 2 and m["replay_misses"] == 1
    assert s["degraded"] == [0, 1]
    by = {r["metric"]: r["value"] for r in results.rows([result], [])}
    assert by["load2.degraded"] == 1 and by["load2.failed_requests"] == 2 and by["load2.replay_misses"] == 1
    assert "load2.failures" not in by  # a list: in result.json and the summary, not a row


def test_the_summary_says_how_many_loads_were_degraded_and_what_failed():
    result = degraded_result()
    lines = results.loads_markdown([result])
    assert "Loads: 2 of 3 completed (h2 2), 1 of them degraded (failed_requests 2, replay_misses 1)." in lines
    assert ("- default/r1 load 2: degraded: HTTP status 404: https://h/a.css; HTTP status 404 (not in the "
            "recording): https://h/b.js") in lines
    per, _ = results.summaries([result])
    assert per["default"]["loads_degraded"]["median"] == 1


def test_degraded_loads_are_marked_on_the_samples_cdf():
    from tracemod_run import plots

    result = degraded_result()
    assert plots.degraded_samples([result], "plt_ms") == [440.0]
    assert plots.degraded_samples([result], "fcp_ms") == [210.0]
    assert plots.degraded_samples([{"samples": {}}], "plt_ms") == []
    plt = plots._pyplot()
    fig, ax = plt.subplots()
    plots._cdf(ax, [400.0, 440.0, 300.0, 440.0], "c", [440.0])
    step, marks = ax.get_lines()
    assert marks.get_marker() == "x" and marks.get_xydata().tolist() == [[440.0, 1.0]]
    assert step.get_label() == "c (n=4, 1 degraded)" and marks.get_color() == step.get_color()
    plt.close(fig)


def test_certificates_name_every_address_and_verify(tmp_path):
    ca = browser.make_certificates(str(tmp_path), ["192.0.2.5", "example.test"])
    assert ca == str(tmp_path / "ca.pem") and not (tmp_path / "ca.key").exists()
    text = subprocess.run(["openssl", "x509", "-in", str(tmp_path / "server.pem"), "-noout", "-text"],
                          capture_output=True, text=True, check=True).stdout
    for address in ("100.64.0.1", "FD74:6D00:0:0:0:0:0:1", "100.127.255.1", "127.0.0.1", "192.0.2.5",
                    "DNS:localhost", "DNS:example.test"):
        assert address in text, text
    v = subprocess.run(["openssl", "verify", "-CAfile", ca, str(tmp_path / "server.pem")], capture_output=True,
                       text=True)
    assert v.returncode == 0, v.stderr
    other = tmp_path / "other"
    other.mkdir()
    browser.make_certificates(str(other))
    v = subprocess.run(["openssl", "verify", "-CAfile", str(other / "ca.pem"), str(tmp_path / "server.pem")],
                       capture_output=True, text=True)
    assert v.returncode != 0  # each server's CA is its own


def test_nginx_configuration_keeps_to_its_directory(tmp_path):
    conf = browser.nginx_config(str(tmp_path), "/srv/my site", 8080, 8443)
    assert "daemon off;" in conf and "master_process off;" in conf
    assert "listen 8080;" in conf and "listen 8443 ssl http2;" in conf and 'root "/srv/my site";' in conf
    assert 'add_header Timing-Allow-Origin "*" always;' in conf and "expires 1h;" in conf
    assert "location ~* \\.html?$ { expires epoch; }" in conf
    for line in conf.splitlines():
        for word in line.split():
            if word.startswith('"/') and "srv/my" not in word:
                assert word.startswith(f'"{tmp_path}'), line  # pid, logs, temporary files: all in the state dir
    assert "/var/" not in conf and "/etc/" not in conf and "/run/" not in conf


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(not shutil.which("nginx") and not os.path.exists("/usr/sbin/nginx"),
                    reason="nginx is not installed (scripts/install-deps installs nginx-light)")
def test_nginx_serves_the_site_over_http1_and_tls(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<p>hello</p>")
    (site / "a.css").write_text("p {}")
    port, tls_port = free_port(), free_port()
    params = registry.validate({"kind": "browser", "site": str(site), "tls_port": tls_port})
    ready, stop = str(tmp_path / "run" / "server.ready"), threading.Event()
    os.makedirs(tmp_path / "run")
    errors = []

    def serve():
        try:
            browser.serve(params, port, "127.0.0.1", ready, stopped=stop)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        common.wait_ready(ready, 15)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as r:
            assert r.read() == b"<p>hello</p>" and r.headers["Timing-Allow-Origin"] == "*"
            assert r.headers["Cache-Control"] == "no-cache" and r.headers["Content-Type"] == "text/html"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/a.css", timeout=10) as r:
            assert r.headers["Cache-Control"] == "max-age=3600" and r.headers["Content-Type"] == "text/css"
        ca = tmp_path / "run" / "browser-server" / "ca.pem"
        context = ssl.create_default_context(cafile=str(ca))
        context.set_alpn_protocols(["h2", "http/1.1"])
        with socket.create_connection(("127.0.0.1", tls_port), timeout=10) as raw:
            with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                assert tls.selected_alpn_protocol() == "h2" and tls.version() in ("TLSv1.3", "TLSv1.2")
    finally:
        stop.set()
        t.join(15)
    assert not t.is_alive() and not errors, errors


def test_the_example_site_is_what_make_site_writes(tmp_path):
    subprocess.run([sys.executable, MAKE_SITE, str(tmp_path / "page")], check=True, capture_output=True)
    committed = os.path.join(ROOT, "examples", "sites", "page")
    cmp = filecmp.dircmp(committed, str(tmp_path / "page"))
    assert not cmp.left_only and not cmp.right_only and not cmp.diff_files
    for sub in ("css", "js", "img"):
        files = os.listdir(os.path.join(committed, sub))
        _, mismatch, errors = filecmp.cmpfiles(os.path.join(committed, sub), str(tmp_path / "page" / sub), files,
                                               shallow=False)
        assert not mismatch and not errors
    with open(os.path.join(committed, "site.json")) as f:
        info = json.load(f)
    assert info["objects"] >= 30 and info["files"] == info["objects"] + 1


def test_a_killed_clients_profiles_are_removed_by_the_next(tmp_path):
    """A client killed outright cannot remove its profiles: the next client does, once their lock is free."""
    child = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                            "from tracemod_run.workloads import browser; print(browser.make_workdir(sys.argv[2]))",
                            os.path.join(ROOT, "src", "run"), str(tmp_path)], capture_output=True, text=True, check=True)
    dead = child.stdout.strip()  # its process has exited: its lock is free
    alive = browser.make_workdir(str(tmp_path))  # this process's, locked
    os.utime(dead, (0, 0))
    os.utime(alive, (0, 0))
    os.makedirs(tmp_path / "tm-browser-other")  # no lock: not a client's
    os.utime(tmp_path / "tm-browser-other", (0, 0))
    browser.sweep_workdirs(str(tmp_path))
    assert not os.path.exists(dead) and os.path.isdir(alive) and os.path.isdir(tmp_path / "tm-browser-other")
    young = browser.make_workdir(str(tmp_path))
    assert os.path.isdir(young)


def test_an_until_that_does_not_parse_says_why_in_both_browsers():
    """Chromium's exceptionDetails.text is only "Uncaught": the error is in its exception's description."""
    chromium = {"text": "Uncaught", "exception": {"type": "object", "subtype": "error",
                                                  "description": "SyntaxError: Unexpected token ')'\n    at <anon>"}}
    firefox = {"text": "SyntaxError: expected expression, got ')'", "exception": {"type": "error"}}
    assert browser.exception_text(chromium) == "SyntaxError: Unexpected token ')'"
    assert browser.exception_text(firefox) == "SyntaxError: expected expression, got ')'"
    assert browser.exception_text({}) == "an exception"
