"""scripts/check-includes: the real tree passes, and each kind of violation planted in a copy is reported."""
import os
import shutil
import stat
import subprocess
import sys

import pytest

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(TOP, "scripts", "check-includes")
SOURCE_SUFFIXES = (".cc", ".hh", ".h", ".proto", ".py")


def only_sources(directory, names):
    """copytree's ignore: keep folders and source files, drop build products (.o, .a, .deps, tools, *.pb.*)."""
    def build_product(name):
        if os.path.isdir(os.path.join(directory, name)):
            return name in (".deps", "__pycache__")
        return not name.endswith(SOURCE_SUFFIXES) or ".pb." in name
    return [n for n in names if build_product(n)]


@pytest.fixture
def tree(tmp_path):
    """A copy of docs/ARCHITECTURE.md and src/'s sources: not a git checkout, so the script walks it."""
    os.mkdir(tmp_path / "docs")
    shutil.copy(os.path.join(TOP, "docs", "ARCHITECTURE.md"), tmp_path / "docs")
    shutil.copytree(os.path.join(TOP, "src"), tmp_path / "src", ignore=only_sources)
    # The sources may be read-only (make distcheck's are): the copy is the test's to change.
    for root, _, files in os.walk(tmp_path):
        for path in (root, *(os.path.join(root, f) for f in files)):
            os.chmod(path, os.stat(path).st_mode | stat.S_IWUSR)
    return tmp_path


def check(root):
    proc = subprocess.run([sys.executable, SCRIPT, "--root", str(root)], capture_output=True, text=True,
                          timeout=60)
    return proc.returncode, proc.stdout + proc.stderr


