"""`osmeter decide`: good, bad or cannot tell, against a baseline, in the
exit status `git bisect run` reads.

It runs `osmeter run` (the ids asked for, with the run arguments given
after --) one run at a time into a private directory of its own made in
--out (mkdtemp: decide-TIME-XXXXXXXX), and after each run from the
second on compares the baseline with the runs so far (compare's
statistics, at a level spent over the looks as `ab --until-decided`
spends it). Bad: an id significantly worse by at least --threshold. Good:
every id's interval of the change lies on the good side of --threshold (no
worse than the baseline by that much: a one-sided question, so a faster
commit is good too).

Exit status (git bisect run: 0 good, 1-127 but 125 bad, 125 skip, 128 or
more stops the bisection):

    0    good
    1    bad
    125  cannot tell: the budget of runs spent without either, a run that
         failed (a build that failed, a refused probe), or an id the run did
         not measure
    128  wrong usage: bad arguments (argparse's errors too, which are 2
         elsewhere), a baseline missing, unreadable or unsuitable, an --out
         that is a file or cannot be written
    130  interrupted: SIGINT (Ctrl-C), forwarded to the `osmeter run` under
         way, which ends as a run does on Ctrl-C (it keeps the probes that
         finished and removes its lock); 143 for SIGTERM, 129 for SIGHUP
    255  decide itself could not go on (a bug, or the machine: a full disk),
         said in one line

Never 1 or 2 for anything but "bad": git bisect would take it for a bad
commit."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from osmeter.cli.common import Parser
from osmeter.core.errors import SIGNALS, Interrupted, RunError, shielded

GOOD, BAD, SKIP = 0, 1, 125
USAGE = 128   # git bisect stops on 128 or more; 129, 130, 143 are the signals' (128 + the signal)
BROKEN = 255  # an unexpected failure of decide itself
GRACE = 60.0  # seconds the interrupted run has to end itself, then SIGTERM, then SIGKILL
TERM_GRACE = 10.0


class Usage(Exception):
    """A request decide cannot serve: exit USAGE, never git bisect's bad."""


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


class _State:
    """What a call has under way, for its end on a signal or a failure."""

    def __init__(self):
        self.out: Path | None = None          # the call's own directory
        self.runs: list[Path] = []            # the runs that finished
        self.child: subprocess.Popen | None = None
        self.current: Path | None = None      # the run under way


def _say(*lines: str, err: bool = False) -> None:
    try:
        print(*lines, file=sys.stderr if err else sys.stdout, flush=True)
    except (BrokenPipeError, ValueError):  # nobody reads any more: the exit status still says it
        _quiet_stdout()


def _quiet_stdout() -> None:
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
        os.close(fd)
    except (OSError, ValueError):
        pass


def main(args) -> int:
    state = _State()
    try:
        return _decide(args, state)
    except (Usage, RunError) as e:
        _stop_child(state, signal.SIGTERM)
        _say(f"osmeter decide: error: {e} (exit {USAGE}: wrong usage, git bisect stops)", err=True)
        return USAGE
    except (Interrupted, KeyboardInterrupt) as e:
        return _interrupted(state, e.signum if isinstance(e, Interrupted) else signal.SIGINT)
    except Broken as e:
        _say(f"osmeter decide: error: {e} (exit {BROKEN}: decide could not go on, git bisect stops)", err=True)
        return BROKEN
    except BrokenPipeError:
        _quiet_stdout()
        _stop_child(state, signal.SIGTERM)
        return BROKEN
    except Exception as e:  # noqa: BLE001 - anything else is decide's own failure, never git bisect's "bad"
        _stop_child(state, signal.SIGTERM)
        what = getattr(e, "strerror", None) or str(e) or "(no message)"
        where = f" ({e.filename})" if getattr(e, "filename", None) else ""
        kept = f"; its runs are in {state.out}" if state.out is not None and state.out.exists() else ""
        _say(f"osmeter decide: error: {type(e).__name__}: {what}{where}{kept} (exit {BROKEN}: decide could not "
             "go on, git bisect stops)".replace("\n", " "), err=True)
        return BROKEN


