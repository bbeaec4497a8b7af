"""`osmeter history html`: one self-contained page (index.html, no script
from elsewhere, no network: it opens from a file) per history. Per host and
area, each id's series over time as an inline SVG: each run's figure and
its 95% interval (results.model.Measurement: the median of its processes'
medians, and that figure's interval), a red line
at each change point, and under the chart the change points' sizes and the
conditions that differ across them. A point's tooltip (its SVG <title>)
names the run, its figure and interval; a point links to the run's report
(its PDF) where there is one, else its results.json; a series of more
than POINTS runs has its last POINTS as points and those before as a line,
the median of the runs' figures at each pixel. The data sit in the
elements' data- attributes (data-id, data-run, data-figure, data-change),
which the test reads back from Chromium."""
from __future__ import annotations

import datetime as dt
import functools
import html
import json
import math
from pathlib import Path

import numpy as np

from osmeter.core.stats import MIN_CHANGE

W, H, PAD_L, PAD_R, PAD_T, PAD_B = 720, 170, 74, 14, 12, 28
POINTS = 400  # a series' last runs drawn as points (a link and a tooltip each); those before as a line

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.2em auto; max-width: 1180px; padding: 0 1em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
h3 { font-size: 1.05em; margin: 1.2em 0 0.3em; }
h4 { font-size: 0.95em; margin: 0.8em 0 0.2em; font-family: ui-monospace, monospace; }
.series { display: inline-block; vertical-align: top; margin: 0 1em 1em 0; }
svg { background: #fafafa; border: 1px solid #ddd; }
.pt { fill: #1f77b4; } .trend { fill: none; stroke: #1f77b4; stroke-width: 1.2; opacity: 0.7; } .iv { stroke: #1f77b4; stroke-width: 1.2; opacity: 0.55; }
.cp { stroke: #d62728; stroke-width: 2; stroke-dasharray: 5 3; }
.axis { font-size: 11px; fill: #555; } .grid { stroke: #e6e6e6; }
ul.changes { margin: 0.2em 0 0 1.2em; padding: 0; font-size: 13px; max-width: 720px; }
.method { color: #8a5a00; } .none { color: #777; font-size: 13px; }
"""


@functools.lru_cache(maxsize=1 << 16)  # a history's start times, read once a page and not once an id
def _t(s: str) -> float | None:
    """A run's start as a POSIX time; None where it is no time (missing, not ISO 8601, or outside what a
    timestamp holds: year 1 at +14:00 is in year 0 in UTC)."""
    try:
        t = dt.datetime.fromisoformat(s).timestamp()
        dt.datetime.fromtimestamp(t, dt.timezone.utc)  # a time the axis can name
        return t
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def _plottable(r: dict) -> bool:
    v = r["figure"]
    return isinstance(v, (int, float)) and math.isfinite(v) and v > 0 and _t(r["time"]) is not None


def _stamp(t: float, when: str) -> str:
    try:
        return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime(when) + " UTC"
    except (ValueError, OverflowError, OSError):
        return "?"


def _link(run_path: str, out: Path) -> str:
    from osmeter.results import store
    pdf = Path(run_path) / store.REPORT / Path(store.REPORT_TEX).with_suffix(".pdf").name
    target = pdf if pdf.exists() else Path(run_path) / store.RESULTS
    return target.resolve().as_uri()


def _early(times, medians) -> tuple[np.ndarray, np.ndarray]:
    """The runs before a chart's points that can be drawn, as arrays: (POSIX start times, medians), the
    runs whose start is a time and whose figure a positive number."""
    t = np.array([_t(s) for s in times], dtype=float)  # None: NaN
    v = np.array([m if isinstance(m, (int, float)) else None for m in medians], dtype=float)
    keep = np.isfinite(t) & np.isfinite(v) & (v > 0)
    return t[keep], v[keep]


def _trend(t: np.ndarray, v: np.ndarray, x, y) -> str:
    """The polyline of the runs at (POSIX) times t with medians v: at each pixel column, the median of the
    runs there (the upper middle one of an even count)."""
    col = np.round(np.broadcast_to(x(t), t.shape)).astype(np.int64)  # x() of an array: the columns at once
    order = np.lexsort((v, col))
    cols, first, count = np.unique(col[order], return_index=True, return_counts=True)
    mid = v[order][first + count // 2]
    return " ".join(f"{c},{y(m):.1f}" for c, m in zip(cols.tolist(), mid.tolist()))


def series_svg(mid: str, rows: list[dict], cps, link, early: tuple = ((), ())) -> str:
    """One id's chart: time on x (each run at its start), the median and interval on a log y where the values
    span more than a factor 3, else linear; link(run path): where a point opens. early: (starts, medians)
    of the runs before rows, drawn as a line, the median of those at each pixel (a long history: POINTS runs
    as points, the rest as its trend)."""
    from osmeter.present.values import fmt_value
    unit = rows[0]["unit"]
    left = len(rows) + len(early[0])
    rows = [r for r in rows if _plottable(r)]
    et, ev = _early(*early)
    if not rows:  # the series is marked, the page goes on
        return (f'<p class="none bad" data-id="{html.escape(mid)}" data-bad="{left}">no run of this id has a '
                'positive figure at a readable time: nothing to plot</p>')
    ts = [_t(r["time"]) for r in rows]
    lo_t, hi_t = min(ts + et.tolist()[:1]), max(ts)
    span_t = hi_t - lo_t or 1.0
    vals = [v for r in rows for v in (r["figure"], r["lo"], r["hi"])
            if isinstance(v, (int, float)) and math.isfinite(v) and v > 0] + ev.tolist()
    vmin, vmax = min(vals), max(vals)
    log = vmax / vmin > 3
    f = (math.log if log else float)
    a, b = f(vmin), f(vmax)
    if b - a <= 0:
        a, b = a - 1, b + 1
    a, b = a - 0.06 * (b - a), b + 0.06 * (b - a)

    def x(t: float) -> float:
        return PAD_L + (W - PAD_L - PAD_R) * ((t - lo_t) / span_t if len(rows) > 1 else 0.5)

    def y(v: float) -> float:
        return PAD_T + (H - PAD_T - PAD_B) * (1 - (f(max(v, vmin * 1e-3)) - a) / (b - a))

    parts = [f'<svg width="{W}" height="{H}" viewBox="0 0 {W} {H}" data-id="{html.escape(mid)}" '
             f'role="img" aria-label="{html.escape(mid)}">']
    for k in range(5):  # y grid and labels
        v = math.exp(a + (b - a) * k / 4) if log else a + (b - a) * k / 4
        yy = y(v)
        parts.append(f'<line class="grid" x1="{PAD_L}" x2="{W - PAD_R}" y1="{yy:.1f}" y2="{yy:.1f}"/>'
                     f'<text class="axis" x="{PAD_L - 4}" y="{yy + 4:.1f}" text-anchor="end">'
                     f'{html.escape(fmt_value(v, unit))}</text>')
    when = "%Y-%m-%d %H:%M" if span_t > 2 * 86400 else "%m-%d %H:%M:%S"
    for t, anchor in ((lo_t, "start"), (hi_t, "end")):
        parts.append(f'<text class="axis" x="{x(t):.1f}" y="{H - 8}" text-anchor="{anchor}">'
                     f'{_stamp(t, when)}</text>')
    for c in cps:
        if _t(c.after["time"]) is None:
            continue
        xx = x(_t(c.after["time"]))
        parts.append(f'<line class="cp" x1="{xx:.1f}" x2="{xx:.1f}" y1="{PAD_T}" y2="{H - PAD_B}" '
                     f'data-change="{c.after["run"]}" data-ratio="{c.ratio:.4f}">'
                     f'<title>change x{c.ratio:.3f} ({c.low:.3f}..{c.high:.3f}): {html.escape(c.cause)}</title></line>')
    if len(et):
        parts.append(f'<polyline class="trend" points="{_trend(et, ev, x, y)}" data-runs="{len(et)}"/>')
    for r, t in zip(rows, ts):
        xx = x(t)
        if all(isinstance(r[k], (int, float)) and math.isfinite(r[k]) for k in ("lo", "hi")) and r["lo"] > 0:
            parts.append(f'<line class="iv" x1="{xx:.1f}" x2="{xx:.1f}" y1="{y(r["lo"]):.1f}" y2="{y(r["hi"]):.1f}"/>')
        tip = (f'{r["time"]}  {fmt_value(r["figure"], unit)}'
               + (f' ({fmt_value(r["lo"], unit)} .. {fmt_value(r["hi"], unit)})' if r["lo"] is not None else "")
               + f'\n{r["path"]}\nkernel {r["kernel"] or "-"}, osmeter {str(r["commit"] or "-")[:10]}')
        parts.append(f'<a href="{html.escape(link(r["path"]))}"><circle class="pt" cx="{xx:.1f}" '
                     f'cy="{y(r["figure"]):.1f}" r="3.2" data-run="{r["run"]}" data-figure="{r["figure"]!r}">'
                     f'<title>{html.escape(tip)}</title></circle></a>')
    parts.append("</svg>")
    if len(et):
        parts.append(f'<p class="none" data-trend="{len(et)}">the first {len(et)} runs as a line (the median '
                     f'of those at each pixel), the last {len(rows)} as points</p>')
    if left > len(rows) + len(et):
        bad = left - len(rows) - len(et)
        parts.append(f'<p class="none bad" data-bad="{bad}">{bad} of {left} runs not '
                     'plotted: a figure 0, negative or missing, or a start time that is no time</p>')
    return "".join(parts)


def _chart(con, host: str, mid: str, read: tuple, cps, link) -> str:
    """One id's chart and its change points' list: its last POINTS runs' rows read (by run), the runs before
    those (read: the id's store.figures) its trend."""
    from osmeter.history import store
    from osmeter.present.values import fmt_value
    runs, times, meds = read
    rows = store.series(con, host, mid, runs=runs[-POINTS:].tolist())
    early = (times[:-POINTS], meds[:-POINTS])
    items = "".join(
        f'<li class="{"method" if c.method else ""}">{html.escape(c.after["time"])}: x{c.ratio:.3f} '
        f'({c.low:.3f}..{c.high:.3f}), {html.escape(fmt_value(c.before["figure"], c.unit))} &rarr; '
        f'{html.escape(fmt_value(c.after["figure"], c.unit))}; {html.escape(c.cause)}</li>' for c in cps)
    return (f'<div class="series"><h4>{html.escape(mid)} <span class="none">({len(runs)} runs, '
            f'{html.escape(rows[0]["unit"])})</span></h4>{series_svg(mid, rows, cps, link, early)}'
            + (f'<ul class="changes">{items}</ul>' if cps else '<p class="none">no change point</p>') + "</div>")


def write_page(con, out: Path, host: str | None = None, alpha: float = 0.01, min_change: float = MIN_CHANGE,
               probes: str | None = None, min_runs: int = 3) -> Path:
    from osmeter.history import changes, store
    from osmeter.results.writer import write_bytes_atomic
    from osmeter.probes import registry
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    hosts = [store.only_host(con, host)] if host else store.host_names(con)
    link = functools.lru_cache(maxsize=None)(lambda path: _link(path, out))  # a run's link, looked up once a page
    body = [f"<h1>osmeter history</h1><p>{len(hosts)} host(s); change points by E-divisive with means "
            f"(false-alarm rate {alpha} per test, shifts of at least {min_change:.0%}); each point is a run's figure "
            "(the median of its processes' medians) with its 95% interval; a point opens the run's report.</p>"]
    summary = {}
    for h in hosts:
        body.append(f'<h2 data-host="{html.escape(h)}">{html.escape(h)}</h2>')
        by_area: dict[str, list[str]] = {}
        for mid in store.ids(con, h):
            if probes and not any(registry.matches(p, mid) for p in probes.split(",")):
                continue
            found = registry.find_measure(mid)
            by_area.setdefault(found[0].area if found else mid.split(".", 1)[0], []).append(mid)
        order = {a.name: a.order for a in registry.AREAS}
        titles = {a.name: a.title for a in registry.AREAS}
        charts: dict[str, str] = {}
        moved: list[tuple[str, str]] = []  # (time of the latest change point, id)
        mids = [mid for area in by_area.values() for mid in area]
        read = store.figures(con, h, mids)  # once, for the search and the charts
        cps_of = changes.cached(con, h, mids, None, alpha, min_change, min_runs, read)
        for mid in mids:
            if not len(read[mid][0]):
                continue
            cps = cps_of[mid]
            summary.setdefault(h, {})[mid] = [c.after["run"] for c in cps]
            if cps:
                moved.append((cps[-1].after["time"], mid))
            charts[mid] = _chart(con, h, mid, read[mid], cps, link)
        # what moved first, the latest change first; then every series by area
        body.append(f"<h3>Ids with a change point ({len(moved)})</h3>"
                    + ("".join(charts[mid] for _, mid in sorted(moved, reverse=True)) if moved
                       else '<p class="none">none</p>'))
        for area in sorted(by_area, key=lambda a: order.get(a, 999)):
            body.append(f"<h3>{html.escape(titles.get(area, area))}</h3>")
            body += [charts[mid] for mid in by_area[area] if mid in charts]
    page = out / "index.html"
    text = ("<!doctype html><html lang=en><head><meta charset=utf-8><title>osmeter history</title>"
            f"<meta name=viewport content='width=device-width, initial-scale=1'><style>{STYLE}</style>"
            f"</head><body>{''.join(body)}<script type='application/json' id='changes'>"
            f"{html.escape(json.dumps(summary))}</script></body></html>")
    write_bytes_atomic(page, text.encode("utf-8", "backslashreplace"))  # a run's path may hold bytes no text can
    return page
