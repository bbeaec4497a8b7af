"""Starting a probe the way every measurement needs it: pinned to one CPU,
under the run's scheduling policy (SCHED_FIFO when permitted), in a
process group of its own that dies with the harness (PR_SET_PDEATHSIG),
with a timeout; stopped with SIGTERM, then SIGKILL; its scratch files
removed when it could not remove them itself.

Standard library only, and Python 3.8 or newer: a thin fleet host's agent
(agent.py) starts the probes there with this very Launcher."""
from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import threading
from pathlib import Path
from typing import Callable

from osmeter.core.errors import shielded

SPIN = "while :; do :; done"  # an awake probe's busy loop (Launcher._spinner)
RT_PRIORITY = 50  # below the kernel's own RT threads (migration, watchdog: 99)
PR_SET_PDEATHSIG = 1


def _set_pdeathsig():
    """In a probe's child: die when the harness dies, even by SIGKILL."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass



def fifo_permission() -> tuple[bool, str | None]:
    """Can we run probes under SCHED_FIFO? Tried on ourselves, then undone."""
    if not hasattr(os, "SCHED_FIFO"):
        return False, "this platform has no SCHED_FIFO"
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(RT_PRIORITY))
    except PermissionError:
        return False, "not permitted (needs root or CAP_SYS_NICE, or an RLIMIT_RTPRIO above 0)"
    except OSError as e:
        return False, f"sched_setscheduler failed: {e.strerror}"
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    return True, None


def _read_progress(fd: int, progress: Callable[[str], None]) -> None:
    """Hands each progress line to progress() until the probe closes its end."""
    with os.fdopen(fd, "r", errors="replace") as f:
        for line in f:
            if line.strip():
                progress(line.strip())


class Launcher:
    """Starts probes pinned to the plan's CPU under its scheduling policy,
    each in its own process group, and kills a group that overstays."""

    def __init__(self, bin_dir: Path, cpu: int, fifo: bool, scratch_dirs: list[Path] = ()):
        self.bin_dir = bin_dir
        self.cpu = cpu
        self.fifo = fifo
        self.proc: subprocess.Popen | None = None
        self.scratch_dirs = list(scratch_dirs)
        self.spinner: subprocess.Popen | None = None  # the busy loop of an awake probe, while it runs

    def _preexec(self, before_exec: Callable[[], None] | None = None, pinned: bool = True):
        _set_pdeathsig()
        if not pinned:  # an application's workload (Probe.pinned): the harness's CPUs and policy
            return
        os.sched_setaffinity(0, {self.cpu})
        if self.fifo:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(RT_PRIORITY))
        if before_exec is not None:
            before_exec()

    def _spinner(self) -> subprocess.Popen:
        """A busy loop pinned to the probe's CPU at SCHED_IDLE: it runs only
        when nothing else wants the CPU, and any wake-up preempts it at once,
        so while it lives the CPU never idles (on a VM: never halts and goes
        back to the host, whose resume would sit in what the probe times
        next)."""
        def pre():
            _set_pdeathsig()
            os.sched_setaffinity(0, {self.cpu})
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        return subprocess.Popen(["/bin/sh", "-c", SPIN], preexec_fn=pre, start_new_session=True,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def _stop_spinner(self) -> None:
        sp, self.spinner = self.spinner, None
        if sp is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(sp.pid, signal.SIGKILL)
            sp.wait()

    def has(self, probe_binary: str) -> bool:
        return (self.bin_dir / probe_binary).exists()

    def argv(self, probe_binary: str, args, external: bool = False, pinned: bool = True) -> list[str] | None:
        if external:
            exe = shutil.which(probe_binary)
            return [exe, *args] if exe else None
        return [str(self.bin_dir / probe_binary), *(("--cpu", str(self.cpu)) if pinned else ()), *args]

    def run(self, argv: list[str], timeout: float,
            progress: Callable[[str], None] | None = None, env: dict[str, str] | None = None,
            before_exec: Callable[[], None] | None = None, awake: bool = False,
            pinned: bool = True) -> tuple[int | None, str, str]:
        """(exit status or None when it timed out, stdout, stderr). With
        `progress`, the probe gets a pipe for its progress lines
        (OSM_PROGRESS_FD) and each line is handed to progress() as it comes.
        `env` adds to the environment; `before_exec` runs in the probe's
        process, pinned and scheduled, just before it executes the probe.
        `awake` keeps the probe's CPU from idling while it runs (_spinner)."""
        extra = env or {}
        env = dict(os.environ, LC_ALL="C")
        env.pop("OSM_PROGRESS_FD", None)
        env.pop("OSM_TRACE_MARKER", None)  # markers only in a traced run, which names its own
        env.update(extra)
        r = w = None
        if progress is not None:
            r, w = os.pipe()
            env["OSM_PROGRESS_FD"] = str(w)
        try:
            # a signal between the fork and the exec would leave the probe running with nobody holding it (it would
            # die only with the harness, PR_SET_PDEATHSIG, leaving its scratch files): kill() needs self.proc
            with shielded():
                woke = None
                if awake:
                    try:
                        self.spinner = self._spinner()
                    except (OSError, subprocess.SubprocessError) as e:  # said, in the probe's warnings
                        woke = f"osmeter: CPU {self.cpu} not kept awake for this process: {e}"
                self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                             errors="surrogateescape",
                                             preexec_fn=lambda: self._preexec(before_exec, pinned),
                                             start_new_session=True, env=env,
                                             pass_fds=(w,) if w is not None else ())
        except BaseException:  # the probe never started: nor may its busy loop outlive this call
            self._stop_spinner()
            raise
        finally:
            if w is not None:
                os.close(w)  # the probe holds the write end now
        reader = None
        if r is not None:
            reader = threading.Thread(target=_read_progress, args=(r, progress), daemon=True)
            reader.start()
        try:
            out, err = self.proc.communicate(timeout=timeout)
            rc = self.proc.returncode
        except subprocess.TimeoutExpired:
            self.kill()
            out, err = self.proc.communicate()
            rc = None
        finally:  # an interruption too: the busy loop never outlives its probe
            self._stop_spinner()
        if woke:
            err = f"{woke}\n{err}"
        if reader is not None:
            reader.join(timeout=1)
        self.proc = None  # (an interruption leaves it set, for kill)
        self.clean_scratch()
        return rc, out, err

    def clean_scratch(self) -> None:
        """Scratch files of the probes that are gone (a probe killed by its
        timeout or a signal could not remove them itself)."""
        from osmeter.host import cleanup

        for d in self.scratch_dirs:
            cleanup.scratch(d, [])

    def kill(self, grace: float = 3.0) -> None:
        """Stops the running probe's whole process group: SIGTERM first, so
        it can remove its scratch files, SIGKILL after `grace` seconds."""
        self._stop_spinner()
        proc = self.proc
        if proc is None:
            return
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, None)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        proc.wait()
        try:  # the rest of the group, if the leader went first
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
