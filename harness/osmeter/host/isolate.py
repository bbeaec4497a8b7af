"""`osmeter run --isolate` (root): the run conditions the seed paper's
authors set by hand, set for the run and undone after it.

For the measuring CPU N, in this order:
  boost   off: cpufreq/boost 1 -> 0, or intel_pstate/no_turbo 0 -> 1
  SMT     N's siblings (cpuN/topology/thread_siblings_list) offline through
          cpuM/online; never N itself, never a CPU without an online file
          (CPU 0, often), never the last CPU the harness could run on
  IRQs    each /proc/irq/*/smp_affinity_list without N (and the offlined
          siblings); a managed or per-CPU IRQ the kernel keeps is named
  kworkers the unbound workqueues' mask (/sys/devices/virtual/workqueue/cpumask)
          without them
  tasks   each task's affinity (/proc/PID/task/TID) without them; a task the
          kernel will not move (PF_NO_SETAFFINITY: per-CPU kernel threads) or
          that may run only there stays, and is named
What cannot be done is recorded with its reason. Undone in reverse order,
each value only where it is still the one osmeter wrote: a value someone
else changed meanwhile is left, and named. A task born during the run from
a moved one (a shell's child, a thread) got the moved mask: it gets its
creator's previous mask back.

The plan (every value to change, its previous and its new value) is written
before anything changes, to a private root-only state file; a run killed by
SIGKILL leaves it, and the next --isolate run undoes it first and says so.
One isolation at a time: a lock, held for the run (flock dies with its holder).
"""
from __future__ import annotations

import collections
import contextlib
import datetime as dt
import errno
import json
import os
import sys
from pathlib import Path

from osmeter.core.errors import Interrupted, RunError, shielded
from osmeter.host import cleanup

PF_NO_SETAFFINITY = 0x04000000  # include/linux/sched.h: the kernel does not let userspace move it
NOT_ROOT = ("--isolate needs root: it changes machine-wide settings (the affinity of every task and IRQ, "
            "CPU hotplug, boost); run it as root, or leave --isolate out")


def need_root() -> None:
    if os.geteuid() != 0:
        raise RunError(NOT_ROOT)


def cpus(text: str) -> set[int]:
    """A kernel CPU list ("0-3,8") as a set."""
    out: set[int] = set()
    for part in text.strip().split(","):
        if part:
            lo, _, hi = part.partition("-")
            out.update(range(int(lo), int(hi or lo) + 1))
    return out


def cpulist(s) -> str:
    """A set of CPUs as a kernel CPU list."""
    runs: list[list[int]] = []
    for c in sorted(s):
        if runs and c == runs[-1][1] + 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def mask_cpus(text: str) -> set[int]:
    """A kernel CPU mask in hex ("3", "ff,ffffffff") as a set."""
    v = int(text.strip().replace(",", ""), 16)
    return {c for c in range(v.bit_length()) if v >> c & 1}


