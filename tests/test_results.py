"""results.json (DESIGN.md contract 4), samples files, statistics."""
from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import by_id
from osmeter.results.writer import ProbeOutputError, Results, parse_probe_output
from osmeter.results.store import load
from osmeter.core.stats import bootstrap_ci95_median, summarize


def test_results_document_shape(quick_run):
    out, doc = quick_run
    assert doc["schema"] == "osmeter/1"
    mach, cond = doc["machine"], doc["conditions"]
    for k in ("cpu_model", "online_cpus", "caches", "memory_bytes", "disks", "nics", "kernel", "hypervisor"):
        assert k in mach
    assert any(c["level"] == 1 for c in mach["caches"])
    for k in ("pinned_cpu", "scheduler", "governor", "boost", "smt_active", "thp", "mitigations",
              "clocksource", "tsc_flags", "compiler", "osmeter", "loadavg_before"):
        assert k in cond
    assert cond["scheduler"]["policy"] in ("SCHED_FIFO", "SCHED_OTHER")
    if cond["scheduler"]["policy"] == "SCHED_OTHER":
        assert cond["scheduler"]["why_not_fifo"]
    assert "-O2" in cond["compiler"]["cflags"]
    assert (out / "summary.txt").read_text().startswith("id")


def test_samples_files_hold_the_raw_samples(quick_run):
    out, doc = quick_run
    for m in doc["measurements"]:
        z = np.load(out / m["samples_file"])
        keep = ~z["disturbed"]
        assert z["values"].size == m["samples_total"] == m["n"] + m["dropped_disturbed"]
        assert np.median(z["values"][keep]) == pytest.approx(m["median"])
        if "cycles" in m:  # ns = cycles / tsc_hz
            assert np.allclose(z["values"], z["raw"] * 1e9 / m["tsc_hz"])
        assert m["ci95"][0] <= m["median"] <= m["ci95"][1]
    loop = by_id(doc)["cpu.loop"]
    assert len(loop["series"]["x"]) == len(loop["series"]["median"]) > 3


