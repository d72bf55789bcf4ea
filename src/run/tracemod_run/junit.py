"""A results directory as JUnit XML (`tm-run ... --junit FILE`, `tm-run report DIR --junit FILE`): the report a
CI system (Jenkins, GitLab, GitHub's test reporters) reads, in the form of Jenkins' junit-10.xsd.

One <testsuite> named for the experiment. Test cases, each classname the experiment's name:
  - "assert N: METRIC STAT below X [CONFIG]": one per [[assert]] and configuration it covers; a bound missed is a
    <failure>; an assertion that could not be judged (its metric not measured, no configuration matching, no run
    finished) is an <error>: never a pass.
  - "run CONFIG/rK": one per run of the experiment; a run that failed is an <error> with its reason, one this
    command did not run (interrupted, or another shard's) is <skipped> and says why, a finished one passes and
    carries its wall time.
The suite's <properties>: tracemod's version, the experiment's file and hash, the shard, and per configuration
each metric's median and n over its replications ("CONFIG: METRIC median").
"""
import datetime
import os
import socket
import xml.etree.ElementTree as ET

from . import results
from .errors import UsageError


def check_path(path):
    """Refuses, before any run starts, a --junit FILE that could not be written at the end."""
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise UsageError(f"--junit {path}: is a directory; give a file")
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK):
        raise UsageError(f"--junit {path}: {parent} is not a directory this user can write to")


def bounds_text(a):
    parts = [f"below {a['below']:g}" if a.get("below") is not None else "",
             f"above {a['above']:g}" if a.get("above") is not None else ""]
    return " and ".join(p for p in parts if p)


def assertion_cases(asserts, per):
    """(name, verdict 'ok' | 'failure' | 'error', message) per [[assert]] and configuration it covers."""
    cases = []
    for a, config, verdict, message in results.evaluate_assertions(asserts, per):
        name = f"assert {a['index']}: {a['metric']} {a['stat']} {bounds_text(a)}"
        cases.append((f"{name} [{config}]" if config else name, verdict, message))
    return cases


def run_cases(manifest, finished, failed):
    """(name, verdict 'ok' | 'error' | 'skipped', message, seconds or None) per run in the experiment's order."""
    done = {r["run"]: r for r in finished}
    broken = {r["run"]: r for r in failed}
    shard = manifest.get("shard")
    cases = []
    for run in manifest.get("run_order", []):
        if run in done:
            cases.append((f"run {run}", "ok", "", done[run].get("wall_s")))
        elif run in broken:
            cases.append((f"run {run}", "error", str(broken[run].get("error") or "failed"),
                          broken[run].get("wall_s")))
        else:
            why = (f"not run here: {results.shard_text(shard)} runs a share of the experiment, or was interrupted"
                   if shard else "not run: the experiment was interrupted before it")
            cases.append((f"run {run}", "skipped", why, None))
    return cases


def _seconds(value):
    return f"{max(0.0, float(value or 0)):.3f}"


def _properties(suite, manifest, per):
    props = ET.SubElement(suite, "properties")
    exp = manifest.get("experiment", {})
    fixed = [("tracemod_version", manifest.get("tracemod_version")), ("experiment_file", exp.get("file")),
             ("experiment_hash", exp.get("hash")), ("shard", results.shard_text(manifest.get("shard")))]
    for name, value in fixed:
        ET.SubElement(props, "property", name=name, value=str(value))
    for config, metrics in per.items():
        for metric, s in metrics.items():
            ET.SubElement(props, "property", name=f"{config}: {metric} median", value=f"{s['median']:.6g}")
            ET.SubElement(props, "property", name=f"{config}: {metric} n", value=str(s["n"]))


def _case(suite, classname, name, verdict, message, seconds=None):
    case = ET.SubElement(suite, "testcase", name=name, classname=classname)
    if seconds is not None:
        case.set("time", _seconds(seconds))
    if verdict == "ok":
        if message:  # what held, with its value: a CI's report shows it beside the pass
            ET.SubElement(case, "system-out").text = message
        return
    kind = {"failure": "AssertionViolated", "error": "NotJudged" if name.startswith("assert") else "RunFailed",
            "skipped": "NotRun"}[verdict]
    element = ET.SubElement(case, verdict, message=message.splitlines()[0] if message else "", type=kind)
    element.text = message


def document(directory):
    """The JUnit XML of results DIRECTORY, as an ElementTree."""
    manifest = results.load_manifest(directory)
    finished, failed = results.load_results(directory, manifest)
    failed = [f for f in failed if f["run"] not in {r["run"] for r in finished}]
    per, _ = results.summaries(finished)
    name = manifest.get("experiment", {}).get("name") or os.path.basename(os.path.abspath(directory))
    cases = [(n, v, m, None) for n, v, m in assertion_cases(manifest.get("asserts", []), per)]
    cases += run_cases(manifest, finished, failed)
    count = {v: sum(1 for c in cases if c[1] == v) for v in ("failure", "error", "skipped")}
    seconds = _seconds(sum(r.get("wall_s") or 0 for r in finished + failed))
    top = ET.Element("testsuites", name=f"tm-run: {name}", tests=str(len(cases)), failures=str(count["failure"]),
                     errors=str(count["error"]), time=seconds)
    suite = ET.SubElement(top, "testsuite", name=name, tests=str(len(cases)), failures=str(count["failure"]),
                          errors=str(count["error"]), skipped=str(count["skipped"]), time=seconds,
                          hostname=manifest.get("host", {}).get("hostname") or socket.gethostname(),
                          timestamp=min((r["started"] for r in finished + failed if r.get("started")),
                                        default=datetime.datetime.now().astimezone().isoformat(timespec="seconds")))
    _properties(suite, manifest, per)
    for case_name, verdict, message, secs in cases:
        _case(suite, name, case_name, verdict, message, secs)
    ET.indent(top)
    return ET.ElementTree(top)


def write(directory, path):
    """Writes DIRECTORY's JUnit XML to PATH whole (a temporary file renamed); returns PATH."""
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        document(directory).write(tmp, encoding="UTF-8", xml_declaration=True)
        os.replace(tmp, path)
    except OSError as e:
        raise UsageError(f"--junit {path}: cannot write: {e.strerror}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path
