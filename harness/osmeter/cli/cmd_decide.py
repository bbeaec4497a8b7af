"""`osmeter decide`: good, bad or cannot tell, against a baseline, in the
exit status `git bisect run` reads (0 good, 1 bad, 125 skip).

It runs `osmeter run` (the ids asked for, with the run arguments given
after --) one run at a time into --out, and after each run from the
second on compares the baseline with the runs so far (compare's
statistics, at a level spent over the looks as `ab --until-decided`
spends it). Bad: an id significantly worse by at least --threshold. Good:
every id's interval of the change lies on the good side of --threshold (no
worse than the baseline by that much: a one-sided question, so a faster
commit is good too). Cannot tell (125): the budget of runs spent without
either, or a run that failed, or an id the run did not measure."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from osmeter.core.errors import RunError

GOOD, BAD, SKIP = 0, 1, 125


def worse_bound(ratio_ci: tuple[float, float], unit: str) -> float:
    """How much worse the change may be, at the interval's worse end (a fraction; <= 0 is no worse)."""
    from osmeter.core.units import better
    lo, hi = ratio_ci
    if better(unit) == "higher":  # a rate: worse is lower
        return 1 / lo - 1 if lo > 0 else float("inf")
    if better(unit) == "lower":
        return hi - 1
    return max(hi - 1, 1 / lo - 1 if lo > 0 else float("inf"))


def verdict(rows, threshold: float) -> tuple[int | None, list[str]]:
    """GOOD, BAD or None (not yet), with a line per id."""
    lines, bad, good = [], False, True
    for r in rows:
        worse = worse_bound(r.ci, r.unit)
        is_bad = r.verdict == "slower"
        is_good = worse <= threshold and not is_bad
        bad |= is_bad
        good &= is_good
        lines.append(f"  {r.id:<32} B/A {r.ratio:.3f} ({r.ci[0]:.3f}..{r.ci[1]:.3f})  {r.verdict:<14} "
                     f"{'bad' if is_bad else 'good' if is_good else 'not yet'}")
    return (BAD if bad else GOOD if good and rows else None), lines


def main(args) -> int:
    from osmeter.analysis.compare import compare_sides
    from osmeter.core.tree import repo_root
    from osmeter.probes.registry import matches
    from osmeter.results import store
    from osmeter.running.ab import look_alpha

    if not 0 < args.threshold < 1:
        raise RunError(f"--threshold {args.threshold}: a fraction such as 0.05")
    if not 2 <= args.max_runs <= 50:
        raise RunError(f"--max-runs {args.max_runs}: 2 to 50")
    try:
        base = store.load_side([args.baseline])
    except ValueError as e:
        raise RunError(f"--baseline: {e}") from None
    base_ids = {m["id"] for r in base for m in r.doc["measurements"]}
    pats = args.probes.split(",") if args.probes else sorted(base_ids)
    wanted = sorted(i for i in base_ids if any(matches(p, i) for p in pats))
    if not wanted:
        raise RunError(f"--probes {args.probes}: no id of the baseline matches")
    # each call its own directory (git bisect run calls it once per commit)
    out = (args.out or repo_root() / "results") / f"decide-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
    out.mkdir(parents=True)
    preset = base[0].doc["conditions"].get("preset") or "quick"
    run_args = [a for a in args.run_args if a != "--"]
    runs: list[Path] = []
    print(f"osmeter decide: {len(wanted)} ids against {args.baseline} ({len(base)} runs), threshold "
          f"{args.threshold:.0%}, at most {args.max_runs} runs into {out}", flush=True)
    for k in range(1, args.max_runs + 1):
        d = out / store.run_name(k)
        r = subprocess.run([str(repo_root() / "osmeter"), "run", "--no-history", "--no-report", "--preset", preset,
                            "--probes", ",".join(wanted), "--out", str(d), *run_args],
                           capture_output=True, text=True)
        if r.returncode != 0 or not (d / store.RESULTS).exists():
            tail = (r.stderr.strip().splitlines() or ["(no message)"])[-1]
            print(f"osmeter decide: cannot tell: run {k} failed (exit {r.returncode}): {tail}", file=sys.stderr)
            return SKIP
        runs.append(d)
        if k < 2:
            continue
        side = store.load_side(runs)
        missing = [i for i in wanted if not all(i in s.measurements for s in side)]
        if missing:
            print(f"osmeter decide: cannot tell: the runs did not measure {', '.join(missing)}", file=sys.stderr)
            return SKIP
        try:
            c = compare_sides(base, side, args.threshold, alpha=look_alpha(k, args.max_runs))
        except ValueError as e:
            raise RunError(str(e)) from None
        rows = [row for row in c.rows if row.id in wanted]
        status, lines = verdict(rows, args.threshold)
        print(f"after {k} runs:\n" + "\n".join(lines), flush=True)
        if status is not None:
            print(f"osmeter decide: {'bad' if status == BAD else 'good'} (exit {status})")
            if not args.keep:
                shutil.rmtree(out, ignore_errors=True)
            return status
    print(f"osmeter decide: cannot tell after {args.max_runs} runs (exit {SKIP}): raise --max-runs or --threshold")
    return SKIP


NAME = "decide"


def add_parser(sub) -> None:
    d = sub.add_parser("decide", help="good (0), bad (1) or cannot tell (125) against a baseline: for git bisect run",
                       description="Runs the ids asked for until they are shown no worse than the baseline by "
                                   "--threshold (exit 0), or worse by at least that much (exit 1), or the budget "
                                   "is spent or a run fails (exit 125, git bisect's skip). Arguments after -- go "
                                   "to each osmeter run (for example -- --app-trace app.trace).")
    d.add_argument("--baseline", type=Path, required=True, metavar="DIR", help="a run or campaign of the good state")
    d.add_argument("--probes", metavar="PATTERNS", help="the ids to decide on (default: every id of the baseline)")
    d.add_argument("--threshold", type=float, default=0.05, help="the worsening that is bad (0.05)")
    d.add_argument("--max-runs", type=int, default=6, help="runs at most before 'cannot tell' (6)")
    d.add_argument("--out", type=Path, metavar="DIR", help="where each call's runs go, in decide-TIME-PID/ "
                   "(default results/)")
    d.add_argument("--keep", action="store_true", help="keep the runs after a decision (always kept on 125)")
    d.add_argument("run_args", nargs="*", metavar="-- RUN ARGS")
