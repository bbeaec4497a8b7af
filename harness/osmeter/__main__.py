import os
import signal
import sys


def _before_ready(signum, frame):
    """SIGINT or SIGTERM while osmeter is still starting (importing): nothing
    has been written yet, so it ends at once, quietly, as a command
    interrupted later would (130, 143); the commands install their own
    handling (errors.interruptible) once they begin."""
    os._exit(128 + signum)


signal.signal(signal.SIGINT, _before_ready)
signal.signal(signal.SIGTERM, _before_ready)

from osmeter.cli import main  # noqa: E402

sys.exit(main())
