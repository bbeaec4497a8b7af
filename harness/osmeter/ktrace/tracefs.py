"""tracefs for `osmeter run --kernel-paths`: the kernel's event tracer,
used without changing what others see in it.

Every setting osmeter needs lives in trace instances of its own
(instances/osmeter-PID-*): their own events, filters, buffer size, clock,
tracing_on and set_event_pid. The top level of tracefs is never written,
so whatever someone else traces there goes on untouched. When tracefs is
not mounted, osmeter mounts it at /sys/kernel/tracing for the run and
unmounts it after.

What osmeter made (the mount, the instances) is written to a private state
file before it is made; the session removes it all at its end, on an
error, and on SIGINT, SIGTERM or SIGHUP (shielded, as isolate.py's
restore). A run killed by SIGKILL leaves the state file behind: the run's
watchdog (running/recover.py) removes what it names at once, or, when it
died too, the next session or any command that calls
recover.undo_dead_runs, and says so. One session at a time: a lock held
for the run (flock dies with its holder).
"""
from __future__ import annotations

import contextlib
import datetime as dt
import errno
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

from osmeter.core.errors import Interrupted, RunError, shielded
from osmeter.host import cleanup

DEFAULT_MOUNT = Path("/sys/kernel/tracing")
CLOCK = "x86-tsc"  # the probes' stamps are the TSC (RDTSC/RDTSCP): the trace reads the same counter
TASK_BUFFER_KB = 32768   # per CPU: the probe's own events
CPU_BUFFER_KB = 65536    # per CPU: every task's switches, interrupts, softirqs and block requests

# The events a traced run takes, group/name. The task instance follows the
# probe's processes (set_event_pid, with event-fork for their children) on
# any CPU: what they run, their interrupts, their wake-ups. The cpu
# instance takes every CPU's context switches (the pid filter loses a
# switch from the idle task to a probe thread), interrupts and softirqs (to
# name what woke a probe thread) and the block requests.
SYSCALL_EVENTS = ("raw_syscalls/sys_enter", "raw_syscalls/sys_exit")
SCHED_EVENTS = ("sched/sched_switch", "sched/sched_wakeup", "sched/sched_wakeup_new")
IRQ_EVENTS = ("irq/irq_handler_entry", "irq/irq_handler_exit", "irq/softirq_entry", "irq/softirq_exit")
VECTORS = ("local_timer", "reschedule", "call_function", "call_function_single", "irq_work")
VECTOR_EVENTS = tuple(f"irq_vectors/{v}_{e}" for v in VECTORS for e in ("entry", "exit"))
FAULT_EVENTS = ("exceptions/page_fault_user", "exceptions/page_fault_kernel")
BLOCK_EVENTS = ("block/block_rq_issue", "block/block_rq_complete")
TASK_EVENTS = SYSCALL_EVENTS + SCHED_EVENTS + IRQ_EVENTS + VECTOR_EVENTS + FAULT_EVENTS
CPU_EVENTS = ("sched/sched_switch",) + IRQ_EVENTS + VECTOR_EVENTS
# without these a breakdown means nothing; the others are named when missing
REQUIRED = SYSCALL_EVENTS + ("sched/sched_switch", "sched/sched_wakeup")


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def find_mount(mountinfo: str = "/proc/self/mountinfo") -> Path | None:
    """Where tracefs is mounted (the first such mount), or None."""
    try:
        lines = Path(mountinfo).read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        left, _, right = line.partition(" - ")
        if right.split(" ", 1)[0] == "tracefs":
            return Path(left.split()[4].replace("\\040", " "))
    return None


