"""A Darshan log's DXT segments as an iotrace trace (format 3: version 2's rows, then notes saying what the
log could not give). docs/iotrace.md, "Importing a Darshan log", states the method; this module is it.

Each rank is a process of its own (pid rank + 1). A POSIX-only log gives a POSIX trace (replayed by forking);
a log with DXT_MPIIO records an MPI trace (replayed under a launcher with as many ranks as the job had).
Per rank, per file, the same offsets and lengths in the same order at the recorded times.
"""
from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass

from osmeter.apptrace.darshan import Access, Log, byte_check

HEADER = "seq,pid,tid,call,t_start_ns,t_end_ns,fd,file,path,flags,mode,offset,bytes,ret,errno,rank,parent,args"
O_WRONLY, O_RDWR, O_CREAT = 0x1, 0x2, 0x40
MODE_CREATE, MODE_RDONLY, MODE_RDWR = 0x1, 0x2, 0x8  # MPI_MODE_*, the values both MPIs use
# order of rows that start together: definitions before the open, the open before its data, the data before the
# close, an MPI call before the POSIX calls inside it
PRIO = {"MPI_Init": 0, "MPI_Type": 1, "MPI_Comm": 1, "MPI_File_open": 2, "open": 2, "close": 7,
        "MPI_File_close": 7, "MPI_Finalize": 8}


@dataclass(slots=True)
class Row:
    t0: int
    t1: int
    rank: int
    tid: int
    call: str
    fd: int
    path: str
    flags: int = 0
    mode: int = 0
    offset: int = -1
    nbytes: int = 0
    ret: int = 0
    args: str = ""
    parent: "Row | None" = None
    seq: int = -1

    def key(self):
        return (self.t0, self.parent is not None or not self.call.startswith("MPI"), self.t1,
                PRIO.get(self.call, 5), self.rank, self.tid)


def ns(seconds: float) -> int:
    return round(seconds * 1e9)


def _esc(text: str, extra: str = "") -> str:
    """A path or args value as the format writes it: bytes below 0x20, 0x7f, ',', '"', '%' (and extra) as
    %XX."""
    out = []
    for b in text.encode("utf-8", "surrogateescape")[:4096]:
        c = chr(b)
        out.append(f"%{b:02X}" if b < 0x20 or b == 0x7f or c in ',"%' + extra else
                   c if b < 0x80 else bytes([b]).decode("latin-1"))
    return "".join(out).encode("latin-1").decode("utf-8", "surrogateescape")


def _data_row(a: Access, rank: int, tid: int, fd: int) -> Row:
    if a.mpi:
        call = "MPI_File_write_at" if a.write else "MPI_File_read_at"
        return Row(ns(a.start), ns(a.end), rank, tid, call, fd, a.path, offset=a.offset, nbytes=a.length,
                   args=f"count={a.length};dtype=t0;eoff={a.offset};moved={a.length}")
    return Row(ns(a.start), ns(a.end), rank, tid, "pwrite" if a.write else "pread", fd, a.path, offset=a.offset,
               nbytes=a.length, ret=a.length)


def _threads(accesses: list[Access], pid: int, next_tid: list[int]) -> list[int]:
    """A thread per access: the first whose last call ended by the access's start (DXT records no threads;
    calls that overlap in time cannot be one thread's)."""
    ends: list[int] = []
    tids: list[int] = []
    out = []
    for a in accesses:
        k = next((i for i, e in enumerate(ends) if e <= ns(a.start)), None)
        if k is None:
            k = len(ends)
            ends.append(0)
            tids.append(next_tid[0] if tids else pid)
            next_tid[0] += k > 0
        ends[k] = ns(a.end)
        out.append(tids[k])
    return out


