"""`osmeter run`, in three steps.

plan     checks the whole request before anything runs: the selection, the
         binaries, the CPU, SCHED_FIFO, the directories; start_run adds the
         results directory and removes what killed runs left beside it (a
         run, a campaign and ab each begin with it).
execute  makes one results directory: each probe pinned, scheduled, with a
         timeout; results.json rewritten atomically after every probe, so an
         interrupted or killed run leaves a valid file.
finish   writes the summary and the CSV and prints them.

A campaign (campaign.py) is one plan and several executions. The options
a run takes are runopts.py's table.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import socket
import sys
from pathlib import Path
from typing import NamedTuple

from osmeter.host import isolate, machine, nohalt, ramdev
from osmeter.ktrace import tracefs
from osmeter.results import store
from osmeter.results.writer import refuse_taken, write_json_atomic
from osmeter.running import recover
from osmeter.running.execute import execute
from osmeter.running.plan import Plan, plan
from osmeter.running.runopts import RunOptions

__all__ = ["Done", "start_run", "run", "tracing", "no_halt", "ram_devices"]


class Done(NamedTuple):
    """What run(), run_campaign() and run_ab() return."""

    status: int  # 0, or 1 when a probe failed
    out: Path    # the results (campaign, ab) directory


def default_out(root: Path, suffix: str = "") -> Path:
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return root / "results" / f"{socket.gethostname()}-{stamp}{suffix}"


def clean_stale(out: Path, opts: RunOptions) -> None:
    """What killed runs left beside `out` and in the file-system probes'
    directory (cleanup.py), removed and named."""
    from osmeter.host import cleanup

    removed = cleanup.clean(out.parent, [d for d in (opts.fs_dir,) if d and not opts.on])  # (--on: the agent's)
    if os.geteuid() == 0:
        removed += ramdev.clean_stale()
    if removed:
        print(f"osmeter: removed what killed runs left: {', '.join(removed)}", file=sys.stderr)


@contextlib.contextmanager
def start_run(opts: RunOptions, suffix: str = "", sentinels: bool = False, watchdog: bool = False):
    """The start a run, a campaign and ab share: the plan (checked before
    anything runs), the results directory (--out, else
    results/<host>-<UTC time><suffix>), what killed runs left beside it
    removed, and a word when SCHED_FIFO is not to be had. Yields (plan,
    directory); the measured machine's session (a thin host's agent) is
    closed when the block ends. A watchdog (recover.guard) watches a run
    that changes the machine, and any whose caller asks for one (ab's
    --restore)."""
    p = plan(opts, sentinels)
    try:
        out = opts.out or default_out(p.root, suffix)
        refuse_taken(out)  # before --isolate or --kernel-paths change the machine
        clean_stale(out, opts)
        if not p.fifo:
            print(f"osmeter: running without SCHED_FIFO: {p.sched['why_not_fifo']}", file=sys.stderr)
        with recover.guard(bool(opts.kernel_paths or opts.isolate or watchdog)):
            yield p, out
    finally:
        p.host.close()


def run(opts: RunOptions) -> Done:
    """A single run: its start, the peer, execute."""
    from osmeter.remote.osmnet import peer_session

    with start_run(opts) as (p, out):
        try:
            with peer_session(opts, p.bin_dir / "netpeer") as peer, tracing(p), no_halt(p), ram_devices(p):
                p.peer = peer
                if not opts.isolate:
                    return Done(execute(p, out), out)
                with isolate.isolated(p.cpu, after=lambda doc: _record_isolation(out, doc),
                                      stale=p.isolation_stale) as doc:
                    p.extra_conditions["isolation"] = doc
                    return Done(execute(p, out), out)
        finally:
            if "kernel_paths" in p.extra_conditions:
                _record_kernel_paths(out, p.extra_conditions["kernel_paths"])


@contextlib.contextmanager
def ram_devices(p: Plan):
    """--disk-ram and --fs-scratch for the block: the RAM-backed devices
    made (ramdev), named in the run's conditions, and removed after it."""
    with contextlib.ExitStack() as stack:
        if p.opts.disk_ram:
            size = machine.parse_size(p.opts.disk_size or ("1G" if p.opts.preset == "full" else "256M"))
            dev, backing = stack.enter_context(ramdev.ram_device(size, "disk"))
            p.ram_disk = dev
            p.extra_conditions["disk_ram"] = {"device": dev, "backing": str(backing), "bytes": size,
                                              "what": "a loop device over a file in /dev/shm, made and removed "
                                                      "by osmeter: the kernel's block path, not a disk"}
        if p.opts.fs_scratch:
            doc = stack.enter_context(ramdev.scratch_fs())
            p.scratch_fs = doc["mount"]
            p.extra_conditions["fs_scratch"] = {**doc, "what": "fs.meta's files on a fresh ext4 on a RAM-backed "
                                                               "loop device, made and removed by osmeter"}
        try:
            yield
        finally:
            p.ram_disk = p.scratch_fs = None


