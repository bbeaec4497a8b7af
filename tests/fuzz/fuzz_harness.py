"""A plain mutation fuzzer for the harness's parsers: the estimates TOML and
the results loader (with what reads a loaded document: the summary, the
CSV, the estimate rows, and what compare and stability read of each
measurement: its processes and its samples' path). Anything but the parser's own error (a message for
the user) is a crash: the input is saved under tests/fuzz/crashes/ and the
run fails. Replayed by tests/test_tree_fuzz_regress.py from tests/fuzz/regress/.

    python tests/fuzz/fuzz_harness.py [SECONDS] [SEED]
"""
from __future__ import annotations

import hashlib
import random
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "harness"))

from osmeter.report.estimates import EstimateError, load as load_estimates  # noqa: E402
from osmeter.present.rows import estimate_rows, summary_table, to_csv  # noqa: E402
from osmeter.results.store import Run, load as load_results  # noqa: E402


def run_estimates(data: bytes, tmp: Path) -> None:
    p = tmp / "e.toml"
    p.write_bytes(data)
    try:
        load_estimates(p)
    except EstimateError:
        pass


def run_results(data: bytes, tmp: Path) -> None:
    d = tmp / "run"
    d.mkdir(exist_ok=True)
    (d / "results.json").write_bytes(data)
    try:
        doc = load_results(d)
    except ValueError:
        return
    summary_table(doc)
    to_csv(doc)
    estimate_rows(doc["measurements"], {})
    run = Run(d, doc)  # what compare and stability read of each measurement: its processes, its samples' path
    for m in run.measurements.values():
        run.shared_processes(m)
        run.process_widths(m)
        try:
            run.by_process(m)
        except ValueError:
            pass


TARGETS = {"estimates": run_estimates, "results": run_results}


def mutate(rng: random.Random, data: bytes, pool: list[bytes]) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        op = rng.randrange(7)
        pos = rng.randrange(len(b) + 1)
        if op == 0 and b:  # flip a bit
            b[min(pos, len(b) - 1)] ^= 1 << rng.randrange(8)
        elif op == 1:  # insert an interesting byte or token
            tok = rng.choice([b"\0", b"\xff", b'"', b"\\", b"\n", b"[", b"]", b"{", b"}", b"=", b",", b"-1",
                              b"1e999", b"nan", b"inf", b"null", b"true", b"0", b"99999999999999999999",
                              b'"\xc3\x28"', b"[[", b"#"])
            b[pos:pos] = tok
        elif op == 2 and b:  # delete a span
            del b[pos:pos + rng.randint(1, 16)]
        elif op == 3 and b:  # duplicate a span
            end = min(len(b), pos + rng.randint(1, 64))
            b[pos:pos] = b[pos:end]
        elif op == 4 and pool:  # splice from another seed
            other = rng.choice(pool)
            if other:
                a = rng.randrange(len(other))
                b[pos:pos] = other[a:a + rng.randint(1, 128)]
        elif op == 5 and b:  # replace a byte
            b[min(pos, len(b) - 1)] = rng.randrange(256)
        elif op == 6:  # truncate
            del b[pos:]
    return bytes(b)


def fuzz(target: str, seconds: float, seed: int) -> tuple[int, list[Path]]:
    fn = TARGETS[target]
    seeds = [p.read_bytes() for p in sorted((HERE / "seeds" / target).iterdir())]
    rng = random.Random(seed)
    crashes, n = [], 0
    deadline = time.monotonic() + seconds
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        while time.monotonic() < deadline:
            data = mutate(rng, rng.choice(seeds), seeds)
            n += 1
            try:
                fn(data, tmp)
            except Exception as e:  # noqa: BLE001  (the point: anything else is a bug)
                name = f"{target}-{hashlib.sha1(data).hexdigest()[:12]}"
                out = HERE / "crashes" / name
                out.parent.mkdir(exist_ok=True)
                out.write_bytes(data)
                crashes.append(out)
                print(f"crash: {type(e).__name__}: {e} -> {out}", file=sys.stderr)
    return n, crashes


def main() -> int:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else int(time.time())
    bad = 0
    for target in TARGETS:
        n, crashes = fuzz(target, seconds / len(TARGETS), seed)
        print(f"fuzz {target}: {n} inputs, {len(crashes)} crashes (seed {seed})")
        bad += len(crashes)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
