"""The plan of a run: the whole request checked before anything runs (the
selection, the binaries, built where missing, the CPU, SCHED_FIFO, the
directories), and each probe's arguments in this run (its preset's, with
the run's placeholders filled in and its samples shared among its
processes)."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from osmeter.core.errors import RunError
from osmeter.core.tree import repo_root
from osmeter.host import isolate, ramdev
from osmeter.host.launch import RT_PRIORITY
from osmeter.probes import registry
from osmeter.running import sentinel
from osmeter.running.runopts import RunOptions


@dataclass
class Plan:
    """A checked request: everything a run needs that does not change
    between the runs of a campaign."""

    opts: RunOptions
    root: Path
    bin_dir: Path
    selection: list[tuple[registry.Probe, list[str]]]
    derived: list[registry.Derived]
    cpu: int
    sched: dict
    peer: str | None = None           # HOST:PORT, once the peer session has started
    extra_conditions: dict = field(default_factory=dict)
    tracing: object | None = None     # the tracefs session of --kernel-paths (tracefs.Session), once open
    host: object = None               # the machine measured: onhost.Here, or onhost.OnHost (--on)
    isolation_stale: dict | None = None  # what a killed isolated run left, undone before planning
    ram_disk: str | None = None       # --disk-ram: the loop device the disk probes take, once made
    scratch_fs: str | None = None     # --fs-scratch: where fs.meta makes its files, once mounted

    @property
    def fifo(self) -> bool:
        return self.sched["policy"] == "SCHED_FIFO"


def ensure_built(host, binaries: list[str]) -> None:
    """The probes the run needs, built (make) on the machine measured when missing."""
    missing = host.missing(binaries)
    if not missing:
        return
    print(f"osmeter: building probes ({', '.join(missing)} missing) ...", file=sys.stderr)
    rc, err = host.make()
    if rc != 0:
        raise RunError(f"'make' failed, so the probes cannot run:\n{err.strip()[-3000:]}")
    still = host.missing(binaries)
    if still:
        raise RunError(f"after 'make', still missing in {host.bin_dir}: {', '.join(still)}")


def choose_cpu(requested: int | None, affinity: set[int] | None = None) -> int:
    allowed = sorted(os.sched_getaffinity(0) if affinity is None else affinity)
    if requested is None:
        return allowed[-1]  # the last online CPU: usually the least busy with interrupts
    if requested not in allowed:
        raise RunError(
            f"--cpu {requested}: not an online CPU this process may use (allowed: {', '.join(map(str, allowed))})"
        )
    return requested


# ------------------------------------------------------------------ plan

def plan(opts: RunOptions, sentinels: bool = False) -> Plan:
    """Checks the request; raises RunError (nothing has run) when it cannot be served."""
    from osmeter.remote.onhost import Here, OnHost

    root = repo_root()
    if opts.on:
        if opts.remote or opts.isolate:
            raise RunError("--on takes no --remote or --isolate (give --peer HOST:PORT of a running netpeer)")
        if not opts.on_tree:
            raise RunError("--on USER@HOST needs --on-tree DIR: the osmeter tree built there")
        host = OnHost(opts.on, opts.on_tree)
    else:
        host = Here(root, opts.bin_dir)
    try:
        return _plan(opts, sentinels, root, host)
    except BaseException:
        host.close()
        raise


def _plan(opts: RunOptions, sentinels: bool, root: Path, host) -> Plan:
    bin_dir = host.bin_dir
    probes = opts.probes if opts.probes is not None else registry.PROBES
    derived_all = opts.derived if opts.derived is not None else registry.DERIVED
    if opts.peer and opts.remote:
        raise RunError("give --peer or --remote, not both")
    if opts.remote_cpu is not None and not opts.remote:
        raise RunError("--remote-cpu pins the netpeer that --remote starts: give --remote USER@HOST too")
    # a killed isolated run's changes undone first: the CPU is chosen from this process's own mask
    stale = isolate.undo_killed_run() if opts.isolate else None
    try:
        check_app_trace(opts)
        have = frozenset(k for k, v in (("peer", opts.peer or opts.remote), ("fs_remote", opts.fs_remote),
                                        ("app_trace", opts.app_trace)) if v)
        selection = registry.select(opts.patterns, opts.preset, have=have, probes=probes, derived=derived_all)
    except registry.SelectionError as e:
        raise RunError(str(e)) from None
    if not selection:
        raise RunError(f"preset '{opts.preset}' selects no probe")
    if opts.disk_ram and opts.disk_target:
        raise RunError("give --disk-target or --disk-ram, not both")
    for flag, on in (("--disk-ram", opts.disk_ram), ("--fs-scratch", opts.fs_scratch)):
        why = (f"--on {opts.on}: the device would be this machine's, not the host's" if opts.on
               else ramdev.refusal()) if on else None
        if why:
            raise RunError(f"{flag}: {why}")
    for flag, d in (("--fs-dir", opts.fs_dir), ("--fs-remote", opts.fs_remote)):
        if d and not host.is_dir(str(d)):
            raise RunError(f"{flag} {d}: not a directory" + (f" on {opts.on}" if opts.on else ""))
    needed = [p.binary for p, _ in selection if not p.external]
    needed += sentinel.binaries() if sentinels else []
    needed += ["netpeer"] if opts.remote else []
    ensure_built(host, needed)
    cpu = choose_cpu(opts.cpu, host.affinity())
    if opts.rt:
        fifo, why_not = host.fifo_permission()
    else:
        fifo, why_not = False, "disabled with --no-rt"
    sched = {"policy": "SCHED_FIFO", "priority": RT_PRIORITY} if fifo else {"policy": "SCHED_OTHER",
                                                                          "why_not_fifo": why_not}
    return Plan(opts, root, bin_dir, selection, registry.select_derived(opts.patterns, derived_all), cpu, sched,
                host=host, isolation_stale=stale)


APP_DIR = "app-replay"  # the --app-trace replay's directory, in the results (or --app-dir), removed after


def _trace_head(path: Path, chunk: int = 1 << 20) -> tuple[bytes, bool]:
    """A trace's first line (at most 256 bytes read for it) and whether it records MPI_Init: a regular
    file only (a device or FIFO could block or never end), read a chunk at a time."""
    from osmeter.results.reader import open_regular
    with open_regular(path) as f:
        first = f.readline(256)
        if not first.startswith(b"# iotrace "):
            return first, False  # refused by its first line: nothing more read
        tail = b""
        while block := f.read(chunk):
            text = tail + block
            if b",MPI_Init," in text or b",MPI_Init_thread," in text:
                return first, True
            tail = text[-32:]
    return first, False


def check_app_trace(opts) -> None:
    """--app-trace's file readable and an iotrace trace; a trace recorded under MPI given its launcher, a
    POSIX one none; the other app options only with it. Checked before anything runs."""
    if not opts.app_trace:
        for flag, v in (("--app-launcher", opts.app_launcher), ("--app-dir", opts.app_dir),
                        ("--app-timeout", opts.app_timeout)):
            if v:
                raise RunError(f"{flag} goes with --app-trace TRACE")
        return
    if opts.on:
        raise RunError("--app-trace replays on this machine: it does not go with --on")
    path = Path(opts.app_trace)
    try:
        first, mpi = _trace_head(path)
    except OSError as e:
        raise RunError(f"--app-trace {path}: {e.strerror}") from None
    except ValueError as e:  # the path is in the message
        raise RunError(f"--app-trace {e}") from None
    if not first.startswith(b"# iotrace "):
        raise RunError(f"--app-trace {path}: not a trace iotrace recorded (its first line is not '# iotrace N')")
    if mpi and not opts.app_launcher:
        raise RunError(f"--app-trace {path} was recorded under MPI: give --app-launcher \"MPIRUN ARGS\" with as "
                       "many ranks as it recorded")
    if not mpi and opts.app_launcher:
        raise RunError(f"--app-trace {path} was not recorded under MPI: it replays without --app-launcher")
    if opts.app_dir and not Path(opts.app_dir).is_dir():
        raise RunError(f"--app-dir {opts.app_dir}: not a directory")


# --------------------------------------------------------------- execute

def probe_args(preset: tuple[str, ...], subst: dict) -> list[str]:
    out: list[str] = []
    for a in preset:
        v = subst.get(a, a)
        out += v if isinstance(v, list) else [v]
    return out


def placeholders(p: Plan, out: Path) -> dict[str, str | list[str]]:
    """What the placeholders in the probes' arguments stand for in this run;
    a list stands for several arguments (or none)."""
    o = p.opts
    scratch = p.host.scratch(out)  # the results directory, or on a thin host the agent's own directory there
    return {"{disk_target}": p.ram_disk or str(o.disk_target or Path(scratch) / "disk-target.dat"),
            # osmeter's own RAM-backed device holds no one's data
            "{disk_flags}": ["--allow-destroy-data"] if o.allow_destroy_data or p.ram_disk else [],
            "{disk_size}": o.disk_size or ("1G" if o.preset == "full" else "256M"),
            "{peer}": p.peer or "",
            "{peer_host}": (p.peer.rsplit(":", 1)[0].strip("[]") if p.peer else "127.0.0.1"),
            "{ping_interval}": "0.01" if p.host.uid() == 0 else "0.2",
            "{fs_dir}": str(o.fs_dir or scratch),
            "{meta_dir}": p.scratch_fs or str(o.fs_dir or scratch),
            "{fs_remote}": str(o.fs_remote or ""),
            "{app_trace}": str(Path(o.app_trace).resolve()) if o.app_trace else "",
            "{app_dir}": str(Path(out).resolve() / APP_DIR),  # with --app-dir: a private one there, made at the start
            "{app_launcher}": ["--launcher", o.app_launcher] if o.app_launcher else [],
            "{app_timeout}": ["--timeout", str(o.app_timeout)] if o.app_timeout else []}


def share_samples(args: list[str], processes: int) -> list[str]:
    """A probe's --samples N shared among its processes: ceil(N / processes) each."""
    if processes <= 1 or "--samples" not in args:
        return args
    i = args.index("--samples")
    try:
        n = int(args[i + 1])
    except (IndexError, ValueError):
        return args
    return [*args[:i + 1], str(max(1, -(-n // processes))), *args[i + 2:]]
