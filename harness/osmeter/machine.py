"""What machine this is (hardware, OS) and how the run was done (conditions).

Everything is read from /proc and /sys, with a few commands where the kernel
has no file for it. A missing file is recorded as None, never guessed.
"""
from __future__ import annotations

import json
import os
import platform
import shutil
import socket
import subprocess
from pathlib import Path


def _read(path: str | Path) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _int(path: str | Path) -> int | None:
    v = _read(path)
    try:
        return int(v) if v is not None else None
    except ValueError:
        return None


def _cmd(*argv: str) -> str | None:
    if not shutil.which(argv[0]):
        return None
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def parse_size(text: str | None) -> int | None:
    """sysfs cache sizes: '32K', '1024K', '16M' -> bytes."""
    if not text:
        return None
    text = text.strip().upper()
    mult = {"K": 1024, "M": 1024**2, "G": 1024**3}
    if text[-1] in mult:
        return int(text[:-1]) * mult[text[-1]]
    return int(text)


def cpuinfo() -> dict:
    info: dict = {}
    text = _read("/proc/cpuinfo") or ""
    for line in text.splitlines():
        if ":" not in line:
            if info:
                break  # first processor block only
            continue
        k, v = (s.strip() for s in line.split(":", 1))
        info.setdefault(k, v)
    return info


def cpu_flags() -> set[str]:
    return set(cpuinfo().get("flags", "").split())


def caches() -> list[dict]:
    out = []
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    for d in sorted(base.glob("index*")):
        out.append(
            {
                "level": _int(d / "level"),
                "type": _read(d / "type"),
                "size": parse_size(_read(d / "size")),
                "line": _int(d / "coherency_line_size"),
                "ways": _int(d / "ways_of_associativity"),
                "shared_cpu_list": _read(d / "shared_cpu_list"),
            }
        )
    return out


def hypervisor() -> str | None:
    v = _cmd("systemd-detect-virt")
    if v and v != "none":
        return v
    t = _read("/sys/hypervisor/type")
    if t:
        return t
    if "hypervisor" in cpu_flags():
        return _read("/sys/class/dmi/id/sys_vendor") or "unknown hypervisor"
    return None


def meminfo() -> dict:
    out = {}
    for line in (_read("/proc/meminfo") or "").splitlines():
        k, _, v = line.partition(":")
        parts = v.split()
        if parts and parts[0].isdigit():
            out[k] = int(parts[0]) * (1024 if len(parts) > 1 and parts[1] == "kB" else 1)
    return out


def disks() -> list[dict]:
    out = []
    for d in sorted(Path("/sys/block").glob("*")):
        if d.name.startswith(("loop", "ram", "zram")) and _int(d / "size") in (0, None):
            continue
        out.append(
            {
                "name": d.name,
                "size": (_int(d / "size") or 0) * 512,
                "model": _read(d / "device/model"),
                "rotational": _int(d / "queue/rotational"),
                "logical_block_size": _int(d / "queue/logical_block_size"),
                "physical_block_size": _int(d / "queue/physical_block_size"),
                "scheduler": _read(d / "queue/scheduler"),
            }
        )
    return out


def nics() -> list[dict]:
    out = []
    for d in sorted(Path("/sys/class/net").glob("*")):
        drv = d / "device" / "driver"
        speed = _int(d / "speed")
        out.append(
            {
                "name": d.name,
                "driver": drv.resolve().name if drv.exists() else ("loopback" if d.name == "lo" else None),
                "speed_mbps": speed if speed is not None and speed > 0 else None,
                "mtu": _int(d / "mtu"),
                "operstate": _read(d / "operstate"),
            }
        )
    return out


def describe_machine() -> dict:
    ci = cpuinfo()
    mem = meminfo()
    return {
        "hostname": socket.gethostname(),
        "cpu_model": ci.get("model name"),
        "cpu_vendor": ci.get("vendor_id"),
        "cpu_family": ci.get("cpu family"),
        "cpu_model_number": ci.get("model"),
        "cpu_mhz_reported": float(ci["cpu MHz"]) if "cpu MHz" in ci else None,
        "online_cpus": os.cpu_count(),
        "online_cpu_list": _read("/sys/devices/system/cpu/online"),
        "caches": caches(),
        "memory_bytes": mem.get("MemTotal"),
        "disks": disks(),
        "nics": nics(),
        "kernel": platform.release(),
        "kernel_version": platform.version(),
        "os": _os_release(),
        "arch": platform.machine(),
        "hypervisor": hypervisor(),
    }


def _os_release() -> str | None:
    for line in (_read("/etc/os-release") or "").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip('"')
    return None


def mitigations() -> dict:
    base = Path("/sys/devices/system/cpu/vulnerabilities")
    return {p.name: _read(p) for p in sorted(base.glob("*"))}


def git_commit(root: Path) -> dict:
    commit = _cmd("git", "-C", str(root), "rev-parse", "HEAD")
    status = _cmd("git", "-C", str(root), "status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


def describe_conditions(root: Path) -> dict:
    """The state of the machine that can change a figure. Scheduling and
    pinning are filled in by the runner, which knows what it got."""
    flags = cpu_flags()
    cpu0 = Path("/sys/devices/system/cpu/cpu0/cpufreq")
    buildinfo = None
    try:
        buildinfo = json.loads((root / "build" / "buildinfo.json").read_text())
    except (OSError, ValueError):
        pass
    smt_active = _int("/sys/devices/system/cpu/smt/active")
    return {
        "governor": _read(cpu0 / "scaling_governor"),
        "cpufreq_driver": _read(cpu0 / "scaling_driver"),
        "boost": _read("/sys/devices/system/cpu/cpufreq/boost"),
        "smt_control": _read("/sys/devices/system/cpu/smt/control"),
        "smt_active": bool(smt_active) if smt_active is not None else None,
        "thp": _read("/sys/kernel/mm/transparent_hugepage/enabled"),
        "thp_defrag": _read("/sys/kernel/mm/transparent_hugepage/defrag"),
        "mitigations": mitigations(),
        "kernel_cmdline": _read("/proc/cmdline"),
        "clocksource": _read("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
        "tsc_flags": sorted(f for f in flags if "tsc" in f),
        "tsc_invariant": {"constant_tsc", "nonstop_tsc"} <= flags,
        "rt_runtime_us": _int("/proc/sys/kernel/sched_rt_runtime_us"),
        "rt_period_us": _int("/proc/sys/kernel/sched_rt_period_us"),
        "compiler": buildinfo,
        "osmeter": git_commit(root),
        "loadavg_before": _read("/proc/loadavg"),
        "uid": os.geteuid(),
    }
