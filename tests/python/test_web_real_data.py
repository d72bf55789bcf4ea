"""tests/data/web/real/ holds recordings others made, byte for byte as their repositories have them (its
README.md): every file there is one SHA256SUMS names, with that hash, and SHA256SUMS names every file but ours
(the README, the licences' texts and itself)."""
import hashlib
import os

REAL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "web", "real")
OURS = {"README.md", "SHA256SUMS"}


def recorded_files():
    """Every file under REAL but OURS and LICENSES/, relative to REAL."""
    out = set()
    for root, dirs, files in os.walk(REAL):
        dirs[:] = [d for d in dirs if os.path.join(root, d) != os.path.join(REAL, "LICENSES")]
        out |= {os.path.relpath(os.path.join(root, name), REAL) for name in files}
    return out - OURS


def test_every_recording_is_the_file_its_repository_has():
    with open(os.path.join(REAL, "SHA256SUMS")) as f:
        sums = {name: digest for digest, name in (line.rstrip("\n").split("  ", 1) for line in f)}
    assert recorded_files() == set(sums)
    for name, digest in sums.items():
        with open(os.path.join(REAL, name), "rb") as f:
            assert hashlib.sha256(f.read()).hexdigest() == digest, name
