"""Access specifications, the native spec format and the Iometer .icf import
(bench/iogen/spec/), through the C checks of tests/c/test_spec.c."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TEST_SPEC = ROOT / "build" / "test" / "test_spec"
REAL_ICF = ROOT / "tests" / "fixtures" / "real-icf"  # real Iometer files (README there says whence)


def run(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run([str(TEST_SPEC), *map(str, args)], cwd=ROOT, capture_output=True, text=True, timeout=60)


def assert_all_pass(r: subprocess.CompletedProcess) -> list[str]:
    lines = r.stdout.splitlines()
    fails = [line for line in lines if line.startswith("FAIL")]
    assert not fails, "\n".join(fails)
    assert r.returncode == 0, r.stdout + r.stderr
    assert lines and re.fullmatch(r"\d+ passed, 0 failed", lines[-1]), lines[-1:] or r.stderr
    return lines


def test_spec_checks():
    assert_all_pass(run())


def test_real_icf_files():
    files = sorted(REAL_ICF.glob("*.icf")) if REAL_ICF.is_dir() else []
    if not files:
        reason = f"no real Iometer .icf files: {REAL_ICF} is absent"
        print(reason)
        pytest.skip(reason)
    lines = assert_all_pass(run(*files))
    for f in files:  # each file was read, not just passed along
        assert any(line.startswith("PASS real icf") and f.name in line for line in lines), f.name


def test_json_is_json_and_formats_agree():
    r = run("--json", "tests/fixtures/full.icf")
    assert r.returncode == 0, r.stderr
    job = json.loads(r.stdout)
    assert (job["run_s"], job["ramp_s"], job["cycle_qd"], job["qd_start"], job["qd_end"], job["qd_step"],
            job["qd_exponential"]) == (90, 5, True, 1, 32, 2, True)
    assert [(w["name"], w["spec"], w["outstanding"]) for w in job["workers"]] == [
        ("Worker A", "OLTP 8K", 4), ("Worker B", "Mixed writes", 16)]
    assert job["workers"][0]["max_bytes"] == 2048 * 512 and job["workers"][0]["start_bytes"] == 8 * 512
    assert sum(line["access"] for line in job["specs"][1]["lines"]) == 100
    native = run("--json", "tests/fixtures/full.spec")
    assert native.returncode == 0, native.stderr
    assert json.loads(native.stdout) == job


def test_json_escapes():
    r = run("--json", "tests/fixtures/shipped.spec")
    assert r.returncode == 0, r.stderr
    job = json.loads(r.stdout)
    assert job["description"] == 'tab\there, "quotes", back\\slash # kept: a description runs to the end of the line'
    assert job["specs"][0]["name"] == "web-server" and len(job["specs"][0]["lines"]) == 10


def test_json_mode_reports_errors():
    r = run("--json", "tests/fixtures/bad-connrate.icf")
    assert r.returncode == 1 and r.stdout == ""
    assert "tests/fixtures/bad-connrate.icf:19: " in r.stderr and "test connection rate" in r.stderr


def test_the_documented_option_list_is_the_programs():
    doc = (ROOT / "docs" / "iogen.md").read_text()
    start = doc.index("<!-- options: build/bin/iogen --options-markdown -->\n") + len(
        "<!-- options: build/bin/iogen --options-markdown -->\n")
    end = doc.index("<!-- end options -->")
    r = subprocess.run([str(ROOT / "build" / "bin" / "iogen"), "--options-markdown"], capture_output=True, text=True)
    assert r.returncode == 0
    assert doc[start:end] == r.stdout, "docs/iogen.md: paste the output of build/bin/iogen --options-markdown"
    helptext = subprocess.run([str(ROOT / "build" / "bin" / "iogen"), "--help"], capture_output=True, text=True).stdout
    for line in r.stdout.splitlines():
        if line.startswith("| `--"):
            assert line.split("`")[1].split()[0] in helptext


IOGEN = ROOT / "build" / "bin" / "iogen"


def test_an_engines_options_live_in_its_engine(tmp_path):
    """io_uring's options are in engine_uring.c's own table: --help lists
    them under the uring engine (not among iogen's options), and given with
    another engine they are refused once, naming whose they are."""
    helptext = subprocess.run([str(IOGEN), "--help"], capture_output=True, text=True).stdout
    lines = helptext.splitlines()
    engines = lines.index(next(line for line in lines if line.startswith("Engines")))
    uring = next(i for i, line in enumerate(lines) if line.startswith("  uring "))
    aio = next(i for i, line in enumerate(lines) if line.startswith("  aio "))
    for name in ("--sqpoll", "--iopoll", "--register-ring", "--batch-complete", "--taskrun", "--async"):
        at = [i for i, line in enumerate(lines) if line.split()[:1] == [name]]
        assert len(at) == 1 and engines < uring < at[0] < aio, (name, at)
    target = tmp_path / "t.dat"
    for opts in (("--sqpoll", "0"), ("--iopoll", "--async", "on")):
        r = subprocess.run([str(IOGEN), "--engine", "psync", *opts, "--workload", "4k-random-read", "--target",
                            str(target)], capture_output=True, text=True, timeout=30)
        errors = [line for line in r.stderr.splitlines() if "error" in line]
        assert r.returncode == 2 and r.stdout == "" and len(errors) == 1, r.stderr
        assert "are io_uring's: not for --engine psync" in errors[0] and "--sqpoll" in errors[0], errors
    assert not target.exists()
    r = subprocess.run([str(IOGEN), "--engine", "nop", "--taskrun", "plain", "--workload", "4k-random-read",
                        "--dump-spec"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr  # nop shares uring's table
