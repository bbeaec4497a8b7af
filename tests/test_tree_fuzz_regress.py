"""The fuzzers' saved cases (tests/fuzz/regress/, named by what they feed):
each parser answers them with its own error or a job, never a crash or a
hang; and the harness's fuzzer itself, for a few seconds."""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import BIN, ROOT

FUZZ = ROOT / "tests" / "fuzz"
sys.path.insert(0, str(FUZZ))
import fuzz_harness  # noqa: E402

CASES = sorted((FUZZ / "regress").iterdir())


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_saved_cases_do_not_crash(case, tmp_path):
    kind = case.name.split("-", 1)[0]
    if kind in fuzz_harness.TARGETS:
        with tempfile.TemporaryDirectory() as t:
            fuzz_harness.TARGETS[kind](case.read_bytes(), Path(t))
        return
    if kind in ("spec", "icf"):
        r = subprocess.run([str(BIN / "iogen"), f"--{kind}", str(case), "--dump-spec"], capture_output=True,
                           text=True, timeout=10)
        assert r.returncode in (0, 2) and "Traceback" not in r.stderr, r.stderr
        assert r.returncode == 0 or "error:" in r.stderr
    elif kind == "trace":
        r = subprocess.run([str(BIN / "iotrace"), "show", str(case)], capture_output=True, text=True, timeout=10)
        assert r.returncode in (0, 2), r.stderr
    elif kind == "hang":  # a workload that once never ended: it must end on time
        flag = "--icf" if case.suffix == ".icf" else "--spec"
        r = subprocess.run([str(BIN / "iogen"), "--target", str(tmp_path / "t.dat"), "--size", "8M", flag,
                            str(case), "--time", "0.5", "--ramp", "0"], capture_output=True, text=True, timeout=15)
        assert r.returncode == 0, r.stderr
    else:
        pytest.fail(f"{case.name}: name a saved case after its parser (estimates-, results-, spec-, icf-, trace-, "
                    "hang-)")


def test_a_short_fuzz_run_finds_nothing():
    r = subprocess.run([sys.executable, str(FUZZ / "fuzz_harness.py"), "4", "7"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 crashes" in r.stdout
