"""Where tm-run finds the tracemod tools, itself and the traces (set by the launcher, see __init__)."""
import os
import shutil
import sys

import tracemod_run


def tools_dir():
    return tracemod_run.TOOLS_DIR


def launcher():
    """The tm-run executable the shells start for workload clients and servers."""
    if tracemod_run.LAUNCHER:
        return tracemod_run.LAUNCHER
    found = shutil.which("tm-run")
    return found or sys.argv[0]


def trace_path():
    """$TM_TRACE_PATH's directories, then the traces that come with tracemod."""
    dirs = [d for d in os.environ.get("TM_TRACE_PATH", "").split(":") if d]
    return dirs + [d for d in tracemod_run.TRACE_DIRS if d not in dirs]
