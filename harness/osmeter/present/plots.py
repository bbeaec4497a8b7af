"""The plot kinds several areas and commands share: the style (one text
width, one font size), the helpers area figures draw with, tail ECDFs,
kernel-path breakdowns, the forest plot, the size x depth heat map and the
zones plot (also iogen-plot's). Each area's own figures are in its module,
probes/areas/<area>.py (FIGURES). A figure function takes a results document (and
estimates where it can draw them) and returns a matplotlib Figure, or None
when the run lacks the data; its docstring's first paragraph is its caption."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.patches  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker as ticker  # noqa: E402
import numpy as np  # noqa: E402

from osmeter.core.stats import MIN_CHANGE  # noqa: E402

# Every figure is drawn at the report's text width (A4, 2.2 cm margins: 16.6 cm) and set at its own size,
# never scaled, so one font size (font.size, in points) holds on every page; the layout engine keeps the
# figure at exactly that width
TEXT_WIDTH_IN = 6.4
plt.rcParams.update({"figure.figsize": (TEXT_WIDTH_IN, 3.6), "axes.grid": True, "grid.alpha": 0.3, "font.size": 9,
                     "legend.fontsize": 7.5, "xtick.labelsize": 8, "ytick.labelsize": 8, "axes.titlesize": 9,
                     "figure.constrained_layout.use": True})


def lit(s) -> str:
    """Text from a results directory (an id, a host) drawn as written: a '$'
    pair in it would be parsed as mathtext (and a bad formula raises). The
    log axes' own tick labels stay mathtext."""
    return str(s).replace("$", r"\$")


def caption(fn) -> str:
    """A figure function's caption: its docstring's first paragraph."""
    return " ".join((fn.__doc__ or "").strip().split("\n\n")[0].split())


def measured(doc: dict) -> dict:
    """The measurements that have something to draw: a median (none when every
    sample was disturbed and dropped), a series or a grid."""
    return {m["id"]: m for m in doc.get("measurements", [])
            if m.get("median") is not None or "series" in m or "grid" in m}


def bytes_label(v: float) -> str:
    for unit, f in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if v >= f:
            return f"{v / f:g} {unit}"
    return f"{v:g} B"


def predicted(est, mid):
    """The predicted figure in the id's own unit (a rate estimated as time
    per unit is turned back into the rate)."""
    e = (est or {}).get(mid)
    return e.predicted if e else None


