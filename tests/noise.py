"""A host made noisy on purpose: a memory-bandwidth hog on another CPU,
stopped and continued at random phases, so that a probe's processes (and
runs) share the memory with a neighbour some of the time and not the rest,
as a cloud guest's do with the host's other tenants. It stands in for a
noisy host on any guest, quiet or not (issue 44)."""
from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import threading
from pathlib import Path

BIN = Path(__file__).resolve().parents[1] / "build" / "bin"


@contextlib.contextmanager
def planted_noise(cpu: int, on_s: tuple[float, float] = (0.3, 2.0), off_s: tuple[float, float] = (0.3, 2.0),
                  seed: int = 44):
    """While inside: mem_bw's out-of-cache passes on `cpu`, on for a random
    on_s and off (SIGSTOP) for a random off_s, over and over. Yields a dict
    that counts the phases; the hog is killed on the way out."""
    rng = random.Random(seed)
    hog = subprocess.Popen([str(BIN / "mem_bw"), "--cpu", str(cpu), "--buffers", "memory", "--no-mt",
                            "--samples", "1000000"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stop = threading.Event()
    phases = {"on": 0, "off": 0}

    def toggle():
        running = True
        while not stop.is_set():
            span = rng.uniform(*(on_s if running else off_s))
            phases["on" if running else "off"] += 1
            if stop.wait(span):
                break
            running = not running
            with contextlib.suppress(ProcessLookupError):
                os.kill(hog.pid, signal.SIGCONT if running else signal.SIGSTOP)

    t = threading.Thread(target=toggle, daemon=True)
    t.start()
    try:
        yield phases
    finally:
        stop.set()
        t.join()
        with contextlib.suppress(ProcessLookupError):
            os.kill(hog.pid, signal.SIGCONT)
            hog.kill()
        hog.wait()
