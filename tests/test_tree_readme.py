"""The README's commands, proven: every shell block is read; each command
names a program, subcommand, make target and options that exist, and
those safe to run here are run (list, report, export, compare, single
probes, iotrace)."""
from __future__ import annotations

import csv
import json
import re
import shlex
import shutil
import subprocess
import time
import tomllib
from pathlib import Path

import pytest

from conftest import BIN, ROOT
from osmeter.report.latex import esc

BLOCK = re.compile(r"^```(?:sh|bash|shell)\n(.*?)^```", re.S | re.M)
PROMPT = re.compile(r"^\w+\$\s+")  # "remote$ " / "local$ " in the two-host example


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    cmds = []
    for block in BLOCK.findall(text):
        joined = re.sub(r"\\\n\s*", " ", block)  # continuation lines
        for line in joined.splitlines():
            line = PROMPT.sub("", line.strip())
            if line and not line.startswith("#"):
                cmds.append(line)
    return cmds


def words(cmd: str) -> list[str]:
    w = shlex.split(cmd, comments=True)
    while w and re.match(r"^[A-Z_]+=", w[0]):  # VAR=value before the program
        w = w[1:]
    if w[:3] == ["chrt", "-f", "50"]:
        w = w[3:]
    return w


COMMANDS = readme_commands()


def test_the_readme_starts_with_the_two_commands():
    assert COMMANDS[:2] == ["make run     # set up .venv, build, measure this machine (quick preset), write results/",
                            "make test    # build, then every test (what CI runs)"]


