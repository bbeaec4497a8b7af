"""The machine a run measures, as the runner sees it: this one (Here), or
a thin fleet host reached over ssh (OnHost, `osmeter run --on HOST
--on-tree DIR`).

On a thin host the controller (this machine) plans the run, keeps the
results, does the statistics and the figures; the host runs only the probes
and agent.py (Python's standard library alone), which answers one request
at a time on the ssh session's standard input and output (a JSON line
each way): what the machine is and its conditions (machine.py, run
there), its CPUs and whether SCHED_FIFO is permitted, the interference
counters of the pinned CPU, and each probe started by launch.Launcher
there: pinned, under the run's scheduling policy, in a process group of
its own that dies with the agent, with its timeout. A Ctrl-C here kills
the probe's group there; a lost connection, or a controller killed
outright, ends the agent, which kills the probe's group and removes its
working directory (TREE/results/fleet-*, held by an flock while it lives;
what a killed agent leaves, the next one removes).
"""
from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

from osmeter.core.errors import RunError
from osmeter.host import cleanup
from osmeter.host.interference import counters
from osmeter.host.launch import Launcher, fifo_permission
from osmeter.host.machine import describe_conditions, describe_machine
from osmeter.remote import ssh


class Here:
    """This machine, this tree."""

    remote = False

    def __init__(self, root: Path, bin_dir: Path | None = None):
        self.root = root
        self.bin_dir = bin_dir or root / "build" / "bin"

    def close(self) -> None:
        pass

    def machine(self) -> dict:
        return describe_machine()

    def conditions(self) -> dict:
        return describe_conditions(self.root)

    def affinity(self) -> set[int]:
        return set(os.sched_getaffinity(0))

    def set_affinity(self, cpus: set[int]) -> None:
        os.sched_setaffinity(0, cpus)

    def fifo_permission(self) -> tuple[bool, str | None]:
        return fifo_permission()

    def uid(self) -> int:
        return os.geteuid()

    def exists(self, path: str) -> bool:
        return Path(path).exists()

    def is_dir(self, path: str) -> bool:
        return Path(path).is_dir()

    def unlink(self, path: str) -> None:
        Path(path).unlink(missing_ok=True)

    def read_text(self, path: str) -> str | None:
        try:
            return Path(path).read_text().strip()
        except OSError:
            return None

    def counters(self, cpu: int) -> dict:
        return counters(cpu)

    def missing(self, binaries: list[str]) -> list[str]:
        return [b for b in binaries if not (self.bin_dir / b).exists()]

    def make(self) -> tuple[int, str]:
        r = subprocess.run(["make", "-s", "-C", str(self.root), "all"], capture_output=True, text=True)
        return r.returncode, r.stderr

    def scratch(self, out: Path) -> str:
        """Where the probes' own files go by default: the results directory."""
        return str(out)

    def clean_scratch(self, dirs: list[str]) -> None:
        for d in dirs:
            cleanup.scratch(Path(d), [])

    def launcher(self, cpu: int, fifo: bool, scratch_dirs: list[str]) -> Launcher:
        return Launcher(self.bin_dir, cpu, fifo, [Path(d) for d in scratch_dirs])


