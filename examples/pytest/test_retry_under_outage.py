"""Does the client retry when the link drops for 3 s? The link goes off 1 s after the stack starts and comes
back 3 s later (tm-onoff, from the test's own steps); the client asks during the outage and must get its answer
once the link is back. EXAMPLE_RETRIES sets the client's retries (default 8): with 0, this test fails, as it
should for a client that gives up."""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RETRIES = os.environ.get("EXAMPLE_RETRIES", "8")


def test_the_client_gets_its_answer_through_a_3_s_outage(tracemod_stack, tracemod_schedule, tmp_path):
    (tmp_path / "index.html").write_text("hello\n")
    outage = tracemod_schedule([("1s", "off"), ("4s", "on")])  # seconds from the stack's start
    server = [sys.executable, "-m", "http.server", "8000", "--directory", str(tmp_path)]
    stack = tracemod_stack("tm-delay 20", outage, outside=server)
    time.sleep(max(0.0, stack.started + 1.5 - time.monotonic()))  # well into the outage
    url = f"http://{stack.env['TM_OUTSIDE']}:8000/index.html"
    r = stack.run([sys.executable, os.path.join(HERE, "http_client.py"), url, "--timeout", "1",
                   "--retries", RETRIES], timeout=30)
    assert r.returncode == 0, f"the client gave up: {r.stderr}"
    assert r.stdout == "hello\n"
    assert time.monotonic() - stack.started >= 4  # it could only have its answer once the link was back
