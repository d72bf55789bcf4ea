"""tm-run's browser workload through real shells: Chromium and Firefox, headless, as root and as the
unprivileged user, through nested shells, every metric measured; page load times against an analytic lower
bound (bytes over the rate, plus the round trips a fresh connection and the page's dependencies need) and a
sane upper bound, over a constant rate and a shipped LTE trace; ten loads over a constant rate vary by 5% at
most; no browser or server process outlives a run, a SIGINT to tm-run or a SIGKILL of the outermost shell;
and a load that did not load is never a good one (a 404'd style sheet makes it degraded, a 404'd page failed,
a replay's miss is counted) while a page that breaks JSON in its own world still gives its row.

The site is examples/sites/make-site's, written into the test's public directory. Every process of a test
carries TM_TEST_MARK=<its directory> in its environment (the shells and tm-run pass the environment on), which
is how leftovers are told from other programs' browsers on a shared machine."""
import base64
import hashlib
import json
import math
import os
import signal
import statistics
import struct
import subprocess
import sys
import time

import pytest

from conftest import BINDIR, TRACES, TooSlow, measured

HERE = os.path.dirname(os.path.abspath(__file__))
MAKE_SITE = os.path.realpath(os.path.join(HERE, "..", "..", "examples", "sites", "make-site"))
BROWSERS = ("chromium", "firefox-esr", "firefox")  # the executables' names (ps shows /usr/lib/chromium/chromium)
MSS_WIRE = 1500 / 1448  # bytes on the wire per byte of TCP payload (a 1500-byte packet carries 1448)


def make_site(directory, *args):
    subprocess.run([sys.executable, MAKE_SITE, str(directory), *map(str, args)], check=True, capture_output=True)
    for root, dirs, files in os.walk(directory):
        for name in dirs + files:
            os.chmod(os.path.join(root, name), 0o755 if name in dirs else 0o644)
    os.chmod(directory, 0o755)
    with open(os.path.join(directory, "site.json")) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The example's site (index.html and 32 objects), readable by the unprivileged user."""
    d = tmp_path_factory.mktemp("browser-site")
    for p in (d, *d.parents):
        if str(p) in ("/", "/tmp"):
            break
        os.chmod(p, os.stat(p).st_mode | 0o711)
    info = make_site(d / "page")
    info["path"] = str(d / "page")
    return info


def marked(mark):
    """Live processes whose environment holds TM_TEST_MARK=MARK, or whose command line names MARK (nginx keeps
    only TZ of its environment; its -p names the run directory): {pid: command line}."""
    want = f"TM_TEST_MARK={mark}".encode()
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{entry}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if (want in env or mark in cmd) and state != "Z":
            found[int(entry)] = cmd
    return found


