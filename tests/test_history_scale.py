"""History at scale (issue 57 item 6): change points found in O(n) memory
give exactly the change points of the by-the-book method (an n x n
distance matrix per score, kept below as the reference), memory stays
bounded at thousands of runs, and a minimum segment length keeps single
spikes from being change points."""
from __future__ import annotations

import os
import tracemalloc

import numpy as np
import pytest

from conftest import ROOT, osmeter, read_only_copy
from osmeter.core.stats import median_var, t_quantile


def _bench_history():
    """tools/bench-history as a module (its builder of synthetic histories)."""
    import importlib.machinery
    import importlib.util
    loader = importlib.machinery.SourceFileLoader("bench_history", str(ROOT / "tools" / "bench-history"))
    mod = importlib.util.module_from_spec(importlib.util.spec_from_loader("bench_history", loader))
    loader.exec_module(mod)
    return mod

# ------------------------------------------- the reference: today's method, by the book

REF_MIN_SIZE, REF_PERMUTATIONS, REF_BOOT = 3, 199, 2000


def _ref_block_sums(d):
    s = np.zeros((d.shape[0] + 1, d.shape[1] + 1))
    s[1:, 1:] = d.cumsum(0).cumsum(1)
    return s


def ref_scores(x, min_size=REF_MIN_SIZE):
    n = len(x)
    q = np.full((n + 1, n + 1), np.nan)
    if n < 2 * min_size:
        return q
    d = np.abs(x[:, None] - x[None, :])
    s = _ref_block_sums(d)
    for t in range(min_size, n - min_size + 1):
        m = t
        kap = np.arange(t + min_size, n + 1)
        k = kap - t
        between = s[t, kap] - s[t, t]
        left = s[t, t] / 2
        right = (s[kap, kap] - s[t, kap] - s[kap, t] + s[t, t]) / 2
        e = 2 * between / (m * k) - left / (m * (m - 1) / 2) - right / (k * (k - 1) / 2)
        q[t, kap] = m * k / (m + k) * e
    return q


def ref_best_split(x, rng, min_size, permutations, alpha):
    q = ref_scores(x, min_size)
    if np.all(np.isnan(q)):
        return None, 1.0
    t = int(np.unravel_index(np.nanargmax(q), q.shape)[0])
    top = np.nanmax(q)
    beaten = 0
    for _ in range(permutations):
        beaten += np.nanmax(ref_scores(rng.permutation(x), min_size)) >= top - 1e-12
        if (beaten + 1) / (permutations + 1) >= alpha:
            break
    return t, (beaten + 1) / (permutations + 1)


def ref_shift_interval(before, after, rng):
    ratio = float(np.median(after) / np.median(before))
    if min(len(before), len(after)) < 6 and np.all(before > 0) and np.all(after > 0):
        # Student's t on the logs: each side's median has variance median_var(k) s^2; pooled df at equal
        # counts, Welch's otherwise
        vb, va = (median_var(len(x)) * np.var(np.log(x), ddof=1) for x in (before, after))
        se2 = vb + va
        df = (2 * len(before) - 2 if len(before) == len(after)
              else se2 ** 2 / (vb ** 2 / (len(before) - 1) + va ** 2 / (len(after) - 1)))
        half = t_quantile(0.975, df) * np.sqrt(se2)
        return ratio, ratio * float(np.exp(-half)), ratio * float(np.exp(half))
    b = rng.choice(before, (REF_BOOT, len(before)))
    a = rng.choice(after, (REF_BOOT, len(after)))
    r = np.median(a, axis=1) / np.median(b, axis=1)
    return ratio, float(np.quantile(r, 0.025)), float(np.quantile(r, 0.975))


def ref_find(values, alpha=0.01, min_change=0.02, seed=1, min_size=REF_MIN_SIZE):
    v = np.asarray(values, dtype=float)
    if len(v) < 2 * min_size or np.any(~np.isfinite(v)) or np.any(v <= 0):
        return []
    x = np.log(v)
    rng = np.random.default_rng(seed)
    found = []
    todo = [(0, len(x))]
    while todo:
        lo, hi = todo.pop()
        t, p = ref_best_split(x[lo:hi], rng, min_size, max(REF_PERMUTATIONS, int(np.ceil(10 / alpha)) - 1), alpha)
        if t is None or p >= alpha:
            continue
        found.append((lo + t, p))
        todo += [(lo, lo + t), (lo + t, hi)]
    found.sort()
    out = []
    bounds = [0] + [t for t, _ in found] + [len(v)]
    for k, (t, p) in enumerate(found):
        ratio, rlo, rhi = ref_shift_interval(v[bounds[k]:t], v[t:bounds[k + 2]], rng)
        if abs(np.log(ratio)) >= np.log1p(min_change) and not rlo <= 1.0 <= rhi:
            out.append((t, p, ratio, rlo, rhi))
    return out


