"""What machine this is (hardware, OS) and how the run was done (conditions).

Everything is read from /proc and /sys, with a few commands where the kernel
has no file for it. A missing file is recorded as None, never guessed.

Standard library only, and Python 3.8 or newer: a thin fleet host's agent
(agent.py) runs this module there, so that a run describes the machine it
measured, not the one that drives it.
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
    """The virtual machine's hypervisor (kvm, xen, ...), None on bare metal.
    A container is not a hypervisor: see container()."""
    v = _cmd("systemd-detect-virt", "--vm")
    if v and v != "none":
        return v
    t = _read("/sys/hypervisor/type")
    if t:
        return t
    if "hypervisor" in cpu_flags():
        return _read("/sys/class/dmi/id/sys_vendor") or "unknown hypervisor"
    return None


def container() -> str | None:
    """The container the suite runs in (docker, lxc, podman ...), or None."""
    v = _cmd("systemd-detect-virt", "--container")
    if v and v != "none":
        return v
    if Path("/.dockerenv").exists():
        return "docker"
    if Path("/run/.containerenv").exists():
        return "podman"
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
                "vendor": _read(d / "device/vendor"),
                "driver": _link_name(d / "device" / "driver"),
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
                "pci_id": _pci_id(d / "device"),
            }
        )
    return out


def _link_name(p: Path) -> str | None:
    return p.resolve().name if p.exists() else None


def _pci_id(dev: Path) -> str | None:
    """vendor:device of a PCI (or virtio) device, as lspci -n prints it."""
    v, d = _read(dev / "vendor"), _read(dev / "device")
    return f"{v[2:] if v.startswith('0x') else v}:{d[2:] if d.startswith('0x') else d}" if v and d else None


# SMBIOS type 17 (Memory Device): what dmidecode reads, from the kernel's copy of the tables
_SMBIOS_MEMORY_TYPES = {0x12: "DDR", 0x13: "DDR2", 0x18: "DDR3", 0x1A: "DDR4", 0x1B: "LPDDR", 0x1C: "LPDDR2",
                        0x1D: "LPDDR3", 0x1E: "LPDDR4", 0x22: "DDR5", 0x23: "LPDDR5"}


def memory_modules(dmi: Path = Path("/sys/firmware/dmi/entries")) -> dict:
    """The memory modules SMBIOS describes (type, speed, size per module),
    or why none are known (many VMs have no SMBIOS tables; reading them
    needs root)."""
    entries = sorted(dmi.glob("17-*"))
    if not dmi.is_dir():
        return {"modules": [], "why_unknown": f"no SMBIOS tables ({dmi} is absent, as in many VMs)"}
    mods = []
    for e in entries:
        try:
            raw = (e / "raw").read_bytes()
        except OSError as err:
            return {"modules": [], "why_unknown": f"cannot read {e}/raw: {err.strerror}"}
        if len(raw) < 0x17 or raw[0] != 17:
            continue
        size = int.from_bytes(raw[0x0C:0x0E], "little")
        if size in (0, 0xFFFF):
            continue  # an empty slot, or unknown
        mib = (size & 0x7FFF) if not size & 0x8000 else (size & 0x7FFF) / 1024
        if size == 0x7FFF and len(raw) >= 0x20:
            mib = int.from_bytes(raw[0x1C:0x20], "little")
        speed = int.from_bytes(raw[0x15:0x17], "little")
        mods.append({"size_bytes": int(mib * 2**20), "type": _SMBIOS_MEMORY_TYPES.get(raw[0x12], f"type {raw[0x12]:#x}"),
                     "speed_mts": speed or None})
    if not mods:
        return {"modules": [], "why_unknown": "SMBIOS lists no populated memory device"}
    return {"modules": mods}


def describe_machine() -> dict:
    ci = cpuinfo()
    mem = meminfo()
    return {
        "hostname": socket.gethostname(),
        "cpu_model": ci.get("model name"),
        "cpu_vendor": ci.get("vendor_id"),
        "cpu_family": ci.get("cpu family"),
        "cpu_model_number": ci.get("model"),
        "cpu_stepping": ci.get("stepping"),
        "memory_modules": memory_modules(),
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
        "container": container(),
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
    """The source's commit: from git, or, in a tree `osmeter fleet` shipped
    (no .git there), from the .osmeter-source it wrote."""
    commit = _cmd("git", "-C", str(root), "rev-parse", "HEAD")
    if commit is None and (root / ".osmeter-source").is_file():
        try:
            src = json.loads((root / ".osmeter-source").read_text())
            return {"commit": src.get("commit"), "dirty": src.get("dirty"), "shipped_tree": src.get("tree")}
        except (OSError, ValueError):
            pass
    status = _cmd("git", "-C", str(root), "status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


# Scheduler and memory-management settings that move figures; recorded by
# name so that two runs can be told apart (kernels without one record None).
SYSCTLS = (
    "kernel.sched_rt_runtime_us", "kernel.sched_rt_period_us", "kernel.sched_autogroup_enabled",
    "kernel.sched_child_runs_first", "kernel.sched_schedstats", "kernel.numa_balancing", "kernel.timer_migration",
    "kernel.watchdog", "kernel.nmi_watchdog", "kernel.perf_event_paranoid", "kernel.randomize_va_space",
    "kernel.sched_energy_aware", "vm.swappiness", "vm.dirty_ratio", "vm.dirty_background_ratio",
    "vm.dirty_expire_centisecs", "vm.zone_reclaim_mode", "vm.overcommit_memory", "vm.min_free_kbytes",
    "vm.stat_interval", "vm.compaction_proactiveness", "vm.nr_hugepages",
)
# The CFS/EEVDF tunables moved to debugfs in Linux 5.13; read where mounted.
SCHED_DEBUG = ("base_slice_ns", "migration_cost_ns", "nr_migrate", "latency_ns", "min_granularity_ns",
               "wakeup_granularity_ns", "preempt")


def sysctls() -> dict:
    out = {name: _read("/proc/sys/" + name.replace(".", "/")) for name in SYSCTLS}
    dbg = Path("/sys/kernel/debug/sched")
    for name in SCHED_DEBUG:
        v = _read(dbg / name)
        if v is not None:
            out[f"debug.sched.{name}"] = v
    return out


def microcode() -> str | None:
    return _read("/sys/devices/system/cpu/cpu0/microcode/version") or cpuinfo().get("microcode")


def _cmdline_param(cmdline: str | None, name: str) -> str | None:
    for word in (cmdline or "").split():
        if word == name or word.startswith(name + "="):
            return word.partition("=")[2]
    return None


def cgroup_limits(pid: str = "self") -> dict:
    """The CPU, memory and I/O limits of the cgroups this process runs in (v2
    and v1 hierarchies); None where a controller is absent. io_max is v2's
    io.max, or v1's blkio throttles in its words (254:0 wiops=1000), "" where
    nothing is throttled."""
    out: dict = {"version": None, "cpu_max": None, "cpuset_cpus": None, "memory_max": None, "io_max": None}
    text = _read(f"/proc/{pid}/cgroup") or ""
    v1 = {}
    for line in text.splitlines():
        _, ctrls, path = line.split(":", 2)
        if ctrls == "":
            v2 = Path("/sys/fs/cgroup") / path.lstrip("/")
            if (Path("/sys/fs/cgroup") / "cgroup.controllers").exists():
                out["version"] = 2
                out["cpu_max"] = _read(v2 / "cpu.max")
                out["memory_max"] = _read(v2 / "memory.max")
                out["cpuset_cpus"] = _read(v2 / "cpuset.cpus.effective")
                io = _read(v2 / "io.max")
                out["io_max"] = " ".join((io or "").split()) if io is not None else None
        for c in ctrls.split(","):
            if c:
                v1[c] = path
    if out["version"] is None and v1:
        out["version"] = 1
        base = Path("/sys/fs/cgroup")

        def at(ctrl, name):
            rel = v1.get(ctrl)
            return _read(base / ctrl / rel.lstrip("/") / name) if rel is not None else None

        quota, period = at("cpu", "cpu.cfs_quota_us"), at("cpu", "cpu.cfs_period_us")
        out["cpu_max"] = (f"{'max' if quota in (None, '-1') else quota} {period}") if period else None
        mem = at("memory", "memory.limit_in_bytes")
        out["memory_max"] = "max" if mem is not None and int(mem) >= 2**62 else mem
        out["cpuset_cpus"] = at("cpuset", "cpuset.effective_cpus") or at("cpuset", "cpuset.cpus")
        if "blkio" in v1:
            limits = []
            for key, name in (("rbps", "read_bps_device"), ("wbps", "write_bps_device"),
                              ("riops", "read_iops_device"), ("wiops", "write_iops_device")):
                for line in (at("blkio", f"blkio.throttle.{name}") or "").splitlines():
                    dev, _, value = line.partition(" ")
                    if value.strip():
                        limits.append(f"{dev} {key}={value.strip()}")
            out["io_max"] = "; ".join(sorted(limits))
    return out


def irqbalance() -> dict:
    running = _cmd("pgrep", "-x", "irqbalance")
    return {"running": bool(running), "default_smp_affinity": _read("/proc/irq/default_smp_affinity")}


def qdiscs() -> dict | None:
    """Each interface's root queueing discipline (tc shapes links: a run's
    network figures depend on it)."""
    text = _cmd("tc", "qdisc", "show")
    if text is None:
        return None
    out = {}
    for line in text.splitlines():
        words = line.split()
        if "dev" in words and "root" in words:
            dev = words[words.index("dev") + 1]
            kind = words[1]
            rest = " ".join(words[words.index("root") + 1:])
            out[dev] = " ".join(f"{kind} {rest}".replace("refcnt 2", "").split())
    return out


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
    cmdline = _read("/proc/cmdline")
    return {
        "governor": _read(cpu0 / "scaling_governor"),
        "cpufreq_driver": _read(cpu0 / "scaling_driver"),
        "boost": _read("/sys/devices/system/cpu/cpufreq/boost"),
        "smt_control": _read("/sys/devices/system/cpu/smt/control"),
        "smt_active": bool(smt_active) if smt_active is not None else None,
        "thp": _read("/sys/kernel/mm/transparent_hugepage/enabled"),
        "thp_defrag": _read("/sys/kernel/mm/transparent_hugepage/defrag"),
        "mitigations": mitigations(),
        "microcode": microcode(),
        "kernel_cmdline": cmdline,
        "isolated_cpus": _read("/sys/devices/system/cpu/isolated") or _cmdline_param(cmdline, "isolcpus"),
        "nohz_full": _read("/sys/devices/system/cpu/nohz_full") or _cmdline_param(cmdline, "nohz_full"),
        "sysctl": sysctls(),
        "cgroup": cgroup_limits(),
        "irqbalance": irqbalance(),
        "qdisc": qdiscs(),
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