def refusal() -> str | None:
    """Why this process cannot trace here (None: it can, perhaps after
    mounting tracefs as root). The words name what is missing."""
    if platform.machine() not in ("x86_64", "i686", "i386"):
        return (f"kernel paths need the trace clock x86-tsc, the counter the probes stamp with; this machine is "
                f"{platform.machine()}")
    mount = find_mount()
    if mount is None:
        if os.geteuid() != 0:
            return (f"tracefs is not mounted, and mounting it needs root (uid {os.geteuid()}): run as root, or have "
                    f"root mount it (mount -t tracefs nodev {DEFAULT_MOUNT}) with access for this user")
        return None
    inst = mount / "instances"
    if not os.access(inst, os.W_OK | os.X_OK):
        return (f"tracing needs root or write access to {inst} (uid {os.geteuid()} has neither): run as root, "
                "or give this user tracefs access")
    clocks = _read(mount / "trace_clock") or ""
    if CLOCK not in clocks.replace("[", " ").replace("]", " ").split():
        return f"the trace clock {CLOCK} is not offered here ({mount}/trace_clock: {clocks})"
    return None


def snapshot(mount: Path | None = None) -> dict:
    """Every setting of tracefs's top level a run could change, for telling
    whether it is exactly as it was: the mount, the instances, the tracer,
    tracing_on, the clock, the buffer size, the enabled events, the pid
    filters, the options, and every event's filter and trigger that is set."""
    mount = mount or find_mount()
    if mount is None:
        return {"mounted": False}
    out: dict = {"mounted": True, "mount": str(mount)}
    for f in ("tracing_on", "trace_clock", "buffer_size_kb", "current_tracer", "tracing_cpumask", "set_event",
              "set_event_pid", "set_event_notrace_pid", "set_ftrace_pid", "trace_options", "tracing_thresh",
              "buffer_percent"):
        out[f] = _read(mount / f)
    with contextlib.suppress(OSError):
        out["instances"] = sorted(p.name for p in (mount / "instances").iterdir())
    set_ = {}
    for ev in sorted((mount / "events").glob("*/*")):
        for f in ("filter", "trigger"):
            v = _read(ev / f)
            if v and v != "none" and not v.startswith("#"):
                set_[f"{ev.parent.name}/{ev.name}/{f}"] = v
    out["filters_and_triggers"] = set_
    return out


def state_dir() -> Path:
    """Where the state file and lock live: /run/osmeter for root, the
    user's runtime directory otherwise."""
    if os.geteuid() == 0:
        return Path("/run/osmeter")
    base = os.environ.get("XDG_RUNTIME_DIR")
    return Path(base) / "osmeter" if base else Path(f"/tmp/osmeter-{os.geteuid()}")


class Instance:
    """One trace instance osmeter made: its path and what it was set to."""

    def __init__(self, path: Path):
        self.path = path

    @property
    def marker(self) -> Path:
        return self.path / "trace_marker"

    def write(self, rel: str, value: str) -> None:
        with open(self.path / rel, "w") as f:
            f.write(value)

    def enable(self, events: tuple[str, ...], filters: dict[str, str] | None = None) -> list[str]:
        """Sets each event's filter and enables it; returns the events this
        kernel does not have."""
        missing = []
        for ev in events:
            d = self.path / "events" / ev
            if not d.is_dir():
                missing.append(ev)
                continue
            if filters and ev in filters:
                (d / "filter").write_text(filters[ev])
            (d / "enable").write_text("1")
        return missing

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.write("tracing_on", "0")

    def stats(self) -> dict[int, dict[str, int]]:
        """Per CPU: entries, overrun and dropped events (per_cpu/cpuN/stats)."""
        out = {}
        for d in sorted(self.path.glob("per_cpu/cpu*")):
            text = _read(d / "stats") or ""
            vals = {}
            for line in text.splitlines():
                k, _, v = line.partition(":")
                with contextlib.suppress(ValueError):
                    vals[k.strip().replace(" ", "_")] = int(float(v.strip()))
            out[int(d.name[3:])] = vals
        return out

    def trace_text(self) -> str:
        return (self.path / "trace").read_text(errors="replace")


