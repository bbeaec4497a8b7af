"""The results store: the one module that knows how a results directory is
laid out, and the reader of runs, campaigns and fleets. Every other module
takes the names below (a writer writes where they say; compare, the report
and the notebook read through the readers here), so a file is renamed in
one place.

    RUN/results.json      the run (DESIGN.md contract 4), rewritten after every probe
    RUN/samples/<id>.npz  each measurement's samples: values, disturbed, process
    RUN/raw/              the probes' own output, traces of --kernel-paths
    RUN/kpaths/<id>.npz   the per-sample kernel-path components of an id
    RUN/ktimers.txt       the kernel timers of the traced probes
    RUN/summary.txt       the terminal's table; RUN/results.csv the same as CSV
    RUN/notebook.ipynb    the executed notebook (and notebook.html)
    RUN/report/           report.tex, its PDF and figures/
    CAMPAIGN/campaign.json  the runs (run-01, run-02, ...), the options, the seed
    CAMPAIGN/stability.txt  the run-to-run spread per id
    AB/a/, AB/b/          an ab's two sides, each a campaign
    FLEET/fleet.json      the hosts; FLEET/<label>/ each host's run or campaign
    LOAD/load.json        a fleet load; LOAD/<label>/ iogen.json, iogen-log.csv, status.jsonl

The standard library suffices to import it (a thin host's agent cleans with
these names); numpy is imported where samples are read.
"""
from __future__ import annotations

import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from osmeter.core.errors import interrupt_behind
from osmeter.results import reader
from osmeter.results.model import Measurement, measurements

RESULTS = "results.json"
LOCK = ".osmeter.lock"  # the claim of the run (or campaign) writing the directory
SAMPLES = "samples"
RAW = "raw"
KPATHS = "kpaths"
KTIMERS = "ktimers.txt"
SUMMARY = "summary.txt"
CSV = "results.csv"
NOTEBOOK = "notebook.ipynb"
NOTEBOOK_HTML = "notebook.html"
REPORT = "report"
REPORT_TEX = "report.tex"
FIGURES = "figures"
CAMPAIGN = "campaign.json"
SCHEMA = "osmeter/1"  # results.json's
CAMPAIGN_SCHEMA = "osmeter-campaign/1"
STABILITY = "stability.txt"
AB_SIDES = ("a", "b")  # an ab's sides: their labels and their directories
AB_TEXT = "compare.txt"
AB_CSV = "compare.csv"
FLEET = "fleet.json"
FLEET_TEX = "fleet.tex"
FLEET_FIGURES = "fleet-figures"
LOAD = "load.json"  # a fleet load's index; LOAD/<label>/ holds each host's files below
LOAD_RESULT = "iogen.json"
LOAD_LOG = "iogen-log.csv"
LOAD_STATUS = "status.jsonl"
RUN_GLOB = "run-*"  # a campaign's runs, named by run_name

# Ids and probes renamed so that an id, its area and its folder agree (issue 26):
# timer.latency is the sched area's (bench/sched/timer.c), the virtual-timer
# library's costs are the cpu area's cpu.vtimer probe. Results written before
# the rename are read under the new names (an alias for one release).
RENAMED_IDS = {"timer.latency": "sched.timer.latency"}
RENAMED_ID_PREFIXES = {"timer.phys.": "cpu.vtimer.phys.", "timer.virt.": "cpu.vtimer.virt."}
RENAMED_PROBES = {"timer.latency": "sched.timer"}


def current_id(mid: str) -> str:
    """The id a measurement has now, of an id results may hold from before a rename."""
    if mid in RENAMED_IDS:
        return RENAMED_IDS[mid]
    for old, new in RENAMED_ID_PREFIXES.items():
        if mid.startswith(old):
            return new + mid[len(old):]
    return mid


def run_name(index: int) -> str:
    """The directory of a campaign's index-th run."""
    return f"run-{index:02d}"


def run_dir(path: Path) -> Path:
    """A results directory, also when given its results.json."""
    return path.parent if path.name == RESULTS and path.is_file() else path


def has_run(d: Path) -> bool:
    """A run's or a campaign's directory (what a fleet host or an ab side holds)."""
    return (d / RESULTS).is_file() or (d / CAMPAIGN).is_file()


def trace_file(probe: str, kind: str) -> str:
    """A traced probe's trace in raw/, kind task or cpu (kpaths.py's two instances)."""
    return f"{probe}.trace.{kind}.gz"


