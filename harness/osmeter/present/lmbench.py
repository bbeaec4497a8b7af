"""lmbench's summary tables (what `make results; make see` prints), each row
an osmeter id, in lmbench's order and groups: the one place that says which
id stands for which lmbench row. `osmeter list --lmbench` prints it; the
report's "lmbench summary" table fills it from a run (present.rows.lmbench_rows).

A row is (label, id) or (label, id, (processes, KiB)) for a point of the
context-switch matrix."""
from __future__ import annotations

# (table title, unit the figures are shown in, rows)
TABLES: tuple[tuple[str, str, tuple[tuple, ...]], ...] = (
    ("Basic system parameters", "", (
        ("Mhz", "cpu.clock"),
        ("mem par", "mem.par"),
    )),
    ("Processor, processes", "us", (
        ("null call", "cpu.syscall.getppid.libc"),
        ("null I/O", "cpu.syscall.null_io"),
        ("stat", "fs.stat"),
        ("open clos", "fs.open_close"),
        ("slct TCP", "cpu.select.tcp"),
        ("sig inst", "cpu.signal.install.old"),
        ("sig hndl", "cpu.signal.catch"),
        ("fork proc", "cpu.proc_create_wait"),
        ("exec proc", "cpu.proc_exec"),
        ("sh proc", "cpu.proc_sh"),
    )),
    ("Basic integer operations", "ns", tuple(
        (f"int{o}", f"cpu.ops.int.{o}") for o in ("bit", "add", "mul", "div", "mod"))),
    ("Basic float operations", "ns", tuple(
        (f"f{o}", f"cpu.ops.float.{o}") for o in ("add", "mul", "div"))),
    ("Basic double operations", "ns", tuple(
        (f"d{o}", f"cpu.ops.double.{o}") for o in ("add", "mul", "div"))),
    ("Context switching", "us", tuple(
        (f"{p}p/{k}K", "cpu.ctx.matrix", (p, k))
        for p, k in ((2, 0), (2, 16), (2, 64), (8, 16), (8, 64), (16, 16), (16, 64)))),
    ("Local communication latencies", "us", (
        ("2p/0K ctxsw", "cpu.ctx.matrix", (2, 0)),
        ("Pipe", "net.rtt.pipe"),
        ("AF UNIX", "net.rtt.unix"),
        ("UDP", "net.rtt.udp.loopback"),
        ("TCP", "net.rtt.tcp.loopback"),
        ("TCP conn", "net.connect.loopback"),
    )),
    ("File and VM system latencies", "us", (
        ("0K File Create", "fs.create.0k"),
        ("0K File Delete", "fs.delete.0k"),
        ("10K File Create", "fs.create.10k"),
        ("10K File Delete", "fs.delete.10k"),
        ("Mmap Latency", "mem.mmap"),
        ("Prot Fault", "mem.protfault.less_catch"),
        ("Page Fault", "mem.pagefault.major"),
        ("100fd selct", "cpu.select.file"),
    )),
    ("Local communication bandwidths", "MB/s", (
        ("Pipe", "net.bw.pipe"),
        ("AF UNIX", "net.bw.unix"),
        ("TCP", "net.bw.tcp.loopback"),
        ("File reread", "fs.reread"),
        ("Mmap reread", "fs.mmap_reread"),
        ("Bcopy (libc)", "mem.bw.copy"),
        ("Bcopy (hand)", "mem.bw.copy.loop"),
        ("Mem read", "mem.bw.read"),
        ("Mem write", "mem.bw.write"),
    )),
    ("Memory latencies", "ns", (
        ("Mhz", "cpu.clock"),
        ("L1 $", "mem.lat.l1"),
        ("L2 $", "mem.lat.l2"),
        ("Main mem", "mem.lat.stride"),
        ("Rand mem", "mem.lat.dram"),
    )),
    ("Beyond lmbench", "ns", (
        ("loaded latency, heaviest load", "mem.lat.loaded"),
    )),
)


def ids() -> list[str]:
    """Every id the tables name, in table order, each once."""
    seen: list[str] = []
    for _, _, rows in TABLES:
        for r in rows:
            if r[1] not in seen:
                seen.append(r[1])
    return seen


def _per_file(m: dict) -> float | None:
    """files/s -> us per file (lmbench's file table is in us)."""
    v = m.get("median")
    return 1e6 / v if v else None


def value(m: dict, row: tuple, quote: str = "median") -> float | None:
    """A row's figure from its id's measurement in a results document, in
    the table's unit: us or ns for times (osmeter's ns divided as needed by
    the caller), MB/s, MHz, loads. A matrix point comes from the series."""
    if len(row) > 2:
        s = m.get("series") or {}
        procs = (m.get("params") or {}).get("processes") or []
        p, k = row[2]
        for pp, x, v in zip(procs, s.get("x", []), s.get("median", [])):
            if pp == p and int(x) == k * 1024:
                return v
        return None
    if m.get("unit") == "files/s":
        return _per_file(m) * 1e3 if _per_file(m) else None  # in ns, as the other times
    v = m.get(quote)
    return v if isinstance(v, (int, float)) else m.get("median")
