"""`osmeter ab`: randomized, interleaved A/B runs of a setting that a command
can switch without a reboot (a sysctl, THP, a qdisc, the governor, a cgroup
limit).

Each round runs A's setup command and then a run, and B's setup command
and then a run, in an order drawn at random for the round (seeded), so slow
drift of the machine hits both sides alike. The runs land in DIR/a and
DIR/b, two campaigns that `osmeter compare DIR/a DIR/b` reads; ab prints
that comparison at the end. The restore command runs at the end, and also
when SIGINT or SIGTERM stops the rounds.
"""
from __future__ import annotations

import random
import subprocess
import sys

from .campaign import Campaign, new_seed, run_seeds
from .errors import Interrupted, RunError, shielded
from .runner import clean_stale, ResultsDir, RunOptions, default_out, execute, plan

SETUP_TIMEOUT = 600.0


def _shell(what: str, cmd: str) -> None:
    """Runs a user's setup or restore command; a failure stops the rounds."""
    print(f"osmeter: {what}: {cmd}", flush=True)
    try:
        r = subprocess.run(["/bin/sh", "-c", cmd], timeout=SETUP_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise RunError(f"{what} command did not finish within {SETUP_TIMEOUT:.0f} s: {cmd}") from None
    if r.returncode != 0:
        raise RunError(f"{what} command failed with status {r.returncode}: {cmd}")


def run_ab(opts: RunOptions, a_cmd: str, b_cmd: str, restore: str | None, rounds: int, seed: int | None = None,
           min_change: float = 0.02) -> int:
    from . import compare
    from .osmnet import peer_session

    if rounds < 1:
        raise RunError("--rounds: expected 1 or more")
    p = plan(opts, sentinels=True)
    out = opts.out or default_out(p.root, "-ab")
    opts.out_used = out
    clean_stale(out, opts)
    seed = new_seed() if seed is None else seed
    rng = random.Random(seed)
    orders = [rng.sample(("a", "b"), 2) for _ in range(rounds)]
    seeds = dict(zip("ab", (run_seeds(s, rounds) for s in (rng.getrandbits(31), rng.getrandbits(31)))))
    claims, camps = [], {}
    for side, cmd in (("a", a_cmd), ("b", b_cmd)):
        claims.append(ResultsDir(out / side, "campaign.json"))
        camps[side] = Campaign(out / side, opts, seed, rounds, side=side, setup_command=cmd, restore_command=restore,
                               design=f"ab: {rounds} rounds, random order within each round")
        camps[side].save()
    print(f"osmeter: ab, {rounds} rounds into {out} (seed {seed}); restore: {restore or 'none'}")
    status = 0
    try:
        with peer_session(opts.peer, opts.remote, p.bin_dir / "netpeer") as peer:
            p.peer = peer
            for k, order in enumerate(orders, 1):
                for side in order:
                    camp = camps[side]
                    _shell(f"round {k}/{rounds}, {side.upper()} setup", camp.doc["setup_command"])
                    run_dir, entry = camp.start_run(k, seeds[side][k - 1], round=k, position=order.index(side) + 1)
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
        for camp in camps.values():
            camp.doc["complete"] = True
    except Interrupted:
        for camp in camps.values():
            camp.doc["interrupted"] = True
        print("\nosmeter: interrupted; the finished runs are kept")
        raise
    finally:
        for camp in camps.values():
            camp.save()
        for c in claims:
            c.release()
        if restore:
            with shielded():  # a second Ctrl-C must not leave the machine half restored
                try:
                    _shell("restore", restore)
                except RunError as e:
                    print(f"osmeter: error: {e}", file=sys.stderr)
                    status = 1
    try:
        cmp = compare.compare_paths([out / "a"], [out / "b"], min_change)
    except ValueError as e:
        print(f"osmeter: no comparison: {e}", file=sys.stderr)
        return status or 1
    text = compare.text(cmp)
    (out / "compare.txt").write_text(text + "\n")
    (out / "compare.csv").write_text(compare.to_csv(cmp))
    print()
    print(text)
    print(f"\nosmeter: runs in {out}/a and {out}/b; this table in {out}/compare.txt and compare.csv")
    return status
