"""`osmeter ab`: randomized, interleaved A/B runs of a setting that a command
can switch without a reboot (a sysctl, THP, a qdisc, the governor, a cgroup
limit).

Each round runs A's setup command and then a run, and B's setup command
and then a run, in an order drawn at random for the round (seeded), so slow
drift of the machine hits both sides alike. The runs land in DIR/a and
DIR/b, two campaigns that `osmeter compare DIR/a DIR/b` reads; ab prints
that comparison at the end. The restore command runs at the end, and also
when SIGINT or SIGTERM stops the rounds; ab killed outright (SIGKILL) owes
it, and its watchdog, or else the next osmeter command, runs it and says so.
"""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from osmeter.analysis import compare
from osmeter.analysis.formats.csv_table import to_csv
from osmeter.analysis.formats.text import detectable_text
from osmeter.analysis.formats.text import text as compare_text
from osmeter.analysis.model import ALPHA, DECIDED, DESIGNS, verdict_text
from osmeter.analysis.verdicts import counts
from osmeter.core.errors import Interrupted, RunError, shielded
from osmeter.core.inference import spend_alpha
from osmeter.core.stats import MIN_CHANGE
from osmeter.results import store
from osmeter.results.writer import ResultsDir, write_text_atomic
from osmeter.running.campaign import Campaign, new_seed, run_seeds
from osmeter.running.execute import execute
from osmeter.running.recover import OwedRestore
from osmeter.running.runner import Done, no_halt, ram_devices, start_run, tracing
from osmeter.running.runopts import RunOptions

SETUP_TIMEOUT = 600.0