def _posix_rows(rank: int, pid: int, accesses: list[Access], tids: list[int], parents: list, fd0: int) -> list[Row]:
    """The data rows of one rank's POSIX accesses (in start order), and per file (and per whether the MPI library
    made them) an open just before the first and a close just after the last, on those accesses' threads."""
    rows, groups = [], {}
    for a, tid, par in zip(accesses, tids, parents):
        g = groups.setdefault((a.path, par is not None), {"fd": fd0 + len(groups), "first": None, "last": None,
                                                          "write": False, "read": False})
        r = _data_row(a, rank, tid, g["fd"])
        r.parent = par
        rows.append(r)
        g["first"] = g["first"] or r
        if g["last"] is None or r.t1 >= g["last"].t1:
            g["last"] = r
        g["write" if a.write else "read"] = True
    for (path, _), g in groups.items():
        flags = (O_RDWR if g["read"] else O_WRONLY) | O_CREAT if g["write"] else 0
        first, last = g["first"], g["last"]
        rows.append(Row(first.t0, first.t0, rank, first.tid, "open", g["fd"], path, flags,
                        0o644 if flags & O_CREAT else 0, ret=g["fd"], parent=first.parent))
        rows.append(Row(last.t1, last.t1, rank, last.tid, "close", g["fd"], path, parent=last.parent))
    return rows


def _mpi_rows(rank: int, accesses: list[Access], read_end: dict[str, int], written: set[str]) -> list[Row]:
    """One rank's MPI-IO accesses as independent explicit-offset calls of MPI_BYTEs, on files it opens alone
    (a communicator of itself) before its first access to each and closes after its last."""
    tid = rank + 1
    rows, files = [], {}
    if not accesses:
        return rows
    t = ns(accesses[0].start)
    rows.append(Row(t, t, rank, tid, "MPI_Type", -1, "", args="id=t0;size=1;lb=0;extent=1;named=MPI_BYTE"))
    rows.append(Row(t, t, rank, tid, "MPI_Comm", -1, "", args=f"id=c0;size=1;ranks={rank}"))
    for a in accesses:
        f = files.setdefault(a.path, {"fd": len(files), "first": None, "last": None})
        r = _data_row(a, rank, tid, f["fd"])
        rows.append(r)
        f["first"] = f["first"] or r
        f["last"] = r if f["last"] is None or r.t1 >= f["last"].t1 else f["last"]
    for path, f in files.items():
        size = read_end.get(path)
        amode = (MODE_RDWR if path in written else MODE_RDONLY) if size is not None else MODE_CREATE | MODE_RDWR
        rows.append(Row(f["first"].t0, f["first"].t0, rank, tid, "MPI_File_open", f["fd"], path, amode,
                        args=f"comm=c0;size_at_open={size or 0};hints="))
        rows.append(Row(f["last"].t1, f["last"].t1, rank, tid, "MPI_File_close", f["fd"], path))
    return rows


def _inside(mpi_rows: list[Row], starts: list[int], a: Access) -> Row | None:
    """The MPI row of the same rank whose time holds the POSIX access's (the MPI library made it), else None."""
    k = bisect.bisect_right(starts, ns(a.start)) - 1
    return mpi_rows[k] if k >= 0 and mpi_rows[k].t1 >= ns(a.end) else None


def build(log: Log) -> tuple[list[Row], list[str], bool]:
    """The trace's rows, in order and numbered, its notes, and whether it is an MPI trace."""
    by_rank: dict[int, list[Access]] = defaultdict(list)
    for a in log.accesses:
        if not 0 <= a.rank < max(log.nprocs, 1):
            raise ValueError(f"a DXT record of rank {a.rank}, but the job had {log.nprocs} processes")
        by_rank[a.rank].append(a)
    mpi = any(a.mpi for a in log.accesses)
    read_end: dict[str, int] = {}
    written = set()
    for a in log.accesses:
        if a.mpi and not a.write:
            read_end[a.path] = max(read_end.get(a.path, 0), a.offset + a.length)
        elif a.mpi:
            written.add(a.path)
    rows: list[Row] = []
    next_tid = [max(log.nprocs, 1) + 1]
    extra_threads = dropped = 0
    for rank in range(max(log.nprocs, 1)) if mpi else sorted(by_rank):
        acc = sorted(by_rank.get(rank, []), key=lambda a: (a.start, a.end))
        m = [a for a in acc if a.mpi]
        p = [a for a in acc if not a.mpi]
        if "DXT_MPIIO" in log.partial and m:
            # past the rank's last MPI-IO call DXT kept, its POSIX calls on its MPI files were made inside MPI-IO
            # calls DXT did not keep: the trace ends there for that rank
            end, mine = max(a.end for a in m), {a.path for a in m}
            kept = [a for a in p if a.start <= end or a.path not in mine]
            dropped, p = dropped + len(p) - len(kept), kept
        own = _mpi_rows(rank, m, read_end, written)
        data = sorted((r for r in own if r.call.startswith("MPI_File_") and r.call.endswith("_at")),
                      key=lambda r: r.t0)
        starts = [r.t0 for r in data]
        parents = [_inside(data, starts, a) for a in p]
        tids = [rank + 1] * len(p) if mpi else _threads(p, rank + 1, next_tid)
        extra_threads += len(set(tids)) - 1 if tids else 0
        mine = own + _posix_rows(rank, rank + 1, p, tids, parents, 3)
        rows += mine
        if mpi:
            first = min((r.t0 for r in mine), default=0)
            last = max((r.t1 for r in mine), default=first)
            host = log.hosts.get(rank, "")
            rows.append(Row(first, first, rank, rank + 1, "MPI_Init", -1, "",
                            args=f"size={log.nprocs};host={_esc(host, ';=|: ')};clock_offset_ns=0"))
            rows.append(Row(last, last, rank, rank + 1, "MPI_Finalize", -1, ""))
    rows.sort(key=Row.key)
    for i, r in enumerate(rows):
        r.seq = i
    return rows, notes(log, mpi, extra_threads, dropped), mpi


