"""--disk-ram and --fs-scratch: the host's storage taken out on request, on
RAM-backed loop devices that osmeter makes and removes (issue 44, item 5),
also after a kill."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ROOT, osmeter
from osmeter.host import ramdev

pytestmark = pytest.mark.skipif(ramdev.refusal() is not None, reason=f"{ramdev.refusal()}")


def leftovers() -> list[str]:
    """osmeter's RAM backing files, scratch mounts, and loop devices over /dev/shm files now."""
    out = [str(p) for p in ramdev.SHM.glob("osmeter-ram-*.img")]
    out += [str(p) for p in ramdev.MOUNTS.glob("osmeter-scratchfs-*")]
    r = subprocess.run(["losetup", "-l", "-n", "-O", "NAME,BACK-FILE"], capture_output=True, text=True)
    out += [ln.split()[0] for ln in r.stdout.splitlines() if "osmeter-ram-" in ln]
    return out


def test_the_disk_probes_on_a_ram_device_and_fs_meta_on_a_scratch_ext4_both_gone_after(tmp_path):
    """The disk probe reads a loop device over /dev/shm that the run made (its conditions name it,
    and the target is that device, not a file of the results directory); fs.meta makes its files
    on a fresh ext4 mounted for the run (with its journal: params.journal jbd2); after the run neither the
    device, nor its backing file, nor the mount is left. Mutant caught: the scratch fs left mounted."""
    before = leftovers()
    out = tmp_path / "r"
    r = osmeter("run", "--probes", "disk.4k-random-read,fs.meta", "--disk-ram", "--disk-size", "64M",
                "--fs-scratch", "--no-report", "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads((out / "results.json").read_text())
    c = doc["conditions"]
    assert c["disk_ram"]["device"].startswith("/dev/loop") and c["disk_ram"]["bytes"] == 64 << 20
    assert c["disk_target"]["path"] == c["disk_ram"]["device"] and not c["disk_target"]["made_by_osmeter"]
    assert c["fs_scratch"]["fs"] == "ext4" and c["fs_scratch"]["mount"].startswith(str(ramdev.MOUNTS))
    ms = {m["id"]: m for m in doc["measurements"]}
    assert ms["disk.4k-random-read.iops"]["median"] > 0
    # the ids name their target: a RAM device, not a disk (and fs.meta's its scratch ext4)
    assert "RAM-backed loop device" in ms["disk.4k-random-read.iops"]["description"]
    assert "fresh ext4" in ms["fs.create.0k"]["description"]
    assert ms["fs.create.0k"]["params"].get("journal") == "jbd2", ms["fs.create.0k"]["params"]
    assert not (out / "disk-target.dat").exists()
    assert set(leftovers()) <= set(before), leftovers()  # (the run may also clear older runs' leftovers)


def test_a_killed_runs_ram_devices_are_removed_by_the_next_run(tmp_path):
    """SIGKILL a run while it holds its RAM-backed devices: they outlive it (a loop device, its
    backing file, a mounted scratch ext4), and the next osmeter run unmounts, detaches and removes
    them, and says so; a live process's are left alone. Mutant caught: nothing cleaned."""
    before = leftovers()
    p = subprocess.Popen([str(ROOT / "osmeter"), "run", "--probes", "fs.meta,disk.4k-random-read", "--disk-ram",
                          "--disk-size", "64M", "--fs-scratch", "--no-report", "--out", str(tmp_path / "killed")],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(leftovers()) < len(before) + 4:
            time.sleep(0.1)
        made = [x for x in leftovers() if x not in before]
        assert len(made) >= 4, made  # two backing files, a mount point, loop devices
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    assert all(x in leftovers() for x in made)
    r = osmeter("run", "--probes", "cpu.loop", "--no-report", "--out", str(tmp_path / "next"))
    assert r.returncode == 0, r.stderr
    assert "removed what killed runs left" in r.stderr and "osmeter-ram-" in r.stderr, r.stderr
    assert set(leftovers()) <= set(before), leftovers()  # (the run may also clear older runs' leftovers)


def test_ram_devices_are_refused_clearly_where_they_cannot_be():
    r = osmeter("run", "--probes", "disk.4k-random-read", "--disk-ram", "--disk-target", "/tmp/x.dat")
    assert r.returncode == 2 and "--disk-target or --disk-ram, not both" in r.stderr, r.stderr
    with pytest.raises(Exception, match="bytes"):
        with ramdev.ram_device(0, "disk"):
            pass