class Commands:
    """The user's setup and restore commands. Each runs in a session (and
    process group) of its own: a Ctrl-C at the terminal, or the terminal
    closing, reaches osmeter (which finishes it first), never the command.
    When ab ends on a signal, or a command outlives its timeout, the whole
    group of each command is ended (SIGTERM, then SIGKILL): what a command
    started in its own group does not outlive ab (what it moved to a
    session of its own with setsid, on purpose, does)."""

    def __init__(self):
        self.groups: list[int] = []

    def run(self, what: str, cmd: str) -> None:
        """A failure stops the rounds (RunError)."""
        print(f"osmeter: {what}: {cmd}", flush=True)
        p = subprocess.Popen(["/bin/sh", "-c", cmd], start_new_session=True)
        self.groups.append(p.pid)
        try:
            rc = p.wait(timeout=SETUP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self._end(p.pid, p)
            raise RunError(f"{what} command did not finish within {SETUP_TIMEOUT:.0f} s: {cmd}") from None
        except BaseException:
            self._end(p.pid, p)
            raise
        if rc != 0:
            raise RunError(f"{what} command failed with status {rc}: {cmd}")

    def end_all(self) -> None:
        """Every command's group that still has a process, ended."""
        for g in self.groups:
            self._end(g)

    @staticmethod
    def _end(pgid: int, leader: subprocess.Popen | None = None) -> None:
        with shielded():
            for sig in (signal.SIGTERM, signal.SIGKILL):
                end = time.monotonic() + 2
                try:
                    os.killpg(pgid, sig)
                    while time.monotonic() < end:
                        if leader is not None:
                            leader.poll()  # the leader reaped: a zombie would keep its group alive
                        os.killpg(pgid, 0)
                        time.sleep(0.02)
                except ProcessLookupError:
                    return


def decided(c) -> bool:
    """Every id of a comparison has a verdict other than 'too few runs'."""
    from osmeter.analysis.model import DECIDED

    return bool(c.rows) and all(r.verdict in DECIDED for r in c.rows)


def look_alpha(round_: int, rounds: int, alpha: float = 0.05) -> float:
    """The level of the look after round `round_` of a sequential design of
    at most `rounds` rounds: looks come after rounds 2..rounds."""
    return spend_alpha(round_ - 1, rounds - 1, alpha)


def run_ab(opts: RunOptions, a_cmd: str, b_cmd: str, restore: str | None, rounds: int, seed: int | None = None,
           min_change: float = MIN_CHANGE, until_decided: bool = False, max_minutes: float | None = None) -> Done:
    if rounds < 1:
        raise RunError("--rounds: expected 1 or more")
    if max_minutes is not None and not (max_minutes > 0 and until_decided):
        raise RunError("--max-minutes: a positive budget, with --until-decided")
    with start_run(opts, "-ab", sentinels=True, watchdog=bool(restore)) as (p, out):
        return Done(_run_ab(p, out, opts, a_cmd, b_cmd, restore, rounds, seed, min_change, until_decided,
                            max_minutes), out)


def over_budget(started: float, now: float, done_rounds: int, max_minutes: float | None) -> bool:
    """Whether one more round, taking as long as the mean of those done,
    would end past the budget of max_minutes from `started`."""
    if max_minutes is None or done_rounds < 1:
        return False
    spent = now - started
    return spent + spent / done_rounds > max_minutes * 60


def _run_ab(p, out: Path, opts: RunOptions, a_cmd: str, b_cmd: str, restore: str | None, rounds: int, seed: int | None,
            min_change: float, until_decided: bool, max_minutes: float | None = None) -> int:
    from osmeter.remote.osmnet import peer_session

    seed = new_seed() if seed is None else seed
    rng = random.Random(seed)
    orders = [rng.sample(("a", "b"), 2) for _ in range(rounds)]
    seeds = dict(zip("ab", (run_seeds(s, rounds) for s in (rng.getrandbits(31), rng.getrandbits(31)))))
    claims, camps = _claim_sides(out), {}
    for side, cmd in (("a", a_cmd), ("b", b_cmd)):
        camps[side] = Campaign(out / side, opts, seed, rounds, side=side, setup_command=cmd, restore_command=restore,
                               design=f"ab: {rounds} rounds, random order within each round")
        camps[side].save()
    plan_text = (f"until every id is decided, at most {rounds} rounds" if until_decided else f"{rounds} rounds")
    if max_minutes is not None:
        plan_text += f" or {max_minutes:g} minutes"
    started, stopped_by = time.monotonic(), None
    print(f"osmeter: ab, {plan_text} into {out} (seed {seed}); restore: {restore or 'none'}")
    status, looks, alpha = 0, [], ALPHA
    first: Interrupted | None = None  # the signal that stopped the rounds
    cmds = Commands()
    owed = OwedRestore(restore, out).__enter__() if restore else None  # owed until it ran (running/recover.py)
    try:
        with peer_session(opts, p.bin_dir / "netpeer") as peer, tracing(p), no_halt(p), ram_devices(p):
            p.peer = peer
            for k, order in enumerate(orders, 1):
                if until_decided and k > 2 and looks and looks[-1]["decided"]:
                    break
                # the first look needs two rounds, whatever the budget
                if until_decided and k > 2 and over_budget(started, time.monotonic(), k - 1, max_minutes):
                    stopped_by = f"the budget of {max_minutes:g} minutes (another round would end past it)"
                    break
                status = _round(p, camps, seeds, k, order, rounds, cmds) or status
                if until_decided and k >= 2:
                    alpha = look_alpha(k, rounds)
                    look = _look(out, min_change, alpha)
                    looks.append({"round": k, "alpha": alpha, **look})
                    print(f"osmeter: look after round {k} (level {alpha:.4f}): " + look["text"], flush=True)
                    for camp in camps.values():
                        camp.doc["sequential"] = _sequential_doc(looks, rounds)
                        camp.save()
        for camp in camps.values():
            camp.doc["complete"] = True
    except Interrupted as e:
        first = e
        cmds.end_all()
        for camp in camps.values():
            camp.doc["interrupted"] = True
        print("\nosmeter: interrupted; the finished runs are kept; the --a/--b commands' processes are ended")
        raise
    finally:
        # the machine first: nothing below (a full disk, a removed directory) may keep it from its restore
        try:
            if restore:
                with shielded():  # a second Ctrl-C, a SIGTERM or a SIGHUP must not leave it half restored
                    try:
                        cmds.run("restore", restore)
                    except RunError as e:
                        print(f"osmeter: error: {e}", file=sys.stderr)
                        status = 1
                    owed.paid()
        except Interrupted:
            if first is None:  # the signal that came during the restore is the first: it ends ab
                raise
            # else the first signal already ends ab, and its status (130, 143, 129) stays the one reported
        finally:
            for camp in camps.values():
                if "kernel_paths" in p.extra_conditions:  # the tracing session's end
                    camp.doc["kernel_paths"] = p.extra_conditions["kernel_paths"]
                try:
                    camp.save()
                except OSError as e:
                    print(f"osmeter: error: cannot write {camp.dir}/{store.CAMPAIGN}: {e.strerror or e}",
                          file=sys.stderr)
                    status = 1
            for c in claims:
                c.release()
    return _final_table(out, min_change, alpha, until_decided, looks, stopped_by, rounds, status)


def _claim_sides(out: Path) -> list[ResultsDir]:
    """Both sides claimed before either is written: a refusal of b leaves no a behind."""
    claims: list[ResultsDir] = []
    try:
        for side in "ab":
            claims.append(ResultsDir(out / side, store.CAMPAIGN))
    except RunError:
        for c in claims:
            c.release()
            try:
                c.out.rmdir()  # made by the claim, and empty again
            except OSError:
                pass
        raise
    return claims


def _round(p, camps: dict, seeds: dict, k: int, order: list[str], rounds: int, cmds: Commands) -> int:
    """Round k: each side's setup and run, in the round's order; 1 when a probe failed."""
    status = 0
    for side in order:
        camp = camps[side]
        cmds.run(f"round {k}/{rounds}, {side.upper()} setup", camp.doc["setup_command"])
        run_dir, entry = camp.add_run(k, seeds[side][k - 1], round=k, position=order.index(side) + 1)
        try:
            rc = execute(p, run_dir, order_seed=entry["seed"], sentinels=True,
                         label=f"round {k}/{rounds} {side.upper()} ", quiet=True)
        except Interrupted:
            camp.end_run(entry, "interrupted")
            raise
        camp.end_run(entry, "complete" if rc == 0 else "failed")
        print(f"osmeter: round {k}/{rounds} {side.upper()}: {run_dir}"
              + ("" if rc == 0 else " (a probe failed: see its results.json)"), flush=True)
        status = status or rc
    return status


def _final_table(out: Path, min_change: float, alpha: float, until_decided: bool, looks: list[dict],
                 stopped_by: str | None, rounds: int, status: int) -> int:
    """The comparison of the two sides at the last look's level, written
    (ab.txt, ab.csv) and printed."""
    try:
        cmp = compare.compare_sides(*(store.load_side([d]) for d in store.ab_sides(out)), min_change,
                                    alpha=alpha)
    except ValueError as e:
        print(f"osmeter: no comparison: {e}", file=sys.stderr)
        return status or 1
    text = compare_text(cmp)
    if until_decided and looks:
        last = looks[-1]
        why = ("because every id was decided." if last["decided"] else
               f"at {stopped_by or f'--max-rounds {rounds}'}, {last['undecided']} id(s) undecided.")
        text += (f"\nSequential design: {len(looks)} look(s) after rounds 2..{last['round']}, each at its increment "
                 f"of an O'Brien-Fleming-type alpha spending function (overall 5%); stopped "
                 + why + f" This table is the last look's (level {alpha:.4f}).")
        text += undecided_text(cmp)
    write_text_atomic(out / store.AB_TEXT, text + "\n")
    write_text_atomic(out / store.AB_CSV, to_csv(cmp))
    print()
    print(text)
    print(f"\nosmeter: runs in {' and '.join(map(str, store.ab_sides(out)))}; this table in {out / store.AB_TEXT} "
          f"and {store.AB_CSV}")
    return status


def undecided_text(c) -> str:
    """Each id still undecided, with its smallest detectable change now and
    at DESIGNS runs a side: what more rounds would decide."""
    rows = [r for r in c.rows if r.verdict not in DECIDED]
    if not rows:
        return ""
    designs = "/".join(map(str, DESIGNS))
    out = [f"\nStill undecided at {c.min_change:.0%} (smallest detectable change: these runs / {designs} runs a side):"]
    out += [f"  {r.id}: {detectable_text(r)}" + (f"; {verdict_text(r)}" if r.runs_needed else "")
            for r in sorted(rows, key=lambda r: -r.detectable if r.detectable == r.detectable else 0)]
    return "\n".join(out)


def _look(out, min_change: float, alpha: float) -> dict:
    """One look of the sequential design at the runs so far."""
    try:
        c = compare.compare_sides(*(store.load_side([d]) for d in store.ab_sides(out)), min_change,
                                  alpha=alpha, sensitivity=False)
    except ValueError as e:
        return {"decided": False, "undecided": None, "text": f"no comparison yet ({e})"}
    undecided = [r.id for r in c.rows if r.verdict not in DECIDED]
    tally = ", ".join(f"{n} {v}" for v, n in counts(c.rows).items())
    return {"decided": decided(c), "undecided": len(undecided), "counts": counts(c.rows),
            "text": tally + ("; every id decided" if not undecided else f"; {len(undecided)} undecided")}


def _sequential_doc(looks: list[dict], rounds: int) -> dict:
    return {"max_rounds": rounds, "spending": "Lan-DeMets O'Brien-Fleming type, overall alpha 0.05",
            "looks": [{k: v for k, v in lk.items() if k != "text"} for lk in looks]}