def traced_probes(run: Path) -> list[str]:
    """The probes whose traces a run kept (a run made with --kernel-paths)."""
    raw, tail = run / RAW, trace_file("", "task")
    return sorted(p.name[:-len(tail)] for p in raw.glob("*" + tail)) if raw.is_dir() else []


def ab_sides(ab_dir: Path) -> tuple[Path, Path]:
    """The directories of an ab's sides a and b."""
    return ab_dir / AB_SIDES[0], ab_dir / AB_SIDES[1]


def is_campaign(path: Path) -> bool:
    return (path / CAMPAIGN).is_file()


def is_fleet(path: Path) -> bool:
    return (path / FLEET).is_file()


def sample_file(mid_name: str) -> str:
    """A measurement's samples_file, relative to its run (mid_name: results.writer.safe_name)."""
    return f"{SAMPLES}/{mid_name}.npz"


def samples_path(run_dir: Path, m: dict | Measurement) -> Path | None:
    """The file of a measurement's samples_file (m: its entry in results.json, or its Measurement):
    only a file in the run's own samples/ directory (samples/NAME.npz, NAME with no '/' and not
    hidden), never a path that leaves it. None where the measurement names none; ValueError, without
    the file's bytes, for any other path."""
    name = m.samples_file if isinstance(m, Measurement) else m.get("samples_file")
    if not name:
        return None
    base = name[len(SAMPLES) + 1:] if isinstance(name, str) and name.startswith(SAMPLES + "/") else ""
    if not base or "/" in base or "\0" in base or base.startswith(".") or not base.endswith(".npz"):
        raise ValueError(f"samples_file {str(name)[:120]!r} is not a file in the run's {SAMPLES}/ directory")
    return run_dir / SAMPLES / base


def kpaths_file(mid_name: str) -> str:
    """An id's kernel-path components, relative to its run."""
    return f"{KPATHS}/{mid_name}.npz"


# ------------------------------------------------------------- one run

def load(path: Path) -> dict:
    """results.json from a results directory (or the file itself)."""
    p = path / RESULTS if path.is_dir() else path
    if path.is_dir() and not p.exists() and is_campaign(path):
        runs = sorted(d.name for d in path.glob(RUN_GLOB) if (d / RESULTS).is_file())
        raise ValueError(f"{path} is a campaign, not one run: give one of its runs ({', '.join(runs) or 'none finished'})"
                         ", or compare the campaign with `osmeter compare`")
    if p.exists() and not p.is_file():
        raise ValueError(f"{p} is not a file: give a results directory or its results.json")
    doc = reader.read_json(p)  # a regular file, bounded in size and depth: ValueError otherwise
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        got = doc.get("schema") if isinstance(doc, dict) else f"a JSON {type(doc).__name__}"
        raise ValueError(f"{p}: not an osmeter results file (schema is {got!r}, expected {SCHEMA!r})")
    for key, kind in (("measurements", list), ("machine", dict), ("conditions", dict)):
        if not isinstance(doc.get(key), kind):
            raise ValueError(f"{p}: '{key}' is missing or not a {kind.__name__}: not a complete results file")
    for k, m in enumerate(doc["measurements"]):
        why = _bad_measurement(m)
        if why:
            name = m.get("id") if isinstance(m, dict) and isinstance(m.get("id"), str) else f"number {k}"
            raise ValueError(f"{p}: measurement {name}: {why}")
    if not isinstance(doc.setdefault("failures", []), list):
        raise ValueError(f"{p}: 'failures' is not a list")
    for m in doc["measurements"]:  # ids from before a rename, under their names now
        m["id"] = current_id(m["id"])
        if isinstance(m.get("probe"), str):
            m["probe"] = RENAMED_PROBES.get(m["probe"], m["probe"])
    seen: dict[str, int] = {}
    for k, m in enumerate(doc["measurements"]):  # a reader keyed by id would merge two into one, silently
        if m["id"] in seen:
            raise ValueError(f"{p}: measurements {seen[m['id']]} and {k} have the same id {m['id']!r} "
                             "(an id is one measurement of a run)")
        seen[m["id"]] = k
    return doc


def _number(v) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))


