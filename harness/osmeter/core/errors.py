"""The two ways a command ends early, shared by every module: a request that
cannot be served (RunError, exit 2) and an interruption by a signal
(Interrupted, exit 128 + the signal's number: 130 for SIGINT, 143 for
SIGTERM, 129 for SIGHUP: a closed terminal or ssh session)."""
from __future__ import annotations

import contextlib
import signal
import threading

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class RunError(Exception):
    """A problem with the request itself: message for the user, exit status 2."""


class Interrupted(BaseException):
    """SIGINT, SIGTERM or SIGHUP arrived. A BaseException, like KeyboardInterrupt, so
    that no `except Exception` swallows it on its way out."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def status(self) -> int:
        return 128 + self.signum


@contextlib.contextmanager
def interruptible():
    """SIGINT, SIGTERM and SIGHUP raise Interrupted inside the block."""
    def raise_it(signum, frame):
        raise Interrupted(signum)

    old = {s: signal.signal(s, raise_it) for s in SIGNALS}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextlib.contextmanager
def shielded():
    """SIGINT, SIGTERM and SIGHUP wait until the block is done, then reach
    the handler that was in place before it (under interruptible(): an
    Interrupted raised as the block ends; in an outer shielded block: that
    block's wait). For what must finish once begun: restoring a machine
    setting, writing a results file, starting a process that must be known
    to be stopped. A signal let into such a block does worse than stop it
    half way: a library's clean-up may fail and put its own exception in
    the signal's place (zipfile's close under numpy.savez_compressed raised
    ValueError, which the probe's output parser took for bad output: the
    interrupt was lost and the run went on). Only the main thread receives
    signals and swaps handlers; in any other the block runs as is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    old = {s: signal.signal(s, lambda signum, frame: got.append(signum)) for s in SIGNALS}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        for signum in got[:1]:
            h = old[signum]
            if callable(h):
                h(signum, None)
            elif h == signal.SIG_DFL:
                signal.raise_signal(signum)


def interrupt_behind(e: BaseException) -> Interrupted | None:
    """The Interrupted an exception was raised while handling, if any: a
    broad except that takes e for bad data must raise this instead."""
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, Interrupted):
            return e
        seen.add(id(e))
        e = e.__context__
    return None
