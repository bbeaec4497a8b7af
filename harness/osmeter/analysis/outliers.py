"""The slow node: in a fleet of MIN_HOSTS hosts or more, for each id, the
hosts that lie outside their siblings' spread, how far, and how sure.

Per id, on the hosts that have it, on the log scale where every host's
figure is positive (a node 50x slower in latency and one at a 50th of the
IOPS are as far from their siblings; on the linear scale a rate's distance
could never pass its siblings' median), else on the figures themselves:
  x   a host's figure: the median of its runs' figures
  w   the host's own spread toward the siblings: the widest of its runs'
      95% intervals on that side of its figure (inside a run; a run's
      interval is even in logs, so a slow host's is wider above than below
      it), and with two runs or more at least t x the sd of its
      runs' figures / sqrt(runs) (between its runs), t Student's 97.5%
      point on the degrees of freedom of every host's runs of the id
      (with one host's alone, two runs' 12.7 would let a sibling's two
      runs hide a node that is off by half)
  c   the siblings' centre: the median of every other host's figure (the
      host judged is left out, so it cannot move what judges it)
  s   the spread between hosts: 1.4826 x the siblings' median absolute
      deviation from c (a robust standard deviation), and where the hosts
      ran several times never less than the spread between one host's runs
      (the sd of the log of the run figures, pooled over the hosts, x c
      on the linear scale, widened by t / 1.96 for the few runs it is known from)
A host is named when its distance d = |x - c| passes three bars at once:
  - the spread between hosts: d > K s (K = 3.5, Iglewicz and Hoaglin's
    bar for the robust z-score);
  - the spread inside hosts: d > w + the siblings' median w toward it (its
    own runs' and theirs: a node whose runs cannot tell it from the others
    is not named, whatever the siblings' spread);
  - the practical floor: a ratio beyond 1 + min_change (compare's
    --min-change; d > min_change x |c| on the linear scale).
Its confidence is z = d / s (infinite where the siblings agree exactly),
and its interval the ratio x / c with x at the ends of its own interval.
A host is judged on the ids it ran twice or more: with one run, a shift
that lasted that run (the machine busy then, a placement of its vCPUs)
cannot be told from the node. In simulated fleets of identical hosts whose
runs drift by 3% (tests/test_fleet_outliers.py), one run each had a host
named in 70-90% of fleets; two runs each in 4% (3 hosts) to 0.5% (8
hosts), three in 0.5% or less, while a host 30% slower in an area was
named in 98% or more. So with one run per host the heat map is drawn,
nothing is named, and the view says why.
A host named in several ids of one area (cpu, mem, disk, net, fs, sched,
...) is named once for the area with its ids grouped. With fewer than
MIN_HOSTS hosts nothing is said: with two, neither can be told from the
other.

The heat map is host x area: for each, the median over the area's ids of
log2(x / the median of all the hosts' figures), signed so that a positive
value is worse (slower, or fewer per second) where the unit has a better
direction (core/units.py). Its centre keeps the host in: with three hosts
the median of the other two is their mean, and one slow host would colour
both of its siblings; the median of all three is one of the two alike.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from osmeter.core.stats import MAD_SD, MIN_CHANGE, robust_sd, t_quantile
from osmeter.core.units import better
from osmeter.results import store
from osmeter.results.store import load_side

MIN_HOSTS = 3
K = 3.5
Z95 = 1.96


@dataclass
class Flag:
    id: str
    unit: str
    host: str
    value: float
    centre: float
    ratio: float                     # value / centre
    interval: tuple[float, float]    # of the ratio, from the host's own spread
    z: float                         # distance in the siblings' robust sds
    worse: bool | None               # None: the unit has no better direction


@dataclass
class HostAreas:
    host: str
    area: str
    flags: list[Flag]


@dataclass
class Outliers:
    hosts: list[str]
    ids: int = 0                                  # ids judged (on MIN_HOSTS hosts or more)
    runs: int = 0                                 # the fewest runs a host had of an id judged
    groups: list[HostAreas] = field(default_factory=list)
    heat: dict[str, dict[str, float]] = field(default_factory=dict)  # host -> area -> median signed log2
    areas: list[str] = field(default_factory=list)
    min_change: float = MIN_CHANGE
    note: str = ""


def area_of(mid: str) -> str:
    return mid.split(".", 1)[0]


@dataclass
class Figure:
    unit: str
    x: float              # the host's figure: the median of its runs' figures
    within: float         # the widest half-width of its runs' 95% intervals
    runs: int
    run_sd: float | None  # sd of the log of its runs' figures (two runs or more)
    sd: float = 0.0       # sd of its runs' figures (two runs or more)
    below: float | None = None  # the widest reach of its runs' intervals below their figures (else within)
    above: float | None = None  # ... and above them

    def own(self, t: float, up: bool | None = None) -> float:
        """Its own half-width: inside its runs (on the side up, or below,
        where asked), and between them with t."""
        side = {True: self.above, False: self.below}.get(up)
        inside = self.within if side is None else side
        return max(inside, t * self.sd / math.sqrt(self.runs)) if self.runs > 1 else inside


def host_figures(runs: list) -> dict[str, Figure]:
    """id -> Figure of one host's runs."""
    per: dict[str, list[tuple[str, float, float, float]]] = {}
    for r in runs:
        for m in r.measurements.values():
            if m.figure is None:  # nothing kept
                continue
            lo, hi = m.figure_ci95 or (m.figure, m.figure)
            per.setdefault(m.id, []).append((m.unit, m.figure, lo, hi))
    out = {}
    for mid, rows in per.items():
        figs = np.array([x[1] for x in rows])
        within = max((x[3] - x[2]) / 2 for x in rows)
        below, above = max(x[1] - x[2] for x in rows), max(x[3] - x[1] for x in rows)
        sd, log_sd = (float(np.std(figs, ddof=1)), None) if len(figs) >= 2 else (0.0, None)
        if len(figs) >= 2 and (figs > 0).all():
            log_sd = float(np.std(np.log(figs), ddof=1))
        out[mid] = Figure(rows[0][0], float(np.median(figs)), float(within), len(figs), log_sd, sd,
                          float(below), float(above))
    return out


