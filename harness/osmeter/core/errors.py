"""The two ways a command ends early, shared by every module: a request that
cannot be served (RunError, exit 2) and an interruption by a signal
(Interrupted, exit 128 + the signal's number: 130 for SIGINT, 143 for
SIGTERM, 129 for SIGHUP: a closed terminal or ssh session)."""
from __future__ import annotations

import contextlib
import signal

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
    """SIGINT, SIGTERM and SIGHUP wait until the block is done (clean-up that
    must finish: restoring a machine setting, writing a results file)."""
    got: list[int] = []
    old = {s: signal.signal(s, lambda signum, frame: got.append(signum)) for s in SIGNALS}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        if got:
            raise Interrupted(got[0])
