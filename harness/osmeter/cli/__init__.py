"""The commands a user types, one module each with its parser (cmd_<name>.py), under the top parser and its error handling.

./osmeter list | run | ab | compare | fleet | report | notebook | estimates
| ktimers | iogen-plot | stability | export | import | history | decide | iotrace-import. A command is its module
(NAME, add_parser(sub), main(args)) and its place in COMMANDS, which is
the order of --help.
"""
from __future__ import annotations

import argparse
import sys

from osmeter.cli import (cmd_ab, cmd_compare, cmd_decide, cmd_estimates, cmd_export, cmd_fleet, cmd_history, cmd_import,
                         cmd_iogen_plot, cmd_iotrace_import, cmd_ktimers, cmd_list, cmd_notebook, cmd_report, cmd_run, cmd_stability)
from osmeter.cli.common import SIDES, Parser
from osmeter.core.errors import Interrupted, RunError, interruptible

COMMANDS = (cmd_list, cmd_run, cmd_ab, cmd_compare, cmd_fleet, cmd_report, cmd_notebook, cmd_estimates, cmd_ktimers,
            cmd_iogen_plot, cmd_stability, cmd_export, cmd_import, cmd_history, cmd_decide, cmd_iotrace_import)


def build_parser() -> argparse.ArgumentParser:
    ap = Parser(prog="osmeter", description="Microbenchmarks of this machine's hardware and OS.")
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=Parser)
    for command in COMMANDS:
        command.add_parser(sub)
    return ap


def guarded(fn, *args) -> int:
    """Runs a command: SIGINT and SIGTERM interrupt it (exit 130 and 143),
    a bad request is one line on stderr (exit 2)."""
    try:
        with interruptible():
            return fn(*args)
    except RunError as e:
        print(f"osmeter: error: {e}", file=sys.stderr)
        return 2
    except Interrupted as e:
        return e.status
    except BrokenPipeError:
        return 0
    except OSError as e:  # a full disk, a read-only file system: what was written before is intact
        where = f" ({e.filename})" if getattr(e, "filename", None) else ""
        print(f"osmeter: error: {e.strerror or e}{where}", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["compare"]:
        argv = [SIDES if a == "--" else a for a in argv]
    args = build_parser().parse_args(argv)
    fn = {command.NAME: command.main for command in COMMANDS}[args.cmd]
    return guarded(_after_dead_runs_undone(fn) if args.cmd in RECOVER_FIRST else fn, args)


# the commands that measure, or read runs a dead run's state would have spoilt: what a killed run left on the
# machine (tracing instances, an isolated CPU) is undone first (running/recover.py); decide undoes it itself,
# its failure an exit git bisect reads as "stop", never the 2 or 1 of a bad commit
RECOVER_FIRST = ("run", "ab", "fleet", "report")


def _after_dead_runs_undone(fn):
    def go(args):
        from osmeter.running.recover import undo_dead_runs

        # a run with --isolate or --kernel-paths undoes that kind itself, under its own lock, and records it
        undo_dead_runs(skip={kind for kind, flag in (("isolate", "isolate"), ("kernel-paths", "kernel_paths"))
                             if getattr(args, flag, False)})
        return fn(args)
    return go