def _decide(args, state: _State) -> int:
    from osmeter.analysis.compare import compare_sides
    from osmeter.core.tree import repo_root
    from osmeter.probes.model import PRESETS
    from osmeter.probes.registry import matches
    from osmeter.results import store
    from osmeter.running.ab import look_alpha

    _undo_dead_runs()
    if not 0 < args.threshold < 1:
        raise Usage(f"--threshold {args.threshold}: a fraction such as 0.05")
    if not 2 <= args.max_runs <= 50:
        raise Usage(f"--max-runs {args.max_runs}: 2 to 50")
    if args.junit and (args.junit.is_dir() or not args.junit.parent.is_dir()):
        raise Usage(f"--junit {args.junit}: a file in a directory that is there")
    try:
        base = store.load_side([args.baseline])
        base_ids = {m["id"] for r in base for m in r.doc["measurements"]}
        preset = base[0].doc["conditions"].get("preset") or "quick"
    except (ValueError, OSError, KeyError, TypeError, AttributeError, IndexError) as e:
        raise Usage(f"--baseline {args.baseline}: not a readable run or campaign: {e}") from None
    if preset not in PRESETS:  # a string from a file reaches each run's command line only as a known preset
        raise Usage(f"--baseline {args.baseline}: its preset {str(preset)[:40]!r} is none of {', '.join(PRESETS)}")
    pats = args.probes.split(",") if args.probes else sorted(base_ids)
    wanted = sorted(i for i in base_ids if any(matches(p, i) for p in pats))
    if not wanted:
        raise Usage(f"--probes {args.probes}: no id of the baseline matches")
    # each call a private directory of its own inside --out (git bisect run calls it once per commit)
    parent = args.out or repo_root() / "results"
    try:
        parent.mkdir(parents=True, exist_ok=True)
        out = state.out = Path(tempfile.mkdtemp(prefix=f"decide-{time.strftime('%Y%m%dT%H%M%S')}-", dir=parent))
    except OSError as e:
        raise Usage(f"--out {parent}: cannot make a directory there: {e.strerror or e}") from None
    run_args = [a for a in args.run_args if a != "--"]
    runs = state.runs
    _say(f"osmeter decide: {len(wanted)} ids against {args.baseline} ({len(base)} runs), threshold "
         f"{args.threshold:.0%}, at most {args.max_runs} runs into {out}")
    for k in range(1, args.max_runs + 1):
        d = out / store.run_name(k)
        code, tail, log = _run_one(state, d, [str(repo_root() / "osmeter"), "run", "--no-history", "--no-report",
                                              "--preset", preset, "--probes", ",".join(wanted), "--out", str(d),
                                              *run_args])
        if code != 0 or not (d / store.RESULTS).exists():
            _say(f"osmeter decide: cannot tell (exit {SKIP}): run {k} failed (exit {code}): {tail} "
                 f"(its output: {log})", err=True)
            return SKIP
        runs.append(d)
        if k < 2:
            continue
        side = store.load_side(runs)
        missing = [i for i in wanted if not all(i in s.measurements for s in side)]
        if missing:
            _say(f"osmeter decide: cannot tell (exit {SKIP}): the runs did not measure {', '.join(missing)}",
                 err=True)
            return SKIP
        try:
            c = compare_sides(base, side, args.threshold, alpha=look_alpha(k, args.max_runs))
        except ValueError as e:  # the baseline and these runs cannot be compared (its preset mixed, say)
            raise Usage(f"--baseline {args.baseline}: {e}") from None
        rows = [row for row in c.rows if row.id in wanted]
        status, lines = verdict(rows, args.threshold)
        _say(f"after {k} runs:\n" + "\n".join(lines))
        if args.junit and (status is not None or k == args.max_runs):
            _junit(args.junit, rows, c, args.threshold)
        if status is not None:
            _say(f"osmeter decide: {'bad' if status == BAD else 'good'} (exit {status})")
            if not args.keep:
                shutil.rmtree(out, ignore_errors=True)
            return status
    _say(f"osmeter decide: cannot tell after {args.max_runs} runs (exit {SKIP}): raise --max-runs or --threshold; "
         f"the runs are in {out}")
    return SKIP


def _junit(path: Path, rows, c, threshold: float) -> None:
    """The decision as JUnit (analysis/formats/junit.py): the ids found bad fail, those not yet good are
    skipped."""
    from osmeter.analysis.formats.junit import suite
    from osmeter.results.writer import write_text_atomic

    undecided = {r.id for r in rows if r.verdict != "slower" and worse_bound(r.ci, r.unit) > threshold}
    try:
        write_text_atomic(path, suite(rows, f"osmeter decide, threshold {threshold:.0%}", c.conditions, c.notes,
                                      frozenset(undecided)))
    except OSError as e:
        raise Broken(f"--junit {path}: cannot write it: {e.strerror or e}") from None


class Broken(Exception):
    """The machine cannot be put in a state to measure: exit BROKEN."""


def _undo_dead_runs() -> None:
    """What a killed run left (tracing, an isolated CPU, ab's owed restore) undone before any run, as the
    other measuring commands do (cli's RECOVER_FIRST, which leaves decide out: its failure there would exit 2,
    a bad commit to git bisect); a failure is BROKEN, which stops the bisection."""
    from osmeter.running.recover import undo_dead_runs
    try:
        undo_dead_runs(say=_say)
    except Exception as e:  # noqa: BLE001 - whatever it was, no commit can be judged on this machine now
        raise Broken(f"what a killed run left could not be undone: {e}") from None


def _run_one(state: _State, d: Path, argv: list[str]) -> tuple[int, str, Path]:
    """One `osmeter run` into d, its output in d's .log beside it, in a process group of its own: a Ctrl-C
    at the terminal reaches decide only, which passes it on once (see _interrupted)."""
    log = d.with_name(d.name + ".log")
    with open(log, "x") as f:
        state.current = d
        with shielded():  # a signal now is raised once the child is known, so that it is passed on to it
            state.child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT,
                                           process_group=0)
        code = state.child.wait()
    state.child = state.current = None
    try:
        lines = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        lines = []
    return code, (lines or ["(no message)"])[-1], log


