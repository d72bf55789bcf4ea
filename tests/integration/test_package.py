"""The Debian package as a user gets it: built from the release tree (`make distdir`, which holds debian/) by
dpkg-buildpackage, checked by lintian, installed with apt-get; then the quick start's demo, an example
experiment, an installed trace by its bare name and the installed completion run from the installed files
alone (PATH without the build tree), as root and as the unprivileged user; the pytest examples as the user; the
steps of examples/ci's GitHub and GitLab jobs as written (as root); the maintainer scripts' handling of the
AppArmor profile with AppArmor 4's and 3's parsers; purged, nothing of it is left.

It installs and removes system packages, so it runs only in CI (CI=true) or when asked (TM_TEST_PACKAGE=1):
a developer's `sudo make check` skips it. It takes some 5 minutes, most of them the package's compile."""
import glob
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest
import yaml

from apparmor_helper import parser3, parser4
from completion_helper import complete
from conftest import HERE, sh

SRCDIR = os.path.dirname(os.path.dirname(HERE))
BUILDDIR = os.environ.get("TM_TEST_BUILDDIR", "")
PACKAGES = ("tracemod", "tracemod-run")
INSTALLED_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"  # nothing of the build tree, nor /usr/local
EXAMPLE = "/usr/share/doc/tracemod/examples/droptail-vs-codel.toml"
PYTEST_EXAMPLES = "/usr/share/doc/tracemod/examples/pytest"  # with tracemod-run's pytest plugin
# Directories that are the package's own: gone after the purge, whatever dpkg -L lists.
OWN_DIRS = ("/usr/share/tracemod", "/usr/share/doc/tracemod", "/usr/share/doc/tracemod-run")
APPARMOR_PROFILE = "/usr/share/tracemod/apparmor/tracemod"
APPARMOR_TARGET = "/etc/apparmor.d/tracemod"  # where the postinst puts it where AppArmor 4 reads it
# Written before this test installs the packages, removed once they are purged: a run killed in between (a CI
# timeout, a session's end) leaves it, and the next run purges what that run installed instead of refusing.
MARKER = "/var/tmp/tracemod-test-package.installed"

pytestmark = pytest.mark.skipif(
    os.environ.get("CI", "").lower() != "true" and os.environ.get("TM_TEST_PACKAGE") != "1",
    reason="installs and removes the tracemod package: runs in CI, or with TM_TEST_PACKAGE=1")


def run(argv, *, timeout, cwd=None, env=None, log=None):
    """Runs ARGV as root, its output to the file LOG if given; fails with the output's end on an error."""
    out = open(log, "w+") if log else subprocess.PIPE
    try:
        r = subprocess.run(argv, cwd=cwd, env=dict(os.environ, **(env or {})), stdin=subprocess.DEVNULL,
                           stdout=out, stderr=subprocess.STDOUT, text=True, timeout=timeout)
        output = r.stdout if not log else (out.seek(0), out.read())[1]
    finally:
        if log:
            out.close()
    assert r.returncode == 0, f"{' '.join(argv)}: exit {r.returncode}:\n{output[-4000:]}"
    return output


def installed(package):
    r = subprocess.run(["dpkg-query", "-W", "-f", "${db:Status-Status}", package], capture_output=True, text=True)
    return r.returncode == 0 and r.stdout == "installed"


@pytest.fixture(scope="module")
def changes(tmp_path_factory):
    """Builds the packages from the release tree; returns their .changes file."""
    if os.path.exists(MARKER):
        purge()
    for package in PACKAGES:
        assert not installed(package), f"{package} is installed, not by this test: it would replace and purge it"
    work = tmp_path_factory.mktemp("package")
    tree = str(work / "tracemod")
    run(["make", "-C", BUILDDIR, "distdir", f"distdir={tree}", f"top_distdir={tree}"], timeout=300)
    run(["dpkg-buildpackage", "-us", "-uc", "-b"], cwd=tree, timeout=1200, log=str(work / "build.log"),
        env={"DEB_BUILD_OPTIONS": "nocheck parallel=2"})
    found = glob.glob(str(work / "tracemod_*.changes"))
    assert len(found) == 1, os.listdir(work)
    return found[0]


