"""`osmeter ab`: randomized, interleaved before/after runs of a setting a
command can switch (running/ab.py runs them)."""
from __future__ import annotations

from osmeter.cli.common import fraction, minutes
from osmeter.core.errors import RunError
from osmeter.core.stats import MIN_CHANGE
from osmeter.running import runopts
from osmeter.running.runopts import count


def main(args) -> int:
    from osmeter.running.ab import run_ab

    if args.until_decided:
        if args.rounds:
            raise RunError("--until-decided adds rounds up to --max-rounds: give --max-rounds, not --rounds")
        rounds = args.max_rounds or 8
        if rounds < 2:
            raise RunError("--max-rounds: a sequential design needs 2 or more")
    else:
        if args.max_rounds:
            raise RunError("--max-rounds goes with --until-decided")
        if not args.rounds:
            raise RunError("give --rounds N (or --until-decided with --max-rounds N)")
        rounds = args.rounds
    if args.max_minutes is not None and not args.until_decided:
        raise RunError("--max-minutes goes with --until-decided")
    return run_ab(runopts.from_args(args), args.a, args.b, args.restore, rounds, args.seed, args.min_change,
                  until_decided=args.until_decided, max_minutes=args.max_minutes).status


NAME = "ab"


def add_parser(sub) -> None:
    ab = sub.add_parser(
        "ab", help="randomized, interleaved before/after runs of a setting a command can switch",
        description="Each round runs A's setup command and a run, and B's setup command and a run, in a random "
                    "order, so drift hits both sides alike; then compares the sides. The runs land in DIR/a and "
                    "DIR/b (two campaigns for `osmeter compare DIR/a DIR/b`). For a change that needs a reboot, "
                    "use `osmeter run --runs N` on each side and then `osmeter compare`.")
    ab.add_argument("--a", required=True, metavar="CMD", help="shell command that sets up side A (e.g. 'true')")
    ab.add_argument("--b", required=True, metavar="CMD", help="shell command that sets up side B")
    ab.add_argument("--restore", metavar="CMD",
                    help="shell command run at the end, and on Ctrl-C or SIGTERM, to put the machine back "
                         "(default: none: nothing is restored unless you give one)")
    ab.add_argument("--rounds", type=count, metavar="N", help="rounds, one run of each side per round")
    ab.add_argument("--until-decided", action="store_true",
                    help="add rounds until every id is decided at --min-change (changed, '=' or '~'), or "
                         "--max-rounds; each look tests at its share of the 5%% (O'Brien-Fleming-type alpha "
                         "spending), so the chance of ever calling an unchanged id changed stays at 5%%")
    ab.add_argument("--max-rounds", type=count, metavar="N", help="with --until-decided: the most rounds (default 8)")
    ab.add_argument("--max-minutes", type=minutes, metavar="M",
                    help="with --until-decided: a time budget; no round starts that would end past it (the "
                         "mean round so far is the estimate)")
    ab.add_argument("--min-change", type=fraction, default=MIN_CHANGE, metavar="FRACTION",
                    help=f"smallest relative change the final comparison reports (default {MIN_CHANGE})")
    runopts.add_to(ab, "ab")