@contextlib.contextmanager
def no_halt(p: Plan):
    """--no-halt for the block: the CPUs kept out of halt (nohalt.kept_awake),
    its document in the run's conditions; refused, with the reason there
    and on stderr, where the probes run on another host."""
    if not p.opts.no_halt:
        yield None
        return
    if p.opts.on:
        why = f"--on {p.opts.on}: the CPUs to keep awake are that host's, and its agent does not hold them"
        print(f"osmeter: --no-halt refused: {why}", file=sys.stderr)
        p.extra_conditions["no_halt"] = {"requested": True, "refused": why}
        yield None
        return
    with nohalt.kept_awake(p.host.affinity()) as doc:
        p.extra_conditions["no_halt"] = doc
        if doc["method"] != "pm_qos":
            print(f"osmeter: --no-halt: {doc.get('pm_qos_refused') or doc.get('pm_qos_not_honoured')}; a busy loop "
                  "at SCHED_IDLE keeps each CPU awake instead", file=sys.stderr)
        yield doc


@contextlib.contextmanager
def tracing(p: Plan):
    """--kernel-paths for the block: a tracefs session in p.tracing, or,
    where this user or machine cannot trace, the reason in the run's
    conditions and a line on stderr, and the run goes on without it. Before
    and after, a snapshot of tracefs's settings: the run records whether it
    left them exactly as they were."""
    if not p.opts.kernel_paths:
        yield None
        return
    why = (f"--on {p.opts.on}: the traces are of this machine's kernel, not the host's" if p.opts.on
           else tracefs.refusal())
    if why:
        print(f"osmeter: --kernel-paths refused: {why}; running everything else", file=sys.stderr)
        p.extra_conditions["kernel_paths"] = {"requested": True, "refused": why}
        yield None
        return
    before = tracefs.snapshot()
    doc = p.extra_conditions["kernel_paths"] = {"requested": True, "tracefs_before": before}
    try:
        with tracefs.session() as s:
            doc.update(s.doc)
            p.tracing = s
            yield s
    finally:
        p.tracing = None
        doc["tracefs_unchanged"] = tracefs.snapshot() == before


def _record_kernel_paths(out: Path, doc: dict) -> None:
    """The tracing session's end (what it removed, whether tracefs is as it
    was) into the run's results.json."""
    path = out / store.RESULTS
    try:
        res = json.loads(path.read_text())
        res["conditions"].setdefault("kernel_paths", {}).update(doc)
        write_json_atomic(path, res)
    except FileNotFoundError:
        pass
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"osmeter: error: cannot add the tracing session's end to {path}: {e}", file=sys.stderr)
    if doc.get("tracefs_unchanged") is False:
        print("osmeter: warning: tracefs's settings differ from before the run (see conditions.kernel_paths)",
              file=sys.stderr)


def _record_isolation(out: Path, doc: dict) -> None:
    """The isolation, now with what its restore did, into the run's
    results.json: only into this run's own (a refused --out is another's)."""
    path = out / store.RESULTS
    try:
        res = json.loads(path.read_text())
        mine = res["conditions"]["isolation"]
        if (mine["pid"], mine["started_utc"]) != (doc["pid"], doc["started_utc"]):
            return
        res["conditions"]["isolation"] = doc
        write_json_atomic(path, res)
    except (OSError, ValueError, KeyError, TypeError) as e:
        if isinstance(e, OSError) and not isinstance(e, FileNotFoundError):
            print(f"osmeter: error: cannot add the isolation's restore to {path}: {e.strerror or e}",
                  file=sys.stderr)
