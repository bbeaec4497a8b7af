"""Campaigns: several complete runs of the same request, the unit of a
before/after comparison (a shared machine drifts between runs by more than
the spread inside one, so only repeated runs show run-to-run variance).

    DIR/campaign.json     which runs, when, the options, the seed
    DIR/run-01/ ...       each a normal results directory
    DIR/stability.txt     per id: run-to-run spread, and the runs per side
                          a 5% change needs

Each run shuffles the probe order (seeded; the seed is recorded) and is
bracketed by the sentinels (sentinel.py).
"""
from __future__ import annotations

import contextlib
import datetime as dt
import math
import os
import random
from pathlib import Path

import numpy as np

from . import registry, store
from .errors import Interrupted, RunError
from .isolate import isolated
from .results import run_figure, write_json_atomic
from .store import Run, load_side
from .store import load as load_results
from .runner import Done, ResultsDir, execute, start_run, tracing
from .runopts import RunOptions, options_doc
from .compare import DESIGNS, RUN_SD_FLOOR
from .interference import measurement_clock
from .stats import covariate_fit, runs_to_decide, smallest_change_at, variance_split

DETECT = 0.05  # the change the stability table sizes designs for
STABILITY_HEAD = (
    "Each CV is a standard deviation of logs. A run's figure is the median of its processes' medians.\n"
    "within process: the spread of samples inside one process; between processes: what processes of one run\n"
    "add beyond their samples; between runs: what runs add beyond their processes. dominant: the part with\n"
    "the largest share of the variance of one run's figure. at equal clock: the run-to-run CV left once the\n"
    "runs' core clock (their probe processes' chain of adds) is regressed out, and the share of the variance\n"
    "the clock explains; compare tests the runs so. runs/side: the fewest runs a side whose smallest detectable\n"
    "change is at most that change; detectable: the smallest change N runs a side decide 80% of the time at\n"
    "alpha 0.05 (seen by compare's t test on run figures, at equal clock where known, or shown '=' if the\n"
    "figure did not move), from this spread.\n\n")


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
    from .osmnet import peer_session

    claim = ResultsDir(out, store.CAMPAIGN)
    seed = new_seed() if seed is None else seed
    camp = Campaign(out, opts, seed, runs)
    camp.save()
    status = 0
    print(f"osmeter: campaign of {runs} runs into {out} (seed {seed})")
    try:
        with peer_session(opts, p.bin_dir / "netpeer") as peer, tracing(p), \
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
        _write_stability(out)
    return status


def _run_line(run_dir: Path, entry: dict) -> str:
    doc = load_results(run_dir)
    s = doc.get("sentinels") or {}
    drift = f"; DRIFTED inside the run ({s.get('why')})" if s.get("drifted") else ""
    fails = f"; {len(doc['failures'])} probe(s) failed" if doc["failures"] else ""
    return (f"osmeter: {entry['name']}: {len(doc['measurements'])} measurements in "
            f"{doc['conditions'].get('wall_s')} s{fails}{drift}")


# ------------------------------------------------------------ stability

