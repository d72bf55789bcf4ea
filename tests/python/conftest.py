"""tm-run's unit tests: pure logic and loopback sockets, no namespaces and no root (tests/run runs them)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "run"))
