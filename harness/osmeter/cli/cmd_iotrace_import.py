"""`osmeter iotrace-import LOG --out TRACE`: a Darshan log's DXT records as an iotrace trace (what `iotrace
import` runs; docs/iotrace.md, "Importing a Darshan log")."""
from __future__ import annotations

import sys
from pathlib import Path

from osmeter.core.errors import RunError

NAME = "iotrace-import"


def main(args) -> int:
    from osmeter.apptrace.darshan import read_log
    from osmeter.apptrace.totrace import build, lines
    from osmeter.results.writer import write_atomic

    out = Path(args.out)
    if not out.parent.is_dir():
        raise RunError(f"--out {out}: its directory does not exist")
    log = read_log(Path(args.log))
    try:
        rows, notes, mpi = build(log)
    except ValueError as e:
        raise RunError(f"{args.log}: {e}") from None

    def write(f):
        for line in lines(rows, notes, mpi):
            f.write(line.encode("utf-8", "surrogateescape"))

    write_atomic(out, write, binary=True)
    ranks = len({r.rank for r in rows})
    kind = f"an MPI trace of {log.nprocs} ranks" if mpi else f"a POSIX trace of {ranks} processes"
    print(f"iotrace import: {len(log.accesses)} DXT calls of {log.path.name} as {len(rows)} rows, {kind}, "
          f"in {out}" + (f"; partial: {', '.join(log.partial)} (the trace ends where DXT's buffer did)"
                        if log.partial else ""), file=sys.stderr)
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser(NAME, help="a Darshan log's DXT records (POSIX and MPI-IO, every rank) as an iotrace trace")
    p.add_argument("log", type=Path, metavar="DARSHAN_LOG")
    p.add_argument("--out", required=True, type=Path, metavar="TRACE", help="the trace to write (replaced whole)")