def _send(p: subprocess.Popen, signum: int) -> None:
    try:
        if signum == signal.SIGKILL:  # the run and whatever it started, at once
            os.killpg(p.pid, signum)
        else:
            p.send_signal(signum)
    except (ProcessLookupError, PermissionError):
        pass


def _stop_child(state: _State, signum: int, grace: float = GRACE) -> str:
    """Passes signum to the run under way and waits for it to end itself (keeping what finished, removing
    its lock), at most `grace` s, then SIGTERM for TERM_GRACE s, then SIGKILL to its process group; a
    further signal to decide meanwhile moves on to the next step at once. Returns how it ended."""
    p = state.child
    if p is None or p.poll() is not None:
        return ""
    got: list[int] = []
    old = {s: signal.signal(s, lambda n, f: got.append(n)) for s in SIGNALS}
    try:
        for step, (sig, wait) in enumerate(((signum, grace), (signal.SIGTERM, TERM_GRACE), (signal.SIGKILL, 30.0))):
            _send(p, sig)
            seen, deadline = len(got), time.monotonic() + wait
            while p.poll() is None and time.monotonic() < deadline and len(got) == seen:
                try:
                    p.wait(timeout=0.2)
                except subprocess.TimeoutExpired:
                    pass
            if p.poll() is not None:
                how = "ended itself" if step == 0 else f"ended after {signal.Signals(sig).name}"
                return f"{how} (exit {p.returncode})"
        return "did not end even after SIGKILL"
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _interrupted(state: _State, signum: int) -> int:
    name = signal.Signals(signum).name
    status = 128 + signum
    what = []
    if state.child is not None:
        pid, d = state.child.pid, state.current
        how = _stop_child(state, signum)
        what.append(f"passed {name} to the run under way (pid {pid}), which {how}" if how else
                    f"the run under way (pid {pid}) had ended")
        if d is not None and d.exists():
            what.append(f"{d.name} kept what finished")
    if state.out is not None and state.out.exists():
        try:
            empty = not any(state.out.iterdir())
        except OSError:
            empty = False
        if empty:
            state.out.rmdir()
            what.append("no run had started: nothing kept")
        else:
            what.append(f"{len(state.runs)} finished run(s) kept in {state.out}")
    _say(f"osmeter decide: interrupted by {name}" + (": " + "; ".join(what) if what else "") +
         f" (exit {status}: git bisect stops)", err=True)
    return status


NAME = "decide"


class _DecideParser(Parser):
    """decide's own parser: its errors exit USAGE (128), not argparse's 2, which git bisect would take for
    a bad commit; arguments it does not know are its errors too (not the top parser's)."""

    def error(self, message):  # one line: osmeter decide --help has the usage
        print(f"osmeter decide: error: {message} (exit {USAGE}: wrong usage, git bisect stops; see osmeter decide "
              "--help)", file=sys.stderr)
        sys.exit(USAGE)

    def parse_known_args(self, args=None, namespace=None):
        args = list(sys.argv[1:] if args is None else args)
        ns, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        if getattr(ns, "run_args", None) and "--" not in args:
            self.error(f"{' '.join(ns.run_args)}: the arguments of each osmeter run go after --")
        return ns, extras


def add_parser(sub) -> None:
    d = sub.add_parser("decide", help="good (0), bad (1) or cannot tell (125) against a baseline: for git bisect run",
                       description="Runs the ids asked for until they are shown no worse than the baseline by "
                                   "--threshold (exit 0), or worse by at least that much (exit 1), or the budget "
                                   "is spent or a run fails (exit 125, git bisect's skip). Wrong usage (bad "
                                   "arguments, a missing or unreadable baseline, an --out that cannot be written) "
                                   "exits 128 and an unexpected failure 255, both of which stop git bisect; "
                                   "Ctrl-C is passed to the run under way, which keeps what finished, and decide "
                                   "exits 130 (143 for SIGTERM). Arguments after -- go to each osmeter run (for "
                                   "example -- --app-trace app.trace).")
    d.__class__ = _DecideParser  # this subcommand's errors only; every other keeps argparse's 2
    d.add_argument("--baseline", type=Path, required=True, metavar="DIR", help="a run or campaign of the good state")
    d.add_argument("--probes", metavar="PATTERNS", help="the ids to decide on (default: every id of the baseline)")
    d.add_argument("--threshold", type=float, default=0.05, help="the worsening that is bad (0.05)")
    d.add_argument("--max-runs", type=int, default=6, help="runs at most before 'cannot tell' (6)")
    d.add_argument("--out", type=Path, metavar="DIR", help="where each call's runs go, in a private directory "
                   "decide-TIME-XXXXXXXX/ of its own (default results/)")
    d.add_argument("--keep", action="store_true", help="keep the runs after a decision (always kept on 125 and "
                   "on an interruption)")
    d.add_argument("--junit", type=Path, metavar="FILE", help="write the decision as JUnit XML: a failure for "
                   "each id found bad, skipped for each not yet good")
    d.add_argument("run_args", nargs="*", metavar="-- RUN ARGS")