def test_results_from_before_the_id_renames_read_under_the_new_ids(quick_run, tmp_path):
    """timer.latency became sched.timer.latency and timer.phys/virt.* became
    cpu.vtimer.phys/virt.*: a run written before the rename is read under
    the new ids, its samples found, and it compares id by id with a run of
    today. Mutant: the reader keeps the old ids."""
    import shutil
    import subprocess

    from conftest import ROOT
    from osmeter.results.store import kept_samples

    out, doc = quick_run
    old = tmp_path / "old"
    shutil.copytree(out, old)
    text = (old / "results.json").read_text()
    renamed = {"sched.timer.latency": "timer.latency", "cpu.vtimer.phys.": "timer.phys.", "cpu.vtimer.virt.": "timer.virt."}
    for new, was in renamed.items():
        assert new in text
        text = text.replace(f'"id": "{new}', f'"id": "{was}')
    text = text.replace('"probe": "sched.timer"', '"probe": "timer.latency"')
    assert '"id": "timer.latency"' in text and '"id": "timer.virt.read"' in text
    (old / "results.json").write_text(text)
    got = {m["id"]: m for m in load(old)["measurements"]}
    now = {m["id"] for m in doc["measurements"]}
    assert set(got) == now
    assert got["sched.timer.latency"]["probe"] == "sched.timer"
    assert kept_samples(old, got["cpu.vtimer.virt.read"]).size == by_id(doc)["cpu.vtimer.virt.read"]["n"]
    r = subprocess.run([str(ROOT / "osmeter"), "compare", str(old), "--", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "sched.timer.latency" in r.stdout and "only in" not in r.stdout


def test_two_measurements_of_one_id_are_refused_by_every_reader(quick_run, tmp_path):
    """A results.json that holds an id twice (getppid.libc renamed
    getppid, as a hostile pass did) is refused with both positions named,
    by compare and by stability, never merged into one figure."""
    import json
    import shutil
    import subprocess

    from conftest import ROOT

    out, _ = quick_run
    bad = tmp_path / "bad"
    shutil.copytree(out, bad)
    doc = json.loads((bad / "results.json").read_text())
    ids = [m["id"] for m in doc["measurements"]]
    k = ids.index("cpu.syscall.getppid.libc")
    doc["measurements"][k]["id"] = "cpu.syscall.getppid"
    (bad / "results.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=rf"measurements {ids.index('cpu.syscall.getppid')} and {k} have the same id"):
        load(bad)
    for argv in (["compare", str(bad), "--", str(out)], ["stability", str(bad)]):
        r = subprocess.run([str(ROOT / "osmeter"), *argv], capture_output=True, text=True)
        assert r.returncode == 2 and "have the same id 'cpu.syscall.getppid'" in r.stderr, (argv, r.stderr[-500:])
        assert "Traceback" not in r.stderr


@pytest.mark.parametrize("processes, words", [([1, 2], "'processes' is not a dict"),
                                              ({"n": "3"}, "'processes.n' is not a number"),
                                              ({"n": 2, "core_width": "wide"}, "'processes.core_width' is not a list")])
def test_a_processes_record_of_the_wrong_shape_is_refused_by_every_reader(quick_run, tmp_path, processes, words):
    """`processes` as a list (compare and stability died with an
    AttributeError in shared_processes) or with fields of the wrong kind:
    refused by the one validator, with the id, exit 2, no traceback. Mutant
    caught: processes' kind not checked."""
    import json
    import shutil
    import subprocess

    from conftest import ROOT

    out, _ = quick_run
    bad = tmp_path / "bad"
    shutil.copytree(out, bad)
    doc = json.loads((bad / "results.json").read_text())
    m = next(m for m in doc["measurements"] if m["id"] == "cpu.syscall.getppid")
    m["processes"] = processes
    (bad / "results.json").write_text(json.dumps(doc))
    for argv in (["compare", str(bad), "--", str(out)], ["stability", str(bad)]):
        r = subprocess.run([str(ROOT / "osmeter"), *argv], capture_output=True, text=True)
        assert r.returncode == 2 and words in r.stderr and "cpu.syscall.getppid" in r.stderr, (argv, r.stderr[-500:])
        assert "Traceback" not in r.stderr


def test_summarize_matches_numpy():
    x = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0])
    s = summarize(x)
    assert s["n"] == 8 and s["mean"] == pytest.approx(x.mean()) and s["median"] == 3.5
    assert s["std"] == pytest.approx(x.std(ddof=1)) and s["min"] == 1 and s["max"] == 9


def test_bootstrap_interval_narrows_with_more_trials():
    rng = np.random.default_rng(1)
    small = rng.normal(100, 10, 20)
    big = rng.normal(100, 10, 2000)
    lo_s, hi_s = bootstrap_ci95_median(small)
    lo_b, hi_b = bootstrap_ci95_median(big)
    assert lo_s <= np.median(small) <= hi_s and lo_b <= np.median(big) <= hi_b
    assert (hi_b - lo_b) < (hi_s - lo_s) / 4
    assert bootstrap_ci95_median(big) == (lo_b, hi_b)  # deterministic


@pytest.mark.parametrize("n", [7, 8])
def test_bootstrap_medians_are_those_of_resamples(n):
    """The medians are drawn from order statistics, not from resamples: their
    distribution over the sorted samples must be that of the medians of real
    resamples (odd n: the middle one; even n: the mean of the two middle
    ones). Mutants: the order statistic off by one; the next one up drawn
    from the whole interval, not above the first."""
    from osmeter.core.stats import bootstrap_medians

    x = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0])[:n]
    draws = 200_000
    fast = bootstrap_medians(x, draws, seed=3)
    slow = np.median(x[np.random.default_rng(4).integers(0, n, (draws, n))], axis=1)
    values = np.union1d(fast, slow)
    p = np.array([np.mean(fast == v) for v in values])
    q = np.array([np.mean(slow == v) for v in values])
    assert 0.5 * np.abs(p - q).sum() < 0.01, dict(zip(values, zip(p.round(4), q.round(4))))


