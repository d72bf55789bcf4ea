"""Does a page load in Chromium within its budget over a real LTE link? A page of 10 objects, served outside
the stack by the browser workload's server (nginx, HTTP/2 over TLS, a CA made for it), loaded twice by its client
inside the stack in headless Chromium, each in a fresh profile and timed by the browser itself, over Verizon's
LTE trace 30 ms away. A load that did not finish is a failure, never a fast one."""
import json
import shutil

import pytest
from tracemod_run.harness import tool_path

BUDGET_MS = 5000


def make_page(site, images=8, image_bytes=25_000):
    """A page of 10 objects, some 220 KB: a style sheet, a script and IMAGES pictures (your own site in its
    place: the server serves any directory)."""
    site.mkdir()
    (site / "style.css").write_text("body { font-family: sans-serif; } img { width: 64px; }\n")
    (site / "app.js").write_text("document.title = 'loaded ' + document.images.length + ' images';\n")
    padding = "<!--" + "x" * image_bytes + "-->"
    tags = []
    for i in range(images):
        (site / f"img{i}.svg").write_text(f'<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64">'
                                          f'<circle cx="32" cy="32" r="{8 + 3 * i}"/>{padding}</svg>\n')
        tags.append(f'<img src="img{i}.svg" alt="{i}">')
    (site / "index.html").write_text('<!DOCTYPE html><html><head><link rel="stylesheet" href="style.css">'
                                     '<script src="app.js" defer></script></head><body>' + "".join(tags) +
                                     "</body></html>\n")


def test_the_page_loads_in_chromium_within_its_budget(tracemod_stack, tmp_path):
    if not shutil.which("chromium"):
        pytest.skip("chromium is not installed")
    site = tmp_path / "site"
    make_page(site)
    tm_run, ready, result = tool_path("tm-run"), tmp_path / "ready", tmp_path / "loads.json"
    server = [tm_run, "workload", "browser", "--server", "--param", f"site={site}",
              "--ready-file", str(ready)]
    stack = tracemod_stack("tm-delay 30", "tm-link Verizon-LTE-short.up Verizon-LTE-short.down", outside=server)
    # The client waits for the server's ready file and trusts the CA it left beside it (--chdir).
    r = stack.run([tm_run, "workload", "browser", "--client", "--param", "loads=2", "--ready-file", str(ready),
                   "--chdir", str(tmp_path), "--output", str(result)], timeout=120)
    assert r.returncode == 0, r.stderr
    metrics = json.loads(result.read_text())["metrics"]
    assert metrics["loads_completed"] == 2, r.stderr  # each load's outcome is on the client's standard error
    assert metrics["loads_degraded"] == 0, r.stderr
    assert metrics["plt_ms_p50"] <= BUDGET_MS, f"median page load {metrics['plt_ms_p50']:.0f} ms"
    assert metrics["plt_ms_p50"] >= 4 * 60  # TCP, TLS, the page, its objects: 4 round trips of 60 ms at least