def cpumask(s) -> str:
    """A set of CPUs as a kernel hex mask, in 32-bit groups."""
    h = format(sum(1 << c for c in s), "x")
    h = h.zfill(-(-len(h) // 8) * 8)
    return ",".join(h[i:i + 8] for i in range(0, len(h), 8)).lstrip("0") or "0"


def _same(a: str | None, b: str, form: str | None) -> bool:
    """Two values of one file, as the kernel may print them back: CPU lists
    ("0,1" is "0-1") and hex masks compare as sets, flags as text."""
    parse = {"list": cpus, "mask": mask_cpus}.get(form)
    if a is None or parse is None:
        return a == b
    try:
        return parse(a) == parse(b)
    except ValueError:
        return False


def _names(names: list[str], most: int = 12) -> str:
    names = sorted(set(names))
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


class Isolation:
    """One isolation of `cpu`: apply() once, restore() once. `root` is where
    /proc, /sys and /run are (a fake tree in tests)."""

    getaff = staticmethod(os.sched_getaffinity)  # tests swap these with a table
    setaff = staticmethod(os.sched_setaffinity)

    def __init__(self, cpu: int, root: Path | str = "/", say=print):
        need_root()
        self.cpu, self.root, self.say = cpu, Path(root), say
        self.sys = self.root / "sys/devices/system/cpu"
        self.proc = self.root / "proc"
        self.dir = self.root / "run/osmeter"
        self.state = self.dir / "isolate.json"
        self.changes: list[dict] = []   # the plan, in the order applied
        self.offlined: set[int] = set()
        self.started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        self.doc: dict = {"cpu": cpu, "pid": os.getpid(), "started_utc": self.started, "state_file": str(self.state),
                          "done": [], "not_done": []}
        self._stays: list[tuple[int, str, str]] = []  # (tid, name, why) of tasks left on the CPU
        self.known: set[tuple[int, str]] = set()  # (tid, start) of every task seen when planning: none was born
        self._lock: int | None = None
        self._restored = False

    # ------------------------------------------------------------ apply
    def apply(self) -> dict:
        """Takes the lock, undoes a killed run's isolation, then plans,
        saves and applies this one. Signals wait until it is done."""
        with shielded():
            self._take_lock()
            self._undo_stale()
            self._plan_boost()
            self._plan_smt()
            self._plan_irqs()
            self._plan_workqueues()
            self.changes += self._plan_tasks(self.known)
            self._save()
            for c in self.changes:
                self._apply(c)
            for _ in range(3):  # tasks born from unmoved ones while the first pass went on
                more = self._plan_tasks(self.known)
                if not more:
                    break
                self.changes += more
                self._save()
                for c in more:
                    self._apply(c)
            self._summarize()
        return self.doc

    def _not(self, what: str, why: str, **kw) -> None:
        self.doc["not_done"].append({"what": what, **kw, "why": why})

    def _file(self, what: str, path: Path, previous: str, new: str, form: str | None = None) -> None:
        self.changes.append({"what": what, "path": str(path), "previous": previous, "set": new, "form": form})

    def _plan_boost(self) -> None:
        boost, no_turbo = self.sys / "cpufreq/boost", self.sys / "intel_pstate/no_turbo"
        for path, on, off in ((boost, "1", "0"), (no_turbo, "0", "1")):
            v = _read(path)
            if v is None:
                continue
            if v == off:
                return self._not("boost off", f"boost is off already ({path} says {v})")
            return self._file("boost off", path, v, off)
        self._not("boost off", f"no cpufreq boost file (neither {boost} nor {no_turbo}): this machine, or its "
                               "hypervisor, does not let the OS switch boost")

    def _plan_smt(self) -> None:
        what = "SMT siblings offline"
        control = self.sys / "smt/control"
        c = _read(control)
        if c in ("notsupported", "notimplemented"):
            return self._not(what, f"no SMT on this machine: {control} says {c}")
        if c in ("off", "forceoff"):
            return self._not(what, f"SMT is off already: {control} says {c}")
        listing = self.sys / f"cpu{self.cpu}/topology/thread_siblings_list"
        text = _read(listing)
        if text is None:
            return self._not(what, f"no {listing}")
        siblings = cpus(text) - {self.cpu}
        if not siblings:
            return self._not(what, f"CPU {self.cpu} has no SMT sibling online ({listing} says {text})")
        online = cpus(_read(self.sys / "online") or "")
        for s in sorted(siblings):
            f = self.sys / f"cpu{s}/online"
            v = _read(f)
            if v is None:
                self._not(what, f"CPU {s} cannot go offline here (no {f})", cpu=s)
            elif v == "1":
                if not online - self.offlined - {self.cpu, s}:
                    self._not(what, f"CPU {s} is the last other online CPU: the harness runs there", cpu=s)
                else:
                    self.offlined.add(s)
                    self._file("SMT sibling offline", f, v, "0")

    def _plan_irqs(self) -> None:
        try:
            irqs = sorted((d for d in (self.proc / "irq").iterdir() if d.name.isdigit()), key=lambda d: int(d.name))
        except OSError as e:
            return self._not("IRQ affinity", f"cannot list {self.proc / 'irq'}: {e.strerror}")
        for d in irqs:
            f = d / "smp_affinity_list"
            v = _read(f)
            if v is None or self.cpu not in cpus(v):
                continue
            new = cpus(v) - {self.cpu} - self.offlined
            if new:
                self._file("IRQ affinity", f, v, cpulist(new), "list")
            else:
                self._not("IRQ affinity", f"IRQ {d.name} may go only to CPU {cpulist(cpus(v))}", path=str(f))

    def _plan_workqueues(self) -> None:
        """Unbound workqueues' workers (kworker/uN:M): userspace cannot move
        them one by one, but the CPUs of all of them are one mask."""
        f = self.root / "sys/devices/virtual/workqueue/cpumask"
        v = _read(f)
        if v is None:
            return self._not("unbound workqueues' CPUs", f"no {f}")
        if self.cpu in mask_cpus(v):
            new = mask_cpus(v) - {self.cpu} - self.offlined
            if new:
                self._file("unbound workqueues' CPUs", f, v, cpumask(new), "mask")
            else:
                self._not("unbound workqueues' CPUs", f"{f} says {v}: only CPU {self.cpu}")

    def _tasks(self):
        """(pid, tid, start, ppid, flags, comm) of every task under /proc."""
        try:
            pids = [p for p in os.listdir(self.proc) if p.isdigit()]
        except OSError:
            return
        for pid in pids:
            try:
                tids = [t for t in os.listdir(self.proc / pid / "task") if t.isdigit()]
            except OSError:
                continue
            for tid in tids:
                text = _read(self.proc / pid / "task" / tid / "stat")
                if not text or ")" not in text:
                    continue
                comm = text[text.find("(") + 1:text.rfind(")")]
                f = text[text.rfind(")") + 2:].split()  # f[0] is field 3 (state) of proc(5)
                yield int(pid), int(tid), f[19], int(f[1]), int(f[6]), comm

    def _plan_tasks(self, known: set) -> list[dict]:
        """Tasks not seen yet that may run on the CPU and can leave it."""
        out = []
        for pid, tid, start, _, flags, comm in self._tasks():
            if pid == os.getpid() or (tid, start) in known:
                continue
            known.add((tid, start))
            if comm == "irqbalance":
                self.doc["irqbalance"] = "running: it may move IRQs back onto the CPU during the run"
            try:
                prev = self.getaff(tid)
            except OSError:
                continue  # gone
            if self.cpu not in prev:
                continue
            new = prev - {self.cpu} - self.offlined
            if flags & PF_NO_SETAFFINITY:
                self._stays.append((tid, comm, "the kernel does not let userspace move it (PF_NO_SETAFFINITY: "
                                               "per-CPU kernel threads, workers of per-CPU workqueues)"))
            elif not new:
                self._stays.append((tid, comm, f"allowed only on CPU {cpulist(prev)} (pinned there)"))
            else:
                out.append({"what": "task affinity", "pid": pid, "tid": tid, "start": start, "comm": comm,
                            "previous": sorted(prev), "set": sorted(new)})
        return out

    def _apply(self, c: dict) -> None:
        try:
            if "tid" in c:
                self.setaff(c["tid"], set(c["set"]))
            else:
                self._write(Path(c["path"]), c["set"])
            c["applied"] = True
        except ProcessLookupError:
            pass  # a task that ended
        except OSError as e:
            if "tid" in c:
                self._stays.append((c["tid"], c["comm"], f"the kernel refused ({e.strerror})"))
            elif c["what"] == "IRQ affinity" and e.errno == errno.EPERM:
                d = Path(c["path"]).parent
                names = sorted(x.name for x in d.iterdir() if x.is_dir())
                self._not(c["what"], f"IRQ {d.name} ({', '.join(names) or 'no handler name'}) cannot be moved from "
                                     "userspace (a managed or per-CPU IRQ: the kernel places it)", path=c["path"])
            else:
                self._not(c["what"], f"the kernel refused {c['set']}: {e.strerror}", path=c["path"])

    def _write(self, path: Path, value: str) -> None:
        with open(path, "w") as f:
            f.write(value)

    def _summarize(self) -> None:
        moved = [c for c in self.changes if c.get("applied") and "tid" in c]
        for c in self.changes:
            if c.get("applied") and "tid" not in c:
                self.doc["done"].append({"what": c["what"], "path": c["path"], "previous": c["previous"],
                                         "now": c["set"]})
        if moved:
            prev = collections.Counter(cpulist(c["previous"]) for c in moved)
            self.doc["done"].append({"what": "task affinity", "tasks": len(moved), "previous": dict(prev),
                                     "now": f"without CPU {cpulist({self.cpu} | self.offlined)}"})
        stays: dict[str, list[str]] = {}
        for tid, comm, why in self._stays:
            with contextlib.suppress(OSError):  # a kernel thread may have left with its IRQ or workqueue
                if self.cpu in self.getaff(tid):
                    stays.setdefault(why, []).append(comm)
        for why, names in stays.items():
            self._not("task affinity", f"{len(names)} task{'s' * (len(names) > 1)} left on CPU {self.cpu}: {why}",
                      tasks=sorted(set(names)))
        irqs = sum(1 for c in self.changes if c.get("applied") and c["what"] == "IRQ affinity")
        not_done = "; ".join(f"{n['what']}: {n['why']}" + (f" ({_names(n['tasks'])})" if "tasks" in n else "")
                             for n in self.doc["not_done"])
        self.say(f"osmeter: --isolate CPU {self.cpu}: moved {len(moved)} tasks and {irqs} IRQs off it"
                 + "".join(f"; {d['what']} ({d['previous']} -> {d['now']})" for d in self.doc["done"]
                           if d["what"] in ("boost off", "SMT sibling offline", "unbound workqueues' CPUs"))
                 + (f"; not done: {not_done}" if not_done else ""))
        if "irqbalance" in self.doc:
            self.say(f"osmeter: --isolate: irqbalance is {self.doc['irqbalance']}")

    # ---------------------------------------------------------- restore
    def restore(self) -> None:
        """Undoes this isolation, once; signals wait until it is done."""
        if self._restored or self._lock is None:
            return
        self._restored = True
        with shielded():
            try:
                self.doc["restored"] = self._undo(self.changes, self.known)
                left = self.doc["restored"]["left"]
                self.say(f"osmeter: --isolate: undone ({self.doc['restored']['values']} values back as they were)"
                         + (f"; left as others changed them: {'; '.join(x['why'] for x in left)}" if left else ""))
                self.state.unlink(missing_ok=True)
            finally:
                cleanup.release_lock(self.dir, "isolate.lock", self._lock)

    def _undo(self, changes: list[dict], seen: set | None, own: bool = False) -> dict:
        """Each change back where it still holds osmeter's value; then the
        tasks born from moved tasks: tasks not `seen` when planning (a task
        that was there, pinned by its owner to what osmeter happened to give
        its parent, is not one), this process only with `own` (a killed
        run's: this process was born from the shell it moved). Returns what
        was done."""
        back, left, plan = 0, [], {}
        live = {t[1]: t for t in self._tasks()}
        for c in reversed(changes):
            try:
                if "tid" in c:
                    t = live.get(c["tid"])
                    if t is None or t[2] != c["start"]:
                        continue  # ended during the run
                    plan[c["tid"], c["start"]] = c
                    now = self.getaff(c["tid"])
                    if now == set(c["set"]):
                        self.setaff(c["tid"], set(c["previous"]))
                        back += 1
                    elif now != set(c["previous"]):
                        left.append({"what": "task affinity", "task": f"{c['comm']} ({c['tid']})",
                                     "why": f"task {c['comm']} ({c['tid']}) set its own affinity to {cpulist(now)}"})
                    continue
                path = Path(c["path"])
                now = _read(path)
                if _same(now, c["set"], c.get("form")):
                    self._write(path, c["previous"])
                    back += 1
                elif not _same(now, c["previous"], c.get("form")):
                    left.append({"what": c["what"], "path": c["path"],
                                 "why": f"{path} is {now} now, not the {c['set']} osmeter wrote"})
            except ProcessLookupError:
                pass
            except OSError as e:
                left.append({"what": c["what"], "why": f"cannot put back {c.get('path') or c['comm']}: "
                                                       f"{e.strerror}"})
        born = 0
        for pid, tid, start, ppid, _, _ in sorted(live.values(), key=lambda t: int(t[2])):
            if (tid, start) in plan or (pid == os.getpid() and not own) or (seen is not None and (tid, start) in seen):
                continue
            for creator in ([pid] if pid != tid else []) + [ppid]:  # a thread's process, a process's parent
                t = live.get(creator)
                c = plan.get((creator, t[2])) if t else None
                if c is None:
                    continue
                try:
                    if self.getaff(tid) == set(c["set"]):
                        self.setaff(tid, set(c["previous"]))
                        plan[tid, start] = c
                        born += 1
                except OSError:
                    pass
                break
        return {"values": back, "tasks_born_during_the_run": born, "left": left}

    # ------------------------------------------------- state and lock
    def _take_lock(self) -> None:
        self._lock = cleanup.private_lock(self.dir, "isolate.lock", "another `osmeter run --isolate` (pid {pid}) is "
                                          "isolating a CPU now: one at a time, or each would undo the other's settings")

    def _undo_stale(self) -> None:
        """A state file with nobody holding the lock: a run killed before it restored."""
        try:
            fd = os.open(self.state, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return
        except OSError as e:
            cleanup.release_lock(self.dir, "isolate.lock", self._lock)
            self._lock = None
            raise RunError(f"{self.state}: cannot open it ({e.strerror}); look at it and remove it") from None
        try:
            with os.fdopen(fd) as f:
                old = json.load(f)
            changes = old["changes"]
        except (ValueError, KeyError, TypeError, OSError):
            cleanup.release_lock(self.dir, "isolate.lock", self._lock)
            self._lock = None
            raise RunError(f"{self.state} is left by an isolated run that did not finish, and it is unreadable: "
                           "put back by hand what it changed (boost, SMT, IRQ and task affinity), then remove "
                           "it") from None
        seen = {(int(t), str(s)) for t, s in old["seen"]} if isinstance(old.get("seen"), list) else None
        done = self._undo(changes, seen, own=True)
        self.state.unlink()
        self.doc["stale"] = {"pid": old.get("pid"), "started_utc": old.get("started_utc"), "restored": done}
        left = "".join(f"; left: {x['why']}" for x in done["left"])
        self.say(f"osmeter: --isolate: a previous isolated run (pid {old.get('pid')}, started "
                 f"{old.get('started_utc')}) ended without undoing its changes (killed?); undone now from "
                 f"{self.state}: {done['values']} values back{left}", file=sys.stderr)

    def _save(self) -> None:
        """The plan, atomically: a new private file renamed over the old."""
        tmp = self.state.with_name(f"{self.state.name}.{os.getpid()}.tmp")
        tmp.unlink(missing_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"pid": os.getpid(), "cpu": self.cpu, "started_utc": self.started, "changes": self.changes,
                       "seen": sorted(self.known)}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.state)


def undo_killed_run(root: Path | str = "/", say=print) -> dict | None:
    """Before a run is planned: what a killed isolated run left, undone
    (with the lock held), this process's own mask with it, so that the plan
    sees the machine's own affinities (a shell the killed run moved passed
    its moved mask to this process, and the default CPU would be chosen from
    it). Returns the record of what was undone, or None."""
    iso = Isolation(-1, root, say)
    iso._take_lock()
    try:
        iso._undo_stale()
    finally:
        if iso._lock is not None:
            cleanup.release_lock(iso.dir, "isolate.lock", iso._lock)
    return iso.doc.get("stale")


@contextlib.contextmanager
def isolated(cpu: int, root: Path | str = "/", after=None, say=print, stale: dict | None = None):
    """The CPU isolated inside the block; restored once at its end, also on
    an error or a signal. A second signal during the restore waits for it,
    and the first one is the one that ends the command. `after(doc)` is
    called once the restore is done. `stale`: what undo_killed_run undid,
    kept in the isolation's record."""
    iso = Isolation(cpu, root, say)
    if stale:
        iso.doc["stale"] = stale
    first: Interrupted | None = None
    try:
        yield iso.apply()
    except Interrupted as e:
        first = e
        raise
    finally:
        try:
            iso.restore()
        except Interrupted:
            if first is None:
                raise
        finally:
            if after:
                after(iso.doc)
