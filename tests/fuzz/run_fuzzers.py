"""`make fuzz`: every parser that reads a file a person hands osmeter, fuzzed
for a bounded time.

- The native spec and the .icf import (bench/iogen/spec) and the I/O trace
  reader (bench/iotrace/format), with AddressSanitizer and
  UndefinedBehaviorSanitizer: libFuzzer where clang has it, else
  tests/fuzz/driver.c under gcc.
- Mutants the workload parser accepted are then run by iogen for 0.2 s each
  on a small file: a run that does not end within 10 s is a hang (that is
  how the hangs of threads joined twice, of endless delays and of a count
  that outlived --time were found). A cycle of many runs is watched for its
  first five.
- The harness's own parsers (tests/fuzz/fuzz_harness.py).

Every crash or hang is saved under tests/fuzz/crashes/; move it to
tests/fuzz/regress/ once fixed, where a test replays it.

    python tests/fuzz/run_fuzzers.py [SECONDS]   (SECONDS in all, default 60)
"""
from __future__ import annotations

import hashlib
import os
import selectors
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BUILD = ROOT / "build" / "fuzz"
CRASHES = HERE / "crashes"
SAN = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-g", "-O1"]

TARGETS = {
    "spec": (["tests/fuzz/fuzz_spec.c", "bench/iogen/spec/spec.c", "bench/iogen/spec/spec_read.c",
              "bench/iogen/spec/spec_native.c", "bench/iogen/spec/spec_icf.c", "bench/common/json.c"],
             ["-Ibench/iogen/spec", "-Ibench/common"]),
    "trace": (["tests/fuzz/fuzz_trace.c", "bench/iotrace/format/trace.c"], ["-Ibench/iotrace/format"]),
}


def libfuzzer() -> bool:
    if not shutil.which("clang") or os.environ.get("OSM_FUZZ_DRIVER"):  # (the variable forces the plain driver)
        return False
    with tempfile.TemporaryDirectory() as t:
        src = Path(t) / "x.c"
        src.write_text("#include <stddef.h>\n#include <stdint.h>\n"
                       "int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return 0; }\n")
        return subprocess.run(["clang", "-fsanitize=fuzzer", str(src), "-o", str(Path(t) / "x")],
                              capture_output=True).returncode == 0


def build(name: str, use_libfuzzer: bool) -> Path:
    srcs, incs = TARGETS[name]
    out = BUILD / f"fuzz_{name}"
    BUILD.mkdir(parents=True, exist_ok=True)
    if use_libfuzzer:
        cmd = ["clang", "-fsanitize=fuzzer", *SAN, "-D_GNU_SOURCE", *incs, *srcs, "-o", str(out), "-lm"]
    else:
        cc = os.environ.get("CC", "cc")
        cmd = [cc, *SAN, "-D_GNU_SOURCE", *incs, *srcs, "tests/fuzz/driver.c", "-o", str(out), "-lm"]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"building {out.name} failed:\n{r.stderr}")
    return out


def seeds(name: str) -> list[Path]:
    return sorted((HERE / "seeds" / name).iterdir())


def fuzz(name: str, binary: Path, seconds: float, use_libfuzzer: bool, corpus: Path) -> tuple[int, list[Path]]:
    """(inputs run, crash files); the corpus keeps what libFuzzer found new."""
    CRASHES.mkdir(exist_ok=True)
    before = set(CRASHES.iterdir())
    env = dict(os.environ, ASAN_OPTIONS="abort_on_error=1:detect_leaks=0", UBSAN_OPTIONS="halt_on_error=1")
    if use_libfuzzer:
        for s in seeds(name):
            shutil.copy(s, corpus / s.name)
        r = subprocess.run([str(binary), str(corpus), f"-max_total_time={int(max(1, seconds))}", "-timeout=5",
                            "-rss_limit_mb=1024", f"-artifact_prefix={CRASHES}/{name}-", "-print_final_stats=1"],
                           capture_output=True, text=True, env=env)
        runs = next((int(line.rsplit(":", 1)[1]) for line in r.stderr.splitlines()
                     if line.startswith("stat::number_of_executed_units")), 0)
    else:
        r = subprocess.run([str(binary), str(seconds), str(CRASHES), *map(str, seeds(name))], capture_output=True,
                           text=True, env=env)
        runs = int(r.stdout.split()[1]) if r.stdout.startswith("driver:") else 0
    crashes = sorted(set(CRASHES.iterdir()) - before)
    if r.returncode != 0 and not crashes:
        print(r.stderr[-3000:], file=sys.stderr)
        crashes = [CRASHES / f"{name}-unexplained-failure"]
    return runs, crashes