def append_line(path, line):
    """Appends line to the file; returns its line number."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if text and not text.endswith("\n"):
        text += "\n"
    with open(path, "w", encoding="utf-8") as f:
        f.write(text + line + "\n")
    return text.count("\n") + 1


def first_source(root, folder):
    """The first .cc or .hh file of src/<folder> (the names may change; any file of the folder will do)."""
    return sorted(n for n in os.listdir(root / "src" / folder) if n.endswith((".cc", ".hh")))[0]


def set_may_include(root, folder, allowed):
    """Rewrites the "may include" cell of folder's row in the copy's §8 table."""
    path = root / "docs" / "ARCHITECTURE.md"
    lines = path.read_text(encoding="utf-8").split("\n")
    row = next(i for i, l in enumerate(lines) if l.startswith(f"| {folder} |"))
    cells = lines[row].rstrip().rstrip("|").split("|")
    lines[row] = "|".join(cells[:-1] + [f" {allowed} "]) + "|"
    path.write_text("\n".join(lines), encoding="utf-8")


def test_the_real_tree_passes(tree):
    status, output = check(tree)
    assert status == 0, output
    assert "no violations" in output


# (folder, the include planted in its first file, the rule the report ends with): up, sideways between peers,
# relative to the file, and each other spelling that reaches a folder.
PLANTED = [("util", '"shells/tool.hh"', "util may include no other folder"),
           ("link", '"effects/delay_queue.hh"', "link may include only "),
           ("packet", '"../shell/command.hh"', "packet may include only util"),
           ("link", "<effects/delay_queue.hh>", "link may include only "),
           ("link", '"src/effects/delay_queue.hh"', "link may include only "),
           ("link", "<src/effects/delay_queue.hh>", "link may include only ")]


@pytest.mark.parametrize("folder, include, rule", PLANTED)
def test_a_wrong_way_include_is_reported_with_file_and_line(tree, folder, include, rule):
    name = first_source(tree, folder)
    number = append_line(tree / "src" / folder / name, f"#include {include}")
    status, output = check(tree)
    assert status == 1
    assert f'src/{folder}/{name}:{number}: includes "{include[1:-1]}": {rule}' in output


def test_an_include_within_the_folder_and_config_h_are_fine(tree):
    name = first_source(tree, "util")
    append_line(tree / "src" / "util" / name, '#include "util/clock.hh"')
    append_line(tree / "src" / "util" / name, '#include "config.h"')
    append_line(tree / "src" / "util" / name, "#include <vector>")
    status, output = check(tree)
    assert f"src/util/{name}:" not in output


def test_a_direction_no_file_takes_is_reported(tree):
    set_may_include(tree, "probe", "util, packet")
    status, output = check(tree)
    assert status == 1
    assert "probe may include packet, but nothing in probe does: take it out of the row" in output


RUN = os.path.join("src", "run", "tracemod_run")


@pytest.mark.parametrize("statement, named", [("from . import cli", "tracemod_run.cli"),
                                              ("from .runner import Runner", "tracemod_run.runner"),
                                              ("import tracemod_run.workloads.bulk", "tracemod_run.workloads.bulk")])
def test_an_import_against_tm_runs_table_is_reported(tree, statement, named):
    number = append_line(tree / RUN / "stats.py", statement)
    status, output = check(tree)
    assert status == 1
    assert f"{RUN}/stats.py:{number}: imports {named}: stats may import no other module" in output


def test_a_relative_import_from_a_subpackage_is_resolved(tree):
    number = append_line(tree / RUN / "workloads" / "common.py", "from ..runner import Runner  # not allowed")
    append_line(tree / RUN / "workloads" / "common.py", "from .. import values, stats  # allowed")
    status, output = check(tree)
    assert status == 1
    assert output.count("workloads/common.py") == 1, output
    assert f"{RUN}/workloads/common.py:{number}: imports tracemod_run.runner: workloads may import only " in output


def test_a_module_missing_from_tm_runs_table_is_reported(tree):
    (tree / RUN / "extra.py").write_text("from . import errors\n")
    status, output = check(tree)
    assert status == 1
    assert f"{RUN}/extra.py: module not in ARCHITECTURE.md §8's table of tm-run's modules" in output


def test_a_cycle_in_the_table_is_reported(tree):
    set_may_include(tree, "packet", "capture, util")  # capture may already include packet
    status, output = check(tree)
    assert status == 1
    assert "form a cycle: packet -> capture -> packet" in output


def test_a_folder_missing_from_the_table_is_reported(tree):
    os.mkdir(tree / "src" / "extra")
    (tree / "src" / "extra" / "extra.cc").write_text('#include "util/error.hh"\n')
    status, output = check(tree)
    assert status == 1
    assert "src/extra: folder not in ARCHITECTURE.md §8" in output


def test_a_row_without_a_folder_and_an_unknown_name_are_reported(tree):
    shutil.rmtree(tree / "src" / "probe")
    set_may_include(tree, "analysis", "util, plots")
    status, output = check(tree)
    assert status == 1
    assert 'folder "probe" is not a folder of src/' in output
    assert 'analysis may include "plots", which is not a folder in the table' in output


def test_a_folder_over_its_file_limit_is_reported_and_build_products_do_not_count(tree):
    packet = tree / "src" / "packet"
    for n in range(16):
        (packet / f"ring{n}.o").write_text("")
        (packet / f"gen{n}.pb.h").write_text("")
    status, output = check(tree)
    assert "src/packet:" not in output
    existing = len([n for n in os.listdir(packet) if n.endswith(SOURCE_SUFFIXES) and ".pb." not in n])
    for n in range(16 - existing):
        (packet / f"extra{n}.hh").write_text("")
    status, output = check(tree)
    assert status == 1
    assert "src/packet: 16 source files, more than its limit of 15" in output


def move_to_layer(root, folder, layer):
    """Moves FOLDER to the front of layer LAYER's line in the copy's §8 diagram."""
    path = root / "docs" / "ARCHITECTURE.md"
    lines = path.read_text(encoding="utf-8").split("\n")
    for i, line in enumerate(lines):
        if line.startswith("    layer ") and f"   {folder}   " in line + " ":
            lines[i] = line.replace(f"   {folder}   ", "   ", 1)
    at = next(i for i, l in enumerate(lines) if l.startswith(f"    layer {layer}   "))
    lines[at] = lines[at].replace(f"layer {layer}   ", f"layer {layer}   {folder}   ", 1)
    path.write_text("\n".join(lines), encoding="utf-8")


# The layer diagram is checked against the table: a folder drawn on or below a folder it includes, or missing.
@pytest.mark.parametrize("folder, layer, said", [
    ("disciplines", 3, "link (layer 3) includes disciplines, which is on layer 3"),
    ("certs", 2, "webserve (layer 2) includes certs, which is on layer 2"),
])
def test_the_layer_diagram_cannot_show_an_arrow_that_is_not_downward(tree, folder, layer, said):
    move_to_layer(tree, folder, layer)
    status, output = check(tree)
    assert status == 1 and said in output, output


def test_a_folder_missing_from_the_layer_diagram_is_reported(tree):
    path = tree / "docs" / "ARCHITECTURE.md"
    path.write_text(path.read_text(encoding="utf-8").replace("   saturator   ", "   ", 1), encoding="utf-8")
    status, output = check(tree)
    assert status == 1 and "saturator is on no layer of §8's diagram" in output, output