def stability_rows(runs: list[Run]) -> list[dict]:
    """Per id over the runs of one campaign: the median of the run figures,
    the run-to-run CV (standard deviation of the logs of the run figures),
    where the variance comes from (stats.variance_split: within a process,
    between processes, between runs, and the dominant part), and the runs
    per side that a t test on the run figures needs to see a 5% change 80%
    of the time; where every run has its probe processes' clock, also the
    CV at equal clock (the residual of the log figures regressed on the log
    clocks) and the share the clock explains, and the runs per side from
    that CV, the spread compare's covariance test sees."""
    per: dict[str, list[list[np.ndarray]]] = {}
    clocks: dict[str, list[float | None]] = {}
    units = {}
    for r in runs:
        for mid, m in r.measurements.items():
            try:
                procs = r.by_process(m)
            except ValueError:
                continue
            if procs and any(x.size for x in procs):
                per.setdefault(mid, []).append(procs)
                clocks.setdefault(mid, []).append(measurement_clock(r.doc, m))
                units[mid] = m["unit"]
    out = []
    for mid, rs in per.items():
        figs = np.array([run_figure(x) for x in rs])
        kept = np.isfinite(figs)
        figs, clk = figs[kept], [c for c, k in zip(clocks[mid], kept) if k]
        if not figs.size:
            continue
        positive = bool(np.all(figs > 0))
        sd = float(np.std(np.log(figs), ddof=1)) if positive and figs.size > 1 else float("nan")
        split = variance_split(rs) if positive else None
        fit = (covariate_fit(np.log(figs), np.log(np.asarray(clk, float)))
               if positive and all(isinstance(c, float) and c > 0 for c in clk) else None)
        # the spread compare's test sees: at equal clock where every run has one (compare.clock_adjust), and
        # at least its floor
        test_sd = max(fit[1], RUN_SD_FLOOR) if fit else max(sd, RUN_SD_FLOOR) if math.isfinite(sd) else sd
        lost = 1 if fit else 0
        out.append({"id": mid, "unit": units[mid], "runs": int(figs.size), "median": float(np.median(figs)),
                    "run_cv": sd, "split": split,
                    "clock_cv": fit[1] if fit else None, "clock_share": fit[2] if fit else None,
                    "runs_for_5pct": runs_to_decide(DETECT, test_sd, lost_df=lost) if math.isfinite(test_sd) else None,
                    "detectable": {n: smallest_change_at(test_sd, n, lost_df=lost) for n in DESIGNS}})
    return out


def stability_table(rows: list[dict]) -> str:
    from .present import fmt_value, text_table

    head = ("id", "median", "runs", "run-to-run CV", "within process", "between processes", "between runs",
            "dominant", "at equal clock", f"runs/side for {DETECT:.0%}",
            "detectable at " + "/".join(map(str, DESIGNS)) + " runs")
    body = []
    for r in rows:
        sp = r.get("split") or {}
        share = r.get("clock_share")
        body.append((r["id"], fmt_value(r["median"], r["unit"]), str(r["runs"]), _pct(r["run_cv"]),
                     _pct(sp.get("within_cv")), _pct(sp.get("process_cv")), _pct(sp.get("run_cv")),
                     _dominant(sp),
                     f"{_pct(r.get('clock_cv'))} (clock {share:.0%})" if isinstance(share, float) else "-",
                     "-" if not math.isfinite(r["run_cv"]) else (str(r["runs_for_5pct"]) if r["runs_for_5pct"]
                                                                 else ">200"),
                     " / ".join(_pct(r["detectable"].get(n)) for n in DESIGNS)))
    return text_table(head, body, left=(0, 7))


def area_stability_table(rows: list[dict], good: float = 0.02, worst: int = 3) -> str:
    """Per area (the registry's, else an id's first part): ids, the median run-to-run CV, how
    many ids are at or below `good`, and the `worst` ids with theirs; then
    the same over all ids."""
    from .present import text_table

    by: dict[str, list[dict]] = {}
    for r in rows:
        if math.isfinite(r["run_cv"]):
            found = registry.find_measure(r["id"])
            area = found[0].area if found and found[0].area else r["id"].split(".", 1)[0]
            by.setdefault(area, []).append(r)
    every = [r for rs in by.values() for r in rs]
    body = []
    for area, rs in sorted(by.items()) + ([("all", every)] if every else []):
        cvs = np.array([r["run_cv"] for r in rs])
        # at equal clock where the runs had one, as compare tests them (compare.clock_adjust)
        eq = np.array([r["clock_cv"] if isinstance(r.get("clock_cv"), float) else r["run_cv"] for r in rs])
        bad = sorted(rs, key=lambda r: -r["run_cv"])[:worst]
        body.append((area, str(len(rs)), _pct(float(np.median(cvs))), str(int(np.sum(cvs <= good))),
                     _pct(float(np.median(eq))), str(int(np.sum(eq <= good))),
                     ", ".join(f"{r['id']} {_pct(r['run_cv'])}" for r in bad)))
    return text_table(("area", "ids", "median run CV", f"ids <= {good:.0%}", "at equal clock",
                       f"ids <= {good:.0%}", "worst"), body, left=(0, 6))