class Session:
    """The tracefs of one run (a campaign: of all its runs): open() once,
    instances per traced probe, close() once. `say` prints."""

    def __init__(self, say=print):
        self.say = say
        self.dir = state_dir()
        self.state = self.dir / "kpaths.json"
        self.mount: Path | None = None
        self.mounted_by_us = False
        self.instances: list[str] = []
        self.started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        self.doc: dict = {"state_file": str(self.state)}
        self._lock: int | None = None
        self._closed = False
        self._seq = 0

    # ------------------------------------------------------------ open
    def open(self) -> dict:
        """Takes the lock, removes what a killed run left, mounts tracefs
        if needed. Raises RunError when tracing cannot be set up."""
        with shielded():
            self._take_lock()
            try:
                self._undo_stale()
                self.mount = find_mount()
                if self.mount is None:
                    self.mount = DEFAULT_MOUNT
                    self.mounted_by_us = True
                    self._save()
                    r = subprocess.run(["mount", "-t", "tracefs", "nodev", str(self.mount)], capture_output=True,
                                       text=True)
                    if r.returncode != 0:
                        self.mounted_by_us = False
                        self._save()
                        raise RunError(f"cannot mount tracefs at {self.mount}: {r.stderr.strip() or r.returncode}")
                    self.doc["mounted"] = str(self.mount)
                self.doc["mount"] = str(self.mount)
                why = refusal()
                if why:
                    raise RunError(why)
                orphans = sweep_orphans(self.mount)
                if orphans:
                    self.doc["orphans_removed"] = orphans
                    self.say(f"osmeter: --kernel-paths: removed trace instances of osmeter runs that are gone and "
                             f"left no state file: {', '.join(orphans)}", file=sys.stderr)
            except BaseException:
                self._close()
                raise
        return self.doc

    def new_instance(self, tag: str) -> Instance:
        """An instance of osmeter's own, written to the state file before it is made."""
        self._seq += 1
        name = f"osmeter-{os.getpid()}-{self._seq}-{tag}"
        with shielded():
            self.instances.append(name)
            self._save()
            path = self.mount / "instances" / name
            path.mkdir()
        inst = Instance(path)
        inst.write("trace_clock", CLOCK)
        return inst

    def remove(self, inst: Instance) -> None:
        """Removes an instance (and every setting in it); one the kernel
        will not remove yet stays in the state file, for close() to retry."""
        with shielded():
            try:
                _rmdir_instance(inst.path)
            except OSError:
                return
            if inst.path.name in self.instances:
                self.instances.remove(inst.path.name)
            self._save()

    # ----------------------------------------------------------- close
    def close(self) -> None:
        """Removes what this session made, once; signals wait until it is done."""
        if self._closed or self._lock is None:
            return
        with shielded():
            self._close()

    def _close(self) -> None:
        self._closed = True
        try:
            left = []
            for name in list(self.instances):
                try:
                    _rmdir_instance(self.mount / "instances" / name)
                    self.instances.remove(name)
                except OSError as e:
                    left.append(f"instance {name}: {e.strerror}")
            if self.mounted_by_us and self.mount is not None:
                why = _unmount(self.mount)
                if why:
                    left.append(why)
                else:
                    self.mounted_by_us = False
            if left:
                self.doc["left"] = left
                self.say(f"osmeter: --kernel-paths: could not remove: {'; '.join(left)} (named in {self.state})",
                         file=sys.stderr)
                self._save()
            else:
                self.state.unlink(missing_ok=True)
        finally:
            cleanup.release_lock(self.dir, "kpaths.lock", self._lock)
            self._lock = None

    # ------------------------------------------------- state and lock
    def _take_lock(self) -> None:
        self._lock = cleanup.private_lock(self.dir, "kpaths.lock", "another `osmeter run --kernel-paths` (pid {pid}) "
                                          "is tracing now: one at a time")

    def _undo_stale(self) -> None:
        """A state file nobody's lock covers: a run killed before it cleaned up."""
        try:
            fd = os.open(self.state, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return
        except OSError as e:
            raise RunError(f"{self.state}: cannot open it ({e.strerror}); look at it and remove it") from None
        try:
            with os.fdopen(fd) as f:
                old = json.load(f)
            names, mounted = list(old["instances"]), old.get("mounted")
        except (ValueError, KeyError, TypeError, OSError):
            raise RunError(f"{self.state} is left by a traced run that did not finish, and it is unreadable: "
                           "remove its instances (tracefs instances/osmeter-*) and unmount tracefs if it mounted "
                           "it, then remove the file") from None
        done, left = [], []
        mount = find_mount()
        for name in names:
            if mount is None or "/" in name or not name.startswith("osmeter-"):
                continue
            path = mount / "instances" / name
            if path.exists():
                try:
                    _rmdir_instance(path)
                    done.append(f"instance {name} removed")
                except OSError as e:
                    left.append(f"instance {name}: {e.strerror}")
        if mounted and mount is not None and str(mount) == mounted:
            why = _unmount(mount)
            (left if why else done).append(why or f"tracefs unmounted from {mounted}")
        self.state.unlink()
        self.doc["stale"] = {"pid": old.get("pid"), "started_utc": old.get("started_utc"), "done": done,
                             "left": left}
        self.say(f"osmeter: --kernel-paths: a previous traced run (pid {old.get('pid')}, started "
                 f"{old.get('started_utc')}) ended without cleaning up (killed?); from {self.state}: "
                 + ("; ".join(done) or "nothing was left") + "".join(f"; could not: {x}" for x in left),
                 file=sys.stderr)

    def _save(self) -> None:
        tmp = self.state.with_name(f"{self.state.name}.{os.getpid()}.tmp")
        tmp.unlink(missing_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"pid": os.getpid(), "started_utc": self.started, "instances": self.instances,
                       "mounted": str(self.mount) if self.mounted_by_us else None}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.state)