def series(rng, n):
    """A series of n runs (3% spread), with nothing, a shift, a bump or a spike planted."""
    v = np.exp(rng.normal(0, 0.03, n))
    kind = rng.integers(4)
    a, b = sorted(rng.integers(1, n, 2))
    size = rng.choice([1.05, 1.15, 1.3, 0.8])
    if kind == 1:
        v[a:] *= size
    elif kind == 2:
        v[a:max(b, a + 1)] *= size
    elif kind == 3:
        v[a] *= size
    return v


def test_the_change_points_are_exactly_those_of_the_method_by_the_book():
    """Random series of 6 to 200 runs, nothing planted or a shift, a bump
    or a one-run spike, at alphas 0.01 and 0.05 and minimum segments of 2
    to 4 runs: the same change points, p values and intervals as the
    reference (the same shuffles are drawn, in the same order)."""
    from osmeter.history.changes import find
    rng = np.random.default_rng(57)
    seen = 0
    for k in range(60):
        n = int(rng.choice([6, 7, 9, 12, 16, 25, 40, 70, 120, 200], p=[.12, .12, .12, .12, .12, .12, .1, .1, .04, .04]))
        v = series(rng, n)
        alpha = float(rng.choice([0.01, 0.05]))
        ms = int(rng.choice([2, 3, 3, 4]))
        want = ref_find(list(v), alpha=alpha, seed=k, min_size=ms)
        got = find(list(v), alpha=alpha, seed=k, min_size=ms)
        assert [c[0] for c in got] == [c[0] for c in want], (k, n, alpha, ms, got, want)
        assert np.allclose([c[1:] for c in got], [c[1:] for c in want]) if want else not got, (k, got, want)
        seen += len(want)
    assert seen >= 10, seen  # the series do have change points to agree on


def test_every_score_is_that_of_the_method_by_the_book():
    """Q(tau, kappa) over every split, made a block of rows at a time,
    against the reference's n x n computation: series shorter than two
    segments, one block, several blocks and a last block of one row."""
    from osmeter.history import changes
    rng = np.random.default_rng(8)
    for n in (5, 6, 7, 40, 2 * changes.BLOCK + 7, 3 * changes.BLOCK + 6, 300):
        for ms in (2, 3, 5):
            x = series(rng, n)
            want = ref_scores(np.log(x), ms)
            got = np.full((n + 1, n + 1), np.nan)
            for t0, q in changes._rows(np.log(x), ms) if n >= 2 * ms else ():
                got[t0:t0 + len(q), t0:] = np.where(np.isinf(q), np.nan, q)
            assert np.array_equal(np.isnan(got), np.isnan(want)), (n, ms)
            assert np.allclose(got[~np.isnan(got)], want[~np.isnan(want)], rtol=1e-9, atol=1e-12), (n, ms)
            t, top = changes.best_score(np.log(x), ms)
            if n < 2 * ms:
                assert t is None
            else:
                assert (t, top) == (int(np.unravel_index(np.nanargmax(want), want.shape)[0]),
                                    pytest.approx(np.nanmax(want), rel=1e-12)), (n, ms)


