"""The shells' AppArmor profile (apparmor/tracemod.in), which lets them make user namespaces where AppArmor
restricts unprivileged ones (Ubuntu 23.10 and later): AppArmor 4's parser compiles it as built, without loading
it (this kernel has no AppArmor), for the features of AppArmor 4's ABI, and its `userns` rule is in the compiled
policy; it names every tool that makes a user namespace, where it is installed. The package's maintainer
scripts, which put it in /etc/apparmor.d only where the system's parser compiles it, are test_package's."""
import os
import re
import subprocess

import pytest

from apparmor_helper import Unavailable, parser3, parser4
from conftest import BINDIR

BUILDDIR = os.environ.get("TM_TEST_BUILDDIR", "")
PROFILE = os.path.join(BUILDDIR, "apparmor", "tracemod")


def fetched(parser):
    """PARSER(); in CI its absence fails the test, elsewhere (no network to Debian's archive) skips it."""
    try:
        return parser()
    except Unavailable as e:
        if os.environ.get("CI", "").lower() == "true":
            raise
        pytest.skip(f"no {parser.__name__}: {e}")


@pytest.fixture(scope="module")
def parser():
    return fetched(parser4)


def compile_profile(parser, text, tmp_path, name="profile"):
    """(exit status, compiled policy, stderr) of TEXT compiled for AppArmor 4's ABI, skipping the kernel."""
    argv, base = parser
    path = tmp_path / name
    path.write_text(text)
    r = subprocess.run([*argv, "--skip-kernel-load", "--skip-cache", "--stdout",
                        f"--features-file={base}/abi/4.0", f"--base={base}", str(path)],
                       capture_output=True, timeout=60)
    return r.returncode, r.stdout, r.stderr.decode(errors="replace")


def test_apparmor_4_compiles_the_profile_and_its_userns_rule(parser, tmp_path):
    with open(PROFILE) as f:
        text = f.read()
    status, policy, err = compile_profile(parser, text, tmp_path)
    assert status == 0 and policy, err
    # The rule is in the compiled policy: without it the policy differs.
    assert "  userns,\n" in text
    status, without, err = compile_profile(parser, text.replace("  userns,\n", ""), tmp_path, "no-userns")
    assert status == 0 and without != policy, err
    # And the parser refuses what it cannot read (so a broken profile fails here).
    status, _, err = compile_profile(parser, text.replace("userns,", "usernss,"), tmp_path, "broken")
    assert status != 0 and "syntax error" in err, err


def makes_user_namespaces(tool):
    with open(os.path.join(BINDIR, tool), "rb") as f:
        return b"create user namespace" in f.read()


def test_the_profile_names_every_tool_that_makes_a_user_namespace_where_it_is_installed():
    with open(PROFILE) as f:
        m = re.search(r"^profile tracemod (\S+)/tm-\{([a-z,]+)\} flags=\(unconfined\) \{$", f.read(), re.M)
    assert m, "no profile line"
    with open(os.path.join(BUILDDIR, "Makefile")) as f:
        prefix = re.search(r"^prefix = (.*)$", f.read(), re.M).group(1)
    assert m.group(1) == f"{prefix}/bin", m.group(1)
    named = {f"tm-{name}" for name in m.group(2).split(",")}
    tools = {t for t in os.listdir(BINDIR) if t.startswith("tm-") and os.access(os.path.join(BINDIR, t), os.X_OK)}
    making = {t for t in tools if not t.endswith(".py") and makes_user_namespaces(t)}
    assert len(making) == 8 and named == making, (named, making)


def test_apparmor_3_cannot_read_it_so_the_package_leaves_it_out_there(tmp_path):
    """Debian 12's parser (AppArmor 3, enabled by default there) refuses the profile: in /etc/apparmor.d it would
    fail apparmor.service at every boot, which is why the package's postinst installs it only where the system's
    parser compiles it (test_package runs those scripts with both parsers)."""
    argv, base = fetched(parser3)
    r = subprocess.run([*argv, "--skip-kernel-load", "--skip-cache", f"--base={base}", PROFILE],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "abi/4.0" in r.stderr, r.stderr