def documented_warnings():
    """The tags in the table of docs/PACKAGING.md's section on lintian: the warnings that remain, with reasons."""
    with open(os.path.join(SRCDIR, "docs", "PACKAGING.md"), encoding="utf-8") as f:
        section = f.read().split("\n## lintian\n", 1)[-1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([a-z0-9-]+)` \|", section, re.M))


def test_lintian_finds_no_error_and_only_the_documented_warnings(changes):
    output = run(["lintian", "--fail-on", "none", "--tag-display-limit", "0", changes], timeout=600)
    print(output)
    tags = re.findall(r"^([EW]): [^:]+: (\S+)", output, re.M)
    assert not [t for kind, t in tags if kind == "E"], output
    undocumented = {t for kind, t in tags if kind == "W"} - documented_warnings()
    assert not undocumented, f"lintian warnings neither fixed nor listed in docs/PACKAGING.md: {undocumented}"


def test_the_installed_package_runs_the_demo_and_an_example_and_purges_clean(changes, root, user, public_tmp):
    listed = set()
    try:
        files = [glob.glob(os.path.join(os.path.dirname(changes), f"{package}_*.deb"))[0] for package in PACKAGES]
        open(MARKER, "w").close()
        run(["apt-get", "install", "-y", "-q", *files], timeout=600, env={"DEBIAN_FRONTEND": "noninteractive"})
        for package in PACKAGES:
            listed |= set(run(["dpkg", "-L", package], timeout=30).split("\n")) - {"", "/."}
        check_installed_files(listed)
        for who in (root, user):
            run_installed(who, public_tmp / who.name)
        # No AppArmor parser here: the postinst left the profile out of /etc/apparmor.d.
        assert not os.path.lexists(APPARMOR_TARGET)
        check_apparmor_scripts(public_tmp / "apparmor")
        debs = os.path.dirname(files[0])
        run_github_workflow(debs, public_tmp / "github")
        run_gitlab_job(debs, public_tmp / "gitlab")
    finally:
        purge()
    left = [p for p in sorted(listed) if os.path.lexists(p) and not (os.path.isdir(p) and owned_by_another(p))]
    left += [d for d in OWN_DIRS if os.path.lexists(d)]
    assert not left, f"left behind by the purge: {left}"


def purge():
    """Purges the packages this test installed, then forgets that it installed them."""
    subprocess.run(["apt-get", "purge", "-y", "-q", *PACKAGES], stdin=subprocess.DEVNULL, capture_output=True,
                   env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"), timeout=300)
    for package in PACKAGES:
        assert not installed(package), f"{package} is still installed after apt-get purge"
    if os.path.exists(MARKER):
        os.unlink(MARKER)


def owned_by_another(directory):
    return subprocess.run(["dpkg-query", "-S", directory], capture_output=True).returncode == 0


def check_installed_files(listed):
    tools = sorted(os.path.basename(p) for p in listed if p.startswith("/usr/bin/"))
    assert len(tools) == 14, tools
    for tool in tools:  # each with its man page and its completion
        assert f"/usr/share/man/man1/{tool}.1.gz" in listed, tool
        assert os.path.realpath(f"/usr/share/bash-completion/completions/{tool}") == \
            "/usr/share/bash-completion/completions/tracemod", tool
    for helper in ("webreplay-server", "webrecord-proxy"):  # started by tm-webreplay and tm-webrecord
        assert f"/usr/libexec/tracemod/{helper}" in listed and os.access(f"/usr/libexec/tracemod/{helper}", os.X_OK)
    assert "/usr/share/tracemod/traces/Verizon-LTE-short.up" in listed
    assert "/usr/share/tracemod/traces/wavelan.sched" in listed
    assert "/usr/share/tracemod/python/tracemod_run/cli.py" in listed
    assert "/usr/lib/python3/dist-packages/tracemod_pytest.py" in listed  # the plugin's entry point
    assert any(p.endswith(".dist-info/entry_points.txt") and "/tracemod_pytest-" in p for p in listed), listed
    assert EXAMPLE in listed
    assert APPARMOR_PROFILE in listed
    with open(APPARMOR_PROFILE) as f:
        assert "\nprofile tracemod /usr/bin/tm-{delay," in f.read()  # the installed shells
    assert "/usr/share/doc/tracemod/examples/sites/page/index.html" in listed  # the page-load examples' site


def run_installed(who, workdir):
    """The demo, an example's first share and a trace by name, as WHO in WORKDIR, with the installed files."""
    workdir.mkdir()
    os.chmod(workdir, 0o777)
    env = {"PATH": INSTALLED_PATH}
    demo = 'cd "$1" && command -v tm-delay && command -v tm-run && exec /usr/share/tracemod/demo'
    r = who.run(sh(demo, workdir), env=env, timeout=180)
    assert r.returncode == 0, f"demo as {who.name}: {r.stdout}\n{r.stderr}"
    assert r.stdout.startswith("/usr/bin/tm-delay\n/usr/bin/tm-run\n"), r.stdout
    assert re.search(r"== tm-graph on the downlink's log\n.*throughput", r.stdout, re.S), r.stdout
    with open(workdir / "tracemod-demo.png", "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"

    # Two of the example's twelve runs (a share), from the installed example as it is.
    r = who.run(["tm-run", EXAMPLE, "-o", str(workdir / "aqm"), "--shard", "1/6", "-q"], env=env, timeout=300)
    assert r.returncode == 0, f"tm-run as {who.name}: {r.stdout}\n{r.stderr}"
    with open(workdir / "aqm" / "results.csv") as f:
        assert len(re.findall(r"goodput_mbps", f.read())) == 2

    # A replay: the installed tm-webreplay starts the installed server (libexec), which says it is ready.
    har = workdir / "site.har"
    shutil.copy(os.path.join(HERE, "..", "data", "web", "site.har"), har)
    os.chmod(har, 0o644)
    r = who.run(["tm-webreplay", "--ca-dir", str(workdir / "ca"), str(har), "--", "true"], env=env, timeout=120)
    assert r.returncode == 0, f"tm-webreplay as {who.name}: {r.stderr}"

    r = who.run(["tm-trace", "validate", "Verizon-LTE-short.up"], env=env)  # found where it is installed
    assert r.returncode == 0 and r.stdout.startswith("Verizon-LTE-short.up: ok"), r.stdout + r.stderr

    # bash-completion finds the tools' completion where the package put it.
    assert complete(["tm-link", "Verizon-LTE-short.u"], cwd=workdir) == {"Verizon-LTE-short.up"}
    assert complete(["tm-run", "workload", "re"], cwd=workdir) == {"reqrep"}

    # pytest finds the plugin by its entry point: the installed examples, copied as a user starts from them (run
    # in place, pytest would leave its bytecode among the package's files), pass with no -p, conftest or PYTHONPATH.
    # As root the CI examples' steps run them (run_github_workflow, run_gitlab_job).
    if who.name == "root":
        return
    examples = workdir / "pytest-examples"
    r = who.run(sh('cp -r "$1" "$2" && exec /usr/bin/python3 -m pytest -q -p no:cacheprovider --rootdir="$2" '
                   '--basetemp="$3" "$2"', PYTEST_EXAMPLES, examples, workdir / "pytest"), env=env, timeout=180)
    assert r.returncode == 0 and "3 passed" in r.stdout, f"pytest as {who.name}: {r.stdout[-3000:]}\n{r.stderr}"


# ---------------------------------------------------------------------------------------------------------
# examples/ci: each CI's steps run here as written, as root (a CI job's user, with sudo), in a fresh workspace,
# with the installed files only; the one thing set from outside is TRACEMOD_DEBS, where the built packages are.
# What cannot run here (the CI's own actions: checkout, publishing) is checked against what the steps wrote.

CI_EXAMPLES = os.path.join(SRCDIR, "examples", "ci")


def ci_environment(debs, workspace, *levels):
    """The steps' environment: the installed PATH with `sudo` (root's CI user has it; as root it runs the
    command), the YAML's variables level by level, then TRACEMOD_DEBS."""
    shim = workspace / ".sudo"
    shim.mkdir(exist_ok=True)
    (shim / "sudo").write_text('#!/bin/sh\nexec "$@"\n')
    os.chmod(shim / "sudo", 0o755)
    env = {"PATH": f"{shim}:{INSTALLED_PATH}", "HOME": str(workspace), "LANG": "C.UTF-8", "CI": "true"}
    for level in levels:
        env.update({k: str(v) for k, v in (level or {}).items()})
    env["TRACEMOD_DEBS"] = debs
    return env


def run_steps(script, workspace, env, what):
    """Runs SCRIPT as the CI's shell would (bash, -e and pipefail) in WORKSPACE; fails with its output's end."""
    r = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=workspace, env=env,
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"{what}: exit {r.returncode}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r.stdout


def check_reports(workspace, pattern):
    """The JUnit reports the CI would publish (PATTERN, as its YAML names them): the experiment's and pytest's,
    every test case passed."""
    reports = sorted(glob.glob(str(workspace / pattern)))
    assert [os.path.basename(p) for p in reports] == ["experiment.xml", "pytest.xml"], reports
    for path in reports:
        suites = ET.parse(path).getroot()
        suites = [suites] if suites.tag == "testsuite" else list(suites)
        tests = sum(int(t.get("tests")) for t in suites)
        bad = sum(int(t.get("failures", 0)) + int(t.get("errors", 0)) for t in suites)
        assert tests > 0 and bad == 0, f"{path}: {tests} tests, {bad} failed or errors"
    return reports


def run_github_workflow(debs, workspace):
    with open(os.path.join(CI_EXAMPLES, "github-actions.yml"), encoding="utf-8") as f:
        workflow = yaml.safe_load(f)
    (name, job), = workflow["jobs"].items()
    uses = [step["uses"].split("@")[0] for step in job["steps"] if "uses" in step]
    assert uses == ["actions/checkout", "mikepenz/action-junit-report", "actions/upload-artifact"], uses
    workspace.mkdir()
    for step in job["steps"]:
        if "run" in step:
            env = ci_environment(debs, workspace, workflow.get("env"), job.get("env"), step.get("env"))
            print(run_steps(step["run"], workspace, env, f"github-actions.yml, {name}: {step.get('name')}"))
    publish = next(s for s in job["steps"] if s.get("uses", "").startswith("mikepenz/action-junit-report"))
    check_reports(workspace, publish["with"]["report_paths"])
    kept = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact"))
    for path in kept["with"]["path"].split():
        assert os.path.isdir(workspace / path), f"the artifact's {path} was not made"


def run_gitlab_job(debs, workspace):
    with open(os.path.join(CI_EXAMPLES, "gitlab-ci.yml"), encoding="utf-8") as f:
        config = yaml.safe_load(f)
    (name, job), = config.items()
    workspace.mkdir()
    env = ci_environment(debs, workspace, config.get("variables"), job.get("variables"))
    script = "\n".join([*job.get("before_script", []), *job["script"]])
    print(run_steps(script, workspace, env, f"gitlab-ci.yml, {name}"))
    check_reports(workspace, job["artifacts"]["reports"]["junit"])
    for path in job["artifacts"]["paths"]:
        assert os.path.isdir(workspace / path), f"the artifact's {path} was not made"


# The installed maintainer scripts, run as dpkg runs them, in a mount namespace of their own whose
# /etc/apparmor.d is a parser's own (abi/, tunables/) and whose PATH finds that parser (apparmor_helper): with
# AppArmor 4's, the postinst puts the profile there as installed and the prerm takes it away again; with
# Debian 12's AppArmor 3, which cannot read it, the postinst leaves it out. No aa-enabled: nothing is loaded
# (this kernel has no AppArmor).
SCRIPTS = r'''
set -e
mount -t tmpfs tracemod-test /etc/apparmor.d
cp -a "$2/." /etc/apparmor.d/
printf '#!/bin/sh\nexec %s "$@"\n' "$1" > "$3/apparmor_parser"
chmod 755 "$3/apparmor_parser"
export PATH="$3:$PATH"
/var/lib/dpkg/info/tracemod.postinst configure
if [ -e /etc/apparmor.d/tracemod ]; then cmp "$4" /etc/apparmor.d/tracemod; echo installed; fi
/var/lib/dpkg/info/tracemod.prerm remove
if [ -e /etc/apparmor.d/tracemod ]; then echo left; fi
'''


def check_apparmor_scripts(workdir):
    for parser, expected in ((parser4, "installed\n"), (parser3, "")):
        argv, base = parser()
        shim = workdir / parser.__name__
        shim.mkdir(parents=True)
        script = ["sh", "-c", SCRIPTS, "scripts", " ".join(argv), base, str(shim), APPARMOR_PROFILE]
        output = run(["unshare", "--mount", "--propagation", "private", *script], timeout=60)
        assert output == expected, f"{parser.__name__}: {output!r}"
    assert not os.path.lexists(APPARMOR_TARGET)  # the namespaces' doing stayed in them