def _line(**kw):
    base = {"id": "x.y", "unit": "cycles", "tsc_hz": 2e9, "params": {}, "overhead_subtracted": 10,
            "samples": [2000, 4000, 6000, 1e9], "disturbed": [3]}
    base.update(kw)
    return base


def test_cycles_become_ns_and_disturbed_samples_are_dropped(tmp_path):
    r = Results(tmp_path, {}, {})
    m = r.add_line(_line(), "t", "test")
    assert m["unit"] == "ns" and m["n"] == 3 and m["dropped_disturbed"] == 1
    assert m["median"] == pytest.approx(2000.0)  # 4000 cycles at 2 GHz
    assert m["cycles"]["median"] == 4000 and m["overhead_subtracted"] == pytest.approx(5.0)
    r.save()
    assert load(tmp_path)["measurements"][0]["id"] == "x.y"


def test_a_measurement_has_one_figure_in_results_json_the_model_and_the_history(tmp_path):
    """results.json's `figure` is the run's figure, the median of its processes' medians (200 here,
    where the pooled `median` is 100: one process kept five samples), with figure_ci's interval;
    results.model.Measurement reads it under that name, and a record of the old layout (no `figure`)
    by the same name; the history stores the figure and its interval, not the pooled median.
    Mutants: the writer's figure the pooled median; the history's figure the pooled median."""
    from osmeter.core.stats import figure_ci
    from osmeter.history import store as history
    from osmeter.results.model import Measurement, measurements

    values = [100.0] * 5 + [200.0, 201.0] + [300.0, 299.0]
    line = {"id": "x.procs", "unit": "ns", "samples": values, "disturbed": [],
            "process": [0] * 5 + [1, 1] + [2, 2]}
    r = Results(tmp_path / "run", {"hostname": "h"}, {"preset": "quick", "started_utc": "2026-12-06T00:00:00"})
    m = r.add_line(line, "t", "test")
    one = r.add_line({"id": "x.one", "unit": "ns", "samples": [5.0, 6.0, 7.0], "disturbed": []}, "t", "test")
    r.doc["complete"] = True
    r.save()
    want_ci = figure_ci([np.array([100.0] * 5), np.array([200.0, 201.0]), np.array([300.0, 299.0])])
    assert m["median"] == 100 and m["figure"] == 200.5 and m["figure_ci95"] == pytest.approx(list(want_ci))
    assert one["figure"] == one["median"] == 6 and one["figure_ci95"] == one["ci95"]
    got = {x.id: x for x in measurements(load(tmp_path / "run"))}
    assert (got["x.procs"].figure, got["x.procs"].pooled_median, got["x.procs"].processes) == (200.5, 100, 3)
    assert got["x.procs"].figure_ci95 == pytest.approx(want_ci) and got["x.one"].processes == 1
    old = {k: v for k, v in m.items() if k not in ("figure", "figure_ci95")}
    assert (Measurement.of(old).figure, Measurement.of(old).figure_ci95) == (200.5, None)
    old_one = {k: v for k, v in one.items() if k not in ("figure", "figure_ci95")}
    assert (Measurement.of(old_one).figure, Measurement.of(old_one).figure_ci95) == (6, tuple(one["ci95"]))
    db = tmp_path / "history.sqlite"
    assert history.add([tmp_path / "run"], db) == (1, 0)
    with history.opened(db) as con:
        row = history.series(con, "h", "x.procs")[0]
    assert (row["figure"], row["lo"], row["hi"]) == pytest.approx((200.5, *want_ci))


