"""Campaigns: several complete runs of the same request, the unit of a
before/after comparison (a shared machine drifts between runs by more than
the spread inside one, so only repeated runs show run-to-run variance).

    DIR/campaign.json     which runs, when, the options, the seed
    DIR/run-01/ ...       each a normal results directory
    DIR/stability.txt     per id: run-to-run spread, and the runs per side
                          a 5% change needs (stability.py)

Each run shuffles the probe order (seeded; the seed is recorded) and is
bracketed by the sentinels (sentinel.py).
"""
from __future__ import annotations

import contextlib
import datetime as dt
import os
import random
from pathlib import Path

from osmeter.analysis.stability import (STABILITY_HEAD, core_state_table, host_params_table, stability_rows,
                                        stability_table)
from osmeter.core.errors import Interrupted, RunError
from osmeter.host.isolate import isolated
from osmeter.results import store
from osmeter.results.store import load as load_results
from osmeter.results.store import load_side
from osmeter.results.writer import ResultsDir, write_json_atomic, write_text_atomic
from osmeter.running.execute import execute
from osmeter.running.runner import Done, no_halt, ram_devices, start_run, tracing
from osmeter.running.runopts import RunOptions, options_doc


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


class Campaign:
    """campaign.json of one campaign directory, rewritten after every run."""

    def __init__(self, out: Path, opts: RunOptions, seed: int, runs: int, **extra):
        self.dir = out
        self.doc = {"schema": store.CAMPAIGN_SCHEMA, "created_utc": _now(), "options": options_doc(opts), "seed": seed,
                    "runs_planned": runs, "runs": [], "complete": False, "interrupted": False, **extra}

    def save(self) -> None:
        write_json_atomic(self.dir / store.CAMPAIGN, self.doc)

    def add_run(self, index: int, seed: int, **extra) -> tuple[Path, dict]:
        name = store.run_name(index)
        entry = {"name": name, "seed": seed, "started_utc": _now(), "status": "running", **extra}
        self.doc["runs"].append(entry)
        self.save()
        return self.dir / name, entry

    def end_run(self, entry: dict, status: str) -> None:
        entry["status"] = status
        entry["ended_utc"] = _now()
        try:
            doc = load_results(self.dir / entry["name"])
            entry["drifted"] = bool((doc.get("sentinels") or {}).get("drifted"))
            entry["failures"] = len(doc.get("failures", []))
        except ValueError:
            pass
        self.save()


def run_seeds(seed: int, n: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.getrandbits(31) for _ in range(n)]


def new_seed() -> int:
    return int.from_bytes(os.urandom(4), "little") & 0x7FFFFFFF


def run_campaign(opts: RunOptions, runs: int, seed: int | None = None) -> Done:
    """`osmeter run --runs N`: N runs into one campaign directory."""
    if runs < 1:
        raise RunError("--runs: expected 1 or more")
    with start_run(opts, "-campaign", sentinels=True) as (p, out):
        return Done(_run_campaign(p, out, opts, runs, seed), out)


def _run_campaign(p, out: Path, opts: RunOptions, runs: int, seed: int | None) -> int:
    from osmeter.remote.osmnet import peer_session

    claim = ResultsDir(out, store.CAMPAIGN)
    seed = new_seed() if seed is None else seed
    camp = Campaign(out, opts, seed, runs)
    camp.save()
    status = 0
    print(f"osmeter: campaign of {runs} runs into {out} (seed {seed})")
    try:
        with peer_session(opts, p.bin_dir / "netpeer") as peer, tracing(p), no_halt(p), ram_devices(p), \
                (isolated(p.cpu, stale=p.isolation_stale) if opts.isolate else contextlib.nullcontext()) as iso:
            p.peer = peer
            if iso is not None:  # one isolation for every run; its restore lands in campaign.json
                p.extra_conditions["isolation"] = camp.doc["isolation"] = iso
            for k, s in enumerate(run_seeds(seed, runs), 1):
                run_dir, entry = camp.add_run(k, s)
                try:
                    rc = execute(p, run_dir, order_seed=s, sentinels=True, label=f"run {k}/{runs} ", quiet=True)
                except Interrupted:
                    camp.end_run(entry, "interrupted")
                    raise
                camp.end_run(entry, "complete" if rc == 0 else "failed")
                print(_run_line(run_dir, entry))
                status = status or rc
        camp.doc["complete"] = True
    except Interrupted:
        camp.doc["interrupted"] = True
        print(f"\nosmeter: interrupted; kept {sum(r['status'] == 'complete' for r in camp.doc['runs'])} finished "
              f"run(s) and the finished probes of the last")
        raise
    finally:
        if "kernel_paths" in p.extra_conditions:  # the tracing session's end: what it removed, tracefs as it was
            camp.doc["kernel_paths"] = p.extra_conditions["kernel_paths"]
        camp.save()
        claim.release()
        write_stability(out)
    return status


def _run_line(run_dir: Path, entry: dict) -> str:
    doc = load_results(run_dir)
    s = doc.get("sentinels") or {}
    drift = f"; DRIFTED inside the run ({s.get('why')})" if s.get("drifted") else ""
    fails = f"; {len(doc['failures'])} probe(s) failed" if doc["failures"] else ""
    return (f"osmeter: {entry['name']}: {len(doc['measurements'])} measurements in "
            f"{doc['conditions'].get('wall_s')} s{fails}{drift}")


def write_stability(out: Path, quiet: bool = False) -> None:
    """DIR/stability.txt of a campaign of two runs or more (printed too, unless quiet)."""
    try:
        runs = load_side([out])
    except ValueError:
        return
    if len(runs) < 2:
        return
    table = stability_table(stability_rows(runs))
    for extra in (core_state_table(runs), host_params_table(runs)):
        table += "\n\n" + extra if extra else ""
    write_text_atomic(out / store.STABILITY, STABILITY_HEAD + table + "\n")
    if not quiet:
        print(f"\nRun-to-run stability over {len(runs)} runs:\n{STABILITY_HEAD}{table}\n\nosmeter: campaign in {out}")
