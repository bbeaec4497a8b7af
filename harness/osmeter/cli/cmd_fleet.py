"""`osmeter fleet run | load`: the suite, or one load, on several machines over
ssh (fleet/)."""
from __future__ import annotations

import math
import sys
from pathlib import Path

from osmeter.cli.common import Parser
from osmeter.core.errors import RunError
from osmeter.fleet.slurm import SlurmRequest
from osmeter.results import store
from osmeter.running import runopts


def main(args) -> int:
    from osmeter import fleet
    from osmeter.core.tree import repo_root

    root = repo_root()
    req = SlurmRequest(args.partition, args.nodes, args.time_limit, args.account)
    if bool(args.hosts) == bool(args.slurm):
        raise RunError("give --hosts H1,H2,... (over ssh) or --slurm (the nodes of a Slurm allocation), one of them")
    if not args.slurm and req.given():
        raise RunError(f"{', '.join(req.given())}: for --slurm only")
    if args.nodes is not None and args.nodes < 1:
        raise RunError("--nodes: expected 1 or more")
    if not args.slurm:
        return _main(args, root, fleet.parse_hosts(args.hosts), None)
    if args.fleet_cmd == "run" and args.python:
        raise RunError("--slurm runs thin hosts (the harness here, the probes on the nodes): it takes no --python")
    import os

    from osmeter.fleet.slurm import allocation, planned_limit

    if req.partition and not req.time_limit and not os.environ.get("SLURM_JOB_ID"):
        req.time_limit = planned_limit(_planned_seconds(args))
        print(f"fleet: the job's time limit: {req.time_limit} min (twice the planned work, and the tree shipped and "
              "built first; --time-limit to give another)", file=sys.stderr, flush=True)
    with allocation(req, lambda m: print(m, file=sys.stderr, flush=True)) as alloc:
        return _main(args, root, alloc.hosts(), {"slurm": alloc.record()})


def _planned_seconds(args) -> float:
    """How long the work asked of each node should take: fleet load's start,
    ramp and time; fleet run's probes' budgets (as a run announces them),
    times its runs."""
    if args.fleet_cmd != "run":
        return float(args.start_in) + float(args.ramp) + float(args.time)
    from osmeter.probes import registry
    values = runopts.fleet_values(args)
    patterns = values.get("patterns")
    try:
        chosen = registry.select(patterns or None, values.get("preset") or "quick")
    except registry.SelectionError as e:
        raise RunError(str(e)) from None
    preset = values.get("preset") or "quick"
    return sum(p.expect.get(preset, 0.5) for p, _ in chosen) * (values.get("runs") or 1)


def _main(args, root: Path, hosts, launcher: dict | None) -> int:
    from osmeter import fleet

    stamp = fleet.stamp()
    if args.fleet_cmd == "run":
        out = args.out or root / "results" / f"fleet-{stamp}"
        return fleet.fleet_run(hosts, out, runopts.fleet_values(args), args.parallel, args.dirty, args.python, root,
                               launcher)
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
        return fleet.fleet_net(hosts, out, args.net, args.time, args.parallel, args.dirty, root, args.start_in,
                               launcher)
    if not args.target:
        raise RunError("fleet load needs --target PATH (a file or device on each host), or --net SERVER")
    iogen_args = ["--workload", args.workload, "--target", args.target, "--time", f"{args.time:g}",
                  "--ramp", f"{args.ramp:g}"]
    for flag, v in (("--qd", args.qd), ("--workers", args.workers), ("--size", args.size)):
        if v is not None:
            iogen_args += [flag, str(v)]
    opts = {"iogen_args": iogen_args}
    return fleet.fleet_load(hosts, out, opts, args.parallel, args.dirty, root, args.start_in, args.log,
                            args.interval or 1.0, launcher)


NAME = "fleet"


def add_parser(sub) -> None:
    fl = sub.add_parser("fleet", help="the suite on several machines over ssh, or one load from all of them",
                        description="Drives other machines over OpenSSH (BatchMode: your keys, agent and "
                                    "~/.ssh/config; OSMETER_SSH_CONFIG=FILE for another config). A host is "
                                    "USER@HOST, HOST, or local (this machine, this tree).")
    fsub = fl.add_subparsers(dest="fleet_cmd", required=True, parser_class=Parser)
    fr = fsub.add_parser("run", help="ship this tree to every host, build, run the probes there, results here",
                         description="Each host gets the source (git HEAD, or the working tree with --dirty) in "
                                     "~/.osmeter-fleet/ and builds it with make; then `osmeter run --on HOST` here "
                                     "starts each probe there through agent.py (the host needs a C compiler, make "
                                     "and Python 3.8+ with its standard library only), and its results land in "
                                     f"DIR/<host>/; DIR/{store.FLEET} indexes them. With --python the whole `osmeter "
                                     "run` runs there instead. Compare with `osmeter compare DIR`.")
    fr.add_argument("--hosts", metavar="H1,H2", help="USER@HOST,... (local: this machine)")
    _slurm_args(fr)
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
    fo.add_argument("--hosts", metavar="H1,H2", help="USER@HOST,... (local: this machine)")
    _slurm_args(fo)
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


def _slurm_args(p) -> None:
    p.add_argument("--slurm", action="store_true",
                   help="the hosts are the nodes of a Slurm allocation, each reached by srun (one step per node, "
                        "the whole node): the current one inside salloc or sbatch, else a job submitted with "
                        "--partition and cancelled at the end")
    p.add_argument("--partition", metavar="P", help="(--slurm, outside an allocation) the partition to submit to")
    p.add_argument("--nodes", type=int, metavar="N", help="(--slurm, outside an allocation) nodes to ask for "
                   "(default 1)")
    p.add_argument("--time-limit", metavar="T", help="(--slurm, outside an allocation) the job's time limit, "
                   "in Slurm's forms (MM, HH:MM:SS, D-HH)")
    p.add_argument("--account", metavar="A", help="(--slurm, outside an allocation) the account to charge")
