"""Runs bash completion as readline would for a command line, and returns what it offers.

complete(words, script=...) sources bash-completion and SCRIPT (the tools' completion, completion/tracemod in the
build tree); without SCRIPT, bash-completion loads the tool's completion from where it is installed, as it does
for a user. The last word is the one being completed ("" after a space)."""
import os
import subprocess

BASH_COMPLETION = "/usr/share/bash-completion/bash_completion"  # Debian's bash-completion package

# $1: the script to source, or ""; the rest: the words. Calls the function `complete -F` registered for the
# first word, with readline's arguments, and prints what it offered, one per line.
DRIVER = r'''
. "$BASH_COMPLETION" || exit 3
script=$1; shift
if [ -n "$script" ]; then . "$script" || exit 3; else __load_completion "${1##*/}"; fi
COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
spec=$(complete -p "${1##*/}") || { echo "no completion registered for ${1##*/}" >&2; exit 4; }
func=${spec#*-F }; func=${func%% *}
"$func" "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}"
'''


def complete(words, *, script="", env=None, cwd="/"):
    """The set of words offered for the last of WORDS."""
    assert os.path.exists(BASH_COMPLETION), f"{BASH_COMPLETION} is missing: install bash-completion"
    r = subprocess.run(["bash", "-c", DRIVER, "complete", script, *words], capture_output=True, text=True,
                       env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LANG": "C.UTF-8",
                            "BASH_COMPLETION": BASH_COMPLETION, **(env or {})}, cwd=cwd, timeout=30)
    # compopt (no space after gilbert:p=) works only under readline; any other message is an error.
    errors = [line for line in r.stderr.splitlines() if "not currently executing completion function" not in line]
    assert r.returncode == 0 and not errors, f"completing {words}: exit {r.returncode}: {r.stderr}"
    return {line for line in r.stdout.splitlines() if line}
