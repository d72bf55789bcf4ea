"""The two kinds of failure tm-run reports in one line: bad input (exit 2) and a failed action (exit 1)."""


class UsageError(Exception):
    """Bad input: a command line, an experiment file (with its file and line), a results directory."""

    exit_status = 2


class RunError(Exception):
    """Something that was tried and failed: a run, a tool, a merge."""

    exit_status = 1


class ConfigError(UsageError):
    """A bad value in an experiment file; WHERE is the table path and key the loader turns into FILE:LINE."""

    def __init__(self, message, where=None):
        super().__init__(message)
        self.where = where  # e.g. ("workload", "seconds") or ("shell", 1, "run")
