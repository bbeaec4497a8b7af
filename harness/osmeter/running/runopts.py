"""The options of a run, declared once.

Each row of OPTIONS is one option: its name (a RunOptions field, or for
--seed and --runs the argument the command hands on itself), its
command-line spelling, how its text becomes a value (type, choices), its
default, its help, the commands that take it ("fleet": fleet run takes it
and passes it on to every host's `osmeter run`), whether campaign.json
records it, and a command's own help where that differs. From the table
come:

    add_to(parser, command)  the options of run, ab and fleet run (argparse)
    RunOptions               what a run is planned from (a dataclass)
    from_args(args)          argparse's answer as RunOptions
    options_doc(opts)        the "options" campaign.json records
    fleet_values(args)       what fleet run passes on, by name (fleet.json's "options")
    run_args(values)         ... as the command line of every host's `osmeter run`

A value's text: the converters below, each a one-line reason on bad input
(argparse then exits 2).
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass, field, make_dataclass
from pathlib import Path
from typing import Callable

from osmeter.probes.model import PRESETS


def cpu_number(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a CPU number, got {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected a CPU number, got {text!r}")
    return v


def _whole(text: str, lo: int, hi: int, span: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not lo <= v <= hi:
        raise argparse.ArgumentTypeError(f"expected {span}, got {v}")
    return v


def count(text: str) -> int:
    return _whole(text, 1, 1000, "1 to 1000")


def seconds(text: str) -> int:
    return _whole(text, 1, 30 * 86400, "1 to 2592000 seconds")


def seed(text: str) -> int:
    return _whole(text, 0, 2**31 - 1, "0 to 2^31-1")


def patterns(text: str) -> list[str]:
    pats = [p.strip() for p in text.split(",") if p.strip()]
    if not pats:
        raise argparse.ArgumentTypeError("expected ids or patterns such as cpu.* or cpu.call")
    return pats


@dataclass(frozen=True)
class Opt:
    name: str                        # the RunOptions field (argparse's dest)
    flag: str                        # its spelling on the command line
    help: str
    default: object = None
    type: Callable[[str], object] | None = None  # text -> value
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    switch: bool = False             # takes no value: given, the value is `not default`
    commands: tuple[str, ...] = ("run", "ab")    # "fleet": fleet run takes it and passes it on
    is_field: bool = True            # a RunOptions field (else the command hands it on: --seed, --runs)
    recorded: bool = True            # a field campaign.json's "options" records
    helps: dict[str, str] = field(default_factory=dict)  # a command's own help

    def help_for(self, command: str) -> str:
        return self.helps.get(command, self.help)


ALL = ("run", "ab", "fleet")

OPTIONS: tuple[Opt, ...] = (
    Opt("preset", "--preset", "quick (default) or full", default="quick", choices=PRESETS, commands=ALL),
    Opt("patterns", "--probes", "ids or patterns: cpu.*, cpu.call, cpu.ctx.proc", type=patterns, metavar="ID,ID",
        commands=ALL, helps={"fleet": "ids or patterns: cpu.*, cpu.call"}),
    Opt("cpu", "--cpu", "CPU to pin probes to (default: the last online one)", type=cpu_number, metavar="N",
        commands=ALL, helps={"fleet": "CPU to pin probes to on every host"}),
    Opt("rt", "--no-rt", "do not use SCHED_FIFO even where permitted", default=True, switch=True, commands=ALL),
    Opt("timer", "--timer", "the probes' timer: tsc (the fenced TSC, or the aarch64 counter; default) or clock "
        "(clock_gettime, ns): the fallback where there is no invariant TSC", default="tsc", choices=("tsc", "clock"),
        commands=ALL, helps={"fleet": "the probes' timer on every host"}),
    Opt("disk_target", "--disk-target", "file or block device for the disk probes (default: a file in the results "
        "directory)", type=Path, metavar="PATH"),
    Opt("disk_size", "--disk-size", "region of the disk target (default 256M quick, 1G full)", metavar="SIZE"),
    Opt("allow_destroy_data", "--allow-destroy-data", "let the disk probes write to a block device given as "
        "--disk-target (its data is lost; still refused while it is mounted or holds a file-system signature)",
        default=False, switch=True),
    Opt("peer", "--peer", "a running netpeer: adds the .remote network ids", metavar="HOST:PORT"),
    Opt("remote", "--remote", "copy netpeer there over ssh, start it, and measure against it", metavar="USER@HOST"),
    Opt("remote_cpu", "--remote-cpu", "pin the netpeer that --remote starts to CPU N there (as netperf's -T ,N); "
        "default: wherever its scheduler puts it", type=cpu_number, metavar="N"),
    Opt("fs_dir", "--fs-dir", "where the file-system probes make their files (default: the results directory)",
        type=Path, metavar="DIR"),
    Opt("fs_remote", "--fs-remote", "a directory on an NFS/sshfs/FUSE mount: adds fs.read.seq.remote and "
        "fs.read.rand.remote", type=Path, metavar="DIR"),
    Opt("app_trace", "--app-trace", "a trace iotrace recorded (docs/iotrace.md): replayed as the app.* ids, the "
        "application's own I/O as a measurement", type=Path, metavar="TRACE"),
    Opt("app_launcher", "--app-launcher", "the MPI launcher a trace recorded under MPI is replayed under, with as "
        "many ranks as it recorded (for example \"mpirun -np 4 --host a,b\")", metavar="\"MPIRUN ARGS\""),
    Opt("app_timeout", "--app-timeout", "each replay of --app-trace ended after so many seconds, with where it "
        "waited (iotrace replay --timeout; default: a minute and ten times the trace's recorded time)",
        type=seconds, metavar="S"),
    Opt("app_dir", "--app-dir", "where the replay of --app-trace makes its files (a directory of its own inside; "
        "default: the results directory), removed after the run", type=Path, metavar="DIR"),
    Opt("history", "--no-history", "do not add the run (or the campaign's runs) to the history database "
        "(osmeter history; $OSMETER_HISTORY, default results/history.sqlite)", default=True, switch=True,
        commands=("run",)),
    Opt("kernel_paths", "--kernel-paths", "(root, or tracefs access) after each probe's timed processes, run it "
        "once more with the kernel's tracer on and split each sample's time into user, system calls, interrupts, "
        "softirqs, page faults and time off the CPU: results.json's kernel_paths per id (the timed figures never "
        "come from the traced run); without the privilege, says why and runs the rest", default=False, switch=True),
    Opt("no_halt", "--no-halt", "keep the CPUs out of halt for the run (an idle vCPU halts, and the host's resume of "
        "it lands in the next wake-up or round trip): a 0 us CPU latency request where the cpuidle governor honours "
        "it, else a SCHED_IDLE busy loop on each CPU; checked by the cpuidle halt counters, undone at the end "
        "(also on Ctrl-C or a kill); conditions.no_halt says how", default=False, switch=True),
    Opt("disk_ram", "--disk-ram", "(root) the disk probes on a RAM-backed loop device osmeter makes for the run (a "
        "file in /dev/shm, --disk-size of it) and removes after it: the kernel's block path without the host's "
        "storage; conditions.disk_target.ram says so", default=False, switch=True),
    Opt("fs_scratch", "--fs-scratch", "(root) fs.create and fs.delete on a fresh ext4 that osmeter makes on a "
        "RAM-backed loop device, mounts for the run and removes: the file system's own path, not the state of "
        "your disk's; conditions.fs_scratch says so", default=False, switch=True),
    Opt("out", "--out", "results directory (default results/<host>-<UTC time>)", type=Path, metavar="DIR",
        recorded=False, helps={"ab": "where DIR/a and DIR/b go (default results/<host>-<time>-ab)"}),
    Opt("runs", "--runs", "N complete runs into one campaign directory (DIR/run-01 ...), each in a shuffled order "
        "and bracketed by sentinel ids: what `compare` needs to tell a change from drift", type=count, metavar="N",
        commands=("run", "fleet"), is_field=False, helps={"fleet": "a campaign of N runs on each host"}),
    Opt("seed", "--seed", "seed of the probe order shuffle (and of ab's round order); default: drawn and recorded",
        type=seed, metavar="N", commands=ALL, is_field=False,
        helps={"fleet": "seed of the probe order shuffle"}),
    Opt("on", "--on", "measure that host (a thin fleet host): the probes run there, started over ssh (or srun, "
        "for slurm:NODE of the current allocation) by agent.py (Python's standard library only), the harness and the "
        "results stay here", metavar="USER@HOST",
        commands=("run",)),
    Opt("on_tree", "--on-tree", "with --on: the osmeter tree built there (fleet run ships it)", metavar="DIR",
        commands=("run",), recorded=False),
    Opt("isolate", "--isolate", "(root) for the run, move other tasks and IRQs off the pinned CPU, take its SMT "
        "siblings offline and boost off, where the machine allows; all restored afterwards (also on Ctrl-C); what "
        "was done and what could not be, with why, goes to conditions.isolation", default=False, switch=True,
        commands=("run",)),
)

# RunOptions fields that are no option: what to run and from where (tests pass their own)
NOT_OPTIONS = (("probes", "tuple | None"),    # default registry.PROBES
               ("derived", "tuple | None"),   # default registry.DERIVED
               ("bin_dir", "Path | None"))    # default <repository>/build/bin


def _hint(o: Opt) -> str:
    if o.switch:
        return "bool"
    kind = o.type.__name__ if isinstance(o.type, type) else o.type.__annotations__["return"] if o.type else "str"
    return kind if o.default is not None else f"{kind} | None"


RunOptions = make_dataclass(
    "RunOptions",
    [(o.name, _hint(o), field(default=o.default)) for o in OPTIONS if o.is_field]
    + [(name, hint, field(default=None)) for name, hint in NOT_OPTIONS],
    namespace={"__module__": __name__,
               "__doc__": "A run's request: a field per row of runopts.OPTIONS, and what to run from where."})


def add_to(parser: argparse.ArgumentParser, command: str) -> None:
    """The run options `command` (run, ab or fleet) takes."""
    for o in OPTIONS:
        if command not in o.commands:
            continue
        if o.switch:
            parser.add_argument(o.flag, dest=o.name, action="store_false" if o.default else "store_true",
                                help=o.help_for(command))
        else:
            parser.add_argument(o.flag, dest=o.name, default=o.default, type=o.type, choices=o.choices,
                                metavar=o.metavar, help=o.help_for(command))


def from_args(args: argparse.Namespace) -> RunOptions:
    """The RunOptions of a parsed command line; an option the command does
    not take has its default."""
    return RunOptions(**{o.name: getattr(args, o.name, o.default) for o in OPTIONS if o.is_field})


def options_doc(opts: RunOptions) -> dict:
    """What campaign.json records of a run's options (a path as text)."""
    return {o.name: (str(v) if isinstance(v, Path) else v)
            for o in OPTIONS if o.is_field and o.recorded for v in (getattr(opts, o.name),)}


def fleet_values(args: argparse.Namespace) -> dict:
    """The options fleet run passes on, by name, as it was given them."""
    return {o.name: getattr(args, o.name) for o in OPTIONS if "fleet" in o.commands}


def run_args(values: dict) -> list[str]:
    """The `osmeter run` command line that passes `values` (fleet_values) on:
    every option fleet run passes that is set (a switch: that differs from
    its default)."""
    out: list[str] = []
    for o in OPTIONS:
        if "fleet" not in o.commands:
            continue
        v = values.get(o.name, o.default)
        if o.switch:
            out += [o.flag] if v != o.default else []
        elif v is not None:
            out += [o.flag, ",".join(v) if isinstance(v, list) else str(v)]
    return out
