"""compare's conditions diff: the machine facts and run conditions that
differ between the sides, flattened to dotted keys, leaving out those that
change from run to run by nature (VOLATILE)."""
from __future__ import annotations

import json

from osmeter.results.store import Run

# machine facts and conditions that say nothing about the figures (they
# change from run to run by nature), left out of the conditions diff
VOLATILE = {
    "conditions.loadavg_before", "conditions.started_utc", "conditions.wall_s", "conditions.probe_warnings",
    "conditions.harness_cpus", "conditions.order", "conditions.order_seed", "conditions.disk_target.path",
    "conditions.selection",
    # what --isolate did varies with the tasks alive (conditions.boost, smt_active show its lasting effect)
    *(f"conditions.isolation.{k}" for k in ("pid", "started_utc", "done", "not_done", "restored", "stale",
                                           "irqbalance")),
    "machine.cpu_mhz_reported", "machine.disks", "machine.nics",
    # the tracing of --kernel-paths runs after the timed processes: it says how, not what was measured
    "conditions.kernel_paths",
    # --no-halt's check: the halts counted before and with the request held vary with the moment
    "conditions.no_halt.halts_before", "conditions.no_halt.halts_held",
}


# --------------------------------------------------------- conditions

def flatten(prefix: str, v) -> dict[str, str]:
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            out.update(flatten(f"{prefix}.{k}", x))
        return out
    return {prefix: v if isinstance(v, str) else json.dumps(v, sort_keys=True)}


def run_facts(run: Run) -> dict[str, str]:
    facts = flatten("machine", run.doc.get("machine", {}))
    facts.update(flatten("conditions", run.doc.get("conditions", {})))
    return {k: v for k, v in facts.items() if not any(k == x or k.startswith(x + ".") for x in VOLATILE)}


def conditions_diff(a: list[Run], b: list[Run]) -> list[tuple[str, str, str]]:
    """Every recorded fact that differs between the sides: (key, A, B).
    A side whose runs disagree among themselves shows all its values."""
    fa, fb = [run_facts(r) for r in a], [run_facts(r) for r in b]
    keys = sorted(set().union(*fa, *fb))
    out = []
    for k in keys:
        va = list(dict.fromkeys(f.get(k, "(none)") for f in fa))
        vb = list(dict.fromkeys(f.get(k, "(none)") for f in fb))
        if set(va) != set(vb):
            out.append((k, " | ".join(va), " | ".join(vb)))
    return out
