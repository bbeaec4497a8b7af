"""`osmeter import FILE --out DIR`: another tool's results as osmeter runs, which compare, stability, report
and export read as they read a run of osmeter's own. Today pyperf's JSON (analysis/formats/pyperf.py): a file
`osmeter export --format pyperf` wrote comes back as the runs it was made of (each id's figure exact, as its
one sample), a campaign where there were several; any other pyperf file (pyperf's own benchmarks,
pyperformance) is one run, pyperf's worker processes its processes and their values its samples. Each run
is written as a run is (results.writer.Results: results.json and samples/), complete; nothing is measured."""
from __future__ import annotations

import sys
from pathlib import Path

from osmeter.core.errors import RunError

NAME = "import"


def _machine(meta: dict) -> dict:
    plat = str(meta.get("platform", ""))
    kernel = plat.split("-", 2)[1] if plat.startswith("Linux-") and plat.count("-") >= 2 else plat or "unknown"
    return {"hostname": str(meta.get("hostname", "unknown")), "cpu_model": str(meta.get("cpu_model_name", "unknown")),
            "kernel": kernel, "source": "pyperf"}


def _write_run(d: Path, ids: dict, machine: dict, conditions: dict) -> None:
    from osmeter.results.writer import Results, safe_name

    seen: dict[str, str] = {}
    for mid in ids:
        if safe_name(mid) in seen:
            raise RunError(f"benchmarks {seen[safe_name(mid)]!r} and {mid!r} would share one samples file "
                           f"({safe_name(mid)}): rename one")
        seen[safe_name(mid)] = mid
    res = Results(d, machine, conditions)
    for mid in sorted(ids):
        e = ids[mid]
        res.add_line({"id": mid, "unit": e["unit"], "samples": e["samples"], "process": e["process"],
                      "params": {"imported_from": "pyperf"}}, "import.pyperf", e["description"])
    res.doc["complete"] = True
    res.save()


def main(args) -> int:
    from osmeter.analysis.formats.pyperf import read
    from osmeter.results import reader, store
    from osmeter.results.writer import refuse_taken, write_json_atomic

    out = Path(args.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise RunError(f"--out {out}: give a directory that is new or empty (nothing was written)")
    if not out.parent.is_dir():
        raise RunError(f"--out {out}: its directory does not exist")
    try:
        runs, meta = read(reader.read_bytes(Path(args.file)).decode("utf-8", "replace"))
    except (ValueError, OSError) as e:
        raise RunError(f"{args.file}: {getattr(e, 'strerror', None) or e}") from None
    if not runs:
        raise RunError(f"{args.file}: no benchmark with a value")
    refuse_taken(out) if out.exists() else out.mkdir(mode=0o755)
    machine = _machine(meta)
    names = list(runs)
    one = len(names) == 1
    for k, name in enumerate(names, 1):
        d = out if one else out / store.run_name(k)
        _write_run(d, runs[name], machine, {"preset": "imported", "imported_from": f"pyperf {Path(args.file).name}",
                                            "imported_run": name})
    if not one:
        write_json_atomic(out / store.CAMPAIGN, {"schema": store.CAMPAIGN_SCHEMA, "imported_from": "pyperf",
                                                 "runs": [{"name": store.run_name(k), "status": "complete",
                                                           "imported_run": n} for k, n in enumerate(names, 1)]})
    ids = len({i for r in runs.values() for i in r})
    print(f"osmeter import: {ids} ids of {len(names)} run{'s' if not one else ''} from {args.file} into {out}"
          f"{'' if one else ' (a campaign)'}", file=sys.stderr)
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser(NAME, help="another tool's results (pyperf's JSON) as osmeter runs, for compare and report")
    p.add_argument("file", type=Path, metavar="FILE", help="a pyperf JSON file (osmeter's export, or pyperf's own)")
    p.add_argument("--format", choices=["pyperf"], default="pyperf", help="the file's format (pyperf)")
    p.add_argument("--out", required=True, type=Path, metavar="DIR", help="a new or empty directory: a run, or a "
                   "campaign of the runs an osmeter export held")
