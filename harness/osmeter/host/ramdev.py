"""RAM-backed block devices that osmeter makes for a run and removes after
it: the host's storage taken out of a figure on request (issue 44, item 5).

A device is a loop device over a file in /dev/shm (tmpfs), the file's pages
allocated up front (a read of a hole in tmpfs would cost nothing), so that
what the disk probes time is the kernel's block path (the bio, the loop
driver's worker, a copy) and never a device that holds anyone's data.

--disk-ram    the disk probes' target is such a device (disk_target.ram)
--fs-scratch  fs.meta's creates and deletes run on a fresh ext4 made on such
              a device and mounted for the run (conditions.fs_scratch): the
              file system's code path, not the state of the user's own disk

Each backing file is named osmeter-ram-<pid>-<what>.img and each mount point
osmeter-scratchfs-<pid>-*; a run killed before it removed them leaves them
to the next run of osmeter, which unmounts, detaches and removes those whose
process is gone (clean_stale), by name only.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from osmeter.core.errors import RunError
from osmeter.host.cleanup import alive as _alive

SHM = Path("/dev/shm")
MOUNTS = Path(tempfile.gettempdir())
BACKING = re.compile(r"^osmeter-ram-(\d+)-[a-z]+\.img$")
MOUNT = re.compile(r"^osmeter-scratchfs-(\d+)-[A-Za-z0-9_]+$")
SCRATCH_FS_BYTES = 256 << 20


def refusal() -> str | None:
    """Why this user or machine cannot make RAM-backed devices; None if it can."""
    if os.geteuid() != 0:
        return "needs root (a loop device, mkfs and mount)"
    for tool in ("losetup", "mkfs.ext4", "mount", "umount"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (util-linux, e2fsprogs)"
    if not SHM.is_dir():
        return f"{SHM} is missing: no tmpfs to back the device with"
    return None


def _run(argv: list[str]) -> str:
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RunError(f"{' '.join(argv)} failed: {(r.stderr or r.stdout).strip() or f'status {r.returncode}'}")
    return r.stdout.strip()


def _attached(backing: Path) -> list[str]:
    """The loop devices over a backing file."""
    r = subprocess.run(["losetup", "-j", str(backing), "-O", "NAME", "-n"], capture_output=True, text=True)
    return [ln.strip() for ln in r.stdout.splitlines() if ln.strip()] if r.returncode == 0 else []


def _free(backing: Path) -> None:
    for dev in _attached(backing):
        subprocess.run(["losetup", "-d", dev], capture_output=True)
    with contextlib.suppress(FileNotFoundError):
        backing.unlink()


@contextlib.contextmanager
def ram_device(size: int, what: str):
    """A loop device over `size` bytes of tmpfs for the block; yields
    (device, backing file); both gone after it."""
    if size <= 0:
        raise RunError(f"a RAM-backed device of {size} bytes")
    if shutil.disk_usage(SHM).free < size + (64 << 20):
        raise RunError(f"{SHM} has {shutil.disk_usage(SHM).free >> 20} MiB free: not enough for a "
                       f"{size >> 20} MiB RAM-backed device")
    backing = SHM / f"osmeter-ram-{os.getpid()}-{what}.img"
    try:
        fd = os.open(backing, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            os.posix_fallocate(fd, 0, size)  # tmpfs pages allocated now, not on first touch
        finally:
            os.close(fd)
        dev = _run(["losetup", "--find", "--show", "--direct-io=off", str(backing)])
        yield dev, backing
    finally:
        _free(backing)


@contextlib.contextmanager
def scratch_fs(size: int = SCRATCH_FS_BYTES):
    """A fresh ext4 on a RAM-backed device, mounted for the block; yields its
    conditions document (mount point, device, size)."""
    with ram_device(size, "fs") as (dev, backing):
        _run(["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", dev])
        mnt = Path(tempfile.mkdtemp(prefix=f"osmeter-scratchfs-{os.getpid()}-", dir=MOUNTS))
        try:
            _run(["mount", "-t", "ext4", dev, str(mnt)])
            try:
                yield {"mount": str(mnt), "device": dev, "backing": str(backing), "bytes": size, "fs": "ext4",
                       "made_by_osmeter": True}
            finally:
                subprocess.run(["umount", str(mnt)], capture_output=True)
        finally:
            with contextlib.suppress(OSError):
                mnt.rmdir()


def clean_stale(shm: Path = SHM, mounts: Path = MOUNTS) -> list[str]:
    """What runs killed before removing their RAM-backed devices left:
    their scratch mounts unmounted and removed, their loop devices detached,
    their backing files removed; those of live processes are left alone.
    The names of what was removed."""
    removed = []
    for d in sorted(mounts.glob("osmeter-scratchfs-*")):
        m = MOUNT.match(d.name)
        if m and not _alive(int(m.group(1))):
            subprocess.run(["umount", str(d)], capture_output=True)
            with contextlib.suppress(OSError):
                d.rmdir()
                removed.append(str(d))
    for f in sorted(shm.glob("osmeter-ram-*.img")):
        m = BACKING.match(f.name)
        if m and not _alive(int(m.group(1))):
            _free(f)
            removed.append(str(f))
    # a loop device whose backing file is already gone (removed while the device was held)
    r = subprocess.run(["losetup", "-l", "-n", "-O", "NAME,BACK-FILE"], capture_output=True, text=True)
    for line in r.stdout.splitlines() if r.returncode == 0 else []:
        parts = line.split(None, 1)
        if len(parts) < 2:
            continue
        back = Path(parts[1].replace(" (deleted)", "").strip())
        m = BACKING.match(back.name)
        if back.parent == shm and m and not _alive(int(m.group(1))):
            if subprocess.run(["losetup", "-d", parts[0]], capture_output=True).returncode == 0:
                removed.append(parts[0])
    return removed
