"""tm-run's workloads through real shells, as root: maxrate recovers a constant tm-link rate within 2%; reqrep
and web see the emulated round trip end to end; the command workload measures curl against a web server
outside the shells. Web's and curl's figures are bounded both ways: never faster than the link, not far slower."""
import json
import os

import pytest

from conftest import BINDIR, TooSlow, measured


def run_one(who, public_tmp, name, text, timeout=90):
    path = public_tmp / f"{name}.toml"
    path.write_text(text)
    os.chmod(path, 0o644)
    out = public_tmp / name
    r = who.run([os.path.join(BINDIR, "tm-run"), str(path), "-o", str(out), "-q"], timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    runs = os.listdir(out / "runs")
    with open(out / "runs" / runs[0] / "result.json") as f:
        return json.load(f)


def test_maxrate_recovers_a_constant_rate(root, public_tmp):
    res = run_one(root, public_tmp, "maxrate", 'name = "maxrate"\n[[shell]]\nrun = "tm-delay 5"\n[[shell]]\n'
                  'run = "tm-link --uplink-rate 100mbit --downlink-rate 10mbit"\n'
                  '[workload]\nkind = "maxrate"\nseconds = 3\n')
    m = res["metrics"]
    print(f"maxrate: {m['maxrate_wire_mbps']:.3f} Mbit/s of IP packets ({m['maxrate_mbps']:.3f} of payload) "
          f"for a 10 Mbit/s link; goodput {m['goodput_mbps']:.3f}")
    assert m["maxrate_wire_mbps"] == pytest.approx(10.0, rel=0.02)
    assert m["maxrate_mbps"] == pytest.approx(10.0 * 1448 / 1500, rel=0.02)
    assert m["link2_down_throughput_mbps"] <= 10.05


def test_reqrep_and_connection_setup_pay_the_round_trip(root, public_tmp):
    attempt = []

    def check():
        attempt.append(1)
        res = run_one(root, public_tmp, f"reqrep{len(attempt)}", 'name = "reqrep"\n[[shell]]\nrun = "tm-delay 20"\n'
                      '[workload]\nkind = "reqrep"\npairs = [[1, 1], [1, 8000]]\ncount = 8\nconnects = 4\n')
        m = res["metrics"]
        assert min(res["samples"]["connect_ms"]) >= 40.0  # SYN to SYN-ACK: one round trip of 2 x 20 ms
        assert m["rtt_ms_min_1x1"] >= 40.0 and m["rtt_ms_min_1x8000"] >= 40.0
        assert len(res["samples"]["rtt_ms_1x8000"]) == 8 and 0 <= m["outliers_1x1"] <= 1
        if m["connect_ms_p50"] >= 60.0 or m["rtt_ms_p50_1x1"] >= 60.0:  # other work on the machine
            raise TooSlow(f"median connect {m['connect_ms_p50']} ms, exchange {m['rtt_ms_p50_1x1']} ms")

    measured(check)


# The web and curl runs cross a 10 ms (15 ms) delay and a rate-limited link, so their figures are bounded on both
# sides: never faster than the link can carry (a lower bound on each time, an upper bound on each rate), and
# not far above what the path costs (upper bounds on times, retried as timing on a busy machine).
WEB_RATE_MBPS, CURL_RATE_MBPS = 10, 2
WIRE = 1500 / 1448  # IP bytes per payload byte of a full-sized TCP segment (timestamps on)


def link_ms(payload, mbps):
    """The least time PAYLOAD bytes of TCP take to cross a constant-rate tm-link: one 1500-byte opportunity per
    1500 * 8 / rate, the first perhaps at once."""
    return max(0.0, payload * WIRE - 1500) * 8 / (mbps * 1000)


def test_web_pages_and_files_over_a_delay(root, public_tmp):
    attempt = []

    def check():
        attempt.append(1)
        link = f"tm-link --uplink-rate {WEB_RATE_MBPS}mbit --downlink-rate {WEB_RATE_MBPS}mbit"
        res = run_one(root, public_tmp, f"web{len(attempt)}", 'name = "web"\nseed = 3\n[[shell]]\nrun = "tm-delay 10"\n'
                      f'[[shell]]\nrun = "{link}"\n'
                      '[workload]\nkind = "web"\nseconds = 2\nsession_interval = 0.2\nthink_median = 0.2\n'
                      'reply_cap = 100000\n')
        m, s = res["metrics"], res["samples"]
        assert m["files"] == sum(s["files_per_page"]) == len(s["file_ms"]) == len(s["reply_bytes"])
        assert m["pages"] == len(s["page_ms"]) > 3 and m["unfinished_files"] == 0
        assert 1 <= m["sessions"] <= 25, m  # Poisson arrivals 0.2 s apart for 2 s: 10, sigma 3.2
        # Never faster than the link: a reply crosses the 20 ms round trip and the downlink's rate.
        floor = [20.0 + link_ms(r, WEB_RATE_MBPS) for r in s["reply_bytes"]]
        fast = [(t, f) for t, f in zip(s["file_ms"], floor) if t < f]
        assert not fast, f"files faster than the link (ms, least possible): {fast[:5]}"
        i = 0
        for n, page in zip(s["files_per_page"], s["page_ms"]):
            least = 20.0 + link_ms(sum(s["reply_bytes"][i:i + n]), WEB_RATE_MBPS)
            assert page >= least and page >= max(s["file_ms"][i:i + n]), (page, least, s["file_ms"][i:i + n])
            i += n
        assert m["page_ms_p50"] >= m["file_ms_p50"]
        print(f"web: {m['sessions']} sessions, {m['pages']} pages, {m['files']} files; file ms p50 "
              f"{m['file_ms_p50']:.1f} p90 {m['file_ms_p90']:.1f} max {max(s['file_ms']):.1f}; page ms p50 "
              f"{m['page_ms_p50']:.1f} max {max(s['page_ms']):.1f}")
        # Not far above the path's cost: most replies (median 1.7 KB) take one round trip and a few ms of the
        # link; the largest (100 KB: 83 ms of the link, slow start) well under a second.
        if m["file_ms_p50"] > 40.0 or m["page_ms_p50"] > 80.0 or max(s["page_ms"]) > 1000.0:
            raise TooSlow(f"file p50 {m['file_ms_p50']} ms, page p50 {m['page_ms_p50']} ms, "
                          f"slowest page {max(s['page_ms'])} ms")

    measured(check)


def test_command_curl_against_a_server_outside(user, public_tmp):
    (public_tmp / "site").mkdir()
    (public_tmp / "site" / "index.html").write_text("x" * 20000)
    attempt = []

    def check():
        attempt.append(1)
        name = f"curl{len(attempt)}"
        res = run_one(user, public_tmp, name, 'name = "curl"\n[[shell]]\nrun = "tm-delay 15"\n'
                      f'[[shell]]\nrun = "tm-link --uplink-rate 10mbit --downlink-rate {CURL_RATE_MBPS}mbit"\n'
                      '[workload]\nkind = "command"\nseconds = 2\n'
                      f'server = "exec python3 -m http.server 8000 --bind 0.0.0.0 -d {public_tmp / "site"}"\n'
                      'server_port = 8000\n'
                      "client = \"curl -sS -o page.html -w '%{{size_download}} %{{time_total}} %{{speed_download}}' "
                      "http://$TM_RUN_SERVER:8000/\"\n"
                      '[[workload.metrics]]\nname = "bytes"\nregex = "^([0-9]+) "\n'
                      '[[workload.metrics]]\nname = "fetch_ms"\nregex = "^[0-9]+ ([0-9.]+) "\nscale = 1000\n'
                      '[[workload.metrics]]\nname = "speed_mbps"\nregex = " ([0-9.]+)$"\nscale = 8e-6\n')
        m = res["metrics"]
        assert m["bytes"] == 20000
        assert os.path.getsize(public_tmp / name / "runs" / "default.r1" / "page.html") == 20000
        # The connection's set-up and the request each cross the 30 ms round trip, and the page (14 segments) the
        # 2 Mbit/s downlink: 60 ms + 77 ms at the least, so curl's rate over the fetch is at most 1.17 Mbit/s.
        least = 60.0 + link_ms(20000, CURL_RATE_MBPS)
        print(f"curl: {m['fetch_ms']:.1f} ms (least possible {least:.1f}), {m['speed_mbps']:.3f} Mbit/s "
              f"(most possible {20000 * 8 / 1e3 / least:.3f}), client {m['elapsed_s']:.3f} s")
        assert m["fetch_ms"] >= least and m["speed_mbps"] <= 20000 * 8 / 1e3 / least
        assert m["fetch_ms"] <= m["elapsed_s"] * 1000  # curl's fetch is within the client's run
        assert m["speed_mbps"] * m["fetch_ms"] == pytest.approx(20000 * 8 / 1e3, rel=0.02)  # bytes = rate x time
        # Above that, the server's and curl's own time (some 20-30 ms here).
        if m["fetch_ms"] > least + 50.0:
            raise TooSlow(f"fetched in {m['fetch_ms']} ms, least possible {least:.1f}")

    measured(check)


@pytest.mark.parametrize("server,client,said", [
    # A typo: the shell cannot find the command and ends at once, before the client starts.
    ("pythn3 -m http.server 8000", "true", "the server exited with status 127 at once"),
    # A server that dies while the client still runs (no server_port: nothing waits for it to listen).
    ("sleep 0.3; exit 3", "sleep 1", "while the client ran: tm-run: the server exited with status 3"),
])
def test_a_command_server_that_fails_fails_the_run(root, public_tmp, server, client, said):
    path = public_tmp / "failing.toml"
    path.write_text(f'name = "failing"\n[[shell]]\nrun = "tm-delay 1"\n[workload]\nkind = "command"\n'
                    f'seconds = 2\nserver = "{server}"\nclient = "{client}"\n')
    r = root.run([os.path.join(BINDIR, "tm-run"), str(path), "-o", str(public_tmp / "out"), "-q"], timeout=60)
    assert r.returncode == 1 and r.stdout.startswith("run default/r1 failed: ") and said in r.stdout, r.stdout + r.stderr
