"""The C timing core against ground truth (tests/c/test_timing.c)."""
from conftest import ROOT
import subprocess


def test_timing_core_checks():
    r = subprocess.run([str(ROOT / "build" / "test" / "test_timing")], capture_output=True, text=True, timeout=60)
    print(r.stdout)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "FAIL" not in r.stdout
    # rate within 0.5% of CLOCK_MONOTONIC_RAW, migrations and sleeps flagged
    # osm_pin_here pins to the CPU it runs on unless --cpu chose one
    # the timer's step is the spacing of the differences: fractional (24.5, 10.015 with far late reads), a
    # 26-tick step read mostly at 52, one cluster (its difference), a continuum (1), rare reads off the grid
    for name in ("tsc rate", "migration flagged", "sleep flagged", "sleep allowed", "clock fallback", "pin here",
                 "pin here given", "step of a 26-tick timer", "step of a 24.5-tick timer",
                 "step of a 10.015-tick timer", "step of a 26-tick timer read at 52", "step of a timer always read at 52", "step of a 1-tick timer",
                 "step of a 1-tick timer, narrow", "step with off-grid reads", "windows of 100 steps"):
        assert f"PASS {name}" in r.stdout or (name == "migration flagged" and "SKIP migration" in r.stdout)
