"""The methods issue 19 made visible beside lmbench's: fork from parents of
growing size, and signal catching less the send (lat_sig catch)."""
from __future__ import annotations

import numpy as np

from conftest import probe_lines


def ns(o: dict, v) -> np.ndarray:
    return np.asarray(v, dtype=float) * (1e9 / o["tsc_hz"] if o["unit"] == "cycles" else 1.0)


def test_fork_costs_more_from_a_bigger_parent():
    """fork copies page tables: a parent that touched 128 MiB forks clearly
    slower than a bare one; the series records each parent's RSS."""
    o = probe_lines("cpu_proc", "--cpu", "0", "--samples", "20", "--parent-mb", "0,128")["cpu.proc_create_wait"]
    s = o["series"]
    assert s["x"] == [0, 128] and len(s["samples"][0]) == 20
    small, big = (np.median(ns(o, row)) for row in s["samples"])
    assert big > 2 * small, (small, big)
    rss = o["params"]["series_parent_rss_kib"]
    assert rss[1] - rss[0] >= 120 * 1024
    assert o["params"]["parent_mappings"] > 5 and o["params"]["parent_rss_kib"] > 0


def test_signal_catch_is_deliver_less_send():
    lines = probe_lines("cpu_signal", "--cpu", "0", "--samples", "30")
    d, s, c = (lines[f"cpu.signal.{k}"] for k in ("deliver", "send", "catch"))
    assert np.allclose(ns(c, c["samples"]), ns(d, d["samples"]) - ns(s, s["samples"]), rtol=1e-4, atol=0.01)  # (as printed: 6 significant digits)
    assert np.median(ns(s, s["samples"])) < np.median(ns(d, d["samples"]))
    assert "lat_sig" in c["params"]["method"]


def test_ctx_windows_are_long_and_warmed():
    o = probe_lines("cpu_ctx", "--cpu", "0", "--samples", "5")["cpu.ctx.proc"]
    assert o["params"]["roundtrips_per_sample"] == 1000 and o["params"]["untimed_roundtrips_first"] == 16