def _help(argv: list[str]) -> str:
    r = subprocess.run([*argv, "--help"], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 0, f"{' '.join(argv)} --help: {r.stderr}"
    return r.stdout


@pytest.mark.parametrize("cmd", COMMANDS)
def test_each_documented_command_and_option_exists(cmd):
    w = words(cmd)
    prog = w[0]
    opts = [x.split("=")[0] for x in w[1:] if x.startswith("--")]
    if prog == "make":
        for target in [x for x in w[1:] if "=" not in x]:  # VAR=value sets a variable
            assert re.search(rf"^{re.escape(target)}:", (ROOT / "Makefile").read_text(), re.M), f"make {target}"
        for var in [x.split("=")[0] for x in w[1:] if "=" in x]:
            assert re.search(rf"^{var}\s*[:?]?=", (ROOT / "Makefile").read_text(), re.M), f"make {var}="
    elif prog == "./osmeter":
        sub = w[1:3] if w[1] in ("fleet", "estimates") else w[1:2]  # these have subcommands of their own
        helptext = _help(["./osmeter", *sub])
        for o in opts:
            assert o in helptext, f"{cmd}: ./osmeter {sub} has no {o}"
    elif prog.startswith("build/bin/"):
        exe = ROOT / prog
        assert exe.is_file(), f"{cmd}: {prog} is not built"
        sub = [w[1]] if prog.endswith("iotrace") and len(w) > 1 and not w[1].startswith("-") else []
        helptext = _help([str(exe), *sub]) if not sub else subprocess.run(
            [str(exe), "--help"], capture_output=True, text=True).stdout + subprocess.run(
            [str(exe), sub[0], "--help"], capture_output=True, text=True).stdout
        for o in opts:
            if o != "--":
                assert o in helptext, f"{cmd}: {prog} has no {o}"
    elif prog.startswith("tools/"):
        helptext = _help([str(ROOT / prog)])
        for o in opts:
            assert o in helptext, f"{cmd}: {prog} has no {o}"
    else:  # cc, cp: the system's own
        assert prog in ("cc", "cp"), f"{cmd}: an unexpected program {prog}"


def _safe(cmd: str, run_dir: Path, tmp: Path) -> list[str] | None:
    """The command as it can run here, or None when it cannot (another
    host, a device, minutes of load, a machine setting). mine.toml is the
    file the README's `estimates init` writes, in the test's directory."""
    w = words(cmd)
    subst = {"results/<run>": str(run_dir), "mine.toml": str(tmp / "mine.toml"),
             "run.csv": str(tmp / "run.csv"), "dd.csv": str(tmp / "dd.csv"),
             **{f: str(tmp / f) for f in EXPORTS.values()}}
    w = [subst.get(x, x) for x in w]
    if w[:2] == ["./osmeter", "list"] or w[:2] == ["./osmeter", "export"]:
        return w
    if w[:2] == ["./osmeter", "report"] and str(run_dir) in w:
        return w
    if w[:3] == ["./osmeter", "estimates", "init"]:  # into the test's own directory: init never overwrites
        return w
    if w[:2] == ["./osmeter", "compare"] and all(not x.startswith("results/") and not re.match(r"r\d", x)
                                                 for x in w[2:]):
        return w
    if w[0] in ("build/bin/cpu_syscall", "build/bin/cpu_ctx", "build/bin/cpu_call"):
        return [str(ROOT / w[0]), *w[1:], "--samples", str(SAMPLES)]
    if w[0] == "build/bin/iotrace" and w[1] == "show":
        return [str(ROOT / w[0]), *w[1:]]
    return None


EXPORTS = {"benchstat": "a.txt", "pyperf": "side.json", "openmetrics": "osmeter.prom", "gab-smaller": "gab-smaller.json"}
SAMPLES = 5              # a hand-run probe's samples here (the last --samples given wins)
DD_SIZE, DD_BS = 300_000, 64 << 10   # the file iotrace's example copies, and dd's block size
HUMAN = re.compile(r"^(\S+) +median +([\d.]+) (cycles = +([\d.]+) ns|\S+) +\(n=(\d+), (\d+) disturbed\)$")


def _human(r, argv: list[str]) -> None:
    """--human: one line per id the probe's JSON names (run again without
    --human), each the median of the kept samples (n of them, the rest
    disturbed), cycles turned into ns at the probe's TSC rate."""
    json_run = subprocess.run([a for a in argv if a != "--human"], capture_output=True, text=True, timeout=120)
    assert json_run.returncode == 0, json_run.stderr
    lines = [json.loads(ln) for ln in json_run.stdout.splitlines()]
    got = [HUMAN.match(ln) for ln in r.stdout.splitlines()]
    assert all(got) and [g[1] for g in got] == [o["id"] for o in lines], r.stdout
    for g, o in zip(got, lines):
        assert int(g[5]) + int(g[6]) == SAMPLES, g[0]
        if g[4] is not None and int(g[5]) > 0:
            assert float(g[4]) == pytest.approx(float(g[2]) / o["tsc_hz"] * 1e9, rel=0.02, abs=0.02), (g[0], o["tsc_hz"])


def _check(cmd: str, argv: list[str], r, run_dir: Path, tmp: Path) -> None:
    """What the README says the command does, read from what it did."""
    doc = json.loads((run_dir / "results.json").read_text())
    ids = [m["id"] for m in doc["measurements"]]
    w = words(cmd)
    if w[:2] == ["build/bin/iotrace", "show"]:
        # dd of a planted 300,000-byte file in 64 KiB blocks: 5 reads with data and one at the end, 5 writes
        table = {ln.split()[-1]: ln.split()[1:-1] for ln in r.stdout.splitlines() if re.match(r"^f\d+\s", ln)}
        blocks = -(-DD_SIZE // DD_BS)
        assert table[str(tmp / "src.bin")] == ["1", str(blocks + 1), str(DD_SIZE), "0", "0"], r.stdout
        assert table[str(tmp / "dst.bin")] == ["1", "0", "0", str(blocks), str(DD_SIZE)], r.stdout
    elif w[:3] == ["./osmeter", "estimates", "init"]:
        est = tomllib.loads((tmp / "mine.toml").read_text())
        assert sorted(est) == sorted(ids)  # every id of the run, blank: nothing estimated before you look
        assert not any(k in v for v in est.values() for k in ("hw", "sw", "total"))
    elif w[:2] == ["./osmeter", "report"]:
        tex = run_dir / "report" / "report.tex"
        assert f"report: {tex}" in r.stdout and tex.stat().st_mtime >= r.started
        text = tex.read_text()
        assert all(f"{esc(i)} & " in text for i in ids if i in ("cpu.syscall.getppid", "mem.bw.read"))
        if shutil.which("pdflatex"):
            pdf = run_dir / "report" / "report.pdf"
            assert f"PDF: {pdf}" in r.stdout
            data = pdf.read_bytes()
            assert data.startswith(b"%PDF-") and data.rstrip().endswith(b"%%EOF")
    elif w[:2] == ["./osmeter", "export"] and "--format" in w:  # another tool's format (test_analysis_export)
        fmt = w[w.index("--format") + 1]
        text = (tmp / EXPORTS[fmt]).read_text()
        named = {"benchstat": re.findall(r"^Benchmark(\S+) ", text, re.M),
                 "pyperf": [b["metadata"]["name"] for b in json.loads(text)["benchmarks"]] if fmt == "pyperf" else [],
                 "openmetrics": re.findall(r"^# HELP \S+ .*\(osmeter id (\S+), in ", text, re.M),
                 "gab-smaller": [e["name"] for e in json.loads(text)] if fmt.startswith("gab") else []}[fmt]
        assert named and set(named) <= set(ids) and "cpu.syscall.getppid" in named, (fmt, named[:5])
    elif w[:2] == ["./osmeter", "export"]:
        rows = list(csv.DictReader((tmp / "run.csv").open()))
        assert [x["id"] for x in rows] == ids  # one row per id
        for x, m in zip(rows, doc["measurements"]):
            assert (x["median"] == "" and m.get("median") is None) or float(x["median"]) == m["median"], x["id"]
            assert x["unit"] == m["unit"]
    elif "--human" in w:
        _human(r, argv)
    elif w[0] == "build/bin/cpu_ctx":  # JSON lines, one per id
        lines = [json.loads(ln) for ln in r.stdout.splitlines()]
        assert len({o["id"] for o in lines}) == len(lines) >= 2
        assert all(o["id"].startswith("cpu.ctx.") and len(o["samples"]) == SAMPLES for o in lines)
    elif w[:2] == ["./osmeter", "list"]:
        assert set(ids) <= {ln.split()[0] for ln in r.stdout.splitlines() if ln.strip()}


def test_the_safe_commands_run(quick_run, tmp_path):
    ran = []
    src = tmp_path / "src.bin"
    src.write_bytes(b"x" * DD_SIZE)
    # iotrace's example needs its recording first
    r = subprocess.run([str(BIN / "iotrace"), "record", "--out", str(tmp_path / "dd.csv"), "--", "dd",
                        f"if={src}", f"of={tmp_path / 'dst.bin'}", f"bs={DD_BS // 1024}k"], capture_output=True,
                       text=True, cwd=tmp_path, timeout=60)
    assert r.returncode == 0, r.stderr
    for cmd in COMMANDS:
        argv = _safe(cmd, quick_run[0], tmp_path)
        if argv is None:
            continue
        started = time.time() - 1
        r = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=300)
        r.started = started
        assert r.returncode == 0, f"{cmd}\n{r.stdout[-500:]}\n{r.stderr[-2000:]}"
        _check(cmd, argv, r, quick_run[0], tmp_path)
        ran.append(cmd)
    assert len(ran) >= 6, ran
    assert any("report" in c for c in ran) and any("export" in c for c in ran)
    assert any("estimates init" in c for c in ran) and any("iotrace show" in c for c in ran)