def runs_end(argv: list[str], per_run: float = 10.0, most: int = 5) -> bool:
    """Does each run of the workload end in time? iogen prints one line per
    run (a queue-depth or worker cycle is many runs of 0.2 s each): every
    next line must come within per_run seconds. After `most` runs the rest
    of a long cycle is not waited for."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        sel = selectors.DefaultSelector()
        sel.register(p.stdout, selectors.EVENT_READ)
        buf, lines = b"", 0
        deadline = time.monotonic() + per_run
        while lines < most:
            if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
                return False  # no run ended within per_run seconds
            chunk = os.read(p.stdout.fileno(), 65536)
            if not chunk:
                return p.wait(timeout=per_run) is not None
            buf += chunk
            if b"\n" in buf:
                lines += buf.count(b"\n")
                buf = buf.rsplit(b"\n", 1)[1]
                deadline = time.monotonic() + per_run
        return True
    except subprocess.TimeoutExpired:
        return False
    finally:
        p.kill()
        p.wait()


def run_mutants(corpus: Path, seconds: float) -> tuple[int, list[Path]]:
    """Each workload the parser accepts, run by iogen for 0.2 s: it must end."""
    iogen = ROOT / "build" / "bin" / "iogen"
    ran, hangs = 0, []
    deadline = time.monotonic() + seconds
    with tempfile.TemporaryDirectory(dir="/var/tmp") as t:
        target = Path(t) / "target.dat"
        r = subprocess.run([str(iogen), "--target", str(target), "--size", "8M", "--workload", "4k-random-read",
                            "--time", "0.01", "--ramp", "0"], capture_output=True)
        if r.returncode != 0:
            return 0, []
        for f in sorted(corpus.iterdir(), key=lambda p: p.stat().st_size):
            if time.monotonic() > deadline:
                break
            kind = "--icf" if f.read_bytes()[:7] == b"Version" else "--spec"
            if subprocess.run([str(iogen), kind, str(f), "--dump-spec"], capture_output=True,
                              timeout=5).returncode != 0:
                continue  # refused: the parser's part, fuzzed above
            ran += 1
            if not runs_end([str(iogen), "--target", str(target), kind, str(f), "--time", "0.2", "--ramp", "0",
                             "--size", "8M"]):
                CRASHES.mkdir(exist_ok=True)
                out = CRASHES / f"hang-{hashlib.sha1(f.read_bytes()).hexdigest()[:12]}{f.suffix}"
                shutil.copy(f, out)
                hangs.append(out)
                subprocess.run(["pkill", "-9", "-f", str(target)], capture_output=True)
    return ran, hangs


def main() -> int:
    total = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    use = libfuzzer()
    print(f"fuzz: {'libFuzzer (clang)' if use else 'tests/fuzz/driver.c'} with ASan and UBSan, {total:g} s in all")
    share = {"spec": 0.35, "trace": 0.2, "mutants": 0.25, "harness": 0.2}
    bad = []
    with tempfile.TemporaryDirectory() as t:
        corpus = {name: Path(t) / name for name in TARGETS}
        for name in TARGETS:
            corpus[name].mkdir()
            binary = build(name, use)
            runs, crashes = fuzz(name, binary, total * share[name], use, corpus[name])
            print(f"fuzz {name}: {runs} inputs, {len(crashes)} crashes")
            bad += crashes
        if not use:  # the driver keeps no corpus: run the seeds' own variants
            for s in seeds("spec"):
                shutil.copy(s, corpus["spec"] / s.name)
        ran, hangs = run_mutants(corpus["spec"], total * share["mutants"])
        print(f"fuzz spec runs: {ran} accepted workloads run for 0.2 s, {len(hangs)} did not end")
        bad += hangs
    r = subprocess.run([sys.executable, str(HERE / "fuzz_harness.py"), str(total * share["harness"])],
                       capture_output=True, text=True)
    print(r.stdout.strip())
    if r.returncode != 0:
        bad.append(Path("harness"))
        print(r.stderr[-3000:], file=sys.stderr)
    for b in bad:
        print(f"fuzz: FOUND {b}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
