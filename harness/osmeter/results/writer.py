"""Writing a results directory: results.json (DESIGN.md contract 4), the raw
samples of every measurement beside it, and the claim on the directory. Its
layout and its readers are store.py's.

results.json is rewritten atomically (temporary file, fsync, rename) after
every probe, so an interrupted or killed run leaves a valid file holding
every probe that finished.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from osmeter.core.errors import RunError, shielded
from osmeter.core.stats import figure_ci, robust_sd, run_figure, series_summary, summarize, tail
from osmeter.core.units import has_tail
from osmeter.results import store
from osmeter.results.readings import lower_reading

REQUIRED_LINE_KEYS = ("id", "unit", "samples")


class ProbeOutputError(ValueError):
    pass


def parse_probe_output(text: str) -> list[dict]:
    """The JSON lines a probe printed; anything malformed is an error."""
    lines = []
    for k, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as e:
            raise ProbeOutputError(f"line {k} is not JSON ({e.msg}): {raw[:80]!r}") from None
        if isinstance(obj, dict) and isinstance(obj.get("id"), str) and isinstance(obj.get("refused"), str):
            lines.append({"id": obj["id"], "refused": obj["refused"]})  # an id the probe cannot measure here
            continue
        if not isinstance(obj, dict) or any(key not in obj for key in REQUIRED_LINE_KEYS):
            raise ProbeOutputError(f"line {k} lacks one of {', '.join(REQUIRED_LINE_KEYS)}")
        if not isinstance(obj["samples"], list):
            raise ProbeOutputError(f"line {k}: samples is not a list")
        lines.append(obj)
    return lines


def _to_reported(values: np.ndarray, unit: str, tsc_hz: float | None) -> tuple[np.ndarray, str]:
    """Cycle counts (TSC ticks) become ns; other units pass through. The
    one place that converts."""
    if unit == "cycles":
        if not tsc_hz or tsc_hz <= 0:
            raise ProbeOutputError("samples in cycles but no valid tsc_hz")
        return values * 1e9 / tsc_hz, "ns"
    return values, unit


def line_values(line: dict) -> tuple[np.ndarray, np.ndarray, str]:
    """A probe line's samples in the reported unit, its disturbed mask, and
    that unit."""
    raw = np.asarray([np.nan if v is None else v for v in line["samples"]], dtype=float)
    disturbed = np.zeros(raw.size, dtype=bool)
    for i in line.get("disturbed", []):
        if not isinstance(i, int) or not 0 <= i < raw.size:
            raise ProbeOutputError(f"{line['id']}: disturbed index {i!r} out of range")
        disturbed[i] = True
    values, unit = _to_reported(raw, line["unit"], line.get("tsc_hz"))
    return values, disturbed, unit


def merge_processes(per_process: list[list[dict]], mean_params: tuple[str, ...] = (),
                    merge_params: Callable[[list[dict]], dict] | None = None) -> list[dict]:
    """The lines several processes of one probe printed, one line per id:
    samples in process order, each sample's process in "process", each
    process's core width in "process_width" (the lower of its two readings),
    disturbed indices shifted, series trials side by side. Cycle counts are brought to
    the first process's tsc_hz (each process calibrates its own). A probe's
    own per-event tail belongs to one process and is dropped: the tail is
    then taken from the pooled samples. An id is refused where every process
    refused it (with the first process's reason); else its measured processes
    are merged.
    Params are merge_params(each process's params) where the probe gives
    that function, else the first process's; then those named in mean_params
    (what each process measured of its conditions) are their mean over the
    processes that gave a number."""
    per_process = [p for p in per_process if p]
    if len(per_process) <= 1:
        return per_process[0] if per_process else []
    out = []
    for first in per_process[0]:
        lines = [x for p in per_process for x in p if x.get("id") == first["id"] and "refused" not in x]
        if not lines:  # refused by every process (a measured process wins over one that refused)
            out.append(first)
            continue
        first = lines[0]
        hz = first.get("tsc_hz")
        merged = dict(first)
        samples, disturbed, process, ovh = [], [], [], []
        sx, srows, sdist = None, None, None
        for k, line in enumerate(lines):
            scale = 1.0
            if line.get("unit") == "cycles" and hz and line.get("tsc_hz"):
                scale = hz / line["tsc_hz"]
            vals = [None if v is None else v * scale for v in line["samples"]]
            disturbed += [len(samples) + i for i in line.get("disturbed", [])]
            samples += vals
            process += [k] * len(vals)
            if isinstance(line.get("overhead_subtracted"), (int, float)):
                ovh.append(line["overhead_subtracted"] * scale)
            series = line.get("series")
            if series and (sx is None or series.get("x") == sx):
                rows = [[None if v is None else v * scale for v in r] for r in series["samples"]]
                if sx is None:
                    sx, srows = series.get("x"), rows
                    sdist = [list(d) for d in series.get("disturbed") or [[] for _ in rows]]
                else:
                    width = len(srows[0]) if srows else 0
                    for r, (row, d) in enumerate(zip(rows, series.get("disturbed") or [[] for _ in rows])):
                        srows[r] = srows[r] + row
                        sdist[r] = sdist[r] + [width + i for i in d]
        merged.update(samples=samples, disturbed=disturbed, process=process,
                      process_width=[lower_reading(line.get("core_width")) for line in lines])
        if ovh:
            merged["overhead_subtracted"] = float(np.median(ovh))
        if sx is not None:
            merged["series"] = dict(first["series"], x=sx, samples=srows, disturbed=sdist)
        if first.get("grid"):  # a 2-D series: each cell's trials side by side, from the processes of its shape
            g = first["grid"]
            same = [x["grid"] for x in lines if x.get("grid") and (x["grid"]["x"], x["grid"]["y"]) == (g["x"], g["y"])]
            merged["grid"] = dict(g, values={
                name: dict(v, samples=[[[t for q in same for t in q["values"][name]["samples"][i][j]]
                                        for j in range(len(g["y"]))] for i in range(len(g["x"]))])
                for name, v in g["values"].items()})
        merged.pop("tail", None)
        ps = [x.get("params") or {} for x in lines]
        merged["params"] = dict(merge_params(ps) if merge_params else ps[0], processes=len(lines))
        for key in mean_params:
            got = [v for x in lines if isinstance(v := (x.get("params") or {}).get(key), (int, float))
                   and not isinstance(v, bool)]
            if got:
                merged["params"][key] = float(np.mean(got))
        out.append(merged)
    return out


def process_summary(values: np.ndarray, keep: np.ndarray, process: np.ndarray) -> dict | None:
    """Per process of a merged line: its median and kept samples; the spread
    of log samples inside a process (within_cv: the median absolute deviation,
    scaled to a standard deviation) and of the logs of the process medians
    (between_cv), and the median of the process medians, the run's figure
    where processes disagree (compare takes it)."""
    ks = sorted(set(process.tolist()))
    if len(ks) < 2:
        return None
    per = [values[keep & (process == k)] for k in ks]
    meds = [float(np.median(v)) for v in per if v.size]
    ns = [int(v.size) for v in per if v.size]
    mads = [robust_sd(np.log(v)) for v in per if v.size > 1 and np.all(v > 0)]
    if not meds:
        return None
    med = np.asarray(meds)
    out = {"n": len(ks), "medians": meds, "kept": ns, "median_of_medians": run_figure(per)}
    out["within_cv"] = float(np.sqrt(np.mean(np.square(mads)))) if mads else None
    out["between_cv"] = float(np.std(np.log(med), ddof=1)) if med.size > 1 and np.all(med > 0) else None
    return out


def grid_summary(mid: str, grid: dict) -> tuple[dict, dict[str, np.ndarray]]:
    """A 2-D series (DESIGN.md contract 4): per cell of x by y, each value's
    median and quartiles over the cell's trials; and the arrays for the
    samples file (grid_x, grid_y, grid_<value>[x][y][trial])."""
    try:
        gx = np.asarray(grid["x"], dtype=float)
        gy = np.asarray(grid["y"], dtype=float)
        values = grid["values"]
        if gx.ndim != 1 or gy.ndim != 1 or not isinstance(values, dict) or not values:
            raise ValueError("x and y must be lists of numbers and values a non-empty object")
        out = {k: grid.get(k) for k in ("x_name", "x_unit", "y_name", "y_unit")}
        out.update(x=gx.tolist(), y=gy.tolist(), values={})
        arrays = {"grid_x": gx, "grid_y": gy}
        for name, v in values.items():
            if not (isinstance(name, str) and name.isidentifier()):
                raise ValueError(f"value name {name!r} is not a plain name")
            a = np.asarray([[[np.nan if t is None else t for t in cell] for cell in row] for row in v["samples"]],
                           dtype=float)
            if a.ndim != 3 or a.shape[:2] != (gx.size, gy.size) or a.shape[2] == 0:
                raise ValueError(f"{name} is not {gx.size} x {gy.size} cells of trials")
            cells = series_summary(a.reshape(gx.size * gy.size, a.shape[2]))
            out["values"][name] = {"unit": v.get("unit"), **{k: np.reshape(c, a.shape[:2]).tolist()
                                                            for k, c in cells.items()}}
            arrays[f"grid_{name}"] = a
    except (KeyError, TypeError, ValueError) as e:
        raise ProbeOutputError(f"{mid}: bad grid: {e}") from None
    return out, arrays


def as_saved(doc: dict) -> dict:
    """A document as results.json holds it (and every reader loads it): what is written beside it from
    the document in memory (results.csv) is written from this, so that the two agree."""
    return _finite(doc)


def _finite(x):
    """JSON has no NaN: None instead."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, list):
        return [_finite(v) for v in x]
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    return x


def safe_name(mid: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in mid)


class Results:
    def __init__(self, out: Path, machine: dict, conditions: dict):
        self.dir = out
        self.samples_dir = out / store.SAMPLES
        self.samples_dir.mkdir(parents=True, exist_ok=True)
        self.doc = {
            "schema": store.SCHEMA,
            "machine": machine,
            "conditions": conditions,
            "measurements": [],
            "failures": [],
            "complete": False,
            "interrupted": False,
        }

    @property
    def measurements(self) -> list[dict]:
        return self.doc["measurements"]

    def add_line(self, line: dict, probe_name: str, description: str) -> dict:
        """One probe JSON line -> one measurement, its samples saved beside."""
        raw = np.asarray([np.nan if v is None else v for v in line["samples"]], dtype=float)
        values, disturbed, unit = line_values(line)
        tsc_hz = line.get("tsc_hz")
        keep = ~disturbed & np.isfinite(values)
        m = {"id": line["id"], "unit": unit, "description": description, "probe": probe_name}
        m.update(summarize(values[keep]))
        m["dropped_disturbed"] = int(disturbed.sum())
        m["samples_total"] = int(raw.size)
        if has_tail(unit):
            # a probe that kept every event in a histogram gives its own (per-event) tail
            m["tail"] = line["tail"] if isinstance(line.get("tail"), dict) else tail(values[keep])
        if line["unit"] == "cycles":
            c = summarize(raw[keep], ci=False)  # the same figures in cycles: no interval wanted
            m["cycles"] = {k: c[k] for k in ("mean", "median", "std", "min", "max")}
            m["tsc_hz"] = tsc_hz
        ovh = line.get("overhead_subtracted")
        if isinstance(ovh, (int, float)):
            m["overhead_subtracted"] = float(_to_reported(np.array([ovh], float), line["unit"], tsc_hz)[0][0])
            if line["unit"] == "cycles":
                m["overhead_subtracted_cycles"] = float(ovh)
        m["timer"] = line.get("timer")
        m["params"] = line.get("params", {})
        arrays = {"values": values, "raw": raw, "disturbed": disturbed}
        proc = line.get("process")
        if isinstance(proc, list) and len(proc) == raw.size:
            arrays["process"] = np.asarray(proc, dtype=np.int32)
            ps = process_summary(values, keep, arrays["process"])
            if ps:
                width = line.get("process_width")
                if isinstance(width, list) and len(width) == ps["n"]:
                    ps["core_width"] = width  # each process's, by its number (store.Run.shared_processes)
                m["processes"] = ps
        m["figure"], m["figure_ci95"] = m["median"], m.get("ci95")  # one process: its samples' median
        if "processes" in m:  # several: the median of their medians, and its interval
            per = store.split_by_process(values, keep, arrays["process"])[2]
            m["figure"], m["figure_ci95"] = m["processes"]["median_of_medians"], list(figure_ci(per))
        if isinstance(line.get("interference"), dict):
            m["interference"] = line["interference"]
        series = line.get("series")
        if series:
            sx = np.asarray(series["x"], dtype=float)
            sy_raw = np.asarray(series["samples"], dtype=float)
            if sy_raw.ndim != 2 or sy_raw.shape[0] != sx.size:
                raise ProbeOutputError(f"{line['id']}: series samples do not match its x values")
            sy, y_unit = _to_reported(sy_raw, series.get("y_unit", line["unit"]), tsc_hz)
            sdist = np.zeros(sy.shape, dtype=bool)
            for row, idx in enumerate(series.get("disturbed") or []):
                for i in idx:
                    if not isinstance(i, int) or not 0 <= i < sy.shape[1] or row >= sy.shape[0]:
                        raise ProbeOutputError(f"{line['id']}: series disturbed index {i!r} out of range")
                    sdist[row, i] = True
            m["series"] = {"x_name": series.get("x_name", "x"), "x": sx.tolist(), "y_unit": y_unit}
            m["series"].update(series_summary(np.where(sdist, np.nan, sy)))
            m["series"]["dropped_disturbed"] = int(sdist.sum())
            arrays["series_x"] = sx
            arrays["series_values"] = sy
            arrays["series_disturbed"] = sdist
        if line.get("grid"):
            m["grid"], grid_arrays = grid_summary(line["id"], line["grid"])
            arrays.update(grid_arrays)
        m["samples_file"] = store.sample_file(safe_name(line["id"]))
        write_atomic(self.dir / m["samples_file"], lambda f: np.savez_compressed(f, **arrays), binary=True)
        # a rerun of the same id replaces the earlier entry
        self.doc["measurements"] = [x for x in self.measurements if x["id"] != m["id"]] + [m]
        return m

    def add_refusal(self, id: str, probe: str, why: str) -> None:
        """An id the probe declined to measure on this machine, with its
        reason (one CPU, no invariant TSC, no SCHED_FIFO): recorded, not a
        failure."""
        rest = [x for x in self.doc.setdefault("refused", []) if x["id"] != id]
        self.doc["refused"] = rest + [{"id": id, "probe": probe, "why": why}]

    def add_failure(self, probe: str, error: str, stderr: str = "") -> None:
        self.doc["failures"].append({"probe": probe, "error": error, "stderr_tail": stderr[-2000:]})

    def save(self, compact: bool = False) -> Path:
        """results.json as it stands. compact: on one line, by json's C
        encoder (about five times faster), for the saves after each probe
        process that keep a killed run's work; the last save of a run is
        indented for reading."""
        return write_json_atomic(self.dir / store.RESULTS, self.doc, compact)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _umask()


class WriteError(OSError):
    """A results file could not be written (a full disk, a read-only file
    system): the file's previous version is intact, no part is left."""


def write_atomic(path: Path, write, binary: bool = False, shield: bool = True) -> Path:
    """The one way osmeter's Python makes a file: path, in the directory the
    command was given, written so that a reader (or a crash) sees the old
    file or the new one, never a part: a temporary file of a name nobody can
    guess beside it (mkstemp: exclusive, no link followed), fsync, rename
    (which replaces a link planted at path, never writes through it).
    write(f) fills f. A signal waits until the file is whole or gone
    (core/errors.shielded): let in mid-way, a library's clean-up (zipfile's
    close under numpy.savez_compressed) may fail and put its own error in
    the interrupt's place. shield=False for a write(f) that may take
    minutes (a copy over ssh), which a signal must be able to stop."""
    with shielded() if shield else contextlib.nullcontext():
        try:
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
        except OSError as e:
            raise WriteError(e.errno, f"cannot write {path}: {e.strerror}") from None
        try:
            os.fchmod(fd, 0o666 & ~_UMASK)  # as a plain open() would make it, not mkstemp's 0600
            with os.fdopen(fd, "wb" if binary else "w") as f:
                write(f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException as e:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            if isinstance(e, OSError) and not isinstance(e, WriteError):
                raise WriteError(e.errno, f"cannot write {path}: {e.strerror} (its previous version, if any, "
                                          f"is intact)") from None
            raise
    return path


def write_text_atomic(path: Path, text: str) -> Path:
    return write_atomic(path, lambda f: f.write(text.encode("utf-8", "surrogateescape")), binary=True)


def write_bytes_atomic(path: Path, data: bytes) -> Path:
    return write_atomic(path, lambda f: f.write(data), binary=True)


def save_figure(fig, path: Path, **kw) -> Path:
    """A matplotlib figure saved through write_atomic, in the format of path's suffix."""
    path = Path(path)
    return write_atomic(path, lambda f: fig.savefig(f, format=path.suffix.lstrip(".").lower() or "png", **kw),
                        binary=True)


def write_json_atomic(path: Path, doc: dict, compact: bool = False) -> Path:
    def dump(f):
        if compact:  # json.dumps without indent runs the C encoder; json.dump never does
            try:  # the document as it is, where it holds no NaN (most saves): no copy made first
                text = json.dumps(doc, allow_nan=False, separators=(",", ":"))
            except ValueError:
                text = json.dumps(_finite(doc), allow_nan=False, separators=(",", ":"))
            f.write(text)
        else:
            json.dump(_finite(doc), f, indent=1, allow_nan=False)
        f.write("\n")

    return write_atomic(path, dump)


def line_by_process(line: dict) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """A (merged) probe line's kept values in the reported unit, each kept
    value's process (all 0 for a line of one process), and the kept values of
    each process in order: a figure derived from the line takes its run's
    figure from these, as compare does (run_figure)."""
    values, disturbed, _ = line_values(line)
    proc = line.get("process")
    proc = np.asarray(proc, dtype=np.int64) if isinstance(proc, list) and len(proc) == values.size \
        else np.zeros(values.size, dtype=np.int64)
    return store.split_by_process(values, ~disturbed & np.isfinite(values), proc)


def refuse_taken(out: Path) -> None:
    """Before anything else, an --out that cannot take a run: RunError when a live run is writing it (its
    lock held) or it already holds results. Nothing is made or locked (ResultsDir claims it later)."""
    try:
        fd = os.open(out / store.LOCK, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        fd = None
    if fd is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
        except BlockingIOError:
            raise RunError(f"{out} is being written by another osmeter run (pid {_read_pid(out / store.LOCK)}); "
                           "choose another --out") from None
        finally:
            os.close(fd)
    for f in (store.RESULTS, store.CAMPAIGN):  # a run, a campaign or an ab's home holds no other results
        if (out / f).exists():
            raise RunError(f"{out} already holds a {f}; choose another --out (nothing was overwritten)")


class ResultsDir:
    """An exclusive claim on a results directory for the length of a run:
    a second run given the same --out is refused, not interleaved."""

    LOCK = store.LOCK

    def __init__(self, out: Path, what: str = store.RESULTS):
        self.out = out
        try:
            out.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise RunError(f"--out {out}: exists and is not a directory") from None
        except OSError as e:
            raise RunError(f"--out {out}: cannot create it: {e.strerror}") from None
        try:
            self.fd = os.open(out / self.LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise RunError(f"--out {out}: cannot write there: {e.strerror}") from None
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self.fd)
            raise RunError(f"{out} is being written by another osmeter run (pid "
                           f"{_read_pid(out / self.LOCK)}); choose another --out") from None
        held = [f for f in dict.fromkeys((what, store.RESULTS, store.CAMPAIGN)) if (out / f).exists()]
        if held:  # a run, a campaign or an ab's side: results of another kind must not mix in
            self.release()
            raise RunError(f"{out} already holds a {held[0]}; choose another --out (nothing was overwritten)")
        os.ftruncate(self.fd, 0)
        os.write(self.fd, f"{os.getpid()}\n".encode())

    def release(self) -> None:
        if self.fd is not None:
            try:
                os.unlink(self.out / self.LOCK)
            except OSError:
                pass
            os.close(self.fd)
            self.fd = None


def _read_pid(path: Path) -> str:
    try:
        return path.read_text().strip() or "?"
    except OSError:
        return "?"
