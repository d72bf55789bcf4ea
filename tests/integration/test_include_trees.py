"""The build itself enforces docs/ARCHITECTURE.md §8: each folder's library is compiled with -I to its own include
tree (scripts/check-includes --trees, written by configure), which holds only the folders it may reach. A file
planted with a wrong-way include is compiled by the very command make runs for one of that folder's objects
(`make -n`, the source and outputs swapped for the planted file's), and must not compile, however the include is
spelled; the same include compiles for the unit tests, whose tree holds every folder, so the failure is the
tree's and not a missing header."""
import os
import re
import subprocess

import pytest

BUILDDIR = os.environ.get("TM_TEST_BUILDDIR", "")
SRCDIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")

pytestmark = pytest.mark.skipif(not os.path.exists(os.path.join(BUILDDIR, "Makefile")),
                                reason="needs a configured build directory (tests/run --builddir)")


def object_of(folder):
    """(source, object) of one of FOLDER's library objects as the Makefile names them; for "unit", the unit
    tests'."""
    if folder == "unit":
        return "tests/unit/test_trace.cc", "tests/unit/unit_tests-test_trace.o"
    # A main (tm-*.cc) is a program of its own, not in the library; libexec/ and frontend/ hold programs only.
    sources = sorted(n for n in os.listdir(os.path.join(SRCDIR, "src", folder)) if n.endswith(".cc"))
    if folder in ("libexec", "frontend"):
        stem = sources[0][:-3]
        return f"src/{folder}/{sources[0]}", f"src/{folder}/{stem.replace('-', '_')}-{stem}.o"
    source = [n for n in sources if not n.startswith("tm-")][0]
    return f"src/{folder}/{source}", f"src/{folder}/libtm{folder}_a-{source[:-3]}.o"


def compile_as(folder, text, tmp_path):
    """Compiles TEXT with the command make runs for an object of FOLDER."""
    source, obj = object_of(folder)
    line = compile_line(source, obj)
    planted = tmp_path / "planted.cc"
    planted.write_text(text + "\nint planted_symbol() { return 0; }\n")
    # The planted file in, its own object and dependency file out: the build's files are left alone.
    command = line.replace(source, str(planted)).replace(obj, f"{tmp_path}/planted.o")
    command = re.sub(r"-MF \S+", f"-MF {tmp_path}/planted.d", command)
    assert str(planted) in command and f" {os.path.dirname(obj)}/" not in command, command
    return subprocess.run(["sh", "-c", command], cwd=BUILDDIR, capture_output=True, text=True, timeout=120)


SPELLINGS = ['"{}"', "<{}>", '"src/{}"']
# (folder, an include of a folder it may not reach): sideways between peers, and up.
WRONG = [("link", "effects/delay_queue.hh"), ("util", "packet/packet_queue.hh"), ("record", "shell/command.hh"),
         ("webserve", "webrecord/proxy.hh"), ("packet", "shell/command.hh"), ("saturator", "record/session.hh")]


@pytest.mark.parametrize("spelling", SPELLINGS)
@pytest.mark.parametrize("folder, header", WRONG)
def test_a_wrong_way_include_does_not_compile(tmp_path, folder, header, spelling):
    assert os.path.exists(os.path.join(SRCDIR, "src", header)), f"src/{header} is gone: pick another header"
    include = spelling.format(header)
    r = compile_as(folder, f"#include {include}", tmp_path)
    assert r.returncode != 0, f"{include} compiled in {folder}"
    assert "No such file or directory" in r.stderr and header.split("/")[-1] in r.stderr, r.stderr
    # The tests reach every folder, but nothing reaches the top of the tree, so "src/..." fails for them too.
    again = compile_as("unit", f"#include {include}", tmp_path)
    if spelling.startswith('"src/'):
        assert again.returncode != 0, "the src/ spelling compiles for the tests: some -I reaches the top"
    else:
        assert again.returncode == 0, f"{include} does not compile with every folder in reach: {again.stderr}"


@pytest.mark.parametrize("folder, header", [("link", "packet/packet_queue.hh"), ("link", "util/clock.hh"),
                                            ("link", "link/trace.hh"), ("record", "config.h"),
                                            ("multipath", "shell/shell_runner.hh"), ("record", "saturator/window.hh"),
                                            ("webrecord", "certs/certs.hh")])
def test_an_allowed_include_compiles(tmp_path, folder, header):
    if header != "config.h":
        assert os.path.exists(os.path.join(SRCDIR, "src", header)), f"src/{header} is gone: pick another header"
    r = compile_as(folder, f'#include "{header}"', tmp_path)
    assert r.returncode == 0, r.stderr


def compile_line(source, obj):
    dry = subprocess.run(["make", "-s", "-n", "-W", source, obj], cwd=BUILDDIR, capture_output=True, text=True,
                         timeout=60)
    line = next((l for l in dry.stdout.splitlines() if f"-o {obj}" in l), None)
    assert line, f"make -n printed no compile of {obj}: {dry.stdout}{dry.stderr}"
    return line


def test_every_library_and_tool_is_compiled_with_its_own_tree_only():
    """Each folder's objects, and a tool's main, get -I to their include tree and to nothing else of the project
    (the others are the system's: /usr/include/...)."""
    folders = [d for d in os.listdir(os.path.join(SRCDIR, "src"))
               if any(n.endswith(".cc") for n in os.listdir(os.path.join(SRCDIR, "src", d)))]
    objects = [(f, *object_of(f)) for f in folders] + [("frontend", "src/frontend/tm-delay.cc",
                                                        "src/frontend/tm_delay-tm-delay.o")]
    for folder, source, obj in objects:
        ours = [i for i in re.findall(r"-I\s*(\S+)", compile_line(source, obj)) if not i.startswith("/usr/")]
        assert [os.path.relpath(i, ".") for i in ours] == [f"include-trees/{folder}/src",
                                                           f"include-trees/{folder}/build"], f"{obj}: {ours}"
