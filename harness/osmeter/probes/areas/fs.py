"""File system: the size of the file cache, file read time against file
size below the cache (local and on a remote mount), contention between
readers, and metadata rates."""
from __future__ import annotations

import numpy as np

from osmeter.probes.model import Area, Probe, measure

AREA = Area("fs", "File system", 50)

READ_METHOD = (
    "A file of real data (made and synced first) is read in 4 KiB blocks, one whole pass per sample, "
    "timed and divided by its blocks: in order (fs.read.seq) and every block once in random order "
    "(fs.read.rand), the two taking turns. The page cache is bypassed with O_DIRECT; where the file "
    "system refuses O_DIRECT (FUSE, network file systems) the file's pages are dropped with "
    "posix_fadvise(DONTNEED) before each pass, mincore confirms it, and read-ahead stays on for the "
    "sequential pass and off for the random one. A series over file sizes; the figure is the largest size's."
)


def _read(remote: bool) -> Probe:
    sfx = ".remote" if remote else ""
    where = ("--dir", "{fs_remote}", "--remote") if remote else ("--dir", "{fs_dir}")
    return Probe(
        name=f"fs.read{sfx}", binary="fs_read",
        measures=(
            measure(f"fs.read.seq{sfx}", "ns", "time per 4 KiB block reading a file in order, below the cache (series)"),
            measure(f"fs.read.rand{sfx}", "ns", "time per 4 KiB block reading a file at random, below the cache (series)"),
        ),
        shared_method=READ_METHOD,
        methodology=" The directory is the one named with --fs-remote." if remote else "",
        presets={"quick": where + ("--sizes", "4M,16M,32M", "--samples", "2"),
                 "full": where + ("--sizes", "4M,16M,64M,256M,1G", "--samples", "3")},
        expect={"quick": 4, "full": 90},  # a local disk; a remote mount takes what its link allows
        timeout=900.0, needs="fs_remote" if remote else None,
        smoke=("--sizes", "1M"),
    )