def judge(values: dict[str, float], own: dict[str, tuple[float, float]], min_change: float,
          run_sd: float | None = None, log: bool = False) -> list[tuple[str, float, float, float]]:
    """(host, centre, z, distance) for each host of one id past the three
    bars. own: each host's half-widths (below, above) its figure; the host's
    toward the centre and its siblings' toward it count. run_sd: the pooled
    sd of the log of one host's run figures, where the hosts ran several
    times: the spread between hosts is never taken below what runs of one
    host show. log: values and half-widths are logs (the centre returned is
    not), and the floor is a ratio of 1 + min_change either way."""
    named = []
    for h, x in values.items():
        sib = np.array([v for k, v in values.items() if k != h])
        c = float(np.median(sib))
        s = robust_sd(sib)
        if run_sd is not None:
            s = max(s, run_sd if log else run_sd * abs(c))
        d = abs(x - c)
        up = x > c  # the host above its siblings: its reach down, theirs up
        sib_own = float(np.median([own[k][up] for k in values if k != h]))
        floor = math.log1p(min_change) if log else min_change * abs(c)
        if d > K * s and d > own[h][not up] + sib_own and d > floor:
            named.append((h, math.exp(c) if log else c, d / s if s > 0 else math.inf, d))
    return named


def log_reach(x: float, below: float, above: float) -> tuple[float, float]:
    """A half-width pair around x > 0 as logs: how far down and up its
    interval reaches on the log scale (down without end where it reaches 0)."""
    return (math.log(x) - math.log(x - below) if x - below > 0 else math.inf, math.log(x + above) - math.log(x))


def pooled_run_sd(figs: list[Figure]) -> float | None:
    """The sd of a host's run figures (log) pooled over the hosts that ran
    twice or more; None where none did."""
    parts = [(f.runs - 1, f.run_sd ** 2) for f in figs if f.run_sd is not None]
    df = sum(p[0] for p in parts)
    return math.sqrt(sum(p[0] * p[1] for p in parts) / df) if df else None


def find(fleet_dir: Path, hosts: list[str] | None = None, min_change: float = MIN_CHANGE) -> Outliers:
    """The outlier view of a fleet directory's hosts with results."""
    if hosts is None:
        index = store.read_fleet(fleet_dir)
        hosts = [h["label"] for h in index["hosts"] if h.get("results") and store.has_run(fleet_dir / h["results"])]
    figs = {h: host_figures(load_side([fleet_dir / h])) for h in hosts}
    return from_figures(figs, min_change)