def parent(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def left_behind(mark, timeout=10.0):
    """What of MARK's processes is still alive after TIMEOUT (a killed namespace takes a moment to empty)."""
    deadline = time.monotonic() + timeout
    while (found := marked(mark)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return found


def write_experiment(directory, name, shells, workload, more=""):
    text = f'name = "{name}"\n' + "".join(f'[[shell]]\nrun = "{s}"\n' for s in shells) + "[workload]\n"
    text += "".join(f"{k} = {json.dumps(v)}\n" for k, v in workload.items()) + more
    path = directory / f"{name}.toml"
    path.write_text(text)
    os.chmod(path, 0o644)
    return path


def tm_run(who, experiment, out, mark, timeout=240, status=0, said=""):
    r = who.run([os.path.join(BINDIR, "tm-run"), str(experiment), "-o", str(out), "-q"],
                env={"TM_TEST_MARK": mark}, timeout=timeout)
    assert r.returncode == status and said in r.stdout, r.stdout + r.stderr
    (run,) = os.listdir(out / "runs")
    with open(out / "runs" / run / "result.json") as f:
        return json.load(f)


def browser_temp_files():
    """What Chromium (its singleton socket's directory) and Firefox (start-up bundles) make in /tmp when $TMPDIR
    does not send them elsewhere, and cannot remove when killed."""
    return {n for n in os.listdir("/tmp") if n.startswith(("org.chromium.Chromium.", "remote-settings-startup-bundle-"))}


def completed(result, n):
    loads = result["loads"]
    assert len(loads) == n and all(l["completed"] == 1 for l in loads), [l.get("error") for l in loads]
    return loads


@pytest.mark.parametrize("browser", ["chromium", "firefox"])
def test_both_browsers_give_every_metric_through_nested_shells(who, browser, site, public_tmp):
    """As root and as the user, three shells deep, over HTTP/2 with the run's own CA: every metric, and nothing
    left running afterwards."""
    exp = write_experiment(public_tmp, "nested", ["tm-delay 5", "tm-link --uplink-rate 50mbit --downlink-rate 50mbit",
                                                  "tm-delay 5"],
                           {"kind": "browser", "browser": browser, "site": site["path"], "loads": 2})
    mark = str(public_tmp)
    before = browser_temp_files()
    res = tm_run(who, exp, public_tmp / "out", mark)
    assert browser_temp_files() - before == set()  # a browser ended with SIGKILL leaves nothing in /tmp
    loads = completed(res, 2)
    for load in loads:
        print(f"{browser} as {who.name}: " + ", ".join(f"{k} {load[k]}" for k in (
            "startup_ms", "plt_ms", "dcl_ms", "fcp_ms", "transfer_bytes", "requests", "connections", "protocol")))
        assert load["protocol"] == "h2" and load["protocols"] == {"h2": load["requests"]}
        assert load["url"].startswith("https://100.64.0.1:8443/")  # TM_OUTSIDE: the outermost shell's far end
        assert 40 <= load["dcl_ms"] <= load["plt_ms"]  # two round trips of 20 ms at least before any HTML
        assert 0 < load["fcp_ms"] < load["plt_ms"] + 2000 and load["startup_ms"] > 0
        assert load["requests"] >= site["files"] and load["transfer_bytes"] >= site["bytes"]
        assert load["connections"] == 1  # HTTP/2: one connection carries the page
    m = res["metrics"]
    assert m["loads_completed"] == 2 and m["loads_failed"] == 0 and m["loads_h2"] == 2
    for name in ("plt_ms_p50", "dcl_ms_p50", "fcp_ms_p50", "startup_ms_p50", "transfer_bytes_p50", "requests_p50",
                 "connections_p50"):
        assert name in m
    table = (public_tmp / "out" / "results.csv").read_text()
    assert "load2.plt_ms" in table and "load1.protocol,h2" in table
    summary = (public_tmp / "out" / "summary.md").read_text()
    assert "Loads: 2 of 2 completed (h2 2)." in summary
    assert (public_tmp / "out" / "plots" / "cdf_plt_ms_samples.png").exists()
    assert not {"dom_bytes", "screenshot_file"} & set(loads[0])  # nothing captured unless asked
    assert left_behind(mark) == {}


def test_warm_loads_take_their_objects_from_the_cache(root, site, public_tmp):
    """warm = true: the page was loaded once in the profile and the browser restarted, so the objects come from
    the disk cache and the page itself is revalidated (no-cache)."""
    exp = write_experiment(public_tmp, "warm", ["tm-delay 5"], {"kind": "browser", "site": site["path"], "loads": 2,
                                                                 "warm": True, "protocol": "h1"})
    res = tm_run(root, exp, public_tmp / "warm", str(public_tmp))
    for load in completed(res, 2):
        print(f"warm: plt_ms {load['plt_ms']}, cache hits {load['cache_hits']}, bytes {load['transfer_bytes']}")
        assert load["cache_hits"] >= site["objects"] - 1 and 0 < load["transfer_bytes"] < site["bytes"] / 10
        assert load["plt_ms"] >= 2 * 5  # the page's revalidation: a round trip at least (its connection may
        # have been opened before the navigation: Chromium preconnects to an origin its profile has seen)
    assert left_behind(str(public_tmp)) == {}


def lower_bound_ms(transfer_bytes, rate_mbit, rtt_ms, handshakes):
    """No load can be faster: the fresh connection's handshakes (TCP, and TLS 1.3 for HTTP/2), the request for
    the page, a round trip for the objects it names (the third level, app.js's images, may overlap the second's
    transfer), and every byte at the link's rate."""
    return (handshakes + 2) * rtt_ms + transfer_bytes * MSS_WIRE * 8 / (rate_mbit * 1000)


def test_constant_rate_loads_within_bounds_and_vary_5_percent_at_most(root, site, public_tmp):
    """Ten HTTP/1.1 loads over 1 Mbit/s and 2 x 10 ms: each at or above the analytic bound and within twice it;
    their coefficient of variation is 5% at most. (The browser's own work varies with what else the machine
    runs, by up to a few hundred ms a load on a busy 2-core machine: at 1 Mbit/s the link's 3 s dominate it.)"""
    rate, delay = 1, 10
    exp = write_experiment(public_tmp, "constant", [f"tm-delay {delay}",
                                                    f"tm-link --uplink-rate {rate}mbit --downlink-rate {rate}mbit"],
                           {"kind": "browser", "site": site["path"], "loads": 10, "protocol": "h1"})
    attempt = []

    def check():
        attempt.append(1)
        res = tm_run(root, exp, public_tmp / f"constant{len(attempt)}", str(public_tmp))
        loads = completed(res, 10)
        plt = [l["plt_ms"] for l in loads]
        low = lower_bound_ms(min(l["transfer_bytes"] for l in loads), rate, 2 * delay, handshakes=1)
        cov = statistics.stdev(plt) / statistics.mean(plt)
        print(f"PLT over {rate} Mbit/s, RTT {2 * delay} ms: median {statistics.median(plt):.0f} ms, "
              f"min {min(plt):.0f}, max {max(plt):.0f}, CoV {100 * cov:.2f}%; lower bound {low:.0f} ms; "
              f"start-up median {statistics.median(l['startup_ms'] for l in loads):.0f} ms")
        assert min(plt) >= low
        if max(plt) > 2 * low:
            raise TooSlow(f"PLTs {plt}: above {2 * low:.0f} ms")
        # A variance property is never taken again: a spread that comes back one time in three would pass.
        assert cov <= 0.05, f"PLTs {plt}: CoV {cov:.3f} > 0.05"

    measured(check)


def trace_window_ms(path, payload_bytes):
    """The shortest time in which the trace (looped) can deliver PAYLOAD_BYTES of TCP payload: over every
    window of its opportunities, the narrowest holding enough 1500-byte packets."""
    with open(path) as f:
        times = [int(line) for line in f if line.strip()]
    period = times[-1]
    looped = times + [t + period for t in times] + [t + 2 * period for t in times]
    need = math.ceil(payload_bytes / 1448)
    if need > len(times):
        raise ValueError("the page is larger than one period of the trace")
    return min(looped[i + need - 1] - looped[i] for i in range(len(times)))


def test_lte_trace_loads_within_bounds_and_a_regression_threshold_fails_the_run(root, site, public_tmp):
    """Three HTTP/2 loads over the shipped Verizon LTE trace and 2 x 20 ms: at or above the round trips plus
    the trace's fastest delivery of the page's bytes, and within three times that plus a second. A threshold
    on the median page load time below that bound fails the run: exit 1, the assertion in one line."""
    delay = 20
    down = os.path.join(TRACES, "Verizon-LTE-short.down")
    exp = write_experiment(public_tmp, "lte", [f"tm-delay {delay}",
                                               f"tm-link {os.path.join(TRACES, 'Verizon-LTE-short.up')} {down}"],
                           {"kind": "browser", "site": site["path"], "loads": 3},
                           '[[assert]]\nmetric = "plt_ms_p50"\nstat = "median"\nbelow = 250\n')
    res = tm_run(root, exp, public_tmp / "lte", str(public_tmp), status=1,
                 said="assert 1 failed: plt_ms_p50 median")
    loads = completed(res, 3)
    fastest = trace_window_ms(down, min(l["transfer_bytes"] for l in loads))
    low = (2 + 2) * 2 * delay + fastest
    plt = [l["plt_ms"] for l in loads]
    print(f"PLT over Verizon LTE, RTT {2 * delay} ms: {[round(p) for p in plt]} ms; lower bound {low:.0f} ms "
          f"(the trace delivers the page in {fastest} ms at best)")
    assert min(plt) >= low
    assert max(plt) <= 3 * low + 1000


def spawn_run(who, spawn, experiment, out, mark):
    return spawn(who, [os.path.join(BINDIR, "tm-run"), str(experiment), "-o", str(out), "-q"],
                 env={"TM_TEST_MARK": mark})


def wait_for_browser(mark, proc, timeout=60):
    """Until a browser of MARK runs (a load is under way); returns the marked processes."""
    deadline = time.monotonic() + timeout
    while True:
        found = marked(mark)
        if any(os.path.basename(c.split(" ")[0]) in BROWSERS for c in found.values()):
            return found
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate(timeout=10)
        time.sleep(0.05)


@pytest.mark.parametrize("browser", ["chromium", "firefox"])
def test_sigint_to_tm_run_and_sigkill_of_the_shell_leave_nothing(user, browser, spawn, site, public_tmp):
    exp = write_experiment(public_tmp, "slow", ["tm-delay 10", "tm-link --uplink-rate 1mbit --downlink-rate 1mbit"],
                           {"kind": "browser", "browser": browser, "site": site["path"], "loads": 50})
    # SIGINT to tm-run, as Ctrl-C: it stops the run and exits 130; the browser and nginx go with the stack.
    mark = str(public_tmp / "int")
    proc = spawn_run(user, spawn, exp, public_tmp / "int", mark)
    found = wait_for_browser(mark, proc)
    assert any("nginx" in c for c in found.values()), found
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert left_behind(mark) == {}
    # SIGKILL of the outermost shell: its namespaces die, and every process in them.
    mark = str(public_tmp / "kill")
    proc = spawn_run(user, spawn, exp, public_tmp / "kill", mark)
    found = wait_for_browser(mark, proc)
    shells = [pid for pid, c in found.items() if c.split(" ")[0].endswith("/tm-delay") and "--outside" in c]
    (shell,) = [pid for pid in shells if parent(pid) not in shells]  # not its helpers, forked with its argv
    os.kill(shell, signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    assert left_behind(mark) == {}


# Pages that must not be taken for good loads, served by the workload's own nginx (issue 29): one whose style
# sheet is missing, one that breaks JSON and the Performance API in its own world (as Prototype.js's
# Array.prototype.toJSON does), and one that does not exist. The second says in its title what JSON.stringify
# gives there, so its row shows the page's world was really broken.
BROKEN_PAGES = {
    "degraded.html": '<!doctype html><title>degraded</title><link rel="stylesheet" href="style.css">'
                     '<link rel="stylesheet" href="missing.css"><p>unstyled</p>',
    "prototype.html": '<!doctype html><title>prototype</title><link rel="stylesheet" href="style.css">'
                      '<script src="app.js"></script><p>styled</p><script>'
                      'Array.prototype.toJSON = function () { return "broken"; };'
                      'JSON.stringify = function () { return "lies"; }; JSON.parse = function () { return {}; };'
                      'Performance.prototype.getEntriesByType = function () { return []; };'
                      'PerformanceEntry.prototype.toJSON = function () { return {}; };'
                      'document.title = "prototype " + JSON.stringify([1]);</script>',
    # Its load handler says when the load event began (loadEventStart, by the page's own clock) and then runs for
    # 600 ms: a load timed from outside, by the wall clock, would be 600 ms longer than the page's.
    "pinned.html": '<!doctype html><title>pinned</title><p>text</p><script>'
                   'addEventListener("load", () => { const t = performance.getEntriesByType("navigation")[0]'
                   '.loadEventStart; const end = performance.now() + 600; while (performance.now() < end) {} '
                   'document.title = "load " + t; });</script>',
    "style.css": "p { color: green }\n",
    "app.js": "document.documentElement.dataset.app = 'ran';\n",
}


# A page whose script takes longer than the load may: 20 MB behind a 10 Mbit/s link (16 s), against a timeout of 8
# (the other pages, a few kB each, load in less than one). A script, not an image: Chromium stops fetching an image
# whose first bytes do not decode.
SLOW_PAGE = '<!doctype html><title>slow</title><p>text</p><script src="big.js" async></script>'
SLOW_SCRIPT = 20_000_000


@pytest.fixture(scope="module", params=["chromium", "firefox"])
def broken_pages(request, root, tmp_path_factory):
    """One run of BROKEN_PAGES, a page that is not there and SLOW_PAGE, a load each, in REQUEST's browser: its
    result and results directory."""
    d = tmp_path_factory.mktemp(f"broken-{request.param}")
    site = d / "site"
    site.mkdir()
    for name, text in BROKEN_PAGES.items():
        (site / name).write_text(text)
    (site / "slow.html").write_text(SLOW_PAGE)
    with open(site / "big.js", "wb") as f:
        f.truncate(SLOW_SCRIPT)
    exp = write_experiment(d, "broken", ["tm-delay 2", "tm-link --uplink-rate 10mbit --downlink-rate 10mbit"], {
        "kind": "browser", "browser": request.param, "site": str(site), "loads": 1, "timeout": 8,
        "urls": ["/degraded.html", "/prototype.html", "/missing.html", "/slow.html", "/pinned.html"]})
    res = tm_run(root, exp, d / "out", str(d), timeout=180)
    assert left_behind(str(d)) == {}
    return request.param, res, d / "out"


def test_a_404d_style_sheet_makes_a_load_degraded_not_good(broken_pages):
    browser, res, out = broken_pages
    load = res["loads"][0]
    print(f"{browser}: {load}")
    assert load["completed"] == 1 and load["title"] == "degraded" and load["status"] == 200
    assert load["degraded"] == 1 and load["failed_requests"] == 1 and load["replay_misses"] == 0
    assert load["failures"] == [f"HTTP status 404: {load['url'].rsplit('/', 1)[0]}/missing.css"]
    m = res["metrics"]
    assert m["loads_completed"] == 3 and m["loads_degraded"] == 1 and m["failed_requests"] == 1
    summary = (out / "summary.md").read_text()
    assert "Loads: 3 of 5 completed (h2 3), 1 of them degraded (failed_requests 1, replay_misses 0)." in summary
    assert "load 1: degraded: HTTP status 404: https://" in summary
    assert "load1.degraded,1" in (out / "results.csv").read_text()
    assert (out / "plots" / "cdf_plt_ms_samples.png").exists()


def test_a_page_that_breaks_json_in_its_own_world_still_gives_its_row(broken_pages):
    """The timing is read in a world of tm-run's own: the page's JSON.stringify, Array.prototype.toJSON and
    Performance prototypes (which read in the page's world would give "lies", or no entries) are not ours."""
    browser, res, _ = broken_pages
    load = res["loads"][1]
    print(f"{browser}: {load}")
    assert load["completed"] == 1 and load["error"] is None
    assert load["title"] == "prototype lies"  # the page's own world was broken, and its title read from the DOM
    assert load["status"] == 200 and load["protocol"] == "h2" and load["degraded"] == 0
    assert load["failed_requests"] == 0 and load["failures"] == []
    assert load["requests"] >= 3 and load["transfer_bytes"] > sum(len(t) for t in BROKEN_PAGES.values()) / 2
    assert 0 < load["dcl_ms"] <= load["plt_ms"] and load["fcp_ms"] is not None and load["fcp_ms"] > 0


def test_a_404d_page_is_a_failed_load(broken_pages):
    browser, res, out = broken_pages
    load = res["loads"][2]
    assert load["completed"] == 0 and load["error"] == f"{load['url']}: HTTP status 404", load
    assert res["metrics"]["loads_failed"] == 2
    assert f"load 3: {load['url']}: HTTP status 404" in (out / "summary.md").read_text()


def test_a_load_that_times_out_says_what_it_waited_for(broken_pages):
    browser, res, _ = broken_pages
    load = res["loads"][3]
    print(f"{browser}: {load}")
    assert load["completed"] == 0 and load.get("plt_ms") is None
    big = load["url"].replace("slow.html", "big.js")
    assert load["error"] == f"timed out waiting for the load event: 1 request unfinished ({big})"


# A recording of one page (HAR, written here): its style sheet is recorded, and a script recorded as a 404; a
# second style sheet, an image and another page are not in it, so tm-webreplay answers them with its own 404,
# which says x-tm-replay: miss.
MISS_ORIGIN = "https://www.miss.test"
MISS_PAGE = ('<!doctype html><title>miss</title><link rel="stylesheet" href="/style.css">'
             '<link rel="stylesheet" href="/absent.css"><script src="/gone.js"></script><p>text</p>'
             '<img src="/absent.png" alt="">')


def har_entry(path, status, mime, text):
    headers = [{"name": "content-type", "value": mime}, {"name": "cache-control", "value": "no-cache"}]
    return {"request": {"method": "GET", "url": MISS_ORIGIN + path, "httpVersion": "http/2.0", "headers": []},
            "response": {"status": status, "statusText": "", "httpVersion": "http/2.0", "headers": headers,
                         "content": {"size": len(text), "mimeType": mime,
                                     "text": base64.b64encode(text.encode()).decode(), "encoding": "base64"}}}


@pytest.mark.parametrize("browser", ["chromium", "firefox"])
def test_a_replayed_load_counts_what_the_recording_could_not_answer(root, browser, public_tmp):
    har = public_tmp / "miss.har"
    har.write_text(json.dumps({"log": {"version": "1.2", "entries": [
        har_entry("/", 200, "text/html", MISS_PAGE), har_entry("/style.css", 200, "text/css", "p { color: red }"),
        har_entry("/gone.js", 404, "text/plain", "gone")]}}))
    exp = write_experiment(public_tmp, "miss", ["tm-delay 2"], {
        "kind": "browser", "browser": browser, "replay": str(har), "loads": 1,
        "urls": [MISS_ORIGIN + "/", MISS_ORIGIN + "/nowhere"]})
    page, nowhere = tm_run(root, exp, public_tmp / "out", str(public_tmp))["loads"]
    print(f"{browser}: {page}\n{nowhere}")
    assert page["completed"] == 1 and page["title"] == "miss" and page["degraded"] == 1
    assert page["failed_requests"] == 2  # absent.css (missed) and gone.js (recorded as a 404)
    assert nowhere["completed"] == 0
    assert page["replay_misses"] == 2  # absent.css and absent.png; not gone.js, nor the browser's own icon
    assert sorted(page["missed"]) == [MISS_ORIGIN + "/absent.css", MISS_ORIGIN + "/absent.png"]
    assert nowhere["error"] == f"{MISS_ORIGIN}/nowhere: HTTP status 404 (not in the recording)"


# A page to capture: text of more bytes than characters in UTF-8, and a script that puts the viewport (CSS pixels,
# and the device pixel ratio) in the title, which is what the screenshot must measure.
CAPTURE_TEXT = "Grüße, 世界 — tracemod"
CAPTURE_PAGE = ('<!doctype html><html><head><meta charset="utf-8"><title>capture</title></head>'
                f'<body><p>{CAPTURE_TEXT}</p><script>'
                'document.title = `${innerWidth}x${innerHeight}@${devicePixelRatio}`;</script></body></html>')


def png_size(path):
    """(width, height) of the PNG at PATH, from its IHDR chunk (which must come first)."""
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", head
    return struct.unpack(">II", head[16:24])


@pytest.mark.parametrize("browser", ["chromium", "firefox"])
def test_capture_keeps_each_loads_dom_and_screenshot_in_the_run_directory(root, browser, public_tmp):
    site = public_tmp / "site"
    site.mkdir()
    (site / "index.html").write_text(CAPTURE_PAGE, encoding="utf-8")
    exp = write_experiment(public_tmp, "capture", ["tm-delay 2"], {
        "kind": "browser", "browser": browser, "site": str(site), "loads": 2, "capture": ["dom", "screenshot"]})
    res = tm_run(root, exp, public_tmp / "out", str(public_tmp))
    (run,) = (public_tmp / "out" / "runs").iterdir()
    for load in completed(res, 2):
        n = load["load"]
        dom = (run / f"load{n}.html").read_bytes()
        print(f"{browser}: load {n}: title {load['title']}, dom_bytes {load['dom_bytes']}, text_bytes "
              f"{load['text_bytes']}, screenshot {png_size(run / f'load{n}.png')}")
        assert load["dom_file"] == f"load{n}.html" and load["screenshot_file"] == f"load{n}.png"
        assert load["dom_bytes"] == len(dom) and load["dom_sha256"] == hashlib.sha256(dom).hexdigest()
        assert f"<title>{load['title']}</title>".encode() in dom  # the DOM as the script left it, not the source
        assert load["text_bytes"] == len(CAPTURE_TEXT.encode())  # the body's text alone, not its script
        width, height, ratio = map(float, load["title"].replace("@", "x").split("x"))
        assert png_size(run / f"load{n}.png") == (round(width * ratio), round(height * ratio))


def test_the_page_load_time_is_the_pages_own_not_the_wall_clocks(broken_pages):
    """plt_ms is loadEventStart as the page's clock has it (the title says it), though the load handler ran 600
    ms after it: a workload timing loads from outside would be that much off."""
    browser, res, _ = broken_pages
    load = res["loads"][4]
    print(f"{browser}: {load}")
    assert load["completed"] == 1 and load["title"].startswith("load "), load
    assert abs(load["plt_ms"] - float(load["title"][5:])) <= 1.0, load