def _bad_measurement(m) -> str | None:
    """What is wrong with one entry of measurements, for every reader of a
    loaded document (the summary, the CSV, the report, compare)."""
    if not isinstance(m, dict):
        return "not an object"
    for key in ("id", "unit"):
        if not isinstance(m.get(key), str):
            return f"'{key}' is missing or not text"
    for key in ("n", "mean", "median", "std", "min", "max", "dropped_disturbed", "samples_total", "figure"):
        if not _number(m.get(key)):
            return f"'{key}' is not a number"
    for key in ("ci95", "figure_ci95"):
        ci = m.get(key)
        if ci is not None and not (isinstance(ci, list) and len(ci) == 2 and all(map(_number, ci))):
            return f"'{key}' is not a pair of numbers"
    for key, kind in (("params", dict), ("series", dict), ("cycles", dict), ("timer", dict),
                      ("samples_file", str), ("description", str), ("processes", dict), ("tail", dict)):
        if m.get(key) is not None and not isinstance(m[key], kind):
            return f"'{key}' is not a {kind.__name__}"
    ps = m.get("processes") or {}
    if ps.get("n") is not None and not _number(ps["n"]):
        return "'processes.n' is not a number"
    for key in ("kept", "core_width"):
        if ps.get(key) is not None and not (isinstance(ps[key], list)
                                            and all(v is None or _number(v) for v in ps[key])):
            return f"'processes.{key}' is not a list of numbers"
    try:
        samples_path(Path("."), m)
    except ValueError as e:
        return str(e)
    g = m.get("grid")
    if g is not None:
        if not isinstance(g, dict) or not isinstance(g.get("values"), dict):
            return "'grid' is not an object with values"
        for key in ("x", "y"):
            if not isinstance(g.get(key), list) or not all(map(_number, g[key])):
                return f"'grid.{key}' is not a list of numbers"
        for name, v in g["values"].items():
            med = v.get("median") if isinstance(v, dict) else None
            if not (isinstance(med, list) and len(med) == len(g["x"])
                    and all(isinstance(r, list) and len(r) == len(g["y"]) and all(map(_number, r)) for r in med)):
                return f"'grid.values.{name}.median' is not {len(g['x'])} rows of {len(g['y'])} numbers"
    s = m.get("series")
    if s is not None:
        for key in ("x", "median", "p25", "p75"):
            if not isinstance(s.get(key, []), list) or not all(map(_number, s.get(key, []))):
                return f"'series.{key}' is not a list of numbers"
    return None


def kept_samples(run_dir: Path, m: dict | Measurement) -> np.ndarray | None:
    """A measurement's samples in its reported unit, disturbed ones left
    out, from the file beside results.json; None where it is missing."""
    got = kept_by_process(run_dir, m)
    import numpy as np

    return None if got is None else np.concatenate(got)


def kept_by_process(run_dir: Path, m: dict | Measurement, set_aside: frozenset[int] = frozenset()) -> list[np.ndarray] | None:
    """The kept samples of each process that measured the id (one array
    for a measurement of one process), but those of the processes numbered
    in set_aside; None where the file is missing."""
    import numpy as np

    f = samples_path(run_dir, m)
    if f is None or not f.is_file():
        return None
    v, d, proc = _arrays(f)
    keep = ~d & np.isfinite(v)
    if set_aside:
        keep &= ~np.isin(proc, sorted(set_aside))
    return split_by_process(v, keep, proc)[2] or [v[:0]]


def _arrays(f: Path):
    """(values, disturbed, process) of a samples file; ValueError, never its bytes, for one that cannot be read."""
    import numpy as np

    try:
        with np.load(f, allow_pickle=False) as z:
            missing = [k for k in ("values", "disturbed") if k not in z.files]
            if missing:
                raise ValueError(f"lacks {' and '.join(missing)}")
            v, d = z["values"], z["disturbed"]
            proc = z["process"] if "process" in z.files else np.zeros(v.size, dtype=np.int32)
    except (OSError, EOFError, KeyError, TypeError, AttributeError, ValueError, zipfile.BadZipFile) as e:
        if (signal := interrupt_behind(e)) is not None:  # zipfile's clean-up failed under a signal: not a bad file
            raise signal from None
        if isinstance(e, ValueError):
            raise ValueError(f"{f.name}: {e}") from None
        # cut short, not an .npz (an .npy gives an array, no archive): its bytes never quoted
        raise ValueError(f"{f.name} is not a readable samples file (not an .npz archive, or cut short)") from None
    if v.dtype.kind not in "fiu" or d.dtype.kind != "b" or proc.dtype.kind not in "iu" \
            or not v.shape == d.shape == proc.shape or v.ndim != 1:
        raise ValueError(f"{f.name}: values, disturbed and process must be 1-d arrays of numbers, booleans and "
                         f"integers of one length (found {v.dtype}{list(v.shape)}, {d.dtype}{list(d.shape)}, "
                         f"{proc.dtype}{list(proc.shape)})")
    return v, d, proc


