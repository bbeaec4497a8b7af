"""The harness fuzzer's saved cases (tests/fuzz/regress/): each parser gives
its own error for them, never another exception. And the fuzzer itself, for
a few seconds."""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import ROOT

FUZZ = ROOT / "tests" / "fuzz"
sys.path.insert(0, str(FUZZ))
import fuzz_harness  # noqa: E402


@pytest.mark.parametrize("case", sorted((FUZZ / "regress").iterdir()), ids=lambda p: p.name)
def test_saved_cases_do_not_crash(case):
    target = case.name.split("-", 1)[0]
    with tempfile.TemporaryDirectory() as t:
        fuzz_harness.TARGETS[target](case.read_bytes(), Path(t))


def test_a_short_fuzz_run_finds_nothing():
    r = subprocess.run([sys.executable, str(FUZZ / "fuzz_harness.py"), "4", "7"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 crashes" in r.stdout
