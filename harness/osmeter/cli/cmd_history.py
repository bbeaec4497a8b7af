"""`osmeter history`: the runs of each machine kept in a database (history/
store.py), one id's series, the change points found in them, a CSV for
Otava, a page (history/page.py)."""
from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

from osmeter.cli.common import write_output
from osmeter.core.errors import RunError
from osmeter.core.stats import MIN_CHANGE
from osmeter.present.values import printable as pr  # every string from a run reaches the terminal through it


def _fmt(v, unit: str) -> str:
    from osmeter.present.values import fmt_value
    return "-" if v is None else fmt_value(float(v), unit)


def _changes(con, host: str, pattern: str | None, since: str | None, alpha: float, min_change: float,
             min_runs: int):
    from osmeter.history import changes, store
    from osmeter.probes.registry import matches
    mids = [m for m in store.ids(con, host) if not pattern or any(matches(p, m) for p in pattern.split(","))]
    found = changes.cached(con, host, mids, None, alpha, min_change, min_runs)
    out = [c for mid in mids for c in found[mid] if not since or c.after["time"] >= since]
    return sorted(out, key=lambda c: (c.after["time"], c.mid))


def _list(con, args) -> int:
    from osmeter.history import store
    rows = store.hosts(con)
    if not rows:
        print("the history holds no run")
        return 0
    print(f"{'host':<24} {'runs':>5} {'ids':>5}  first                      last")
    for host, n, first, last, nids in rows:
        print(f"{pr(host):<24} {n:>5} {nids:>5}  {pr(first):<26} {pr(last)}")
    return 0


def _show(con, host: str, args) -> int:
    from osmeter.history import store
    from osmeter.history.changes import cached
    rows = store.series(con, host, args.id, args.since)
    if not rows:
        raise RunError(f"no run of {pr(host)} has {pr(args.id)} (osmeter history ids)")
    found = cached(con, host, [args.id], {args.id: rows}, args.alpha, args.min_change, args.min_runs)[args.id]
    marks = {c.after["run"]: c for c in found}
    unit = rows[0]["unit"]
    print(f"{pr(args.id)} on {pr(host)}, {len(rows)} runs ({pr(unit)}); '>' marks a change point\n")
    print(f"  {'time':<26} {'figure':>12} {'95% interval':>27}  {'kernel':<20} commit")
    for r in rows:
        c = marks.get(r["run"])
        iv = f"{_fmt(r['lo'], unit)} .. {_fmt(r['hi'], unit)}" if r["lo"] is not None else "-"
        print(f"{'>' if c else ' '} {pr(r['time']):<26} {pr(_fmt(r['figure'], unit)):>12} {pr(iv):>27}  "
              f"{pr(str(r['kernel'] or '-')[:20]):<20} {pr(str(r['commit'] or '-')[:10])}")
        if c:
            print(f"    change x{c.ratio:.3f} ({c.low:.3f}..{c.high:.3f}), p {c.p:.3f}: {pr(c.cause)}")
    return 0


def _list_changes(con, host: str, args) -> int:
    found = _changes(con, host, args.probes, args.since, args.alpha, args.min_change, args.min_runs)
    print(f"{len(found)} change points on {pr(host)}" + (f" since {args.since}" if args.since else "")
          + f" (false-alarm rate {args.alpha} per test, changes of at least {args.min_change:.0%})")
    for c in found:
        print(f"{pr(c.after['time'])}  {pr(c.mid):<32} x{c.ratio:.3f} ({c.low:.3f}..{c.high:.3f})  "
              f"{pr(_fmt(c.before['figure'], c.unit))} -> {pr(_fmt(c.after['figure'], c.unit))}\n"
              f"    {pr(c.cause)}\n    before {pr(c.before['path'])}\n    after  {pr(c.after['path'])}")
    return 0


def _csv(con, host: str, args) -> int:
    from osmeter.history import store
    from osmeter.probes.registry import matches
    mids = [m for m in store.ids(con, host) if not args.probes or any(matches(p, m) for p in args.probes.split(","))]
    fixed = ("time", "commit", "kernel", "run")
    clash = [m for m in mids if m in fixed]  # no osmeter id is one word: a hand-made or hostile results.json
    if clash:
        print(f"osmeter: warning: id(s) {', '.join(map(pr, clash))} left out of the csv: named as one of "
              "its fixed columns", file=sys.stderr)
        mids = [m for m in mids if m not in fixed]
    table: dict[int, dict] = {}
    for mid in mids:
        for r in store.series(con, host, mid, args.since):
            row = table.setdefault(r["run"], {"time": r["time"], "commit": r["commit"] or "",
                                              "kernel": r["kernel"] or "", "run": r["path"]})
            row[mid] = r["figure"]
    out = sys.stdout if str(args.out) == "-" else io.StringIO(newline="")
    w = csv.DictWriter(out, [*fixed, *mids], restval="")
    w.writeheader()
    for row in sorted(table.values(), key=lambda r: r["time"]):
        w.writerow(row)
    if out is not sys.stdout:
        write_output(Path(args.out), out.getvalue(), "--out")  # whole, never through a link
        print(f"osmeter: {len(table)} runs x {len(mids)} ids -> {args.out}", file=sys.stderr)
    return 0


