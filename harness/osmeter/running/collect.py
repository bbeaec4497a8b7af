"""What a probe process printed, into the run's results: its lines parsed,
merged with its earlier processes', its refusals and failures recorded,
and the derived figures made (again) once their inputs are measured."""
from __future__ import annotations

from osmeter.core.errors import interrupt_behind
from osmeter.probes import registry
from osmeter.results.writer import ProbeOutputError, Results, merge_processes, parse_probe_output


def collect_process(results: Results, probe: registry.Probe, wanted: list[str], rc: int, stdout: str, stderr: str,
             lines_seen: dict[str, dict], processes: list[list[dict]] | None = None,
             interference: dict | None = None) -> bool:
    """Adds what a process of a probe printed, merged with what its earlier
    processes of this run printed (`processes`, which it extends); records a
    failure and returns False when it exited non-zero, printed garbage, or
    left out an id it should print."""
    if rc != 0:
        why = f"exited with status {rc}" if rc > 0 else f"killed by signal {-rc}"
        results.add_failure(probe.name, why, stderr)
        return False
    processes = [] if processes is None else processes
    try:
        lines = probe.parse(stdout) if probe.parse else parse_probe_output(stdout)
        processes.append(lines)
        lines = merge_processes(processes, tuple(key for key, _ in probe.host_params), probe.merge_params)
        refused = [x for x in lines if "refused" in x]
        lines = [x for x in lines if "refused" not in x]
        if probe.derive is not None:
            lines += probe.derive(lines, results.doc["machine"])
        descriptions = {m.id: described(m, probe, results.doc["conditions"]) for m in probe.measures}
        got = set()
        for r in refused:
            if r["id"] in wanted:
                results.add_refusal(r["id"], probe.name, r["refused"])
                got.add(r["id"])
        for line in lines:
            lines_seen[line["id"]] = line
            if line["id"] in wanted:
                if interference:
                    line = dict(line, interference=interference)
                results.add_line(line, probe.name, descriptions[line["id"]])
                got.add(line["id"])
    except (ProbeOutputError, ValueError, KeyError, TypeError) as e:
        if (signal := interrupt_behind(e)) is not None:  # a clean-up that failed under a signal: not bad output
            raise signal from None
        results.add_failure(probe.name, f"bad output: {e}", stderr)
        return False
    missing = [i for i in wanted if i not in got]
    if missing:
        results.add_failure(probe.name, f"did not print {', '.join(missing)}", stderr)
        return False
    return True


def described(m: registry.Measure, probe: registry.Probe, conditions: dict) -> str:
    """An id's description in this run: a disk id measured on --disk-ram's
    device says so, as its figure is the kernel's block path over memory,
    not a disk's; fs.meta's ids on --fs-scratch say theirs."""
    if probe.area == "disk" and conditions.get("disk_ram"):
        return f"{m.description} (on a RAM-backed loop device osmeter made for the run, not a disk)"
    if probe.name == "fs.meta" and conditions.get("fs_scratch"):
        return f"{m.description} (on a fresh ext4 over a RAM-backed loop device osmeter made for the run)"
    return m.description


def derive_across(results: Results, derived: list[registry.Derived], lines_seen: dict[str, dict],
                   used: dict[str, list[dict]]) -> None:
    """Adds each derived figure once all its inputs have been measured, and
    derives it again whenever one of them has since gained a process (each
    process merges into a new line): a figure derived from an input's first
    process alone would be that one process's, in whatever mode it landed.
    `used` holds the input lines each figure was last derived from."""
    for d in derived:
        if not all(i in lines_seen for i in d.inputs):
            continue
        inputs = [lines_seen[i] for i in d.inputs]
        if d.measure.id in used and all(x is y for x, y in zip(inputs, used[d.measure.id])):
            continue
        used[d.measure.id] = inputs
        try:
            line = d.fn(lines_seen)
        except (ProbeOutputError, KeyError, ValueError, ZeroDivisionError) as e:
            why = f"cannot derive: {e}"
            if not any(f["probe"] == d.measure.id and f["error"] == why for f in results.doc["failures"]):
                results.add_failure(d.measure.id, why)
            continue
        results.add_line(line, "derived", d.measure.description)
        # the figure stands now: a failure to derive it from an earlier process of an input is past
        results.doc["failures"] = [f for f in results.doc["failures"]
                                   if not (f["probe"] == d.measure.id and f["error"].startswith("cannot derive: "))]
