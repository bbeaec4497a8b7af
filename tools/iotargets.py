"""The block targets the I/O comparison scripts (compare-fio,
compare-io-peak) measure on, made and removed the same way for both: zram
(reset and filled, never while it holds data unless allowed), a RAM-backed
loop device with direct I/O, and a file on the file system under build/.
A helper of the benchmark scripts, never imported by osmeter itself."""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IOGEN = ROOT / "build" / "bin" / "iogen"
SIZE = "1G"


def zram_in_use() -> str | None:
    """Why /dev/zram0 must not be reset: it is set up (a disk size), swapped
    on or mounted; None when it is free or absent."""
    zram = Path("/sys/block/zram0")
    if not zram.exists():
        return None
    size = (zram / "disksize").read_text().strip()
    if size not in ("", "0"):
        return f"/dev/zram0 is set up ({int(size) >> 20} MiB) and may hold data"
    for table in ("/proc/swaps", "/proc/mounts"):
        if "/dev/zram0" in Path(table).read_text():
            return f"/dev/zram0 is in use ({table})"
    return None


def refuse_busy_zram(tool: str, allow_destroy: bool) -> None:
    busy = zram_in_use()
    if busy and not allow_destroy:
        sys.exit(f"{tool}: {busy}: it would be reset and overwritten; free it, or give --allow-destroy-data")


def setup_targets(tool: str, quick: bool, allow_destroy: bool) -> tuple[list[tuple[str, str]], list]:
    """[(label, path)] of the targets made, and the undo steps (run them in
    reverse, in a finally). quick: the RAM devices only."""
    made = []
    zram = Path("/sys/block/zram0")
    if not zram.exists():
        subprocess.run(["modprobe", "zram"], capture_output=True)
    targets = []
    refuse_busy_zram(tool, allow_destroy)
    try:
        if zram.exists():
            Path("/sys/block/zram0/reset").write_text("1")
            Path("/sys/block/zram0/disksize").write_text(SIZE)
            made.append(lambda: Path("/sys/block/zram0/reset").write_text("1"))
            subprocess.run(["dd", "if=/dev/urandom", "of=/dev/zram0", "bs=1M", "count=1024", "oflag=direct",
                            "status=none"], check=True)
            targets.append(("zram", "/dev/zram0"))
        shm = Path(tempfile.mkdtemp(prefix=f"osmeter-{tool}.", dir="/dev/shm"))  # private: no planted link
        made.append(lambda: shutil.rmtree(shm, ignore_errors=True))
        img = shm / "disk.img"
        subprocess.run(["truncate", "-s", SIZE, str(img)], check=True)
        loop = subprocess.run(["losetup", "--find", "--show", "--direct-io=on", str(img)], capture_output=True,
                              text=True, check=True).stdout.strip()
        made.append(lambda: subprocess.run(["losetup", "-d", loop]))
        subprocess.run(["dd", "if=/dev/urandom", f"of={loop}", "bs=1M", "count=1024", "oflag=direct",
                        "status=none"], check=True)
        targets.append(("RAM loop", loop))
        if not quick:
            fsfile = ROOT / "build" / f"{tool}.dat"
            fsfile.unlink(missing_ok=True)
            made.append(lambda: fsfile.unlink(missing_ok=True))
            subprocess.run([str(IOGEN), "--target", str(fsfile), "--size", SIZE, "--workload", "4k-random-read",
                            "--transactions", "1", "--ramp", "0"], check=True, capture_output=True)
            dev = subprocess.run(["df", "--output=source", str(ROOT / "build")], capture_output=True,
                                 text=True).stdout.split()[-1]
            targets.append((f"file on {dev}", str(fsfile)))
    except BaseException:
        for undo in reversed(made):
            undo()
        raise
    return targets, made
