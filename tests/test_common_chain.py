"""The memory probes' pointer chains (bench/common/mem.c) through the C
checks of tests/c/test_chain.c: each order is one cycle through every
element; lmbench's -t order (pagewise) puts every load on another page, in
one random page order that repeats each pass."""
import subprocess

from conftest import ROOT


def test_chain_orders():
    r = subprocess.run([str(ROOT / "build" / "test" / "test_chain")], capture_output=True, text=True, timeout=60)
    print(r.stdout)
    assert r.returncode == 0, r.stdout + r.stderr
    for name in ("random", "sequential", "pagewise", "pagewise other page", "pagewise page order",
                 "pagewise random pages", "pagewise part pages"):
        assert f"PASS {name}:" in r.stdout, name
