"""`osmeter fleet run --runs N` in rounds: run 1 on every host, then run 2
on every host, and so on, each host's runs gathered as a campaign of its
own (DIR/<host>/campaign.json, DIR/<host>/run-01 ...), read by compare, the
report and the notebook as `osmeter run --runs N` writes one.

Why: a campaign per host, one host after another, puts every run of a host
in one stretch of time, and whatever drifts with time (a neighbour on the
shared machine, a placement of its vCPUs, the room's temperature) is then
the host's: the slow-node view would name a host for its hour. In rounds,
each host's runs are spread over the whole fleet run, as an A/B of two
sides alternates them (`osmeter ab`). Each run's probe order is shuffled
with its own seed, drawn from the fleet's (recorded).
"""
from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

from osmeter.fleet.host import Host, HostFailed
from osmeter.results import store
from osmeter.results.writer import write_json_atomic
from osmeter.running.campaign import new_seed, run_seeds, write_stability


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


class Rounds:
    def __init__(self, out: Path, opts: dict):
        self.out, self.opts = out, opts
        self.n = int(opts["runs"])
        self.seed = opts.get("seed") if opts.get("seed") is not None else new_seed()
        self.seeds = run_seeds(self.seed, self.n)
        self.docs: dict[str, dict] = {}

    def _doc(self, h: Host) -> dict:
        if h.label not in self.docs:
            self.docs[h.label] = {"schema": store.CAMPAIGN_SCHEMA, "created_utc": _now(),
                                  "options": self.opts, "seed": self.seed, "runs_planned": self.n, "runs": [],
                                  "complete": False, "interrupted": False, "fleet_rounds": True}
        return self.docs[h.label]

    def _save(self, h: Host) -> None:
        d = self.out / h.label
        d.mkdir(parents=True, exist_ok=True)
        write_json_atomic(d / store.CAMPAIGN, self._doc(h))

    def run(self, h: Host, k: int, step) -> None:
        """Round k's run on h (step: the run itself), recorded in h's
        campaign as it starts and as it ends; its seconds added to h's
        "run" step."""
        doc = self._doc(h)
        entry = {"name": store.run_name(k), "seed": self.seeds[k - 1], "started_utc": _now(),
                 "status": "running"}
        doc["runs"].append(entry)
        self._save(h)
        t0 = time.monotonic()
        try:
            step()
        except HostFailed:
            entry["status"] = "failed"
            raise
        except BaseException:
            entry["status"] = "interrupted"
            raise
        else:
            entry["status"] = "interrupted" if h.status == "interrupted" else "complete"
        finally:
            h.steps["run"] = round(h.steps.get("run", 0.0) + time.monotonic() - t0, 3)
            entry["ended_utc"] = _now()
            if not (self.out / h.label / entry["name"] / store.RESULTS).is_file():
                doc["runs"].remove(entry)  # a run that wrote nothing is no run of the campaign
            self._save(h)

    def close(self, hosts: list[Host]) -> None:
        """Each host's campaign marked complete or not, its stability table
        written where it has two runs or more; a host without a run gets
        no campaign."""
        for h in hosts:
            doc = self.docs.get(h.label)
            if doc is None:
                continue
            if not doc["runs"]:
                (self.out / h.label / store.CAMPAIGN).unlink(missing_ok=True)
                continue
            done = sum(r["status"] == "complete" for r in doc["runs"])
            doc["complete"] = done == self.n
            doc["interrupted"] = any(r["status"] == "interrupted" for r in doc["runs"])
            self._save(h)
            write_stability(self.out / h.label, quiet=True)
