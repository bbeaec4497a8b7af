"""The README's commands, proven: every shell block is read; each command
names a program, subcommand, make target and options that exist, and
those safe to run here are run (list, report, export, compare, single
probes, iotrace)."""
from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from conftest import BIN, ROOT

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
    host, a device, minutes of load, a machine setting)."""
    w = words(cmd)
    subst = {"results/<run>": str(run_dir), "mine.toml": str(ROOT / "estimates" / "example.toml"),
             "run.csv": str(tmp / "run.csv"), "dd.csv": str(tmp / "dd.csv")}
    w = [subst.get(x, x) for x in w]
    if w[:2] == ["./osmeter", "list"] or w[:2] == ["./osmeter", "export"]:
        return w
    if w[:2] == ["./osmeter", "report"] and str(run_dir) in w:
        return w
    if w[:3] == ["./osmeter", "estimates", "init"]:  # into the test's own directory: init never overwrites
        return [x if x != str(ROOT / "estimates" / "example.toml") else str(tmp / "mine.toml") for x in w]
    if w[:2] == ["./osmeter", "compare"] and all(not x.startswith("results/") and not re.match(r"r\d", x)
                                                 for x in w[2:]):
        return w
    if w[0] in ("build/bin/cpu_syscall", "build/bin/cpu_ctx", "build/bin/cpu_call"):
        return [str(ROOT / w[0]), *w[1:], "--samples", "5"]
    if w[0] == "build/bin/iotrace" and w[1] == "show":
        return [str(ROOT / w[0]), *w[1:]]
    return None


def test_the_safe_commands_run(quick_run, tmp_path):
    ran = []
    src = tmp_path / "src.bin"
    src.write_bytes(b"x" * 300_000)
    # iotrace's example needs its recording first
    r = subprocess.run([str(BIN / "iotrace"), "record", "--out", str(tmp_path / "dd.csv"), "--", "dd",
                        f"if={src}", f"of={tmp_path / 'dst.bin'}", "bs=64k"], capture_output=True, text=True,
                       cwd=tmp_path, timeout=60)
    assert r.returncode == 0, r.stderr
    for cmd in COMMANDS:
        argv = _safe(cmd, quick_run[0], tmp_path)
        if argv is None:
            continue
        r = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=300)
        assert r.returncode == 0, f"{cmd}\n{r.stdout[-500:]}\n{r.stderr[-2000:]}"
        ran.append(cmd)
    assert len(ran) >= 6, ran
    assert any("report" in c for c in ran) and any("export" in c for c in ran)