@pytest.mark.parametrize(
    "text, words",
    [
        ("not json\n", "not JSON"),
        ('{"id": "a", "unit": "ns"}\n', "lacks"),
        ('{"id": "a", "unit": "ns", "samples": 3}\n', "not a list"),
    ],
)
def test_bad_probe_output_is_rejected(text, words):
    with pytest.raises(ProbeOutputError, match=words):
        parse_probe_output(text)


def test_bad_disturbed_index_and_series_are_rejected(tmp_path):
    r = Results(tmp_path, {}, {})
    with pytest.raises(ProbeOutputError, match="out of range"):
        r.add_line(_line(disturbed=[7]), "t", "test")
    with pytest.raises(ProbeOutputError, match="series"):
        r.add_line(_line(disturbed=[], series={"x": [1, 2], "samples": [[1, 2]]}), "t", "test")
    with pytest.raises(ProbeOutputError, match="tsc_hz"):
        r.add_line(_line(tsc_hz=0, disturbed=[]), "t", "test")


def test_load_rejects_other_files(tmp_path):
    (tmp_path / "results.json").write_text(json.dumps({"schema": "other"}))
    with pytest.raises(ValueError, match="schema"):
        load(tmp_path)
    (tmp_path / "results.json").write_text("{")
    with pytest.raises(ValueError, match="not valid JSON"):
        load(tmp_path)


def test_processes_merge_into_one_line_per_id():
    """Two processes of one probe: samples side by side with their process,
    disturbed indices shifted, cycle counts brought to the first process's
    rate, series trials side by side, a probe's own tail dropped."""
    from osmeter.results.writer import merge_processes, process_summary

    p1 = [{"id": "x", "unit": "cycles", "tsc_hz": 1e9, "samples": [10.0, 12.0], "disturbed": [1],
           "params": {"k": 1}, "overhead_subtracted": 2.0, "tail": {"n": 9},
           "series": {"x": [1, 2], "samples": [[1.0], [2.0]], "disturbed": [[], [0]]}},
          {"id": "gone", "refused": "not here"}]
    p2 = [{"id": "x", "unit": "cycles", "tsc_hz": 2e9, "samples": [20.0, 22.0, 24.0], "disturbed": [0],
           "params": {"k": 2}, "overhead_subtracted": 4.0,
           "series": {"x": [1, 2], "samples": [[3.0, 5.0], [4.0, 6.0]], "disturbed": [[1], []]}}]
    merged = merge_processes([p1, p2])
    assert [m["id"] for m in merged] == ["x", "gone"] and merged[1] == {"id": "gone", "refused": "not here"}
    x = merged[0]
    assert x["samples"] == [10.0, 12.0, 10.0, 11.0, 12.0]  # the second process's cycles at 1 GHz
    assert x["disturbed"] == [1, 2] and x["process"] == [0, 0, 1, 1, 1]
    assert x["series"]["samples"] == [[1.0, 1.5, 2.5], [2.0, 2.0, 3.0]]
    assert x["series"]["disturbed"] == [[2], [0]]
    assert "tail" not in x and x["params"] == {"k": 1, "processes": 2} and x["overhead_subtracted"] == 2.0
    assert merge_processes([p1]) is p1
    # a param each process measured of its conditions: their mean, where named
    assert merge_processes([p1, p2], mean_params=("k",))[0]["params"] == {"k": 1.5, "processes": 2}
    # the per-process summary: medians, and the run's figure their median
    v = np.array([100, 101, 99, 110, 111, 109, 120, 121, 119.0])
    ps = process_summary(v, np.ones(9, bool), np.repeat([0, 1, 2], 3))
    assert ps["medians"] == [100, 110, 120] and ps["median_of_medians"] == 110 and ps["n"] == 3
    assert ps["between_cv"] == pytest.approx(np.std(np.log([100, 110, 120]), ddof=1))


