"""Command line: ./osmeter list | run | ab | compare | report | export | iogen-plot."""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from osmeter.core.errors import Interrupted, RunError, interruptible
from osmeter.probes import registry
from osmeter.results import store
from osmeter.running import runopts
from osmeter.running.runopts import count

SIDES = "\0--"  # stands for the `--` between the two sides of compare


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # exit 2 with a one-line reason and a hint
        self.print_usage(sys.stderr)
        print(f"osmeter: error: {message}", file=sys.stderr)
        sys.exit(2)


def _fraction(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction such as 0.02, got {text!r}") from None
    if not math.isfinite(v) or not 0 <= v < 10:
        raise argparse.ArgumentTypeError(f"expected a fraction such as 0.02 (0 or more, finite), got {text!r}")
    return v


def _minutes(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected minutes such as 30, got {text!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive, finite number of minutes, got {text!r}")
    return v


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="osmeter", description="Microbenchmarks of this machine's hardware and OS.")
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=_Parser)

    ls = sub.add_parser("list", help="every measurement id with its unit and description")
    ls.add_argument("--preset", choices=registry.PRESETS, help="only ids that run in this preset")
    ls.add_argument("--methodology", action="store_true",
                    help="also print how each probe measures, after this machine's timer and its step (measured "
                         "now by the built timer probe)")
    ls.add_argument("--lmbench", action="store_true",
                    help="lmbench's summary tables, in its order and groups, each row with its osmeter id")

    r = sub.add_parser("run", help="run probes and write a results directory (or a campaign of several runs)")
    runopts.add_to(r, "run")
    r.add_argument("--estimates", metavar="FILE|example", default=None,
                   help="estimates: a TOML file (`osmeter estimates init` writes a blank one for this machine), or 'example' "
                        "for the shipped example (one machine's guesses; the report says so); default none")
    r.add_argument("--quote", choices=("mean", "median"), default="mean",
                   help="the report's measured figure: the mean across trials, as CSE 221 asks (default), or the "
                        "median")
    r.add_argument("--no-report", action="store_true",
                   help="write neither the LaTeX report nor the executed notebook")

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
    ab.add_argument("--max-minutes", type=_minutes, metavar="M",
                    help="with --until-decided: a time budget; no round starts that would end past it (the "
                         "mean round so far is the estimate)")
    ab.add_argument("--min-change", type=_fraction, default=0.02, metavar="FRACTION",
                    help="smallest relative change the final comparison reports (default 0.02)")
    runopts.add_to(ab, "ab")

    cp = sub.add_parser(
        "compare", help="before/after: what changed beyond run-to-run drift",
        usage="osmeter compare A B [options]  |  osmeter compare A1 A2 ... -- B1 B2 ... [options]",
        description="Each side is a results directory or a campaign (all its runs); several per side are "
                    "separated by --. With several runs per side the unit of the statistics is the run.")
    cp.add_argument("dirs", type=Path, nargs="+", metavar="DIR", help="A B, or A1 A2 ... -- B1 B2 ...")
    cp.add_argument("--csv", type=Path, metavar="FILE", help="also write the table as CSV (a verdict column)")
    cp.add_argument("--tex", type=Path, metavar="FILE",
                    help="also write a LaTeX document (forest plots, conditions diff, table); PDF when LaTeX is there")
    cp.add_argument("--plot", type=Path, metavar="FILE", help="also draw every ratio with its interval (PNG, PDF, SVG)")
    cp.add_argument("--min-change", type=_fraction, default=0.02, metavar="FRACTION",
                    help="smallest relative change reported (default 0.02)")

    cp.add_argument("--baseline", metavar="HOST",
                    help="for a fleet directory: the host the others are compared with (default: the first)")

    fl = sub.add_parser("fleet", help="the suite on several machines over ssh, or one load from all of them",
                        description="Drives other machines over OpenSSH (BatchMode: your keys, agent and "
                                    "~/.ssh/config; OSMETER_SSH_CONFIG=FILE for another config). A host is "
                                    "USER@HOST, HOST, or local (this machine, this tree).")
    fsub = fl.add_subparsers(dest="fleet_cmd", required=True, parser_class=_Parser)
    fr = fsub.add_parser("run", help="ship this tree to every host, build, run the probes there, results here",
                         description="Each host gets the source (git HEAD, or the working tree with --dirty) in "
                                     "~/.osmeter-fleet/ and builds it with make; then `osmeter run --on HOST` here "
                                     "starts each probe there through agent.py (the host needs a C compiler, make "
                                     "and Python 3.8+ with its standard library only), and its results land in "
                                     f"DIR/<host>/; DIR/{store.FLEET} indexes them. With --python the whole `osmeter "
                                     "run` runs there instead. Compare with `osmeter compare DIR`.")
    fr.add_argument("--hosts", required=True, metavar="H1,H2", help="USER@HOST,... (local: this machine)")
    runopts.add_to(fr, "fleet")
    fr.add_argument("--parallel", action="store_true",
                    help="all hosts at once (only for hosts that share nothing: not VMs of one host)")
    fr.add_argument("--dirty", action="store_true", help="ship the working tree, uncommitted changes included")
    fr.add_argument("--python", metavar="PATH",
                    help="run the whole harness on the hosts with this Python 3.11+ (numpy and matplotlib "
                         "there), results fetched after (default: thin hosts, the harness here)")
    fr.add_argument("--out", type=Path, metavar="DIR", help="fleet directory (default results/fleet-<UTC time>)")
    fo = fsub.add_parser("load", help="iogen (or net_bw) on every host at once, one synchronized start, merged",
                         description="Every host runs the same workload against its own --target, all starting "
                                     "at one instant (each host's clock offset measured over ssh and reported); "
                                     "the total adds the rates and merges the latency histograms.")
    fo.add_argument("--hosts", required=True, metavar="H1,H2", help="USER@HOST,... (local: this machine)")
    fo.add_argument("--workload", default="4k-random-read", metavar="W", help="iogen workload (default 4k-random-read)")
    fo.add_argument("--target", metavar="PATH", help="file or device on each host (iogen creates a missing file); {host} in it "
                    "becomes the host's name")
    fo.add_argument("--size", metavar="BYTES", help="region on each target (iogen's --size)")
    fo.add_argument("--time", type=float, default=10.0, metavar="S", help="measured seconds (default 10)")
    fo.add_argument("--ramp", type=float, default=1.0, metavar="S", help="unrecorded seconds first (default 1)")
    fo.add_argument("--qd", type=int, metavar="N", help="queue depth per worker")
    fo.add_argument("--workers", type=int, metavar="N", help="workers per host")
    fo.add_argument("--log", action="store_true", help="also fetch every host's per-request log (iogen --log)")
    fo.add_argument("--interval", type=float, metavar="S",
                    help="every host streams its status (the load, CPU, device, packets, memory) every S seconds "
                         f"(default 1): a live table on a terminal, the series in DIR/<host>/{store.LOAD_STATUS}")
    fo.add_argument("--net", metavar="SERVER",
                    help="a network load instead: net_bw on every host against one netpeer on SERVER "
                         "(USER@HOST or local): many clients, one server")
    fo.add_argument("--start-in", type=float, default=5.0, metavar="S",
                    help="seconds from now to the common start (default 5: time to set up every host)")
    fo.add_argument("--dirty", action="store_true", help="ship the working tree, uncommitted changes included")
    fo.add_argument("--parallel", action="store_true", help="prepare (ship, build) the hosts all at once")
    fo.add_argument("--out", type=Path, metavar="DIR", help="where load.json goes (default results/load-<UTC time>)")

    rp = sub.add_parser("report", help="LaTeX report (and PDF) of a results directory, with estimates "
                                       "(of a fleet directory: the Fleet section)")
    rp.add_argument("dir", type=Path)
    rp.add_argument("--estimates", metavar="FILE|example", help="estimates: a TOML file (`osmeter estimates init` writes a blank one for this machine), or 'example' "
                        "for the shipped example (one machine's guesses; the report says so); default none")
    rp.add_argument("--quote", choices=("mean", "median"), default="mean",
                    help="the measured figure: the mean across trials, as CSE 221 asks (default), or the median")
    rp.add_argument("--pdf", action="store_true",
                    help="build the PDF, and fail when LaTeX is missing (by default it is built whenever "
                         "pdflatex or latexmk is installed)")
    rp.add_argument("--no-pdf", action="store_true", help="write the .tex and figures only")

    nbp = sub.add_parser("notebook", help="open a results directory's executed notebook in Jupyter",
                         description="Executes the notebook into DIR when it is not there yet (run does it), "
                                     "then starts Jupyter's notebook front end on DIR/notebook.ipynb. Options "
                                     "after -- go to Jupyter (e.g. -- --no-browser --port 8890).")
    nbp.add_argument("dir", type=Path, nargs="?", help="a results directory (default: the newest in results/)")
    nbp.add_argument("--estimates", metavar="FILE|example", help="estimates: a TOML file (`osmeter estimates init` writes a blank one for this machine), or 'example' "
                        "for the shipped example (one machine's guesses; the report says so); default none")
    nbp.add_argument("jupyter_args", nargs="*", help=argparse.SUPPRESS)

    es = sub.add_parser("estimates", help="estimates files: `estimates init` writes a blank one to fill in")
    esub = es.add_subparsers(dest="estimates_cmd", required=True, parser_class=_Parser)
    ei = esub.add_parser("init", help="a blank estimates file for this machine: every id (of RUN, when given) "
                                      "with its unit, empty hw/sw/total, reasoning and discussion")
    ei.add_argument("run", type=Path, nargs="?", help="a results directory: its ids only, and its core clock "
                                                      "for estimates in cycles")
    ei.add_argument("--out", type=Path, metavar="FILE", default=Path("estimates.toml"),
                    help="where to write it (default ./estimates.toml; never overwritten)")

    kt = sub.add_parser("ktimers", help="the kernel timers of a run made with --kernel-paths (/proc/ktimers-like)",
                        description="Kernel virtual timers: a named kernel path of each traced probe's threads, its "
                                    "physical time and its virtual time (interrupts, softirqs and time off the CPU "
                                    "taken out), read from the traces the run kept. Without --timer, the run's "
                                    "ktimers.txt (each system call, every system call, page faults).")
    kt.add_argument("dir", type=Path, help="a results directory of a run with --kernel-paths")
    kt.add_argument("--timer", action="append", metavar="SPEC",
                    help="syscall:NAME, syscalls, fault, or EV1..EV2 (tracepoints of a thread, e.g. "
                         "irq:softirq_entry..irq:softirq_exit); repeatable")
    kt.add_argument("--probe", metavar="NAME", help="only this traced probe (e.g. cpu.syscall)")
    ip = sub.add_parser("iogen-plot", help="figures from iogen's JSON lines: the size x queue depth heat map "
                        "(--cycle-size with --cycle-qd), throughput by offset (--zones)")
    ip.add_argument("results", type=Path, help="iogen's standard output, one JSON object per line")
    ip.add_argument("out", type=Path, help="the PNG to write (a second figure: NAME-2.png)")
    st = sub.add_parser("stability", help="run-to-run spread of every id over several runs, and per area",
                        description="Every run of the campaigns and run directories given (an A/A ab: DIR/a DIR/b) "
                                    "taken together: per id, the run-to-run CV and where its variance comes from; "
                                    "per area, the median CV, the ids at or below 2%% and the worst three.")
    st.add_argument("dirs", type=Path, nargs="+", metavar="DIR")
    ex = sub.add_parser("export", help="a results directory as CSV, one row per measurement")
    ex.add_argument("dir", type=Path)
    ex.add_argument("--csv", type=Path, metavar="FILE", help="write here instead of standard output")
    return ap


def _estimates(arg: str | None, doc: dict | None = None):
    """--estimates as a Source, checked now (a bad file fails before a run,
    not after it): none, a file, or 'example'."""
    from osmeter.core.tree import repo_root
    from osmeter.report.estimates import EstimateError, for_run, resolve

    source = resolve(arg, repo_root())
    try:
        for_run(source, doc or {"measurements": [{"id": "-", "unit": "MHz", "tsc_hz": 1e9}]})
    except EstimateError as e:
        raise RunError(str(e)) from None
    return source


def cmd_estimates(args) -> int:
    from osmeter.report.estimates import init_text
    from osmeter.results.store import load

    doc = None
    if args.run is not None:
        try:
            doc = load(store.run_dir(args.run))
        except ValueError as e:
            raise RunError(str(e)) from None
    try:
        with open(args.out, "x", encoding="utf-8") as f:  # never over a student's filled-in file
            f.write(init_text(doc))
    except FileExistsError:
        raise RunError(f"{args.out} exists: choose another --out (nothing was overwritten)") from None
    except OSError as e:
        raise RunError(f"{args.out}: cannot write it: {e.strerror}") from None
    n = len(doc["measurements"]) if doc else None
    print(f"estimates: {args.out}: " + (f"the {n} ids of {args.run}" if doc else "every id osmeter measures")
          + f"; fill in hw and sw, then ./osmeter report RUN --estimates {args.out}")
    return 0


def _write(path: Path, text: str, what: str) -> None:
    try:
        path.write_text(text)
    except OSError as e:
        raise RunError(f"{what} {path}: cannot write it: {e.strerror}") from None


def cmd_report(args) -> int:
    from osmeter.core.tree import repo_root
    from osmeter.report.latex import LATEX_HINT, build_pdf, latex_installed, write_report
    from osmeter.results.store import load

    args.dir = store.run_dir(args.dir)
    try:
        if store.is_fleet(args.dir):
            from osmeter.report.latex import write_fleet

            tex = write_fleet(args.dir, repo_root())
        else:
            tex = write_report(args.dir, _estimates(args.estimates, load(args.dir)), repo_root(), args.quote)
    except ValueError as e:
        raise RunError(str(e)) from None
    print(f"report: {tex}")
    if args.no_pdf:
        return 0
    pdf, msg = build_pdf(tex)
    if pdf is None and not args.pdf and not latex_installed():
        print(f"report: no PDF: {LATEX_HINT}")  # not an error unless --pdf asked for it
        return 0
    print(msg, file=sys.stdout if pdf else sys.stderr)
    return 0 if pdf else 1


def cmd_notebook(args) -> int:
    from osmeter.core.tree import repo_root
    from osmeter.report.notebook import open_in_jupyter

    root = repo_root()
    d = args.dir
    if d is None:
        runs = sorted((root / "results").glob("*/" + store.RESULTS), key=lambda p: p.stat().st_mtime)
        if not runs:
            raise RunError("no results directory in results/: run `make run` first, or name one")
        d = runs[-1].parent
    d = store.run_dir(d)
    if not (d / store.RESULTS).is_file():
        raise RunError(f"{d}: not a results directory (no {store.RESULTS})")
    return open_in_jupyter(d, _estimates(args.estimates), root, args.jupyter_args)


def _sides(dirs: list[Path]) -> tuple[list[Path], list[Path]]:
    marks = [k for k, d in enumerate(dirs) if str(d) == SIDES]
    if not marks:
        if len(dirs) != 2:
            raise RunError(f"compare takes two directories, A B, or several per side separated by --; got {len(dirs)}")
        return [dirs[0]], [dirs[1]]
    if len(marks) > 1:
        raise RunError("compare takes one -- between the two sides")
    a, b = dirs[:marks[0]], dirs[marks[0] + 1:]
    if not a or not b:
        raise RunError(f"side {'A' if not a else 'B'} is empty: give at least one directory on each side of --")
    return a, b


def cmd_fleet(args) -> int:
    from osmeter import fleet
    from osmeter.core.tree import repo_root

    root = repo_root()
    hosts = fleet.parse_hosts(args.hosts)
    stamp = fleet.stamp()
    if args.fleet_cmd == "run":
        out = args.out or root / "results" / f"fleet-{stamp}"
        return fleet.fleet_run(hosts, out, runopts.fleet_values(args), args.parallel, args.dirty, args.python, root)
    if not math.isfinite(args.time) or args.time <= 0 or not math.isfinite(args.ramp) or args.ramp < 0:
        raise RunError("--time must be above 0 and --ramp 0 or more")
    if not math.isfinite(args.start_in) or not 0.5 <= args.start_in <= 600:
        raise RunError("--start-in: expected 0.5 to 600 seconds")
    if args.interval is not None and (not math.isfinite(args.interval) or not 0.1 <= args.interval <= 3600):
        raise RunError("--interval: expected 0.1 to 3600 seconds")
    out = args.out or root / "results" / f"load-{stamp}"
    if args.net:
        if args.target or args.log or args.qd or args.workers or args.interval is not None:
            raise RunError("--net takes no --target, --log, --qd, --workers or --interval (those are iogen's)")
        return fleet.fleet_net(hosts, out, args.net, args.time, args.parallel, args.dirty, root, args.start_in)
    if not args.target:
        raise RunError("fleet load needs --target PATH (a file or device on each host), or --net SERVER")
    iogen_args = ["--workload", args.workload, "--target", args.target, "--time", f"{args.time:g}",
                  "--ramp", f"{args.ramp:g}"]
    for flag, v in (("--qd", args.qd), ("--workers", args.workers), ("--size", args.size)):
        if v is not None:
            iogen_args += [flag, str(v)]
    opts = {"iogen_args": iogen_args}
    return fleet.fleet_load(hosts, out, opts, args.parallel, args.dirty, root, args.start_in, args.log,
                            args.interval or 1.0)


def cmd_compare(args) -> int:
    from osmeter.analysis import compare
    from osmeter.analysis.formats.csv_table import to_csv
    from osmeter.analysis.formats.text import text as compare_text

    if len(args.dirs) == 1 and store.is_fleet(args.dirs[0]):
        from osmeter.analysis.fleet import compare_fleet, fleet_text

        if args.tex or args.plot:  # refused before anything is printed or written
            raise RunError("--tex and --plot are for two sides; for a fleet: osmeter report FLEETDIR")
        try:
            fc = compare_fleet(args.dirs[0], args.baseline, args.min_change)
        except ValueError as e:
            raise RunError(str(e)) from None
        print(fleet_text(fc))
        if args.csv:
            from osmeter.analysis.fleet import fleet_csv

            _write(args.csv, fleet_csv(fc), "--csv")
        return 0
    if args.baseline:
        raise RunError("--baseline is for a fleet directory (one with fleet.json)")
    a, b = _sides(args.dirs)
    try:
        c = compare.compare_paths(a, b, args.min_change)
    except ValueError as e:
        raise RunError(str(e)) from None
    print(compare_text(c))
    if args.csv:
        _write(args.csv, to_csv(c), "--csv")
    if args.tex:
        from osmeter.core.tree import repo_root
        from osmeter.report.latex import build_pdf, write_compare

        try:
            tex = write_compare(c, args.tex, repo_root())
        except OSError as e:
            raise RunError(f"--tex {args.tex}: cannot write it: {e.strerror}") from None
        pdf, msg = build_pdf(tex)
        print(f"compare: {tex}; {msg}")
    if args.plot:
        from osmeter.present.plots import forest, plt

        fig = forest(c.rows, "Before and after", c.min_change, c.labels)
        try:
            fig.savefig(args.plot, bbox_inches="tight")
        except (OSError, ValueError) as e:
            raise RunError(f"--plot {args.plot}: {getattr(e, 'strerror', None) or e}") from None
        finally:
            plt.close(fig)
    return 0


def cmd_ktimers(args) -> int:
    from osmeter.core.tree import repo_root
    from osmeter.ktrace import kpaths, ktimers

    traced = store.traced_probes(args.dir)
    if not traced:
        raise RunError(f"{args.dir}: no kernel-path traces ({store.RAW}/*{store.trace_file('', 'task')}): a run "
                       "made with --kernel-paths keeps them")
    if args.probe:
        if args.probe not in traced:
            raise RunError(f"--probe {args.probe}: not traced in this run (traced: {', '.join(traced)})")
        traced = [args.probe]
    if not args.timer and not args.probe and (args.dir / store.KTIMERS).exists():
        sys.stdout.write((args.dir / store.KTIMERS).read_text())
        return 0
    try:
        timers = [ktimers.parse_spec(t) for t in args.timer or []]
    except ValueError as e:
        raise RunError(str(e)) from None
    hz = _tsc_hz(args.dir)
    sections = []
    for name in traced:
        tl = kpaths.load_timelines(args.dir / store.RAW, name, repo_root())
        tids = sorted(tl.threads)
        sections.append((name, ktimers.rows(tl, timers or ktimers.default_timers(tl, tids), tids, hz)))
    sys.stdout.write(ktimers.table(sections))
    return 0


def _tsc_hz(run_dir: Path) -> float:
    """The run's TSC rate (ticks per second of the trace clock), from its measurements."""
    from osmeter.results.store import load

    try:
        doc = load(run_dir)
    except ValueError as e:
        raise RunError(str(e)) from None
    hz = next((m["tsc_hz"] for m in doc["measurements"] if m.get("tsc_hz")), None)
    if not hz:
        raise RunError(f"{run_dir}: no measurement gives the TSC rate the trace's ticks need")
    return float(hz)


def cmd_iogen_plot(args) -> int:
    import json

    from osmeter.present import plots

    try:
        objs = [json.loads(line) for line in args.results.read_text().splitlines() if line.strip()]
    except (OSError, ValueError) as e:
        print(f"osmeter: error: {args.results}: not iogen's JSON lines ({e})", file=sys.stderr)
        return 2
    figs = [f for f in (fn(objs) for fn in plots.IOGEN_FIGURES) if f is not None]
    if not figs:
        print(f"osmeter: error: {args.results}: nothing to draw (run iogen with --cycle-size and --cycle-qd, "
              "or with --zones)", file=sys.stderr)
        return 2
    for k, fig in enumerate(figs):
        out = args.out if k == 0 else args.out.with_name(f"{args.out.stem}-{k + 1}{args.out.suffix}")
        fig.savefig(out, dpi=150)
        print(out)
    return 0


def cmd_stability(args) -> int:
    from osmeter.analysis.stability import (STABILITY_HEAD, area_stability_table, core_state_table, host_params_table,
                                            stability_rows, stability_table)
    from osmeter.results.store import load_side

    try:
        runs = load_side(args.dirs)
    except ValueError as e:
        raise RunError(str(e)) from None
    if len(runs) < 2:
        raise RunError(f"{len(runs)} run: run-to-run spread needs at least two runs")
    rows = stability_rows(runs)
    extra = "".join(f"\n\n{t}" for t in (core_state_table(runs), host_params_table(runs)) if t)
    print(f"{len(runs)} runs.\n{STABILITY_HEAD}{stability_table(rows)}\n\n{area_stability_table(rows)}{extra}")
    return 0


def cmd_export(args) -> int:
    from osmeter.present.rows import to_csv
    from osmeter.results.store import load

    try:
        text = to_csv(load(args.dir))
    except ValueError as e:
        raise RunError(str(e)) from None
    if args.csv:
        _write(args.csv, text, "--csv")
    else:
        sys.stdout.write(text)
    return 0


def cmd_list(args) -> int:
    def timer_now() -> str:
        """This machine's timer and its step, measured now: the timer probe's
        calibration (one sample, a fraction of a second) states both in its
        first line's `timer` block, the step as the spacing of the
        differences of 20,000 back-to-back reads (bench/common/timing.c)."""
        import json
        import subprocess

        from osmeter.core.tree import repo_root

        binary = repo_root() / "build" / "bin" / "cpu_timer"
        if not binary.exists():
            return f"timer: not measured: the probes are not built ({binary} is missing; `make` builds them)"
        try:
            r = subprocess.run([str(binary), "--samples", "1", "--iterations", "1", "--warmup", "0"],
                               capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError) as e:
            return f"timer: not measured: {binary} did not run ({e})"
        try:
            o = json.loads(r.stdout.splitlines()[0])
            t, hz = o["timer"], o["tsc_hz"]
            res, step = t["resolution_ns"], t["step_ticks"]
        except (ValueError, IndexError, KeyError, TypeError):
            why = (r.stderr.strip().splitlines() or [f"exit {r.returncode}, no timer line"])[-1]
            return f"timer: not measured: {binary} failed ({why})"
        return (f"timer: {t['kind']}, step {res:.3g} ns = {step:g} ticks of {hz / 1e9:.4g} GHz "
                f"(measured now by {binary.name}; every batched window spans 100 steps or more)")

    if args.lmbench:
        from osmeter.present.lmbench import TABLES

        units = {m.id: m.unit for _, m in registry.all_measures()}
        for title, unit, rows in TABLES:
            print(f"{title}{f' ({unit})' if unit else ''}")
            for row in rows:
                point = f" at {row[2][0]} processes, {row[2][1]} KiB" if len(row) > 2 else ""
                print(f"  {row[0]:<16} {row[1] + point:<46} {units.get(row[1], '?')}")
        return 0
    if args.methodology:
        print(timer_now() + "\n")
    for p in registry.PROBES:
        if args.preset and args.preset not in p.presets:
            continue
        for m in p.measures:
            print(f"{m.id:<28} {m.unit:<6} {m.description}")
        if args.methodology:
            text = " ".join(t for t in (p.shared_method, p.method_text(args.preset)) if t)
            print(f"  [{p.name}: {p.binary}] {text} ({args.preset or 'quick'} preset's arguments)\n")
    for d in registry.DERIVED:
        print(f"{d.measure.id:<28} {d.measure.unit:<6} {d.measure.description} (derived)")
        if args.methodology:
            print(f"  [from {', '.join(d.inputs)}] {d.methodology}\n")
    return 0


def cmd_run(args) -> int:
    from osmeter.running.runner import run

    opts = runopts.from_args(args)
    if args.runs:
        from osmeter.running.campaign import run_campaign

        return run_campaign(opts, args.runs, args.seed).status
    est = None if args.no_report else _estimates(args.estimates)
    status, out = run(opts)
    if est is not None and (out / store.RESULTS).exists():
        from osmeter.core.tree import repo_root
        from osmeter.report.latex import build_pdf, write_report

        try:
            tex = write_report(out, est, repo_root(), args.quote)
        except ValueError as e:  # estimates in cycles this run cannot convert, say
            raise RunError(str(e)) from None
        pdf, msg = build_pdf(tex)
        print(f"osmeter: report {tex}; {msg}")
        from osmeter.report.notebook import execute

        ok, msg = execute(out, est, repo_root())
        print(f"osmeter: {msg}", file=sys.stdout if ok else sys.stderr)
        if not ok:
            status = status or 1
    return status


def cmd_ab(args) -> int:
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
    return guarded({"list": cmd_list, "run": cmd_run, "ab": cmd_ab, "report": cmd_report, "compare": cmd_compare,
                    "export": cmd_export, "iogen-plot": cmd_iogen_plot, "stability": cmd_stability,
                    "notebook": cmd_notebook, "estimates": cmd_estimates, "fleet": cmd_fleet,
                    "ktimers": cmd_ktimers}[args.cmd], args)
