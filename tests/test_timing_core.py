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
    for name in ("tsc rate", "migration flagged", "sleep flagged", "sleep allowed", "clock fallback", "pin here",
                 "pin here given"):
        assert f"PASS {name}" in r.stdout or (name == "migration flagged" and "SKIP migration" in r.stdout)
