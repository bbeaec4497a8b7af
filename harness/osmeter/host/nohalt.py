"""--no-halt: the CPUs kept out of halt for a run, a part of the host's
share in the figures taken out on request.

An idle vCPU halts and goes back to the host; what a probe times next (a
wake-up on that CPU, a round trip whose answer lands there) then holds the
host's resume of the vCPU, whose cost varies with what else the host runs.
Two ways to keep a CPU from halting, tried in this order:

pm_qos    a CPU latency request of 0 us (/dev/cpu_dma_latency, held open for
          the run): a cpuidle governor that honours it (haltpoll, menu, teo,
          ladder) then picks its polling state only. The kernel drops the
          request when the file is closed, so it is undone whatever ends
          osmeter, a SIGKILL included.
polling   where no cpuidle driver honours it (none loaded: the kernel's own
          halt), a busy loop at SCHED_IDLE pinned to each CPU: it runs only
          when nothing else wants the CPU, a wake-up preempts it at once, and
          it dies with osmeter (PR_SET_PDEATHSIG). It costs the host a CPU
          each, which is why it comes second.

Whether the CPUs stayed out of halt is checked, not assumed: the halts
(entries of cpuidle states other than POLL) counted over a short idle
interval with the request held. conditions.no_halt records the method, the
driver and governor, that count, and what undoes it.
"""
from __future__ import annotations

import contextlib
import os
import signal
import struct
import subprocess
import time
from pathlib import Path

from osmeter.host.launch import SPIN, _set_pdeathsig

QOS = Path("/dev/cpu_dma_latency")
SYSFS = Path("/sys/devices/system/cpu")
CHECK_S = 0.2      # the idle interval the halts are counted over
HALTS_OK = 2       # at most this many halts on all the CPUs in it: kept out of halt


def halts(cpus, sysfs: Path = SYSFS) -> int | None:
    """Entries of the CPUs' cpuidle states other than polling so far (their
    usage counters); None where the CPUs have no cpuidle states."""
    total, seen = 0, False
    for cpu in cpus:
        for state in sorted((sysfs / f"cpu{cpu}" / "cpuidle").glob("state*")):
            try:
                if (state / "name").read_text().strip() == "POLL":
                    continue
                total += int((state / "usage").read_text())
                seen = True
            except (OSError, ValueError):
                continue
    return total if seen else None


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _halts_over(cpus, sysfs: Path, seconds: float) -> int | None:
    before = halts(cpus, sysfs)
    time.sleep(seconds)
    after = halts(cpus, sysfs)
    return after - before if before is not None and after is not None else None


def _spinners(cpus) -> list[subprocess.Popen]:
    out = []
    for cpu in cpus:
        def pre(cpu=cpu):
            _set_pdeathsig()
            os.sched_setaffinity(0, {cpu})
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        out.append(subprocess.Popen(["/bin/sh", "-c", SPIN], preexec_fn=pre, start_new_session=True,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    return out


def _stop(spinners: list[subprocess.Popen]) -> None:
    for sp in spinners:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(sp.pid, signal.SIGKILL)
        sp.wait()


@contextlib.contextmanager
def kept_awake(cpus, qos: Path = QOS, sysfs: Path = SYSFS, check_s: float = CHECK_S):
    """The CPUs kept out of halt for the block (pm_qos, else polling loops);
    yields the conditions document."""
    cpus = sorted(cpus)
    doc: dict = {"requested": True, "cpus": cpus, "cpuidle_driver": _read(sysfs / "cpuidle" / "current_driver"),
                 "cpuidle_governor": _read(sysfs / "cpuidle" / "current_governor"), "method": None}
    fd = None
    spinners: list[subprocess.Popen] = []
    try:
        idle = _halts_over(cpus, sysfs, check_s)
        doc["halts_before"] = idle
        try:
            fd = os.open(qos, os.O_WRONLY | os.O_CLOEXEC)
            os.write(fd, struct.pack("i", 0))
        except OSError as e:
            doc["pm_qos_refused"] = f"{qos}: {e.strerror}"
            if fd is not None:
                os.close(fd)
            fd = None
        if fd is not None:
            held = _halts_over(cpus, sysfs, check_s)
            if held is not None and held <= HALTS_OK:
                doc.update(method="pm_qos", halts_held=held,
                           undone_by=f"closing {qos}: the kernel drops the request when its holder exits, "
                                     "killed or not")
            else:
                doc["pm_qos_not_honoured"] = (f"{held} halts in {check_s:g} s with a 0 us request held"
                                              if held is not None else "no cpuidle states to check it by")
                os.close(fd)
                fd = None
        if doc["method"] is None:
            spinners = _spinners(cpus)
            held = _halts_over(cpus, sysfs, check_s)
            doc.update(method="polling", halts_held=held,
                       undone_by="killing the SCHED_IDLE loops (they die with osmeter: PR_SET_PDEATHSIG)")
        yield doc
    finally:
        if fd is not None:
            os.close(fd)
        _stop(spinners)