class OnHost:
    """A thin fleet host: agent.py serving over one ssh session."""

    remote = True

    def __init__(self, target: str, tree: str, python: str = "python3"):
        self.target, self.tree = target, tree.rstrip("/") or "/"
        self.root = Path(self.tree)
        self.bin_dir = Path(f"{self.tree}/build/bin")
        self.replies: queue.Queue = queue.Queue()
        self.next_id = 0
        self.lost: str | None = None
        self.err: list[str] = []
        cmd = f"exec {ssh.quote(python)} {ssh.quote(self.tree + '/harness/osmeter/remote/agent.py')} serve {ssh.quote(self.tree)}"
        try:
            # a session of its own: a Ctrl-C at the terminal reaches this process, which stops the probe there
            self.proc = subprocess.Popen(ssh.argv(target, cmd), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True, bufsize=1, start_new_session=True)
        except FileNotFoundError:
            raise RunError("ssh is not installed (Debian: openssh-client)") from None
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()
        hello = self._reply(None)
        self.workdir, self.python = hello["workdir"], hello["python"]
        if hello.get("removed"):
            print(f"osmeter: {target}: removed what killed runs left: {', '.join(hello['removed'])}",
                  file=sys.stderr)

    # ---- the session

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                self.replies.put(json.loads(line))
            except ValueError:
                self.err.append(line.rstrip())  # not the agent's: a banner, say
        self.replies.put(None)

    def _read_err(self) -> None:
        for line in self.proc.stderr:
            self.err.append(line.rstrip())
            del self.err[:-30]

    def _why_lost(self) -> str:
        try:
            rc = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            rc = None
        errs = [e for e in self.err if e.strip()]
        why = ssh.lost(self.target, "\n".join(errs), rc)
        if why:
            return why
        return f"its agent ended (exit {rc}): {' | '.join(errs[-3:]) or 'no message'}"

    def _reply(self, rid: int | None) -> dict:
        """The reply to request rid (None: the agent's greeting), skipping
        replies to requests given up (an interrupted run's)."""
        while True:
            if self.lost:
                raise RunError(f"{self.target}: {self.lost}")
            msg = self.replies.get()  # interruptible: a signal's handler runs here
            if msg is None:
                self.lost = f"lost the agent there: {self._why_lost()}"
                continue
            if msg.get("id") == rid:
                if "error" in msg:
                    raise RunError(f"{self.target}: agent: {msg['error']}")
                return msg["ok"]

    def call(self, op: str, **kw):
        if self.lost:
            raise RunError(f"{self.target}: {self.lost}")
        self.next_id += 1
        rid = self.next_id
        try:
            self.proc.stdin.write(json.dumps(dict(kw, id=rid, op=op)) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # the reader sees the end and says why
        return self._reply(rid)

    def close(self) -> None:
        """Ends the session: the agent removes its working directory and exits."""
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    # ---- what the runner asks

    def machine(self) -> dict:
        return self.call("machine")

    def conditions(self) -> dict:
        c = self.call("conditions")
        c["measured_on"] = {"target": self.target, "tree": self.tree, "agent_python": self.python,
                            "how": "thin host: probes started there by agent.py over ssh, the harness here"}
        return c

    def affinity(self) -> set[int]:
        return set(self.call("affinity"))

    def set_affinity(self, cpus: set[int]) -> None:
        self.call("set_affinity", cpus=sorted(cpus))

    def fifo_permission(self) -> tuple[bool, str | None]:
        ok, why = self.call("fifo")
        return ok, why

    def uid(self) -> int:
        return self.call("uid")

    def exists(self, path: str) -> bool:
        return self.call("exists", path=str(path))

    def is_dir(self, path: str) -> bool:
        return self.call("is_dir", path=str(path))

    def unlink(self, path: str) -> None:
        with contextlib.suppress(RunError):  # best effort: a lost agent's directory goes with it
            self.call("unlink", path=str(path))

    def read_text(self, path: str) -> str | None:
        return self.call("read", path=str(path))

    def counters(self, cpu: int) -> dict:
        return self.call("counters", cpu=cpu)  # "t" on the host's monotonic clock: only differences are used

    def missing(self, binaries: list[str]) -> list[str]:
        return self.call("missing", names=list(binaries))

    def make(self) -> tuple[int, str]:
        rc, err = self.call("make")
        return rc, err

    def scratch(self, out: Path) -> str:
        return self.workdir

    def clean_scratch(self, dirs: list[str]) -> None:
        with contextlib.suppress(RunError):
            self.call("clean_scratch", dirs=[str(d) for d in dirs])

    def launcher(self, cpu: int, fifo: bool, scratch_dirs: list[str]) -> "RemoteLauncher":
        self.call("launcher", cpu=cpu, fifo=fifo, scratch=[str(d) for d in scratch_dirs])
        return RemoteLauncher(self, cpu)


class RemoteLauncher:
    """launch.Launcher's interface, its work done by the agent's Launcher."""

    def __init__(self, host: OnHost, cpu: int):
        self.host, self.cpu, self.bin_dir = host, cpu, host.bin_dir
        self.running = False

    def has(self, probe_binary: str) -> bool:
        return not self.host.missing([probe_binary])

    def argv(self, probe_binary: str, args, external: bool = False, pinned: bool = True) -> list[str] | None:
        # (an unpinned probe, app.replay, is refused with --on before a run starts: plan.check_app_trace)
        if external:
            exe = self.host.call("which", name=probe_binary)
            return [exe, *args] if exe else None
        return [f"{self.bin_dir}/{probe_binary}", "--cpu", str(self.cpu), *args]

    def run(self, argv: list[str], timeout: float, progress=None, awake: bool = False,
            pinned: bool = True) -> tuple[int | None, str, str]:
        self.running = True
        got = self.host.call("run", argv=[str(a) for a in argv], timeout=timeout, awake=awake)
        self.running = False
        return got["rc"], got["out"], got["err"]

    def kill(self, grace: float = 3.0) -> None:
        if self.running:
            self.running = False
            with contextlib.suppress(RunError):
                self.host.call("kill", grace=grace)

    def clean_scratch(self) -> None:
        with contextlib.suppress(RunError):
            self.host.call("clean_scratch")