def core_state_table(runs: list[Run]) -> str:
    """Per run: the median core clock of its probe processes (a chain of
    adds at each process's start and end) and how many of them ran below
    interference.SLOWED of the median over all these runs' processes: the
    host's slowing of the vCPU, which neither steal time nor the noise
    probe sees; and the same of the core's width (eight independent chains
    of adds), which falls while another hardware thread shares the core.
    Empty when no run recorded clocks."""
    from .interference import SLOWED, core_clocks, core_widths, slowed_share
    from .present import text_table

    every = [c for r in runs for c in core_clocks(r.doc)]
    if not every:
        return ""
    ref = float(np.median(every))
    every_w = [w for r in runs for w in core_widths(r.doc)]
    ref_w = float(np.median(every_w)) if every_w else None
    body = []
    for r in runs:
        c, w = core_clocks(r.doc), core_widths(r.doc)
        share, shared = slowed_share(c, ref), slowed_share(w, ref_w) if ref_w else None
        body.append((r.name, f"{np.median(c):,.0f} MHz" if c else "-", str(len(c)),
                     f"{share:.0%}" if share is not None else "-",
                     f"{np.median(w):.2f}" if w else "-", f"{shared:.0%}" if shared is not None else "-"))
    width = (f"; width: adds per cycle of eight independent chains, shared: below {SLOWED:.0%} of the median, "
             f"{ref_w:.2f}, whose figures compare and stability set aside where others of their id remain"
             if ref_w else "")
    return (f"Core clock (a chain of adds at each probe process's start and end; slowed: below {SLOWED:.0%} "
            f"of the median over these runs, {ref:,.0f} MHz{width}):\n"
            + text_table(("run", "median clock", "processes", "slowed", "median width", "shared"), body, left=(0,)))


def host_params_table(runs: list[Run]) -> str:
    """Per id whose probe declares params that measure the host's part in
    its figure (Probe.host_params): each one's median over the runs, its
    range, and what it says. Empty when no run has one."""
    from .present import text_table

    body = []
    ids = list(dict.fromkeys(mid for r in runs for mid in r.measurements))
    for mid in ids:
        found = registry.find_measure(mid)
        for key, says in getattr(found[0], "host_params", ()) if found else ():  # a derived id has none
            v = [float(x) for r in runs
                 if isinstance(x := ((r.measurements.get(mid) or {}).get("params") or {}).get(key), (int, float))
                 and not isinstance(x, bool)]
            if v:
                body.append((mid, key, f"{np.median(v):.3g}", f"{min(v):.3g} .. {max(v):.3g}", says))
    if not body:
        return ""
    return ("The host's part, as the probes measured it (params; median and range over these runs):\n"
            + text_table(("id", "param", "median", "range", "what it says"), body, left=(0, 1, 4)))


def _dominant(sp: dict) -> str:
    d = sp.get("dominant")
    share = (sp.get("share") or {}).get(d) if d else None
    return f"{d} {share:.0%}" if d and isinstance(share, float) else "-"


def _pct(v: float | None) -> str:
    return f"{v:.1%}" if isinstance(v, float) and math.isfinite(v) else "-"


def _write_stability(out: Path) -> None:
    try:
        runs = load_side([out])
    except ValueError:
        return
    if len(runs) < 2:
        return
    table = stability_table(stability_rows(runs))
    for extra in (core_state_table(runs), host_params_table(runs)):
        table += "\n\n" + extra if extra else ""
    (out / store.STABILITY).write_text(STABILITY_HEAD + table + "\n")
    print(f"\nRun-to-run stability over {len(runs)} runs:\n{STABILITY_HEAD}{table}\n\nosmeter: campaign in {out}")