def undo_killed_run(say=print) -> dict | None:
    """What a killed --kernel-paths run left (its state file, nobody's lock
    on it), undone and said; None when nothing was left or a traced run is
    live (its lock held: it is not ours to touch)."""
    s = Session(say)
    if not s.state.exists():
        return None
    try:
        s._take_lock()
    except RunError:
        return None
    try:
        s._undo_stale()
        mount = find_mount()
        orphans = sweep_orphans(mount) if mount is not None and (mount / "instances").is_dir() else []
        if orphans:
            say(f"osmeter: removed trace instances of osmeter runs that are gone: {', '.join(orphans)}",
                file=sys.stderr)
    finally:
        cleanup.release_lock(s.dir, "kpaths.lock", s._lock)
        s._lock = None
    return s.doc.get("stale")


def sweep_orphans(mount: Path) -> list[str]:
    """Removes the instances named osmeter-PID-N-TAG whose process is gone:
    a killed run's, when its state file went too (removed by hand, or
    overwritten by a session that did not undo it). Run with the session's
    lock held, so no other traced run of osmeter's is using one."""
    removed = []
    for p in sorted((mount / "instances").glob("osmeter-*")):
        mo = re.fullmatch(r"osmeter-(\d+)-\d+-\w+", p.name)
        if not mo or int(mo.group(1)) == os.getpid() or cleanup.alive(int(mo.group(1))):
            continue
        try:
            _rmdir_instance(p)
            removed.append(p.name)
        except OSError:
            pass
    return removed


def _rmdir_instance(path: Path) -> None:
    """rmdir of an instance: the kernel refuses (EBUSY) while a file in it is
    open, as a dying probe's trace_marker may be for a moment."""
    for k in range(50):
        try:
            with contextlib.suppress(OSError):
                (path / "tracing_on").write_text("0")
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as e:
            if e.errno != errno.EBUSY or k == 49:
                raise
            time.sleep(0.05)


def _unmount(mount: Path) -> str | None:
    """Unmounts tracefs osmeter mounted; the reason when it cannot."""
    if find_mount() != mount:
        return None
    r = subprocess.run(["umount", str(mount)], capture_output=True, text=True)
    return None if r.returncode == 0 else f"tracefs at {mount}: umount: {r.stderr.strip() or r.returncode}"


@contextlib.contextmanager
def session(say=print):
    """A tracefs session for the block; closed once at its end, also on an
    error or a signal."""
    s = Session(say)
    s.open()
    first: Interrupted | None = None
    try:
        yield s
    except Interrupted as e:
        first = e
        raise
    finally:
        try:
            s.close()
        except Interrupted:
            if first is None:
                raise