PROBES = (
    Probe(
        name="fs.cache", binary="fs_cache",
        measures=(measure("fs.cache_size", "bytes", "size of the file cache: largest file whose second read is from memory"),),
        methodology=(
            "Files of doubling size are read twice through the page cache in 1 MiB reads, first with their "
            "pages evicted, then again. While a file fits the cache the second read runs at memory speed; "
            "past it, reading in order evicts the pages the next read needs first, so the second read goes to "
            "the device. A second read within 3x the fastest one counts as from memory; the first size that "
            "is not ends the doubling, and bisection narrows the bracket. mincore after the first read checks "
            "how much stayed resident. The search is bounded by twice the memory, half the free disk and a "
            "time limit; stopped by a bound, the figure is a lower bound (params.lower_bound). This run "
            "searched up to {param:max_size=twice the memory|bytes}. A memory cgroup's limit is a ground truth the tests check it against."
        ),
        presets={"quick": ("--dir", "{fs_dir}", "--max", "512M", "--time-limit", "20"),
                 "full": ("--dir", "{fs_dir}", "--time-limit", "300")},
        expect={"quick": 3, "full": 330},  # the full search stops at its 300 s time limit
        timeout=900.0,
        smoke=("--min", "16M", "--max", "32M"),
    ),
    _read(False),
    _read(True),
    Probe(
        name="fs.contention", binary="fs_contention",
        measures=(measure("fs.contention", "ns",
                    "time per 4 KiB block as 1, 2, 4 ... processes read their own files (series; the figure "
                    "is the most processes')"),),
        methodology=(
            "Doubling numbers of processes, from 1 up to {arg:--max-procs=8}, each read their own {arg:--size=32M} file in order, in 4 KiB blocks below the cache, "
            "all released together; a sample is one run, the mean over the processes of each one's time per "
            "block. The readers may use every CPU: the contended resource is the device."
        ),
        expect={"quick": 2, "full": 8},
        presets={"quick": ("--dir", "{fs_dir}", "--max-procs", "4", "--size", "8M", "--samples", "2"),
                 "full": ("--dir", "{fs_dir}", "--max-procs", "8", "--samples", "3")},
        timeout=900.0,
        smoke=("--max-procs", "2", "--size", "4M"),
    ),
    Probe(
        name="fs.meta", binary="fs_meta",
        measures=tuple(x for k in (0, 1, 4, 10) for x in (
            measure(f"fs.create.{k}k", "files/s", f"{k} KiB files created per second"),
            measure(f"fs.delete.{k}k", "files/s", f"{k} KiB files deleted per second"))),
        methodology=(
            "As lmbench's lat_fs: {arg:--files=1000} files of 0, 1, 4 or 10 KiB are created (open O_CREAT|O_EXCL, "
            "write, close) in a fresh directory, then deleted; a sample is one round; nothing is synced. Every "
            "round's creates come before any round's deletes: a file system may refuse to reuse an inode freed "
            "moments ago (ext4 without a journal scans past every inode freed in the last 60 s, or 6 minutes "
            "while that inode's table block is unwritten), and creates timed after the run's own deletes would "
            "time that scan. params.journal says whether the directory's ext4 has a journal; where it has none, "
            "files deleted near the directory by anything else in the last minutes, an earlier run's deletes "
            "among them, still slow the creates: compare such runs only when they are minutes apart."
        ),
        presets={"quick": ("--dir", "{meta_dir}", "--samples", "4", "--warmup", "1"), "full": ("--dir", "{meta_dir}", "--samples", "10")},
        expect={"quick": 9, "full": 14},
        timeout=300.0,
        smoke=("--files", "50"),
        processes=1,  # one process's setup (its buffers, its files) outweighs its samples
    ),
    Probe(
        name="fs.path", binary="fs_path",
        measures=(
            measure("fs.stat", "ns", "stat() of a file by its full path"),
            measure("fs.open_close", "ns", "open() and close() of a file by its full path"),
        ),
        methodology=(
            "As lmbench's lat_syscall stat and open: an empty file in a fresh directory under the "
            "test directory is stat()ed, or opened read-only and closed, by its full path; both walk "
            "the same path, so their difference is what opening adds (a file object and a "
            "descriptor, and releasing them). Batched; the two kinds' windows in turn."
        ),
        presets={"quick": ("--dir", "{fs_dir}", "--samples", "60"), "full": ("--dir", "{fs_dir}", "--samples", "300")},
    ),
    Probe(
        name="fs.reread", binary="fs_reread",
        measures=(
            measure("fs.reread", "MB/s", "rereading a cached file with read(), 64 KiB at a time, summing it"),
            measure("fs.mmap_reread", "MB/s", "rereading a cached file through a mapping, summing it"),
        ),
        methodology=(
            "As lmbench's bw_file_rd io_only and bw_mmap_rd mmap_only: a {arg:--size=64M|bytes} file is "
            "written and read once, so it is in the page cache; then one pass over it is a sample: "
            "read() into one 64 KiB buffer from the start, each piece summed word by word (eight sums "
            "at once, as a program would use the data), or the same sum over a mapping of the whole "
            "file made beforehand. The first copies out of the cache and sums the copy, the second "
            "sums the cache's own pages. MB/s is a million bytes of file per second; windows in turn. "
            "A run takes {param:processes=several} processes, interleaved with the other probes, each "
            "with a file of its own: where a file's cached pages lie is the process's."
        ),
        presets={"quick": ("--dir", "{fs_dir}", "--size", "32M", "--samples", "18"),
                 "full": ("--dir", "{fs_dir}", "--samples", "60")},
        expect={"quick": 1, "full": 4},
        # a process costs a tenth of a second (quick), and the figures vary more from one process to
        # the next than inside one (docs/notes/2026-11-27-one-process-probes.md)
        processes=6,
        smoke=("--size", "4M"),
    ),
)


# ---- figures (the report's and the notebook's; shared plot kinds in plots.py) -------------

def fs_read(doc: dict, est=None):
    """File read time per 4 KiB block against the file size, sequential
    and random, below the page cache, with the estimates."""
    from osmeter.present.plots import bytes_label, lit, measured, plt, predicted, ticker
    m = measured(doc)
    lines = [(i, m[i]) for i in ("fs.read.seq", "fs.read.rand", "fs.read.seq.remote", "fs.read.rand.remote")
             if i in m and "series" in m[i]]
    if not lines:
        return None
    fig, ax = plt.subplots()
    for i, d in lines:
        ax.plot(d["series"]["x"], np.array(d["series"]["median"]) / 1e3, "o-", ms=3, label=lit(i))
        e = predicted(est, i)
        if e:
            ax.axhline(e / 1e3, ls="-.", lw=0.8, color=ax.lines[-1].get_color())
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: bytes_label(v)))
    ax.set_xlabel("file size")
    ax.set_ylabel("time per 4 KiB block (us)")
    ax.set_title("File read time against file size (below the page cache)")
    ax.legend(fontsize=7)
    return fig


def contention(doc: dict, est=None):
    """Contention: the time per 4 KiB block each reader sees against the
    number of processes reading their own files at once."""
    from osmeter.present.plots import measured, plt, ticker
    c = measured(doc).get("fs.contention")
    if not c or "series" not in c:
        return None
    fig, ax = plt.subplots()
    ax.plot(c["series"]["x"], np.array(c["series"]["median"]) / 1e3, "o-")
    ax.set_xlabel("processes reading at once")
    ax.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
    ax.set_ylabel("time per 4 KiB block, each (us)")
    ax.set_title("Contention: readers of their own files")
    ax.set_ylim(bottom=0)
    return fig


FIGURES = (fs_read, contention)