def process_numbers(run_dir: Path, m: dict | Measurement, set_aside: frozenset[int] = frozenset()) -> list[int]:
    """The numbers of the processes kept_by_process gives, in its order."""
    import numpy as np

    f = samples_path(run_dir, m)
    if f is None or not f.is_file():
        raise ValueError(f"no samples file for {m.id if isinstance(m, Measurement) else m.get('id')}")
    v, d, proc = _arrays(f)
    keep = ~d & np.isfinite(v)
    if set_aside:
        keep &= ~np.isin(proc, sorted(set_aside))
    return sorted(set(proc[keep].tolist()))


def split_by_process(values, keep, proc):
    """(kept values, their processes, the kept values of each process in
    order): a process none of whose values was kept is left out. One
    split for a probe line (results.writer.line_by_process) and a samples file."""
    values, proc = values[keep], proc[keep]
    return values, proc, [values[proc == k] for k in sorted(set(proc.tolist()))]



# ------------------------------------------------------------- sides of a comparison

@dataclass
class Run:
    """One results directory as a side of a comparison sees it: its loaded
    results.json (doc), its measurements read once from it as results.model
    types, and where it lies."""

    path: Path
    doc: dict
    campaign: Path | None = None
    notes: list[str] = field(default_factory=list)
    _ref_width: float | None = field(default=None, repr=False, compare=False)
    _measurements: dict | None = field(default=None, repr=False, compare=False)

    @property
    def name(self) -> str:
        return f"{self.campaign.name}/{self.path.name}" if self.campaign else self.path.name

    @property
    def measurements(self) -> dict[str, Measurement]:
        """Its measurements by id, as results.model reads them."""
        if self._measurements is None:
            self._measurements = {m.id: m for m in measurements(self.doc)}
        return self._measurements

    def shared_processes(self, m: Measurement) -> frozenset[int]:
        """The processes of a measurement that ran on a shared core: the
        lower of their two core-width readings (m.processes.core_width)
        below readings.SLOWED of the run's median over all its probe
        processes. Another hardware thread on the host's core slows what
        the process measures, by a fifth and more for core work, and
        nothing the machine under test did put it there; it is judged by
        the width, not by the figure. None is set aside where that would
        leave the measurement no process, or where the run recorded no
        widths."""
        import numpy as np

        from osmeter.results.readings import SLOWED, core_widths

        widths = m.core_width
        if widths is None:
            return frozenset()
        if self._ref_width is None:
            every = core_widths(self.doc)
            self._ref_width = float(np.median(every)) if every else 0.0
        if not self._ref_width > 0:
            return frozenset()
        low = frozenset(k for k, w in enumerate(widths) if isinstance(w, (int, float)) and not isinstance(w, bool)
                        and w < SLOWED * self._ref_width)
        return low if len(low) < len(widths) else frozenset()

    def by_process(self, m: Measurement) -> list[np.ndarray]:
        """The kept trials of one measurement, one array per process, but
        those of processes that ran on a shared core (shared_processes)."""
        try:
            got = kept_by_process(self.path, m, self.shared_processes(m))
        except (OSError, KeyError, ValueError) as e:
            raise ValueError(f"{self.path}: cannot read the samples of {m.id} ({e})") from None
        if got is None:
            raise ValueError(f"{self.path}: cannot read the samples of {m.id} (no file {m.samples_file})")
        return got

    def process_widths(self, m: Measurement) -> list[float | None]:
        """The core's width (the lower of its two readings) of each process
        by_process gives, in its order; None where a process has none."""
        widths = m.core_width
        try:
            numbers = process_numbers(self.path, m, self.shared_processes(m))
        except (OSError, KeyError, ValueError):
            return []
        if widths is None:
            return [None] * len(numbers)
        return [float(widths[k]) if k < len(widths) and isinstance(widths[k], (int, float))
                and not isinstance(widths[k], bool) and widths[k] > 0 else None for k in numbers]