def notes(log: Log, mpi: bool, extra_threads: int, dropped: int) -> list[str]:
    """What the trace says of itself: where it came from and what the log could not give."""
    out = [f"imported from the Darshan log {log.path.name} (log format {log.version}, Darshan {log.darshan}; "
           f"a job of {log.nprocs} processes: {log.exe.split(' ')[0]})",
           "DXT records reads and writes (offset, bytes moved, times), not opens, closes, seeks, syncs, failed "
           "calls or bytes asked for: each rank opens a file just before its first access to it and closes it "
           "just after its last, in no time; a read asked for the bytes it got",
           "the times are each rank's own clock from the job's start; how the ranks' clocks agree is not known",
           "process p is rank p - 1; a POSIX read or write is pread or pwrite at its offset"]
    if mpi:
        out.append("DXT has no datatypes, views, communicators or collectives: each MPI-IO access is an "
                   "independent MPI_File_read_at or MPI_File_write_at of MPI_BYTEs at its byte offset, on a file "
                   "each rank opens alone; a POSIX call of a rank inside one of its MPI-IO calls is the MPI "
                   "library's (its parent), not replayed")
    if extra_threads:
        out.append(f"DXT records no threads: calls of a rank that overlap in time were given {extra_threads} "
                   "threads beside the ranks' own")
    for mod in log.partial:
        out.append(f"{mod} is partial: the rank's DXT buffer filled up, and the trace holds the calls up to there")
    if dropped:
        out.append(f"{dropped} POSIX calls on MPI files after a rank's last MPI-IO call DXT kept are left out: "
                   "the MPI library made them inside MPI-IO calls DXT did not keep")
    diff = byte_check(log)
    out += [f"bytes not in DXT: {d}" for d in diff[:20]] + ([f"... and {len(diff) - 20} more"] if len(diff) > 20
                                                             else [])
    if not diff:
        out.append("bytes per rank and file equal the log's counters (POSIX_BYTES_*, MPIIO_BYTES_*)")
    return out


def lines(rows: list[Row], notes_: list[str], mpi: bool):
    """The trace's text, a line at a time: the version, the header, the rows, the notes. The rank column is
    -1 in a POSIX trace (replayed outside MPI; the notes say which rank each process was)."""
    yield "# iotrace 3\n"
    yield HEADER + "\n"
    ids: dict[str, int] = {}
    for r in rows:
        fid = ids.setdefault(r.path, len(ids))
        parent = r.parent.seq if r.parent is not None else -1
        yield (f"{r.seq},{r.rank + 1},{r.tid},{r.call},{r.t0},{r.t1},{r.fd},f{fid},{_esc(r.path)},{r.flags:#x},"
               f"0{r.mode:o},{r.offset},{r.nbytes},{r.ret},0,{r.rank if mpi else -1},{parent},{r.args}\n")
    for n in notes_:
        yield "# " + n.replace("\n", " ") + "\n"