def _check(args) -> None:
    from osmeter.history.changes import ALPHA_MAX, ALPHA_MIN
    if not ALPHA_MIN <= args.alpha <= ALPHA_MAX:  # NaN too
        raise RunError(f"--alpha {args.alpha}: a false-alarm rate from {ALPHA_MIN} to {ALPHA_MAX}")
    if not 0 <= args.min_change < 1:
        raise RunError(f"--min-change {args.min_change}: a fraction from 0 to 1")
    if not (args.min_runs.isascii() and args.min_runs.isdigit() and int(args.min_runs) >= 2):
        raise RunError(f"--min-runs {args.min_runs}: a whole number of runs, at least 2")
    args.min_runs = int(args.min_runs)
    if (args.what == "add") != bool(args.dirs):
        raise RunError("history add takes the directories to add" if args.what == "add" else
                       f"history {args.what} takes no directory (did you mean --out?)")
    if args.what == "show" and not args.id:
        raise RunError("history show needs --id ID (history ids lists them)")
    if args.what == "html" and str(args.out) == "-":
        raise RunError("history html needs --out DIR")


def main(args) -> int:
    from osmeter.history import store
    _check(args)
    if args.what == "add":
        added, replaced = store.add(args.dirs, args.db)
        print(f"osmeter: {added} runs added, {replaced} added again (replaced) -> {args.db or store.default_path()}")
        return 0
    with store.opened(args.db) as con:
        if args.what == "list":
            return _list(con, args)
        if args.what == "html":
            from osmeter.history.page import write_page
            page = write_page(con, args.out, args.host, args.alpha, args.min_change, args.probes, args.min_runs)
            print(f"osmeter: {page}")
            return 0
        host = store.only_host(con, args.host)
        if args.what == "ids":
            print("\n".join(map(pr, store.ids(con, host))))
            return 0
        return {"show": _show, "changes": _list_changes, "csv": _csv}[args.what](con, host, args)


NAME = "history"


def add_parser(sub) -> None:
    h = sub.add_parser("history", help="the runs of each machine over time: series, change points, CSV, a page",
                       description="The history database (default results/history.sqlite, or $OSMETER_HISTORY, "
                                   "or --db) indexes every run osmeter run wrote (--no-history leaves one out). "
                                   "add: add old run, campaign, ab or fleet directories. list: hosts. ids: a host's "
                                   "ids. show ID: one id's series with its change points. changes: every change "
                                   "point of a host, with the conditions that differ across it. csv: figures per "
                                   "run in Otava's columns (time, attributes, one column per id). html DIR: a "
                                   "self-contained page.")
    h.add_argument("what", choices=("add", "list", "ids", "show", "changes", "csv", "html"))
    h.add_argument("dirs", type=Path, nargs="*", metavar="DIR", help="add: run, campaign, ab or fleet directories")
    h.add_argument("--db", type=Path, metavar="FILE", help="the history database (default $OSMETER_HISTORY or "
                   "results/history.sqlite)")
    h.add_argument("--host", help="the host (default: the only one)")
    h.add_argument("--id", dest="id", help="show: the id")
    h.add_argument("--probes", metavar="PATTERNS", help="changes, csv, html: these ids only (cpu.*, mem.lat)")
    h.add_argument("--since", metavar="DATE", help="runs since this UTC date or time (2026-11-01)")
    h.add_argument("--alpha", type=float, default=0.01, help="false-alarm rate of each change-point test (0.01)")
    h.add_argument("--min-change", type=float, default=MIN_CHANGE,
                   help=f"smallest shift a change point may be ({MIN_CHANGE})")
    h.add_argument("--min-runs", default="3", metavar="N",
                   help="changes, show, html: the fewest runs on each side of a change point, so a spike shorter "
                        "than N runs is none (3; at least 2)")
    h.add_argument("--out", type=Path, default=Path("-"), metavar="FILE|DIR",
                   help="csv: the file (default stdout); html: the page's directory")
