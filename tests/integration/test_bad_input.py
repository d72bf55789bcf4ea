"""Bad input, one class per test: each tool refuses it with exit 2 and one line naming the file and entry, the
option or the value at fault, before it writes anything; never a crash, a silent guess or garbage output. The raw
records are written here byte by byte (a few protobuf fields), as a recorder, another tool or a corrupt disk
would have left them."""
import os

import pytest

from conftest import TRACES


def assert_refused(r, tool, *named):
    """Exit 2, the first line of stderr the tool's own naming NAMED, nothing on stdout."""
    assert r.returncode == 2, r
    first = r.stderr.splitlines()[0] if r.stderr else ""
    assert first.startswith(f"{tool}: ") and all(n in first for n in named), r.stderr
    assert r.stdout == "", r.stdout


# ---------------------------------------------------------------------------------------------------------
# Files that are not text


def test_a_binary_distribution_file_is_not_echoed_raw(root, tools, tmp_path):
    path = tmp_path / "garbage.bin"
    path.write_bytes(b"\x1b[2J\x1b]0;pwned\x07\x00\xff\xfe\n")
    r = root.run(tools.shell("tm-delay", "10", "--jitter", "5", "--distribution", path, cmd=["true"]))
    assert_refused(r, "tm-delay", f"{path}:1: '\\x1b[2J\\x1b]0;pwned\\x07\\x00\\xff\\xfe' is not a number")
    assert all(c == "\n" or " " <= c <= "~" for c in r.stderr), r.stderr
