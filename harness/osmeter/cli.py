"""Command line: ./osmeter list | run."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import registry
from .runner import RunError, RunOptions, run


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # exit 2 with a one-line reason and a hint
        self.print_usage(sys.stderr)
        print(f"osmeter: error: {message}", file=sys.stderr)
        sys.exit(2)


def _cpu(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a CPU number, got {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected a CPU number, got {text!r}")
    return v


def _patterns(text: str) -> list[str]:
    pats = [p.strip() for p in text.split(",") if p.strip()]
    if not pats:
        raise argparse.ArgumentTypeError("expected ids or patterns such as cpu.* or cpu.call")
    return pats


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="osmeter", description="Microbenchmarks of this machine's hardware and OS.")
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=_Parser)

    ls = sub.add_parser("list", help="every measurement id with its unit and description")
    ls.add_argument("--preset", choices=registry.PRESETS, help="only ids that run in this preset")
    ls.add_argument("--methodology", action="store_true", help="also print how each probe measures")

    r = sub.add_parser("run", help="run probes and write a results directory")
    r.add_argument("--preset", default="quick", choices=registry.PRESETS, help="quick (default) or full")
    r.add_argument("--probes", type=_patterns, metavar="ID,ID", help="ids or patterns: cpu.*, cpu.call, cpu.ctx.proc")
    r.add_argument("--out", type=Path, metavar="DIR", help="results directory (default results/<host>-<UTC time>)")
    r.add_argument("--cpu", type=_cpu, metavar="N", help="CPU to pin probes to (default: the last online one)")
    r.add_argument("--no-rt", action="store_true", help="do not use SCHED_FIFO even where permitted")
    r.add_argument("--disk-target", type=Path, metavar="PATH",
                   help="file or block device for the disk probes (default: a file in the results directory)")
    r.add_argument("--disk-size", metavar="SIZE", help="region of the disk target (default 256M quick, 1G full)")
    r.add_argument("--peer", metavar="HOST:PORT", help="a running netpeer: adds the .remote network ids")
    r.add_argument("--remote", metavar="USER@HOST", help="copy netpeer there over ssh, start it, and measure against it")
    r.add_argument("--fs-dir", type=Path, metavar="DIR", help="where the file-system probes make their files "
                   "(default: the results directory)")
    r.add_argument("--fs-remote", type=Path, metavar="DIR", help="a directory on an NFS/sshfs/FUSE mount: "
                   "adds fs.read.seq.remote and fs.read.rand.remote")
    return ap


def cmd_list(args) -> int:
    for p in registry.PROBES:
        if args.preset and args.preset not in p.presets:
            continue
        for m in p.measures:
            print(f"{m.id:<28} {m.unit:<6} {m.description}")
        if args.methodology:
            print(f"  [{p.name}: {p.binary}] {p.methodology}\n")
    for d in registry.DERIVED:
        print(f"{d.measure.id:<28} {d.measure.unit:<6} {d.measure.description} (derived)")
        if args.methodology:
            print(f"  [from {', '.join(d.inputs)}] {d.methodology}\n")
    return 0


def cmd_run(args) -> int:
    opts = RunOptions(preset=args.preset, patterns=args.probes, out=args.out, cpu=args.cpu, rt=not args.no_rt,
                      disk_target=args.disk_target, disk_size=args.disk_size, peer=args.peer, remote=args.remote,
                      fs_dir=args.fs_dir, fs_remote=args.fs_remote)
    return run(opts)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return {"list": cmd_list, "run": cmd_run}[args.cmd](args)
    except RunError as e:
        print(f"osmeter: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
