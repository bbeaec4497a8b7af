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
    r.add_argument("--estimates", type=Path, metavar="FILE", default=None,
                   help="estimates for the report (default: estimates/example.toml)")
    r.add_argument("--no-report", action="store_true", help="do not write the LaTeX report")

    rp = sub.add_parser("report", help="LaTeX report (and PDF) of a results directory, with estimates")
    rp.add_argument("dir", type=Path)
    rp.add_argument("--estimates", type=Path, metavar="FILE", help="a TOML file of estimates (estimates/example.toml)")
    rp.add_argument("--pdf", action="store_true", help="also build the PDF (latexmk or pdflatex)")

    cp = sub.add_parser("compare", help="before/after: what changed beyond noise between two runs")
    cp.add_argument("a", type=Path, metavar="DIR_A")
    cp.add_argument("b", type=Path, metavar="DIR_B")
    cp.add_argument("--csv", type=Path, metavar="FILE", help="also write the table as CSV")
    cp.add_argument("--tex", type=Path, metavar="FILE", help="also write a LaTeX section")
    cp.add_argument("--plot", type=Path, metavar="FILE", help="also draw the ratios (PNG or PDF)")
    cp.add_argument("--min-change", type=float, default=0.02, metavar="FRACTION",
                    help="smallest relative change reported (default 0.02)")

    ex = sub.add_parser("export", help="a results directory as CSV, one row per measurement")
    ex.add_argument("dir", type=Path)
    ex.add_argument("--csv", type=Path, metavar="FILE", help="write here instead of standard output")
    return ap


def _estimates(path: Path | None, required: bool):
    from .estimates import EstimateError, load
    from .runner import repo_root

    p = path or repo_root() / "estimates" / "example.toml"
    if not p.exists() and not required:
        return {}
    try:
        return load(p)
    except EstimateError as e:
        raise RunError(str(e)) from None


def cmd_report(args) -> int:
    from .latex import build_pdf, write_report
    from .runner import repo_root

    est = _estimates(args.estimates, required=args.estimates is not None)
    try:
        tex = write_report(args.dir, est, repo_root())
    except ValueError as e:
        raise RunError(str(e)) from None
    print(f"report: {tex}")
    if args.pdf:
        pdf, msg = build_pdf(tex)
        print(msg, file=sys.stdout if pdf else sys.stderr)
        return 0 if pdf else 1
    return 0


def cmd_compare(args) -> int:
    from . import compare

    try:
        rows, warnings = compare.compare_dirs(args.a, args.b, args.min_change)
    except ValueError as e:
        raise RunError(str(e)) from None
    if not rows:
        raise RunError("the two runs have no measurement id in common")
    for w in warnings:
        print(f"warning: {w}")
    if warnings:
        print()
    print(compare.table(rows))
    counts = {v: sum(r.verdict == v for r in rows) for v in ("faster", "slower", "higher", "lower", "no change")}
    print("\n" + ", ".join(f"{n} {v}" for v, n in counts.items() if n))
    print("(verdicts test the trials of one run against another's; runs on a shared machine also drift as a "
          "whole: repeat both sides before trusting a small change)")
    if args.csv:
        args.csv.write_text(compare.to_csv(rows))
    if args.tex:
        args.tex.write_text(compare.to_latex(rows, warnings, str(args.a), str(args.b)))
    if args.plot:
        compare.plot(rows, args.plot)
    return 0


def cmd_export(args) -> int:
    from .results import load, to_csv

    try:
        text = to_csv(load(args.dir))
    except ValueError as e:
        raise RunError(str(e)) from None
    if args.csv:
        args.csv.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


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
    est = None if args.no_report else _estimates(args.estimates, required=args.estimates is not None)
    opts = RunOptions(preset=args.preset, patterns=args.probes, out=args.out, cpu=args.cpu, rt=not args.no_rt,
                      disk_target=args.disk_target, disk_size=args.disk_size, peer=args.peer, remote=args.remote,
                      fs_dir=args.fs_dir, fs_remote=args.fs_remote)
    status = run(opts)
    if est is not None and opts.out_used and (opts.out_used / "results.json").exists():
        from .latex import build_pdf, write_report
        from .runner import repo_root

        tex = write_report(opts.out_used, est, repo_root())
        pdf, msg = build_pdf(tex)
        print(f"osmeter: report {tex}; {msg}")
    return status


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return {"list": cmd_list, "run": cmd_run, "report": cmd_report, "compare": cmd_compare,
                "export": cmd_export}[args.cmd](args)
    except RunError as e:
        print(f"osmeter: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
