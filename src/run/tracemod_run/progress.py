"""The progress bar: the current run, runs done, and an ETA from the mean time per run so far. It goes to
stderr, only when stderr is a terminal and -q was not given."""
import sys
import threading
import time


def _clock(seconds):
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class Progress:
    def __init__(self, total, jobs=1, expected=None, quiet=False, stream=None):
        self.stream = stream or sys.stderr
        self.enabled = not quiet and self.stream.isatty()
        self.total, self.jobs, self.expected = total, jobs, expected
        self.done = self.failed = 0
        self.started = time.monotonic()
        self.current = []
        self.lock = threading.Lock()
        self._stop = threading.Event()
        if self.enabled and total:
            threading.Thread(target=self._tick, daemon=True).start()

    def eta(self):
        """Seconds left: remaining runs x mean seconds per finished run (or the expected duration) / jobs."""
        left = self.total - self.done
        if self.done:
            per_run = (time.monotonic() - self.started) * min(self.jobs, max(1, self.done)) / self.done
        elif self.expected:
            per_run = self.expected
        else:
            return None
        return left * per_run / self.jobs

    def line(self, width=100):
        eta = self.eta()
        filled = int(20 * self.done / self.total) if self.total else 20
        bar = "#" * filled + "." * (20 - filled)
        what = ", ".join(self.current) or "-"
        text = (f"[{bar}] {self.done}/{self.total}" + (f" ({self.failed} failed)" if self.failed else "") +
                f"  ETA {_clock(eta) if eta is not None else '?'}  {what}")
        return text[:width]

    def _draw(self):
        if self.enabled:
            self.stream.write("\r\x1b[K" + self.line())
            self.stream.flush()

    def _tick(self):
        while not self._stop.wait(1.0):
            with self.lock:
                self._draw()

    def start(self, run_id):
        with self.lock:
            self.current.append(run_id)
            self._draw()

    def finish(self, run_id, ok=True):
        with self.lock:
            self.current.remove(run_id)
            self.done += 1
            self.failed += not ok
            self._draw()

    def message(self, text):
        """A line of its own above the bar."""
        with self.lock:
            if self.enabled:
                self.stream.write("\r\x1b[K")
            print(text, file=self.stream, flush=True)
            self._draw()

    def close(self):
        self._stop.set()
        with self.lock:
            if self.enabled:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