def load_side(paths: list[Path]) -> list[Run]:
    """Run and campaign directories -> their runs, in order. A campaign gives
    every run that wrote a results.json, interrupted ones included (flagged)."""
    runs = []
    for path in paths:
        if path.is_file() and path.name in (RESULTS, CAMPAIGN):
            path = path.parent
        if not path.exists():
            raise ValueError(f"{path}: no such directory")
        if is_campaign(path):
            camp = reader.read_json(path / CAMPAIGN)
            if not isinstance(camp, dict) or camp.get("schema") != CAMPAIGN_SCHEMA:
                raise ValueError(f"{path}/{CAMPAIGN}: not an osmeter campaign (schema {CAMPAIGN_SCHEMA})")
            found = [path / name for name in _run_names(path, camp) if (path / name / RESULTS).exists()]
            if not found:
                raise ValueError(f"{path}: a campaign without a finished run")
            runs += [_load_run(d, path) for d in found]
        else:
            runs.append(_load_run(path, None))
    seen: dict[Path, Run] = {}
    for r in runs:  # one run counted twice would pass for two runs that agree
        key = r.path.resolve()
        if key in seen:
            raise ValueError(f"{r.path} is given twice on one side (itself, or inside a campaign also given): "
                             "each run counts once")
        seen[key] = r
    return runs


def _run_names(path: Path, camp: dict) -> list[str]:
    """The names of a campaign's runs, each a directory inside it."""
    runs = camp.get("runs", [])
    if not isinstance(runs, list):
        raise ValueError(f"{path}/{CAMPAIGN}: 'runs' is a JSON {type(runs).__name__}, not a list of runs")
    names = []
    for k, r in enumerate(runs):
        name = r.get("name") if isinstance(r, dict) else None
        if not isinstance(name, str) or name in ("", ".", "..") or "/" in name:
            raise ValueError(f"{path}/{CAMPAIGN}: runs[{k}] is not a run with a directory name ({r!r:.60})")
        names.append(name)
    return names


def _load_run(path: Path, campaign: Path | None) -> Run:
    doc = load(path)
    run = Run(path, doc, campaign)
    if doc.get("interrupted") or not doc.get("complete"):
        run.notes.append("interrupted: only the probes that finished")
    if (doc.get("sentinels") or {}).get("drifted"):
        run.notes.append(f"drifted inside the run ({doc['sentinels'].get('why')})")
    return run



# ------------------------------------------------------------- fleets

def read_fleet(fleet_dir: Path) -> dict:
    """FLEETDIR/fleet.json, checked before anything reads it: an object whose
    "hosts" is a list of objects, each with a label that is a directory name
    of its own (no two alike: a second host of one label would be dropped),
    a target, status and reason as text, steps as numbers, and results, when
    given, the host's own directory. ValueError names the first fault."""
    where = f"{fleet_dir}/{FLEET}"
    index = reader.read_json(fleet_dir / FLEET)
    if not isinstance(index, dict):
        raise ValueError(f"{where}: not a fleet index (expected an object, found {type(index).__name__})")
    hosts = index.get("hosts")
    if not isinstance(hosts, list):
        raise ValueError(f"{where}: \"hosts\" must be a list of hosts, found {type(hosts).__name__}")
    seen: dict[str, int] = {}
    for k, h in enumerate(hosts, 1):
        if not isinstance(h, dict):
            raise ValueError(f"{where}: host {k} is not an object ({type(h).__name__})")
        label = h.get("label")
        if not isinstance(label, str) or not label or label in (".", "..") or "/" in label or "\0" in label:
            raise ValueError(f"{where}: host {k} has no usable label ({label!r}: a directory name is expected)")
        if label in seen:
            raise ValueError(f"{where}: hosts {seen[label]} and {k} have the same label {label!r} "
                             "(each host's results need a directory of their own)")
        seen[label] = k
        for key in ("target", "status", "reason", "results"):
            if not isinstance(h.get(key, ""), str):
                raise ValueError(f"{where}: host {label!r}: {key} must be text, found {type(h[key]).__name__}")
        h.setdefault("target", label)
        h.setdefault("status", "not run")
        if h.get("results") and h["results"] != label:
            raise ValueError(f"{where}: host {label!r}: results {h['results']!r} is not the host's own "
                             f"directory ({label})")
        steps = h.get("steps", {})
        if not isinstance(steps, dict) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                  for v in steps.values()):
            raise ValueError(f"{where}: host {label!r}: steps must map each step to its seconds")
    targets = [h["target"] for h in hosts]
    dup = next((t for t in targets if targets.count(t) > 1), None)
    if dup is not None:
        raise ValueError(f"{where}: the host {dup!r} is listed twice")
    if not isinstance(index.get("source", ""), str):
        raise ValueError(f"{where}: source must be text")
    args = index.get("osmeter_run_args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ValueError(f"{where}: osmeter_run_args must be a list of arguments (text)")
    return index