def from_figures(figs: dict[str, dict[str, Figure]], min_change: float = MIN_CHANGE) -> Outliers:
    hosts = list(figs)
    out = Outliers(hosts, min_change=min_change)
    if len(hosts) < MIN_HOSTS:
        out.note = (f"{len(hosts)} host{'s' if len(hosts) != 1 else ''} with results: the slow-node view needs "
                    f"{MIN_HOSTS} or more (with two, neither can be told from the other)")
        return out
    ids = list(dict.fromkeys(mid for h in hosts for mid in figs[h]))
    flags: list[Flag] = []
    logs: dict[str, dict[str, list[float]]] = {h: {} for h in hosts}
    for mid in ids:
        have = [h for h in hosts if mid in figs[h]]
        if len(have) < MIN_HOSTS:
            continue
        out.ids += 1
        unit = figs[have[0]][mid].unit
        values = {h: figs[h][mid].x for h in have}
        df = sum(figs[h][mid].runs - 1 for h in have)
        t = t_quantile(0.975, df) if df else 0.0  # Student's, on the runs of every host of the id
        own = {h: (figs[h][mid].own(t, False), figs[h][mid].own(t, True)) for h in have}
        run_sd = pooled_run_sd([figs[h][mid] for h in have])
        out.runs = min(out.runs or 10 ** 9, *(figs[h][mid].runs for h in have))
        way = better(unit)
        sign = {"lower": 1.0, "higher": -1.0}.get(way, 0.0)
        whole = float(np.median(list(values.values())))  # the heat map's centre: every host's median
        for h in have:
            c = whole
            if c > 0 and values[h] > 0 and sign:
                logs[h].setdefault(area_of(mid), []).append(sign * math.log2(values[h] / c))
        if run_sd is not None:  # an sd from few runs is often too small: widened as Student's t widens
            run_sd *= t / Z95
        log = all(v > 0 for v in values.values())  # the ratio scale: 50x slower as far as 50x faster
        scaled = {h: math.log(v) for h, v in values.items()} if log else values
        reach = {h: log_reach(values[h], *own[h]) for h in have} if log else own
        for h, c, z, _ in judge(scaled, reach, min_change, run_sd, log):
            if figs[h][mid].runs < 2:
                continue  # one run: its shift cannot be told from the host's
            x, (down, up) = values[h], own[h]
            ratio = x / c if c else math.inf
            lo, hi = ((x - down) / c, (x + up) / c) if c else (math.inf, math.inf)
            worse = None if not sign else (x > c) == (sign > 0)
            flags.append(Flag(mid, unit, h, x, c, ratio, (lo, hi), z, worse))
    out.areas = sorted({area_of(f) for h in hosts for f in logs[h]} | {area_of(f.id) for f in flags})
    out.heat = {h: {a: float(np.median(v)) for a, v in logs[h].items()} for h in hosts}
    by: dict[tuple[str, str], list[Flag]] = {}
    for f in flags:
        by.setdefault((f.host, area_of(f.id)), []).append(f)
    out.groups = sorted((HostAreas(h, a, fl) for (h, a), fl in by.items()),
                        key=lambda g: (-len(g.flags), g.host, g.area))
    return out


def ratio_text(f: Flag) -> str:
    way = "" if f.worse is None else (" worse" if f.worse else " better")
    z = "inf" if math.isinf(f.z) else f"{f.z:.1f}"
    return f"{f.id} x{f.ratio:.3g} ({f.interval[0]:.3g}..{f.interval[1]:.3g}){way}, z {z}"


def method(o: Outliers) -> str:
    """The rule as this view applied it, from its own parameters."""
    basis = (f"Every host ran {o.runs} times or more: a host named differs from its siblings beyond run-to-run drift."
             if o.runs >= 2 else
             "Hosts of one run are not named: a shift that lasted one run cannot be told from the host (run each "
             "host with --runs 2 or more; the heat map shows them all).")
    return (f"Over {o.ids} ids on {len(o.hosts)} hosts, a host is named where its figure lies (in logs, where the "
            f"figures are positive) more than {K} robust "
            f"standard deviations ({MAD_SD} x the median absolute deviation of the other hosts, never less than "
            "one host's run-to-run spread where known) from the other hosts' median, further than its own and "
            f"their runs' spread, and more than {o.min_change:.0%} away; z is that distance in those deviations. "
            + basis)


def text(o: Outliers) -> str:
    """The outlier view in a few lines: each host and area once."""
    if o.note:
        return f"slow-node view: {o.note}"
    lines = ["slow-node view: " + method(o)]
    if not o.groups:
        return "\n".join(lines + ["no host lies outside its siblings' spread"])
    for g in o.groups:
        worse = sum(1 for f in g.flags if f.worse)
        lines.append(f"{g.host}: {g.area}, {len(g.flags)} id{'s' if len(g.flags) != 1 else ''}"
                     f"{f' ({worse} worse)' if worse else ''}: " + "; ".join(ratio_text(f) for f in g.flags[:6])
                     + (f"; and {len(g.flags) - 6} more" if len(g.flags) > 6 else ""))
    return "\n".join(lines)


def heat_figure(o: Outliers):
    """Host x area: the median signed log2 ratio to the siblings (worse is
    positive, red); each cell's value written in it."""
    from osmeter.present.plots import plt

    areas = o.areas
    m = np.array([[o.heat[h].get(a, np.nan) for a in areas] for h in o.hosts])
    fig, ax = plt.subplots(figsize=(1.2 + 0.9 * max(len(areas), 2), 1.0 + 0.45 * len(o.hosts)))
    lim = max(0.1, float(np.nanmax(np.abs(m))) if np.isfinite(m).any() else 0.1)
    im = ax.imshow(m, cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
    ax.set_xticks(range(len(areas)), areas)
    ax.set_yticks(range(len(o.hosts)), o.hosts)
    named = {(g.host, g.area) for g in o.groups}
    for i, h in enumerate(o.hosts):
        for j, a in enumerate(areas):
            if np.isfinite(m[i, j]):
                ax.text(j, i, f"{m[i, j]:+.2f}" + (" *" if (h, a) in named else ""), ha="center", va="center",
                        fontsize=8, color="white" if abs(m[i, j]) > lim / 2 else "black")
    fig.colorbar(im, ax=ax, label="log2(host / hosts' median)\nworse > 0")
    ax.set_title("each host against the hosts' median, by area (* named)", fontsize=9)
    return fig
