"""Does a 2 MB download finish within its budget over a real LTE link? Verizon's LTE, recorded (Mahimahi's
trace, installed with tracemod), 40 ms away; the link's own log then says what crossed it."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SIZE = 2_000_000
BUDGET_S = 20.0


def test_a_2_mb_download_over_lte_keeps_its_budget(tracemod_stack, tmp_path):
    (tmp_path / "file.bin").write_bytes(os.urandom(SIZE))
    server = [sys.executable, "-m", "http.server", "8000", "--directory", str(tmp_path)]
    stack = tracemod_stack("tm-delay 40", "tm-link Verizon-LTE-short.up Verizon-LTE-short.down", outside=server)
    url = f"http://{stack.env['TM_OUTSIDE']}:8000/file.bin"
    r = stack.run([sys.executable, os.path.join(HERE, "http_client.py"), url, "--discard"], timeout=60)
    assert r.returncode == 0, r.stderr
    size, _, _, seconds, _ = r.stdout.split()
    assert int(size) == SIZE
    assert float(seconds) <= BUDGET_S, f"the download took {seconds} s"
    assert float(seconds) >= 0.08  # at least one round trip of 80 ms, and then some
    stack.close()
    down = stack.summary()[2]["downlink"]  # level 2, tm-link: the server's bytes crossed its downlink
    assert down["departures"] * 1500 >= SIZE, down
