"""What a fleet load's hosts stream while it runs (SPEK's probers): each
host's iogen prints a status line per prober sample (`iogen --status`: the
load since the line before, IOPS, MB/s, mean latency, and the prober's
system figures over the same interval, stamped with the host's clock) on
its standard output, and the ssh session that started it brings the line
here as it is written. No daemon and no port of our own: the load's own
session is the channel.

Series: DIR/<label>/status.jsonl, a line per status in the order it came,
written as it comes: iogen's status object plus `t`, the sample's instant on
this machine's clock (the host's stamp less its clock offset, measured
before the load), and `arrived`, when this machine read it (also on its
clock): arrived - t is the time the line took to get here.

Live table: on a terminal, one frame per interval, each drawn over the one
before and cleared at the end; in a pipe or a file nothing is drawn.
"""
from __future__ import annotations

import json
import shutil
import sys
import threading
import time
from pathlib import Path

from osmeter.present.values import fmt_value, text_table
from osmeter.results import store

KEY = "status"


def is_status(line: str) -> bool:
    """Whether a line of iogen's output is a --status line (its results
    are JSON objects with other members)."""
    return line.startswith('{"' + KEY + '":')


class Series:
    """Every host's status lines, each kept in DIR/<label>/status.jsonl as
    it arrives, and the last one of each host for the live table."""

    def __init__(self, out: Path, interval: float):
        self.out, self.interval = out, interval
        self.last: dict[str, dict] = {}
        self.times: dict[str, list[tuple[float, float]]] = {}   # label -> [(t, arrived)]
        self.lock = threading.Lock()

    def path(self, label: str) -> Path:
        return self.out / label / store.LOAD_STATUS

    def add(self, label: str, line: str, offset: float, arrived: float | None = None) -> dict:
        """One status line of host label, whose clock is offset seconds ahead
        of this one's: stamped with t and arrived (this clock), appended to
        its series, kept as its last."""
        arrived = time.time() if arrived is None else arrived
        st = json.loads(line)[KEY]
        st["t"] = round(st["unix"] - offset, 6)
        st["arrived"] = round(arrived, 6)
        self.path(label).parent.mkdir(parents=True, exist_ok=True)
        with open(self.path(label), "a") as f:
            f.write(json.dumps(st, separators=(",", ":")) + "\n")
        with self.lock:
            self.last[label] = st
            self.times.setdefault(label, []).append((st["t"], st["arrived"]))
        return st

    def summary(self, label: str) -> dict | None:
        """What load.json says of a host's series: where it is, how many
        lines, the largest step between consecutive samples (a run of
        several iogen runs steps across the pause between them) and the
        longest a line took to arrive."""
        with self.lock:
            ts = list(self.times.get(label, ()))
        if not ts:
            return None
        gaps = [b[0] - a[0] for a, b in zip(ts, ts[1:])]
        return {"file": f"{label}/{store.LOAD_STATUS}", "lines": len(ts), "interval_s": self.interval,
                "first_t": ts[0][0], "last_t": ts[-1][0],
                "max_gap_s": round(max(gaps), 6) if gaps else None,
                "max_delay_s": round(max(a - t for t, a in ts), 6)}


def _num(v) -> str:
    return fmt_value(v, "").strip()


def summary_text(doc: dict) -> str:
    """One line per host's streamed series, for the load's closing text."""
    have = [(h["target"], h["stream"]) for h in doc["hosts"] if h.get("stream")]
    if not have:
        return ""
    def dur(secs):  # a duration in the unit it reads best in: 1 s, 1.26 ms
        return fmt_value(None if secs is None else secs * 1e9, "ns")

    rows = [(target, str(s["lines"]), dur(s["max_gap_s"]), dur(s["max_delay_s"]), s["file"]) for target, s in have]
    return (f"status streamed during the load, every {have[0][1]['interval_s']:g} s:\n"
            + text_table(("host", "lines", "largest step", "longest in transit", "series"), rows, left=(0, 4)))


HEAD = "fleet load, live"


class LiveTable:
    """The live per-host table: a frame per interval on a terminal, each
    over the last; nothing at all when the stream is not a terminal.
    hosts: objects with target, label and status (host.Host)."""

    def __init__(self, series: Series, hosts, start: float, stream=None):
        self.series, self.hosts, self.start = series, hosts, start
        self.stream = stream or sys.stdout
        self.on = self.stream.isatty()
        self.drawn = 0            # lines of the last frame on the screen
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, daemon=True)

    def __enter__(self) -> "LiveTable":
        if self.on:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.on:
            self._stop.set()
            self._thread.join()
            with self.lock:
                self._erase()
                self.stream.flush()

    def say(self, message: str) -> None:
        """A message (a host failed) printed above the table, never into it."""
        with self.lock:
            self._erase()
            self.stream.flush()
            print(message, file=sys.stderr, flush=True)

    def _erase(self) -> None:
        if self.drawn:
            self.stream.write(f"\033[{self.drawn}F\033[J")
            self.drawn = 0

    def _tick(self) -> None:
        while not self._stop.wait(self.series.interval):
            self.draw()

    def draw(self, now: float | None = None) -> None:
        if not self.on:
            return
        lines = self.frame(time.time() if now is None else now)
        width = shutil.get_terminal_size((120, 24)).columns - 1
        with self.lock:
            self._erase()
            # a line wider than the terminal would wrap, and the next frame would start too low
            self.stream.write("".join(ln[:width] + "\n" for ln in lines))
            self.stream.flush()
            self.drawn = len(lines)

    def frame(self, now: float) -> list[str]:
        with self.series.lock:
            last = dict(self.series.last)
        rows = []
        for h in self.hosts:
            st = last.get(h.label)
            state = h.status if h.status in ("ok", "failed", "interrupted") else (
                "waiting" if st is None else "running" if now - st["arrived"] <= 2 * self.series.interval
                else f"silent {now - st['arrived']:.0f} s")
            if st is None:
                rows.append((h.label, state, *["-"] * 10))
                continue
            s = st["system"]
            lat = st.get("lat_mean_us")
            swap_used = (s["swap_total_kib"] - s["swap_free_kib"]) * 1024
            rows.append((h.label, state, f"{st['t'] - self.start:.1f}", _num(st["iops"]), _num(st["mbps"]),
                         fmt_value(None if lat is None else lat * 1e3, "ns"),
                         f"{s['cpu_busy_pct']:.0f}%", f"{s['disk_util_pct']:.0f}%", _num(s["net_packets_per_s"]),
                         fmt_value(s["mem_available_kib"] * 1024, "bytes"), fmt_value(swap_used, "bytes"),
                         f"{s['swap_in_pages_per_s']:.0f}/{s['swap_out_pages_per_s']:.0f}"))
        head = ("host", "state", "t s", "IOPS", "MB/s", "mean lat", "CPU", "device", "packets/s", "mem avail",
                "swap used", "swap in/out")
        return [f"{HEAD}: status every {self.series.interval:g} s, t from the common start "
                f"({now - self.start:+.0f} s now)", *text_table(head, rows, left=(0, 1)).splitlines()]
