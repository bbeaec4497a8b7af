"""iogen's latency histograms (docs/iogen.md, "Latency histograms"): the
bucket geometry, merging, and percentiles read from counts. The C side
(bench/common/hist.c) and this must agree; a test holds them to it."""
from __future__ import annotations

import numpy as np

SUB_BITS = 6
# the percentiles iogen's latency summaries carry (hist.c's hist_json), by key
PCTS = (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99_9", 0.999), ("p99_99", 0.9999))


def bucket_range(i: int, sub_bits: int = SUB_BITS) -> tuple[int, int]:
    """The smallest and largest value bucket i holds."""
    sub = 1 << sub_bits
    if i < sub:
        return i, i
    e = i // sub + sub_bits - 1
    low = (sub + i % sub) << (e - sub_bits)
    return low, low + (1 << (e - sub_bits)) - 1


def bucket_of(v: int, sub_bits: int = SUB_BITS) -> int:
    sub = 1 << sub_bits
    if v < sub:
        return int(v)
    e = int(v).bit_length() - 1
    return (e - sub_bits + 1) * sub + ((int(v) >> (e - sub_bits)) & (sub - 1))


def counts_of(hist: dict) -> dict[int, int]:
    """{bucket: count} from iogen's {"sub_bits": 6, "counts": [[bucket, count], ...]}."""
    if hist.get("sub_bits", SUB_BITS) != SUB_BITS:
        raise ValueError(f"a histogram with sub_bits {hist.get('sub_bits')}: this harness reads {SUB_BITS}")
    return {int(b): int(c) for b, c in hist.get("counts", [])}


def merge(hists: list[dict]) -> dict[int, int]:
    """Histograms added bucket by bucket (workers, intervals, hosts)."""
    out: dict[int, int] = {}
    for h in hists:
        for b, c in counts_of(h).items():
            out[b] = out.get(b, 0) + c
    return out


def percentile(counts: dict[int, int], p: float, lo: float | None = None, hi: float | None = None) -> float:
    """The value below which a fraction p of the recorded values fall, as
    iogen reads it: the top of the bucket holding that rank, kept within
    the recorded min and max when they are known."""
    total = sum(counts.values())
    if total == 0:
        return 0.0
    rank = min(max(int(p * total + 0.5), 1), total)
    seen = 0
    for b in sorted(counts):
        seen += counts[b]
        if seen >= rank:
            top = bucket_range(b)[1]
            if hi is not None:
                top = min(top, hi)
            if lo is not None:
                top = max(top, lo)
            return float(top)
    return float(hi or 0)


def merge_summaries(lats: list[dict]) -> dict:
    """iogen latency summaries (count, mean, min, max, percentiles and the
    histogram) of separate runs, processes or hosts as one: the histograms
    added, the percentiles read from the sum (never averaged), the mean
    weighted by count. Summaries without a completion add nothing."""
    lats = [lat for lat in lats if (lat or {}).get("count")]
    counts = merge([lat["hist"] for lat in lats])
    lo = min((lat["min"] for lat in lats), default=None)
    hi = max((lat["max"] for lat in lats), default=None)
    out = {"count": sum(counts.values()), "min": lo, "max": hi}
    if out["count"]:
        out["mean"] = sum(lat["mean"] * lat["count"] for lat in lats) / out["count"]
        for name, p in PCTS:
            out[name] = percentile(counts, p, lo, hi)
    out["hist"] = {"sub_bits": SUB_BITS, "counts": [[b, c] for b, c in sorted(counts.items())]}
    return out


def from_values(values) -> dict[int, int]:
    """The histogram of raw latencies (a --log file's), bucket by bucket."""
    out: dict[int, int] = {}
    for v in np.asarray(values, dtype=np.int64):
        b = bucket_of(int(v))
        out[b] = out.get(b, 0) + 1
    return out
