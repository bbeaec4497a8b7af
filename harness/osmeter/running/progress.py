"""The line a person watches while a long probe runs, on a terminal only:
the probe's own latest step (its OSM_PROGRESS_FD lines: the size reached,
the step of a search), the time spent and the time left against the
probe's budget. In a pipe or a file nothing of it is written."""
from __future__ import annotations

import shutil
import sys
import threading
import time


class StatusLine:
    def __init__(self, prefix: str, budget: float | None, stream=None, period: float = 0.5):
        self.prefix = prefix
        self.budget = budget
        self.stream = stream or sys.stdout
        self.period = period
        self.step = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, daemon=True)
        self._t0 = time.monotonic()

    def __enter__(self) -> "StatusLine":
        self._t0 = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        # leave the line as it was before: the prefix, for the result to follow
        self.stream.write("\r\033[K" + self.prefix + " ")
        self.stream.flush()

    def update(self, step: str) -> None:
        self.step = step

    def text(self, now: float | None = None) -> str:
        spent = (now if now is not None else time.monotonic()) - self._t0
        if self.budget:
            left = self.budget - spent
            clock = f"{spent:5.0f} s of ~{self.budget:.0f} s, " + (f"~{left:.0f} s left" if left >= 0
                                                                 else f"{-left:.0f} s over")
        else:
            clock = f"{spent:5.0f} s"
        line = f"{self.prefix} {clock}" + (f"  {self.step}" if self.step else "")
        width = shutil.get_terminal_size((100, 24)).columns - 1
        return line if len(line) <= width else line[: width - 1] + "…"

    def _tick(self) -> None:
        while not self._stop.wait(self.period):
            self.stream.write("\r\033[K" + self.text())
            self.stream.flush()