def test_a_series_x_whose_trials_were_all_disturbed_has_no_median_and_no_warning(tmp_path):
    """A run's terminal showed numpy's 'All-NaN slice' warning for a series
    point whose trials were all disturbed: that point has no median (null
    in results.json), the others keep theirs, and nothing is printed.
    Mutant: the warning filter removed."""
    import warnings

    line = {"id": "x.curve", "unit": "ns", "samples": [1.0, 2.0, 3.0], "disturbed": [],
            "series": {"x_name": "bytes", "x": [1, 2], "y_unit": "ns",
                       "samples": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], "disturbed": [[], [0, 1, 2]]}}
    r = Results(tmp_path / "run", {"hostname": "h"}, {"preset": "quick"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r.add_line(line, "probe_x", "a curve")
    r.save()
    (m,) = json.loads((tmp_path / "run" / "results.json").read_text())["measurements"]
    assert m["series"]["median"] == [2.0, None] and m["series"]["dropped_disturbed"] == 3


def test_results_csv_is_what_export_gives_even_for_a_figure_that_is_not_a_number(tmp_path):
    """A measurement whose tail has a NaN (a run can give one): results.csv,
    written at the run's end from the document in memory, equals `osmeter
    export` of the results.json saved beside it (an empty cell, not 'nan';
    test_export_csv saw them differ once). Mutant caught: the CSV written
    from the document before it is made JSON's."""
    import math

    from osmeter.present.rows import to_csv
    from osmeter.results.store import load
    from osmeter.results.writer import Results
    from osmeter.running.finish import finish

    d = tmp_path / "run"
    r = Results(d, {"kernel": "6.1", "cpu_model": "X"}, {"pinned_cpu": 1})
    m = r.add_line({"id": "cpu.syscall.getppid", "unit": "ns", "samples": [100.0, 101.0] * 5, "disturbed": []},
                   "fake", "x")
    m["tail"] = {"p90": 101.0, "p99": math.nan, "p99.9": math.nan, "max": 101.0}
    r.save()
    finish(r, d, quiet=True)
    assert (d / "results.csv").read_bytes().decode() == to_csv(load(d))
    assert "nan" not in (d / "results.csv").read_text()


def test_the_timer_is_read_from_its_block_in_one_place(quick_run):
    """results/model.Timer reads a measurement's `timer` block for every
    reader (the summary's timer row, the deschedule check, `list
    --methodology`): on a real run each measurement states one, of a kind
    the probes name, with a positive step; a block of the wrong shape gives
    no timer or leaves out the field that is wrong, never a crash; the
    summary names each kind once. Mutant caught: the fallback's reason
    not shown."""
    from osmeter.present.rows import _timer_summary
    from osmeter.results.model import Timer, timers

    doc = load(quick_run[0])
    stated = timers(doc)
    assert stated and len(stated) == sum(1 for m in doc["measurements"] if isinstance(m.get("timer"), dict))
    assert {t.kind for _, t in stated} <= {"tsc-fenced", "cntvct-isb", "clock_gettime"}  # bench/common/osm.h
    assert all(t.resolution_ns > 0 and t.deschedule_check in ("perf-mmap-lock", "getrusage") for _, t in stated)
    assert Timer.of({"resolution_ns": 3.0}) is None and Timer.of("tsc") is None and Timer.of(None) is None
    odd = Timer.of({"kind": "tsc", "resolution_ns": float("nan"), "step_ticks": True, "invariant_tsc": "yes"})
    assert odd == Timer(kind="tsc")
    run = {"measurements": [{"id": "a", "timer": {"kind": "tsc", "invariant_tsc": True, "resolution_ns": 10.0,
                                                    "step_ticks": 25}},
                            {"id": "b", "timer": {"kind": "tsc", "resolution_ns": 11.0}},
                            {"id": "c", "timer": {"kind": "clock_gettime", "fallback": "no invariant TSC"}},
                            {"id": "d"}]}
    assert _timer_summary(run) == ("tsc (invariant TSC), step 10 ns = 25 ticks; "
                                   "clock_gettime (fallback: no invariant TSC)")
    assert _timer_summary({"measurements": [{"id": "d", "timer": {}}]}) == "-"