def test_scores_never_hold_an_n_by_n_array():
    """The best split of 5,000 runs: Python's peak allocation stays under
    60 MB (an n x n matrix of doubles would be 200 MB), and the split is
    the planted one."""
    from osmeter.history.changes import best_split
    rng = np.random.default_rng(3)
    x = rng.normal(0, 0.03, 5000)
    x[3100:] += 0.2
    tracemalloc.start()
    try:
        t, p = best_split(x, np.random.default_rng(1), permutations=3, alpha=1.0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert t == 3100, t
    assert peak < 60e6, peak


def test_a_shuffle_that_beats_the_top_stops_its_scan_early():
    """A series with nothing in it: many shuffles beat its top, and each of
    those is decided before all its rows of scores are computed (rows
    counted), so the rows scanned stay well under a full search of every
    shuffle drawn (the count of shuffles is taken from the generator)."""
    from osmeter.history import changes

    class Counting:
        def __init__(self, rng):
            self.rng, self.drawn = rng, 0

        def permutation(self, x):
            self.drawn += 1
            return self.rng.permutation(x)

    rng = np.random.default_rng(5)
    x = rng.normal(0, 0.03, 600)
    gen = Counting(np.random.default_rng(2))
    changes.ROWS_SCANNED = 0
    t, p = changes.best_split(x, gen, permutations=199, alpha=0.05)
    assert p >= 0.05 and gen.drawn >= 10, (p, gen.drawn)
    full = (gen.drawn + 1) * (600 - 2 * changes.MIN_SIZE + 1)
    assert changes.ROWS_SCANNED < full * 0.9, (changes.ROWS_SCANNED, full)


# ------------------------------------------------------------ the minimum segment

def test_a_one_run_spike_is_no_change_point_and_min_runs_two_finds_a_two_run_shift():
    from osmeter.history.changes import find
    rng = np.random.default_rng(9)
    v = np.exp(rng.normal(0, 0.01, 30))
    v[15] *= 1.5
    assert find(list(v), alpha=0.05) == []
    for ms in (2, 3):
        assert find(list(v), alpha=0.05, min_size=ms) == []
    w = np.exp(rng.normal(0, 0.01, 30))
    w[28:] *= 1.5
    assert find(list(w), alpha=0.05) == []  # 2 runs: shorter than the default segment
    assert [c[0] for c in find(list(w), alpha=0.05, min_size=2)] == [28]


@pytest.mark.parametrize("bad", ["1", "0", "-3", "2.5", "x"])
def test_a_bad_min_runs_is_one_clear_line(bad, tmp_path):
    r = osmeter("history", "changes", "--min-runs", bad, "--db", str(tmp_path / "h.sqlite"))
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "--min-runs" in lines[0] and "Traceback" not in r.stderr, r.stderr


def test_min_runs_reaches_the_change_points_of_history_show_and_changes(tmp_path):
    """A history of 24 runs whose last 2 are 50% slower: no change point at
    the default, one with --min-runs 2, in `changes` and in `show`."""
    db = tmp_path / "h.sqlite"
    _bench_history().build(db, runs=24, ids=1, seed=4, tail=(2, 1.5))
    r = osmeter("history", "changes", "--db", str(db), "--alpha", "0.05")
    assert r.returncode == 0 and r.stdout.startswith("0 change points"), r.stdout + r.stderr
    r = osmeter("history", "changes", "--db", str(db), "--alpha", "0.05", "--min-runs", "2")
    assert r.returncode == 0 and r.stdout.startswith("1 change points"), r.stdout + r.stderr
    r = osmeter("history", "show", "--id", "synth.m000", "--db", str(db), "--alpha", "0.05", "--min-runs", "2")
    assert r.returncode == 0 and sum(ln.startswith(">") for ln in r.stdout.splitlines()) == 1, r.stdout + r.stderr


# ------------------------------------------------------------ long series: windows, and their cache

def test_the_windows_tile_a_long_series_and_each_owned_run_has_a_quarter_window_each_side():
    from osmeter.history.changes import WINDOW, windows
    for ms in (2, 3, 40):
        w = max(WINDOW, 8 * ms)
        for n in (2 * ms, w - 1, w, w + 1, w + w // 2, 3 * w + 17, 10_000):
            wins = windows(n, ms)
            assert wins[0][0] == 0 and wins[-1][1] == n and all(b - a <= w for a, b, _, _ in wins), (n, ms, wins)
            owned = [r for _, _, a, b in wins for r in range(a, b)]
            assert owned == list(range(n)), (n, ms)  # every run owned once, in order
            if len(wins) == 1:
                assert wins == [(0, n, 0, n)]
                continue
            for k, (a, b, oa, ob) in enumerate(wins):
                assert k == 0 or oa - a >= w // 4, (n, ms, k)
                assert k == len(wins) - 1 or b - ob >= w // 4, (n, ms, k)


def _long(rng, n, shifts):
    v = np.exp(rng.normal(0, 0.03, n))
    for at, f in shifts:
        v[at:] *= f
    return v


def test_a_long_series_has_its_planted_shifts_once_each_and_nothing_else():
    """3,000 runs with shifts of 10%, 8% and -12% (one near where two windows meet): each found within a
    run of where it was planted, once, with its ratio; a series with nothing planted has no change point."""
    from osmeter.history.changes import find
    rng = np.random.default_rng(11)
    planted = [(700, 1.10), (1600, 1.08), (2368, 0.88)]  # 2368 = 18.5 windows of 128: on an owner's edge
    got = find(list(_long(rng, 3000, planted)))
    assert [c[0] for c in got] == pytest.approx([t for t, _ in planted], abs=1), got
    for (t, f), c in zip(planted, got):
        assert c[3] <= f * 1.03 and c[4] >= f / 1.03 and c[1] < 0.01, (t, f, c)
    assert find(list(_long(rng, 3000, []))) == []


def _synthetic(tmp_path, runs, ids, **kw):
    db = tmp_path / "h.sqlite"
    _bench_history().build(db, runs, ids, **kw)
    return db


def test_a_history_keeps_each_windows_breaks_and_a_run_more_searches_only_the_last(tmp_path, monkeypatch):
    """The change points of 1,500 runs x 2 ids are the same searched, read from the history, and with no
    cache at all; read back, nothing is searched; one run more searches one window an id; a value
    changed in an early run searches that run's windows again and finds what the change made."""
    from osmeter.history import changes, store
    db = _synthetic(tmp_path, 1500, 2, seed=5)
    bench = _bench_history()
    mids = ["synth.m000", "synth.m001"]

    def searched():
        n = {"windows": 0}
        real = store.WindowCache.put

        def put(self, k, digest, found):
            n["windows"] += k >= 0
            real(self, k, digest, found)
        monkeypatch.setattr(store.WindowCache, "put", put)
        return n

    def points():
        with store.opened(db) as con:
            return {m: [(c.after["run"], round(c.ratio, 9)) for c in cps]
                    for m, cps in changes.cached(con, "synth", mids).items()}

    n = searched()
    first = points()
    assert n["windows"] == 2 * len(changes.windows(1500)), n
    with store.opened(db) as con:
        bare = {m: [(r["run"], round(x[2], 9)) for x in changes.find(store.figures(con, "synth", [m])[m][2])
                    for r in [store.series(con, "synth", m)[x[0]]]] for m in mids}
    assert first == bare and first["synth.m000"], (first, bare)  # id 0 has its planted shift
    n = searched()
    assert points() == first and n["windows"] == 0, n
    bench.append(db)
    n = searched()
    points()
    assert n["windows"] == 2, n
    with store.opened(db, write=True) as con:
        con.execute("UPDATE figures SET median = median * 1.5 WHERE mid = 'synth.m001' AND run > 300")
    n = searched()
    moved = points()
    assert n["windows"] == len(changes.windows(1501)) - 1, n  # the first window holds no run after 300
    assert [r for r, _ in moved["synth.m001"]][:1] == [301], moved


@pytest.mark.skipif(os.geteuid() != 0, reason="a read-only file system is mounted as root")
def test_a_read_only_history_of_schema_2_is_read_and_a_writable_one_migrated(tmp_path):
    """Schema 3 adds an index and the windows' cache: a history of schema 2 on a read-only file system
    has its change points all the same (searched, nothing kept); a writable one is migrated by the
    reader and keeps its windows."""
    import sqlite3
    db = _synthetic(tmp_path, 40, 1, seed=2, tail=(10, 1.5))
    con = sqlite3.connect(db)
    con.executescript("DROP TABLE windows; DROP INDEX figures_mid; UPDATE meta SET value = '2' "
                      "WHERE key = 'schema_version'; PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    with read_only_copy(db, tmp_path) as ro:
        r = osmeter("history", "changes", "--db", str(ro))
        assert r.returncode == 0 and r.stdout.startswith("1 change points"), r.stdout + r.stderr
    r = osmeter("history", "changes", "--db", str(db))
    assert r.returncode == 0 and r.stdout.startswith("1 change points"), r.stdout + r.stderr
    con = sqlite3.connect(db)
    try:
        assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "3"
        assert con.execute("SELECT COUNT(*) FROM windows WHERE k >= 0").fetchone()[0] == 1
    finally:
        con.close()


def test_a_break_is_taken_from_its_owner_once_and_the_surer_of_two_a_run_apart_is_kept():
    """find's merge of windows, given their breaks through a cache: a break reported by a window that does
    not own its run is left out (the owner reports what it sees), and one shift reported a run apart by
    two windows (each at its own edge) is one change point, the one of the smaller p. Run 319 stands alone
    between two steps, so that both breaks, were both kept, would each pass the interval's gate (a segment
    of one run has the other side's spread)."""
    from osmeter.history.changes import find, windows
    rng = np.random.default_rng(4)
    v = _long(rng, 1000, [(250, 1.2), (319, 1.2), (320, 1.2)])
    wins = windows(1000)
    assert wins[0][3] == 192 and wins[1][2:] == (192, 320) and wins[2][2:] == (320, 448), wins[:3]
    state = np.random.default_rng(0).bit_generator.state
    told = {0: [(250, 0.001)], 1: [(319 - 128, 0.002)], 2: [(320 - 256, 0.001)]}

    class Told:
        def get(self, k, digest):
            return {"breaks": told.get(k, []), "rng": state} if k >= 0 else None

        def put(self, k, digest, found):
            pass

    assert [c[0] for c in find(list(v), cache=Told())] == [320]


def test_the_page_draws_a_long_series_last_runs_as_points_and_the_rest_as_a_line(tmp_path):
    """600 runs: the last 400 (page.POINTS) are points with a link each, the first 200 one line of at most a
    point a pixel, said under the chart; the title counts all 600."""
    import re
    from osmeter.history.page import POINTS, W
    db = _synthetic(tmp_path, 600, 1, seed=3)
    r = osmeter("history", "html", "--db", str(db), "--out", str(tmp_path / "page"))
    assert r.returncode == 0, r.stderr
    page = (tmp_path / "page" / "index.html").read_text()
    chart = page[page.index("<svg"):page.index("</svg>")]  # (the id is shown twice: it has a change point)
    assert chart.count('<circle class="pt"') == POINTS == 400
    line = re.search(r'<polyline class="trend" points="([^"]*)" data-runs="(\d+)"', chart)
    assert line and int(line.group(2)) == 200, page[:2000]
    assert 1 < len(line.group(1).split()) <= W
    assert 'data-trend="200"' in page and "(600 runs, ns)" in page


def test_a_series_read_for_a_search_is_its_hosts_runs_in_start_order(tmp_path):
    """store.figures reads each id's figures without a join and orders them itself: it gives exactly the
    runs, times and medians of the joined, sorted query (store.series), on two hosts whose run ids
    interleave, start times out of id order, a median missing (NaN) and an id of one host only."""
    from osmeter.history import store
    rng = np.random.default_rng(4)
    db = tmp_path / "h.sqlite"
    when = rng.permutation(60)
    with store.opened(db, write=True) as con:
        con.execute("BEGIN IMMEDIATE")
        for r in range(1, 61):
            con.execute("INSERT INTO runs (id, path, host, started_utc, kernel, preset, commit_id, facts, added_utc, "
                        "campaign) VALUES (?, ?, ?, ?, '6.1', 'quick', NULL, '{}', '2026-01-01', NULL)",
                        (r, f"/r{r}", "ab"[r % 2], f"2026-01-01T00:{when[r - 1] // 2:02d}:00"))
            for mid in ("x.both", "x.odd") if r % 2 else ("x.both",):
                con.execute("INSERT INTO figures (run, mid, unit, median, n) VALUES (?, ?, 'ns', ?, 5)",
                            (r, mid, None if r == 17 else float(rng.uniform(1, 2))))
        con.execute("COMMIT")
    with store.opened(db) as con:
        assert store.host_names(con) == ["a", "b"]
        assert store.ids(con, "a") == ["x.both"] and store.ids(con, "b") == ["x.both", "x.odd"]
        got = store.figures(con, "b", ["x.both", "x.odd"])
        for mid in ("x.both", "x.odd"):
            ref = store.series(con, "b", mid)
            runs, times, meds = got[mid]
            assert runs.tolist() == [r["run"] for r in ref] and len(ref) == 30
            assert times.tolist() == [r["time"] for r in ref]
            assert np.array_equal(meds, np.array([r["figure"] for r in ref], dtype=float), equal_nan=True)
            assert np.isnan(meds).sum() == 1
        assert store.figures(con, "a", ["x.odd"])["x.odd"][0].tolist() == []


def test_a_long_series_trend_is_the_median_of_the_runs_at_each_pixel():
    """page._trend against the plain reading: the runs grouped by pixel column, each column's middle run
    (the upper of an even count) by value; a column of one run is that run."""
    from osmeter.history import page
    rng = np.random.default_rng(8)
    t = np.sort(rng.uniform(0, 1e6, 3000))
    v = rng.lognormal(0, 0.3, 3000)
    t[:5] = t[0]  # five runs at one time: one column

    def x(s):
        return 10 + s / 2000.0

    cols: dict[int, list[float]] = {}
    for a, b in zip(t, v):
        cols.setdefault(round(x(a)), []).append(b)
    want = " ".join(f"{c},{sorted(vs)[len(vs) // 2] * 100:.1f}" for c, vs in sorted(cols.items()))
    assert page._trend(t, v, x, lambda m: m * 100) == want
    assert len(want.split()) < len(t) and any(len(vs) % 2 == 0 for vs in cols.values())
