"""AppArmor parsers for the tests, none installed: Debian 12 has only AppArmor 3, which cannot read the `userns`
rule of the shells' profile, and this kernel has no AppArmor at all. Debian 13's apparmor package (AppArmor 4) is
taken from Debian's archive (the package registry CI installs from) with the C library it needs (its parser is
otherwise static), and Debian 12's (AppArmor 3) alone; each package checked against the SHA-256 that the
archive's package index gives, and unpacked once under CACHE. AppArmor 4's parser runs through its C library's
own loader. Each one's /etc/apparmor.d (abi/, tunables/) is its includes' base.

parser4(), parser3() -> (argv prefix that runs apparmor_parser, its base directory); raise Unavailable with the
reason."""
import hashlib
import lzma
import os
import shutil
import subprocess
import tempfile
import urllib.request

ARCHIVE = "http://deb.debian.org/debian"
CACHE = "/var/cache/tracemod-tests/apparmor"
LIBDIR = "usr/lib/x86_64-linux-gnu"


class Unavailable(Exception):
    """No such parser could be had here (the archive unreachable, a package changed shape)."""


def _fetch(url, timeout=120):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.read()
    except OSError as e:
        raise Unavailable(f"{url}: {e}") from None


def _index_entries(suite, names):
    """{package: (Filename, SHA256)} from SUITE's amd64 package index."""
    text = lzma.decompress(_fetch(f"{ARCHIVE}/dists/{suite}/main/binary-amd64/Packages.xz")).decode()
    found = {}
    for stanza in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in stanza.splitlines() if ": " in line and line[0] != " ")
        if fields.get("Package") in names and fields["Package"] not in found:
            found[fields["Package"]] = (fields["Filename"], fields["SHA256"])
    missing = set(names) - set(found)
    if missing:
        raise Unavailable(f"{suite}'s package index has no {', '.join(sorted(missing))}")
    return found


def _unpack(suite, packages):
    """The root directory PACKAGES of SUITE are unpacked in, once."""
    cache = os.path.join(CACHE, suite)
    root = os.path.join(cache, "root")
    if os.path.exists(os.path.join(cache, "complete")):
        return root
    shutil.rmtree(cache, ignore_errors=True)
    os.makedirs(root)
    for name, (path, sha256) in _index_entries(suite, packages).items():
        data = _fetch(f"{ARCHIVE}/{path}")
        if hashlib.sha256(data).hexdigest() != sha256:
            raise Unavailable(f"{path}: its SHA-256 is not the index's")
        with tempfile.NamedTemporaryFile(suffix=".deb") as deb:
            deb.write(data)
            deb.flush()
            subprocess.run(["dpkg-deb", "-x", deb.name, root], check=True, capture_output=True)
    open(os.path.join(cache, "complete"), "w").close()
    return root


def _checked(argv, root, major):
    version = subprocess.run([*argv, "--version"], capture_output=True, text=True)
    if version.returncode != 0 or not version.stdout.startswith(f"AppArmor parser version {major}."):
        raise Unavailable(f"the unpacked parser says: {version.stdout or version.stderr}")
    return argv, os.path.join(root, "etc", "apparmor.d")


def _parser_in(root):
    """Where the package put apparmor_parser: /usr/sbin (AppArmor 4's), /sbin (Debian 12's)."""
    for d in ("usr/sbin", "sbin"):
        if os.path.exists(os.path.join(root, d, "apparmor_parser")):
            return os.path.join(root, d, "apparmor_parser")
    raise Unavailable(f"no apparmor_parser in the package unpacked in {root}")


def parser4():
    root = _unpack("trixie", ("apparmor", "libc6"))
    lib = os.path.join(root, LIBDIR)
    return _checked([os.path.join(lib, "ld-linux-x86-64.so.2"), "--library-path", lib,
                     _parser_in(root), "--config-file=/dev/null"], root, 4)


def parser3():
    root = _unpack("bookworm", ("apparmor",))
    return _checked([_parser_in(root), "--config-file=/dev/null"], root, 3)