def latency_ecdf(doc: dict, ids: list[str], samples, most: int = 8):
    """The distributions of this area's latencies as tail ECDFs: the
    fraction of events slower than x, both axes logarithmic, so p99 and
    p99.9 sit at 1e-2 and 1e-3; per-event samples where kept, every I/O
    for the disk ids.

    samples(id) -> the kept samples or None."""
    from osmeter.core import hist

    by = measured(doc)
    drawn = []
    for i in ids:
        m = by.get(i)
        if not m or not m.get("tail") or "series" in m:
            continue
        lat = (m.get("params") or {}).get("lat_ns") if i.endswith(".lat_mean") else None
        if isinstance(lat, dict) and lat.get("hist"):
            counts = hist.counts_of(lat["hist"])
            b = sorted(counts)
            x = np.array([hist.bucket_range(k)[1] for k in b], dtype=float)
            c = np.cumsum([counts[k] for k in b]).astype(float)
            drawn.append((i.removesuffix(".lat_mean") + " (every I/O)", x, 1 - c / c[-1] + 1 / c[-1] / 2, int(c[-1])))
            continue
        v = samples(i)
        if v is None or v.size < 50:
            continue
        v = np.sort(v[v > 0])
        n = v.size
        drawn.append((i, v, 1 - np.arange(1, n + 1) / n + 1 / n / 2, n))
    if not drawn:
        return None
    drawn = sorted(drawn, key=lambda d: -d[3])[:most]
    fig, ax = plt.subplots(figsize=(TEXT_WIDTH_IN, 4.4))
    for label, x, y, n in sorted(drawn):
        ax.step(x, y, where="post", label=f"{lit(label)} (n={n:,})", lw=1.1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    bottom = min(float(y.min()) for _, _, y, _ in drawn) / 1.5  # the rarest event drawn, and a margin
    ax.set_ylim(bottom=bottom, top=1.0)
    for q, name in ((0.5, "p50"), (1e-2, "p99"), (1e-3, "p99.9")):
        if q < bottom:  # no curve reaches it: neither its line nor its label outside the axes
            continue
        ax.axhline(q, color="0.5", lw=0.6, ls=":")
        ax.annotate(name, (1.0, q), xycoords=("axes fraction", "data"), xytext=(2, 0), textcoords="offset points",
                    va="center", fontsize=7, color="0.4")
    ax.set_xlabel("latency (ns)")
    ax.set_ylabel("fraction of events slower")
    ax.set_title("Distributions: the tail of each latency")
    ax.legend(fontsize=6.5, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)
    return fig


# kernel-path groups (ktrace.trace.GROUPS), one colour each
GROUP_COLORS = {"user": "0.65", "syscall": "C0", "page fault": "C5", "hardirq": "C3", "softirq": "C1",
                "preempted": "C6", "wake-up": "C8", "waiting": "C9", "device": "C4", "unknown": "white"}


def _kernel_groups(kp: dict) -> dict[str, float]:
    """A breakdown's groups in ns per operation; a disk id's (the I/O threads'
    time per I/O) scaled to its latency figure, in the same shares."""
    groups = dict(kp.get("groups") or {})
    if kp.get("per") == "I/O" and kp.get("figure_ns") and kp.get("total_ns"):
        k = kp["figure_ns"] / kp["total_ns"]
        groups = {g: v * k for g, v in groups.items()}
    return groups


def kernel_breakdown(doc: dict, est=None, ids=None):
    """Where the time goes (osmeter run --kernel-paths): per operation, the
    traced run's time split into user, system calls, page faults,
    interrupts, softirqs and time off the CPU (a disk latency in the I/O
    thread's shares), the timed figure marked, and the estimate beside it
    (hardware and software)."""
    ms = [m for m in doc.get("measurements", []) if isinstance(m.get("kernel_paths"), dict)
          and (ids is None or m["id"] in ids)]
    if not ms:
        return None
    fig, axes = plt.subplots(len(ms), 1, figsize=(TEXT_WIDTH_IN, 0.55 + 0.62 * len(ms)), squeeze=False)
    used: dict[str, str] = {}
    for ax, m in zip(axes[:, 0], ms):
        kp = m["kernel_paths"]
        left = 0.0
        for g, v in _kernel_groups(kp).items():
            ax.barh(1, v, left=left, color=GROUP_COLORS.get(g, "0.3"), edgecolor="0.3", lw=0.3, height=0.7)
            left += v
            used[g] = GROUP_COLORS.get(g, "0.3")
        e = (est or {}).get(m["id"])
        if e is not None and getattr(e, "given", False) and e.unit == m.get("unit"):
            parts = [(e.hw, "0.25"), (e.sw, "0.8")] if e.hw is not None or e.sw is not None else [(e.total, "0.5")]
            x = 0.0
            for v, c in parts:
                if v:
                    ax.barh(0, v, left=x, color=c, edgecolor="0.3", lw=0.3, height=0.7)
                    x += v
            used.setdefault("estimate: hardware", "0.25")
            used.setdefault("estimate: software", "0.8")
        if m.get("mean"):
            ax.axvline(m["mean"], color="black", lw=1, ls="--")
        ax.set_yticks([0, 1], ["estimate", "traced"], fontsize=7)
        ax.set_ylim(-0.5, 1.5)
        ax.set_title(lit(m["id"]), fontsize=8, loc="left")
        ax.tick_params(axis="x", labelsize=7)
        ax.grid(axis="y", alpha=0)
    axes[-1, 0].set_xlabel("ns per operation (dashed: the timed figure, the mean across trials)")
    handles = [matplotlib.patches.Patch(facecolor=c, edgecolor="0.3", label=g) for g, c in used.items()]
    fig.legend(handles=handles, loc="outside lower center", ncol=min(6, len(handles)), fontsize=6.5, frameon=False)
    return fig


def kernel_path_change(row, labels=("A", "B")):
    """What moved: an id's kernel-path components on each side (the traced
    runs' time per operation, the median over each side's runs), stacked;
    the components whose change the comparison flagged are hatched."""
    from osmeter.ktrace.trace import group

    parts = list(row.parts)
    if not parts:
        return None
    fig, ax = plt.subplots(figsize=(TEXT_WIDTH_IN, 1.9))
    moved = {p.id for p in parts if p.verdict in ("faster", "slower", "higher", "lower")}
    seen = set()
    for y, side in ((1, "a"), (0, "b")):
        left = 0.0
        for k, p in enumerate(parts):
            v = p.figure_a if side == "a" else p.figure_b
            g = group(p.id)
            ax.barh(y, v, left=left, color=GROUP_COLORS.get(g, "0.3"), edgecolor="black" if p.id in moved else "0.3",
                    lw=0.8 if p.id in moved else 0.3, hatch="///" if p.id in moved else None, height=0.6,
                    label=lit(p.id) if p.id in moved and p.id not in seen else None)
            if p.id in moved:
                seen.add(p.id)
            left += v
    ax.set_yticks([0, 1], [lit(labels[1]), lit(labels[0])])
    ax.set_xlabel("ns per operation, traced (hatched: changed)")
    ax.set_title(lit(row.id))
    ax.grid(axis="y", alpha=0)
    if seen:
        ax.legend(fontsize=6.5, loc="lower right", framealpha=0.9)
    return fig


VERDICT_COLORS = {"faster": "C2", "slower": "C3", "higher": "C0", "lower": "C1", "=": "C4"}


def forest(rows, title: str, min_change: float = MIN_CHANGE, labels=("A", "B")):
    """B/A of each id with its 95% interval (log scale), one line per id,
    coloured by verdict; the band is the smallest change reported."""
    fig, ax = plt.subplots(figsize=(6.4, 0.75 + 0.19 * len(rows)))
    y = np.arange(len(rows))[::-1]
    ax.axvspan(1 / (1 + min_change), 1 + min_change, color="0.9", lw=0, label=f"within {min_change:.0%}")
    ax.axvline(1, color="black", lw=0.8)
    for k, r in zip(y, rows):
        color = VERDICT_COLORS.get(r.verdict, "0.45")
        lo, hi = r.ci
        if np.isfinite(lo) and np.isfinite(hi) and lo > 0:
            ax.plot([lo, hi], [k, k], color=color, lw=2, solid_capstyle="butt")
        ax.plot(r.ratio, k, "o", color=color, ms=3.5)
    for verdict, color in VERDICT_COLORS.items():
        if any(r.verdict == verdict for r in rows):
            ax.plot([], [], "o-", color=color, ms=3.5, label=verdict)
    ax.plot([], [], "o-", color="0.45", ms=3.5, label="no change shown")
    ax.set_yticks(y, [lit(r.id) for r in rows], fontsize=6.5)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(ticker.FuncFormatter(lambda v, _: ""))
    ax.set_xlabel(f"{labels[1]} / {labels[0]} (ratio of medians of run medians, 95% interval; log scale)")
    ax.set_title(lit(title))
    ax.legend(fontsize=6.5, loc="lower right", framealpha=0.9)
    ax.grid(axis="y", alpha=0)
    return fig


def iogen_matrix(objs: list[dict], key: str = "mbps"):
    """iogen's results of a size x queue depth cycle (--cycle-size with
    --cycle-qd) as (sizes, depths, key[size][depth]), key the whole run's
    mbps or iops; None when they are not such a matrix."""
    cells = {(o["cycle"]["size"], o["cycle"]["qd"]): o[key] for o in objs
             if (o.get("cycle") or {}).get("size") is not None}
    sizes = sorted({s for s, _ in cells})
    depths = sorted({q for _, q in cells})
    if len(sizes) < 2 or len(depths) < 2:
        return None
    mat = np.full((len(sizes), len(depths)), np.nan)
    for (s, q), v in cells.items():
        mat[sizes.index(s), depths.index(q)] = v
    return sizes, depths, mat


def _log2_edges(v) -> np.ndarray:
    """Cell edges around values on a log2 axis: halfway (geometrically)
    between neighbours, as far beyond the ends."""
    lv = np.log2(np.asarray(v, dtype=float))
    step = np.diff(lv) if lv.size > 1 else np.array([1.0])
    mids = (lv[:-1] + lv[1:]) / 2
    return 2 ** np.concatenate([[lv[0] - step[0] / 2], mids, [lv[-1] + step[-1] / 2]])


def size_qd_map(sizes, depths, mbps, iops, title: str):
    """The size x queue depth heat maps: MB/s (left) and IOPS (right), the
    transfer size up and the outstanding I/Os across, both on log2 axes,
    each cell's figure written in it."""
    fig, axes = plt.subplots(1, 2, figsize=(TEXT_WIDTH_IN, min(7.5, 2.2 + 0.3 * len(sizes))))
    for ax, mat, unit, scale, label in ((axes[0], mbps, "MB/s", 1, "MB/s (millions of bytes a second)"),
                                        (axes[1], iops, "IOPS", 1e3, "thousand I/Os a second")):
        mat = np.asarray(mat, dtype=float) / scale
        top = np.nanmax(mat) if np.isfinite(mat).any() else 1.0
        mesh = ax.pcolormesh(_log2_edges(depths), _log2_edges(sizes), np.ma.masked_invalid(mat), cmap="viridis",
                             vmin=0, vmax=top)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.grid(False)
        ax.set_xticks(depths, [str(int(q)) for q in depths])
        ax.set_yticks(sizes, [bytes_label(s) for s in sizes])
        ax.minorticks_off()
        ax.set_xlabel("outstanding I/Os (log2 scale)")
        if ax is axes[0]:
            ax.set_ylabel("transfer size (log2 scale)")
        small = len(sizes) * len(depths) > 40
        for a, s in enumerate(sizes):
            for b, q in enumerate(depths):
                v = mat[a, b]
                if np.isfinite(v):
                    ax.text(q, s, f"{v:.3g}" if v < 1000 else f"{v:.0f}", ha="center", va="center",
                            fontsize=5.5 if small else 6.5, color="k" if v > 0.6 * top else "w")
        ax.set_title(unit + (" (thousands)" if scale != 1 else ""))
        fig.colorbar(mesh, ax=ax, label=label, shrink=0.9)
    fig.suptitle(lit(title), fontsize=9)
    return fig


def iogen_size_qd(objs: list[dict]):
    """Throughput against transfer size (rows) and outstanding I/Os
    (columns): one cell per run of iogen's size x queue depth cycle, the
    PenguinoMeter paper's test matrix, in MB/s and in IOPS."""
    m = iogen_matrix(objs)
    if m is None:
        return None
    sizes, depths, mbps = m
    _, _, iops = iogen_matrix(objs, "iops")
    w = objs[0]
    return size_qd_map(sizes, depths, mbps, iops,
                       f"{w.get('workload', '')} with every size, on {w.get('target') or w.get('engine')}")


def zones_figure(targets: dict):
    """Throughput by offset: per target (name -> offsets, MB/s, zone
    length in bytes) a bar for each zone, from its first byte to its last,
    and a line through their middles."""
    fig, ax = plt.subplots(figsize=(TEXT_WIDTH_IN, 3.2))
    top = 0.0
    for name, (offsets, mbps, zone) in targets.items():
        x = np.asarray(offsets, dtype=float)
        y = np.asarray(mbps, dtype=float)
        line, = ax.plot((x + zone / 2) / 2**30, y, "o-", ms=3, lw=0.6, label=lit(name))
        ax.hlines(y, x / 2**30, (x + zone) / 2**30, color=line.get_color(), lw=2)
        top = max(top, float(np.nanmax(y)))
    ax.set_xlabel("offset in the target (GiB)")
    ax.set_ylabel("MB/s (millions of bytes a second)")
    ax.set_ylim(0, top * 1.1 if top > 0 else 1)
    ax.legend(fontsize=7, loc="lower left")
    ax.set_title("Sequential read throughput by offset (ZCAV)")
    return fig


def iogen_zones(objs: list[dict]):
    """Sequential throughput across each target's address range (iogen
    --zones; SPEK's ZCAV figure): one bar per zone, over the offsets it
    covers."""
    zs = [(o, z) for o in objs for z in o.get("zones") or []]
    if not zs:
        return None
    targets = {}
    for t in dict.fromkeys(z["target"] for _, z in zs):
        pts = [(o, z) for o, z in zs if z["target"] == t]
        zone = (pts[0][0].get("region_bytes") or 0) / max(1, len({z["zone"] for _, z in pts}))
        targets[t or "(no device)"] = ([z["offset"] for _, z in pts], [z["mbps"] for _, z in pts], zone)
    return zones_figure(targets)


IOGEN_FIGURES = (iogen_size_qd, iogen_zones)  # drawn from iogen's own JSON lines: osmeter iogen-plot


DETECTABLE_PER_FIGURE = 45  # ids in one figure of detectable_changes: a page's height at a legible size


def detectable_changes(rows: list[dict], designs: tuple[int, ...], line: float, per_figure: int = DETECTABLE_PER_FIGURE):
    """The smallest change a comparison of this many runs a side would
    detect for each id, from the spread of its runs (log scale), the ids
    sorted by it as in the table; the dashed line marks the change the
    runs per side are sized for.

    rows: stability.stability_rows, in the order to draw; designs: the runs a
    side (keys of each row's "detectable"); line: the change marked. A list
    of figures of at most per_figure ids each (their sizes as even as the
    count allows), one x axis for all; empty without rows."""
    if not rows:
        return []
    values = np.array([[r["detectable"].get(n, np.nan) for n in designs] for r in rows], dtype=float)
    finite = values[np.isfinite(values) & (values > 0)]
    lo = min(float(finite.min()) if finite.size else line, line) / 1.6
    hi = max(float(finite.max()) if finite.size else line, line) * 1.6
    parts = -(-len(rows) // per_figure)
    bounds = np.linspace(0, len(rows), parts + 1).round().astype(int)
    markers = ("o", "s", "D", "^")
    figs = []
    for start, end in zip(bounds[:-1], bounds[1:]):
        n = end - start
        fig, ax = plt.subplots(figsize=(TEXT_WIDTH_IN, 0.95 + 0.155 * n))
        y = np.arange(n)[::-1]
        part = values[start:end]
        for k, runs in enumerate(designs):
            v = part[:, k]
            ok = np.isfinite(v) & (v > 0)
            ax.plot(v[ok], y[ok], markers[k % len(markers)], color=f"C{k}", ms=3.6,
                    mfc=f"C{k}" if k == 0 else "none", label=f"{runs} runs a side")
        for yy, row in zip(y, part):  # each id's designs joined, so its row reads at a glance
            ok = row[np.isfinite(row) & (row > 0)]
            if ok.size > 1:
                ax.plot([ok.min(), ok.max()], [yy, yy], color="0.6", lw=0.7, zorder=0)
            if not ok.size:
                ax.annotate("not known", (0, yy), xycoords=("axes fraction", "data"), xytext=(3, 0),
                            textcoords="offset points", va="center", fontsize=6, color="0.4")
        ax.axvline(line, color="black", lw=0.8, ls="--", label=f"{line:.0%}")
        ax.set_xscale("log")
        ax.set_xlim(lo, hi)
        ax.xaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v * 100:.3g}%"))
        ax.xaxis.set_minor_formatter(ticker.NullFormatter())
        ax.tick_params(axis="x", labeltop=True, top=True)  # readable at both ends of a tall figure
        ax.set_yticks(y, [lit(r["id"]) for r in rows[start:end]], fontsize=6.5)
        ax.set_ylim(-0.7, n - 0.3)
        ax.grid(axis="y", alpha=0)
        ax.set_xlabel("smallest detectable change (log scale)")
        title = "Smallest detectable change per id"
        ax.set_title(lit(title if parts == 1 else f"{title}: ids {start + 1} to {end} of {len(rows)}"))
        fig.legend(loc="outside lower center", ncol=len(designs) + 1, fontsize=6.5, frameon=False)
        figs.append(fig)
    return figs
