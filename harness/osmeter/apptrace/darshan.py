"""A Darshan log's DXT records, read with PyDarshan (the field's own reader, PyPI `darshan`): every POSIX
and MPI-IO read and write of every rank, with its file, offset, length and times, and the per-rank, per-file
byte counters the log's POSIX and MPI-IO modules keep beside them (docs/iotrace.md, "Importing a Darshan
log").

PyDarshan's C library (darshan-util) reports a damaged log on file descriptor 2 and hands back "no more
records": read through it alone, a log cut short would look like a shorter job. Its messages are taken while
the log is read, and any error among them refuses the log with the library's own words.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from osmeter.core.errors import RunError

HOW_TO_GET = "reading a Darshan log needs PyDarshan (PyPI 'darshan'): .venv/bin/pip install darshan"
DXT = {"DXT_POSIX": False, "DXT_MPIIO": True}  # module -> its rows are MPI-IO
COUNTERS = {"POSIX": ("POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN"),
            "MPI-IO": ("MPIIO_BYTES_READ", "MPIIO_BYTES_WRITTEN")}


@dataclass(frozen=True)
class Access:
    """One DXT segment: a read or write of `length` bytes at `offset` by `rank`, its times in seconds on
    that rank's clock from the job's start."""
    rank: int
    path: str
    mpi: bool
    write: bool
    offset: int
    length: int
    start: float
    end: float


@dataclass
class Log:
    path: Path
    nprocs: int
    version: str                      # the log's format version
    darshan: str                      # the Darshan library that wrote it
    exe: str
    hosts: dict[int, str]
    accesses: list[Access]
    partial: list[str]                # DXT modules whose per-process buffer filled up
    counted: dict[tuple[bool, int, str], tuple[int, int]] = field(default_factory=dict)
    # (mpi, rank or -1 for a record shared by all ranks, path) -> (bytes read, bytes written)


@contextlib.contextmanager
def _library_messages(sink: list[str]):
    """File descriptor 2 into a private temporary file while the block runs; its lines into sink."""
    with tempfile.TemporaryFile() as tmp:
        saved = os.dup(2)
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            sink += [ln.strip() for ln in tmp.read(1 << 16).decode("utf-8", "replace").splitlines() if ln.strip()]


def _backend():
    try:
        from darshan.backend import cffi_backend
    except ImportError:
        raise RunError(HOW_TO_GET) from None
    return cffi_backend


def _refused(path: Path, said: list[str]) -> RunError:
    errors = [s.removeprefix("Error:").strip().rstrip(".") for s in said if s.startswith("Error")]
    first = errors[0] if errors else "darshan-util could not open it"
    version = [e for e in errors if "expected version" in e]
    if version:
        return RunError(f"{path}: a Darshan log of a format this PyDarshan does not read ({version[0]}): a newer "
                        "Darshan wrote it? upgrade PyDarshan (pip install -U darshan)")
    if "parse log file format version" in first or "magic" in first:
        return RunError(f"{path}: not a Darshan log ({first})")
    return RunError(f"{path}: a Darshan log that cannot be read whole ({first}): truncated or damaged")


def read_log(path: Path) -> Log:
    """The log's job, hosts, DXT segments and byte counters; RunError for a file that is not a Darshan log
    PyDarshan reads whole, or one without DXT records (counters only)."""
    be = _backend()
    path = Path(path)
    if not path.is_file():
        raise RunError(f"{path}: {'no such file' if not path.exists() else 'not a regular file'}")
    said: list[str] = []
    with _library_messages(said):
        log = be.log_open(str(path))
        if log["handle"] == be.ffi.NULL:
            opened = None
        else:
            try:
                opened = _read_open(be, log, path)
            finally:
                be.log_close(log)
    if opened is None or any(s.startswith("Error") for s in said):
        raise _refused(path, said)
    return opened


def _read_open(be, log, path: Path) -> Log:
    mods = be.log_get_modules(log)
    job = be.log_get_job(log)
    names = be.log_get_name_records(log)
    if not any(m in mods for m in DXT):
        have = ", ".join(sorted(mods)) or "none"
        raise RunError(f"{path}: no DXT records (modules: {have}); Darshan traces each call only with DXT on "
                       "(DXT_ENABLE_IO_TRACE=1 in the job's environment), and counters alone cannot be replayed")
    hosts: dict[int, str] = {}
    accesses: list[Access] = []
    for mod, mpi in DXT.items():
        if mod not in mods:
            continue
        while (rec := be.log_get_dxt_record(log, mod)) is not None:
            rank, name = int(rec["rank"]), names.get(rec["id"], f"<record {rec['id']:x}>")
            hosts.setdefault(rank, rec["hostname"])
            for write, segs in ((True, rec["write_segments"]), (False, rec["read_segments"])):
                accesses += [Access(rank, name, mpi, write, int(s["offset"]), int(s["length"]),
                                    float(s["start_time"]), float(s["end_time"])) for s in segs]
    counted = {}
    for mod, (rd, wr) in COUNTERS.items():
        if mod not in mods:
            continue
        while (rec := be.log_get_record(log, mod, dtype="dict")) is not None:
            c = rec["counters"]
            key = (mod == "MPI-IO", int(rec["rank"]), names.get(rec["id"], f"<record {rec['id']:x}>"))
            counted[key] = (int(c[rd]), int(c[wr]))
    return Log(path, int(job["nprocs"]), str(job["log_ver"]), job["metadata"].get("lib_ver", "?"),
               be.log_get_exe(log), hosts, accesses, [m for m in DXT if mods.get(m, {}).get("partial_flag")],
               counted)


def byte_check(log: Log) -> list[str]:
    """Where the DXT segments' bytes differ from the log's own counters, per MPI or POSIX, rank and file (a
    counter record of rank -1, shared by every rank, against the sum over the ranks): one line each."""
    traced: dict[tuple[bool, int, str], list[int]] = {}
    shared = {(mpi, p) for (mpi, r, p) in log.counted if r == -1}
    for a in log.accesses:
        key = (a.mpi, -1 if (a.mpi, a.path) in shared else a.rank, a.path)
        traced.setdefault(key, [0, 0])[a.write] += a.length
    out = []
    for key in sorted(set(traced) | set(log.counted), key=lambda k: (k[0], k[1], k[2])):
        mpi, rank, name = key
        if (mpi and "DXT_MPIIO" not in _present(log)) or (not mpi and "DXT_POSIX" not in _present(log)):
            continue  # a module the log traced no call of: nothing to compare
        got, want = tuple(traced.get(key, (0, 0))), log.counted.get(key)
        if want is not None and got != want:
            who = "all ranks" if rank == -1 else f"rank {rank}"
            out.append(f"{'MPI-IO' if mpi else 'POSIX'} {who} {name}: DXT read {got[0]} and wrote {got[1]} bytes, "
                       f"the counters say {want[0]} and {want[1]}")
    return out


def _present(log: Log) -> set[str]:
    return {"DXT_MPIIO" if a.mpi else "DXT_POSIX" for a in log.accesses} | set(log.partial)
