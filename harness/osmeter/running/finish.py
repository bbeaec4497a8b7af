"""The end of a run: the summary and results.csv written and printed, with
the disturbed samples dropped, how deschedules were seen, the refusals
and the probes' warnings."""
from __future__ import annotations

from pathlib import Path

from osmeter.present.rows import summary_table, to_csv
from osmeter.results import store
from osmeter.results.model import timers
from osmeter.results.writer import Results, as_saved, write_text_atomic


def deschedule_check(results: Results, host) -> dict:
    """How the probes saw deschedules inside their windows: through the
    perf_event mmap page (no system call) or, where perf_event_open was
    refused, getrusage around each window."""
    stated = timers(results.doc)
    out = {"methods": sorted({t.deschedule_check for _, t in stated if t.deschedule_check})}
    reasons: dict[str, list[str]] = {}  # each probe's own reason, with the ids that had it
    for mid, t in stated:
        if t.deschedule_check == "getrusage":
            reasons.setdefault(t.deschedule_check_why or "no reason given", []).append(mid)
    if reasons:
        paranoid = host.read_text("/proc/sys/kernel/perf_event_paranoid")
        out["getrusage"] = reasons
        out["why"] = "; ".join(
            f"{_ids_text(ids)}: {why}" + (f" (kernel.perf_event_paranoid = {paranoid}, uid {host.uid()})"
                                          if why.startswith("perf_event_open") else "")
            for why, ids in reasons.items()) + " (getrusage's switch counters, read outside each window)"
    return out


def _ids_text(ids: list[str]) -> str:
    return ", ".join(ids) if len(ids) <= 3 else f"{ids[0]} and {len(ids) - 1} more ids"


# ---------------------------------------------------------------- finish

def finish(results: Results, out: Path, quiet: bool = False) -> None:
    table = summary_table(results.doc)
    write_text_atomic(out / store.SUMMARY, table + "\n")
    write_text_atomic(out / store.CSV, to_csv(as_saved(results.doc)))  # a NaN as results.json has it: empty
    if quiet:
        return
    print()
    print(table)
    dropped = [(m["id"], m["dropped_disturbed"], m["samples_total"]) for m in results.measurements
               if m.get("dropped_disturbed")]
    if dropped:
        print("disturbed samples dropped (a migration or deschedule inside the window): "
              + ", ".join(f"{i} {d}/{n}" for i, d, n in dropped))
    why = (results.doc["conditions"].get("deschedule_check") or {}).get("why")
    if why:
        print(f"note: deschedules seen through getrusage, not the perf page: {why}")
    for r in results.doc.get("refused", []):
        print(f"refused: {r['id']}: {r['why']}")
    # the same warning from several probes (a non-invariant TSC, say) once
    warnings = dict.fromkeys(w.split("warning: ", 1)[-1] for w in results.doc["conditions"]["probe_warnings"])
    for w in warnings:
        print(f"warning: {w}")
    wall = results.doc["conditions"].get("wall_s")
    print(f"\nosmeter: {len(results.measurements)} measurements in {wall} s; results in {out}/{store.RESULTS}")
