"""The command line: list, run's errors, failures, interruption."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import BIN, ROOT, osmeter
from osmeter.probes import registry


def test_list_shows_every_id_with_unit():
    r = osmeter("list")
    assert r.returncode == 0
    for _, m in registry.all_measures():
        assert any(line.split()[:2] == [m.id, m.unit] for line in r.stdout.splitlines()), m.id


def test_the_command_line_is_built_without_matplotlib():
    """Every command's options, compare's --plot among them, are built
    without importing matplotlib: pyplot cost 1.2 s of each osmeter start
    (history changes 1.4 s -> 0.7 s on a history of 10,000 runs x 15 ids,
    Xeon guest). A command that draws imports it when it draws. Mutant
    caught: plot.py importing pyplot at its top again."""
    code = ("import sys; from osmeter.cli import build_parser; build_parser(); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib')[:3])")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT / "harness")})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]", r.stdout


def test_list_methodology_states_this_machines_timer_step_measured_now(tmp_path):
    """`list --methodology` opens with the timer and its step, in ns and in
    ticks, as the built timer probe measures them now; where the probes are
    not built it says so, and the list follows either way."""
    r = osmeter("list", "--methodology")
    assert r.returncode == 0, r.stderr
    first = r.stdout.splitlines()[0]
    m = re.fullmatch(r"timer: (\S+), step ([\d.e+-]+) ns = ([\d.e+-]+) ticks of ([\d.e+-]+) GHz "
                     r"\(measured now by cpu_timer; .*\)", first)
    assert m, first
    kind, ns, ticks, ghz = m[1], float(m[2]), float(m[3]), float(m[4])
    probe = json.loads(subprocess.run([str(BIN / "cpu_timer"), "--samples", "1", "--iterations", "1"],
                                      capture_output=True, text=True, timeout=60).stdout.splitlines()[0])
    t = probe["timer"]
    assert kind == t["kind"]
    assert ticks >= 1 and ticks == pytest.approx(t["step_ticks"], rel=0.02)  # fractional where the timer is
    assert ns == pytest.approx(ticks / ghz, rel=0.01) and ns == pytest.approx(t["resolution_ns"], rel=0.02)
    assert ghz * 1e9 == pytest.approx(probe["tsc_hz"], rel=0.01)
    assert any(ln.split()[:1] == ["cpu.timer_overhead"] for ln in r.stdout.splitlines())

    env = dict(os.environ, OSMETER_ROOT=str(tmp_path), PYTHONPATH=str(ROOT / "harness"))
    r = subprocess.run([sys.executable, "-m", "osmeter", "list", "--methodology"], capture_output=True, text=True,
                       env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == (f"timer: not measured: the probes are not built "
                                        f"({tmp_path / 'build' / 'bin' / 'cpu_timer'} is missing; `make` builds them)")
    assert any(ln.split()[:1] == ["cpu.timer_overhead"] for ln in r.stdout.splitlines())
    assert not osmeter("list").stdout.startswith("timer:")  # the plain list runs nothing


@pytest.mark.parametrize(
    "args, words",
    [
        (("run", "--probes", "cpu.nosuch"), "no measurement id matches 'cpu.nosuch'"),
        (("run", "--probes", ","), "expected ids"),
        (("run", "--preset", "bogus"), "invalid choice"),
        (("run", "--cpu", "4096"), "--cpu 4096"),
        (("run", "--cpu", "x"), "expected a CPU number"),
        (("frobnicate",), "invalid choice"),
        ((), "required"),
    ],
)
def test_bad_requests_fail_clearly(args, words, tmp_path):
    r = osmeter(*args, "--out", str(tmp_path / "o")) if args and args[0] == "run" else osmeter(*args)
    assert r.returncode == 2
    assert words in r.stderr
    assert not (tmp_path / "o" / "results.json").exists()


def test_selection_by_pattern_and_no_overwrite(tmp_path):
    out = tmp_path / "sel"
    r = osmeter("run", "--probes", "cpu.syscall.*,cpu.call.args3", "--out", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads((out / "results.json").read_text())
    assert sorted(m["id"] for m in doc["measurements"]) == [
        "cpu.call.args3", "cpu.syscall.getcwd", "cpu.syscall.getppid", "cpu.syscall.getppid.libc",
        "cpu.syscall.gettid", "cpu.syscall.null_io", "cpu.syscall.read", "cpu.syscall.write"]
    # the report and the notebook go to the directory the run returned
    assert (out / "report" / "report.tex").is_file() and (out / "notebook.ipynb").is_file(), r.stdout + r.stderr
    before = (out / "results.json").read_bytes()
    r = osmeter("run", "--probes", "cpu.loop", "--out", str(out))
    assert r.returncode == 2 and "already holds" in r.stderr
    assert (out / "results.json").read_bytes() == before


# --- the run options: one table (runopts.OPTIONS), every command that takes one ----------

# each option's text on a command line, and the value a run gets from it
SAMPLES = {
    "--preset": ("full", "full"),
    "--probes": ("cpu.*, mem.lat", ["cpu.*", "mem.lat"]),
    "--cpu": ("1", 1),
    "--no-rt": (None, False),
    "--timer": ("clock", "clock"),
    "--disk-target": ("/dev/null", Path("/dev/null")),
    "--disk-size": ("64M", "64M"),
    "--allow-destroy-data": (None, True),
    "--peer": ("h:1", "h:1"),
    "--remote": ("u@h", "u@h"),
    "--remote-cpu": ("2", 2),
    "--fs-dir": ("/tmp", Path("/tmp")),
    "--fs-remote": ("/mnt", Path("/mnt")),
    "--app-trace": ("/t.trace", Path("/t.trace")),
    "--app-launcher": ("mpirun -np 2", "mpirun -np 2"),
    "--app-dir": ("/tmp", Path("/tmp")),
    "--app-timeout": ("90", 90),
    "--no-history": (None, False),
    "--kernel-paths": (None, True),
    "--out": ("/tmp/o", Path("/tmp/o")),
    "--runs": ("3", 3),
    "--seed": ("42", 42),
    "--on": ("u@h", "u@h"),
    "--on-tree": ("/t", "/t"),
    "--isolate": (None, True),
    "--no-halt": (None, True),
    "--disk-ram": (None, True),
    "--fs-scratch": (None, True),
}
COMMANDS = {"run": ["run"], "ab": ["ab", "--a", "true", "--b", "true"], "fleet": ["fleet", "run", "--hosts", "local"]}


def _parsed(argv: list[str]):
    from osmeter import cli

    return cli.build_parser().parse_args(argv)


def _value(args, o):
    """What a run gets of option `o`: its RunOptions field, or the argument the command hands on."""
    from osmeter.running import runopts

    return getattr(runopts.from_args(args), o.name) if o.is_field else getattr(args, o.name)


def test_every_run_option_reaches_each_command_the_table_names_and_the_record(capsys):
    """Each run option given to run, ab or fleet run reaches the run and
    nothing else of it; campaign.json records it unless the table says not;
    fleet run's command line for its hosts carries exactly the ones it
    passes on; a command the table does not name refuses it."""
    from dataclasses import fields

    from osmeter.running import runopts

    table = {o.flag: o for o in runopts.OPTIONS}
    assert set(SAMPLES) == set(table), "every option in the table has a sample here, and only those"
    assert {f.name for f in fields(runopts.RunOptions)} == (
        {o.name for o in runopts.OPTIONS if o.is_field} | {n for n, _ in runopts.NOT_OPTIONS})
    defaults = {cmd: _parsed(head) for cmd, head in COMMANDS.items()}
    for flag, (text, value) in SAMPLES.items():
        o = table[flag]
        given = [flag] + ([text] if text is not None else [])
        for cmd, head in COMMANDS.items():
            try:
                args = _parsed(head + given)
            except SystemExit as e:
                assert e.code == 2 and cmd not in o.commands, (cmd, flag)
                continue
            if cmd not in o.commands:  # fleet run's own --out: its fleet directory, passed on to no host
                assert cmd == "fleet" and flag not in runopts.run_args(runopts.fleet_values(args)), (cmd, flag)
                continue
            assert _value(args, o) == value and _value(defaults[cmd], o) != value, (cmd, flag)
            for other in runopts.OPTIONS:  # the rest as if not given
                if other is not o and cmd in other.commands:
                    assert _value(args, other) == _value(defaults[cmd], other), (cmd, flag, other.flag)
            record = runopts.options_doc(runopts.from_args(args))
            assert (o.name in record) == (o.is_field and o.recorded), (cmd, flag)
            if o.name in record:
                assert record[o.name] == (str(value) if isinstance(value, Path) else value), (cmd, flag)
            if cmd == "fleet":  # every host's `osmeter run` gets it
                there = _parsed(["run", *runopts.run_args(runopts.fleet_values(args))])
                assert _value(there, o) == value, flag
                assert all(_value(there, x) == _value(defaults["run"], x) for x in runopts.OPTIONS
                           if x is not o and "run" in x.commands), flag
    capsys.readouterr()


# --- the runner against fake probes, whose behaviour we control ----------

FAKE = {
    "good": """#!/bin/sh
echo '{"id": "fake.good", "unit": "ns", "tsc_hz": 1e9, "params": {}, "overhead_subtracted": 0, "samples": [1, 2, 3], "disturbed": []}'
""",
    "garbage": "#!/bin/sh\necho 'hello'\n",
    "crash": "#!/bin/sh\necho 'cannot do this' >&2\nexit 3\n",
    "silent": "#!/bin/sh\nexit 0\n",
    "slow": "#!/bin/sh\nexec sleep 60\n",
    # a child of the probe: it has no PR_SET_PDEATHSIG of its own, so only
    # the kill of the probe's process group ends it
    "slowchild": "#!/bin/sh\nsleep 60 &\necho $! > \"$0.child\"\nwait\n",
}

DRIVER = textwrap.dedent("""
    import sys
    from pathlib import Path
    sys.path.insert(0, {harness!r})
    from osmeter import cli
    from osmeter.probes import registry
    from osmeter.running import runner
    from osmeter.running.runopts import RunOptions
    order = {order!r}
    timeouts = {timeouts!r}
    probes = tuple(
        registry.Probe(name="fake." + n, binary=n, area="fake",
                       measures=(registry.Measure("fake." + n, "ns", n),),
                       methodology="", presets={{"quick": ()}}, timeout=timeouts.get(n, 30))
        for n in order)
    opts = RunOptions(out=Path({out!r}), rt=False, probes=probes, derived=(), bin_dir=Path({bindir!r}))
    if {runs!r}:
        from osmeter.running.campaign import run_campaign
        sys.exit(cli.guarded(lambda: run_campaign(opts, {runs!r}, 7).status))
    sys.exit(cli.guarded(lambda: runner.run(opts).status))
""")


def fake_run(tmp_path: Path, order: list[str], timeouts: dict | None = None, runs: int = 0) -> subprocess.Popen:
    """The runner (or a campaign of `runs` runs) over fake probes, in a child
    process we can signal. The sentinels are the real ones."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    for name, text in FAKE.items():
        (bindir / name).write_text(text)
        (bindir / name).chmod(0o755)
    for real in ("cpu_syscall", "cpu_call"):
        if not (bindir / real).exists():
            (bindir / real).symlink_to(ROOT / "build" / "bin" / real)
    code = DRIVER.format(harness=str(ROOT / "harness"), order=order, timeouts=timeouts or {},
                         bindir=str(bindir), out=str(tmp_path / "out"), runs=runs)
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def test_failing_probes_are_recorded_and_the_run_goes_on(tmp_path):
    p = fake_run(tmp_path, ["slow", "garbage", "crash", "silent", "good"], {"slow": 1})
    out, err = p.communicate(timeout=60)
    assert p.returncode == 1
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    assert [m["id"] for m in doc["measurements"]] == ["fake.good"]
    why = {f["probe"]: f["error"] for f in doc["failures"]}
    assert "timed out" in why["fake.slow"]
    assert "bad output" in why["fake.garbage"]
    assert "status 3" in why["fake.crash"]
    assert "did not print fake.silent" in why["fake.silent"]
    assert doc["complete"] is True
    crash = next(f for f in doc["failures"] if f["probe"] == "fake.crash")
    assert "cannot do this" in crash["stderr_tail"]


def _proc_start(pid: int) -> str | None:
    """The process's start time (field 22 of its stat), or None when it is
    gone or a zombie: with its pid, it names one process."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] in "ZX" else fields[19]


def test_sigint_keeps_the_finished_probes(tmp_path):
    """SIGINT while the second probe runs: the first one's results stay, the
    run says it was interrupted, and the probe's whole process group is
    killed: a child the probe started, which PR_SET_PDEATHSIG does not
    reach, is gone too. Mutant caught: Launcher.kill doing nothing."""
    p = fake_run(tmp_path, ["good", "slowchild"])
    results = tmp_path / "out" / "results.json"
    child = tmp_path / "bin" / "slowchild.child"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (child.is_file() and child.read_text().strip()):
        time.sleep(0.05)
    pid = int(child.read_text())  # the slow probe is running now, and its child
    start = _proc_start(pid)
    assert start is not None
    os.kill(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=30)
    # (failed once in ~6 full-suite runs, never alone: say what the run recorded)
    assert p.returncode == 130, err + "\n" + results.read_text()[-3000:]
    doc = json.loads(results.read_text())
    assert doc["interrupted"] is True and doc["complete"] is False
    assert [m["id"] for m in doc["measurements"]] == ["fake.good"]
    assert (tmp_path / "out" / doc["measurements"][0]["samples_file"]).exists()
    assert "interrupted" in out
    # the probe's process group was killed, its child with it (a zombie until it is reaped counts as gone)
    deadline = time.monotonic() + 5
    while _proc_start(pid) == start and time.monotonic() < deadline:
        time.sleep(0.05)
    survivor = _proc_start(pid) == start
    if survivor:
        os.kill(pid, signal.SIGKILL)
    assert not survivor, "the probe's child outlived the interrupted run"


def test_real_run_interrupted_by_sigterm_stays_valid(tmp_path):
    out = tmp_path / "real"
    p = subprocess.Popen([str(ROOT / "osmeter"), "run", "--preset", "full", "--out", str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and p.poll() is None:
        try:
            if json.loads((out / "results.json").read_text())["measurements"]:
                break
        except (OSError, ValueError):
            pass
        time.sleep(0.02)
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=60)
    doc = json.loads((out / "results.json").read_text())
    assert doc["measurements"], "the first probe finished before the signal"
    if p.returncode == 143:  # 128 + SIGTERM, the convention
        assert doc["interrupted"] is True
    else:  # the run was quicker than the signal
        assert p.returncode == 0 and doc["complete"] is True


def test_a_probe_runs_in_several_interleaved_processes(tmp_path):
    """The quick preset runs each probe that takes --samples in 3 processes,
    its samples shared among them, in passes over the selection; the
    measurement keeps each sample's process, the run records what else used
    the CPU, and says what ended the sampling."""
    out = tmp_path / "r"
    r = osmeter("run", "--probes", "cpu.syscall,cpu.loop", "--out", str(out), "--no-report")
    assert r.returncode == 0, r.stderr
    doc = json.loads((out / "results.json").read_text())
    m = next(x for x in doc["measurements"] if x["id"] == "cpu.syscall.getppid")
    assert m["processes"]["n"] >= 3 and len(m["processes"]["medians"]) == m["processes"]["n"]
    z = np.load(out / m["samples_file"])
    assert set(z["process"].tolist()) == set(range(m["processes"]["n"]))
    assert (z["process"] == 0).sum() == 34  # 100 samples shared by 3 processes
    assert m["precision"]["ended_by"] in ("precision", "time budget", "process limit")
    assert m["precision"]["processes"] == m["processes"]["n"]
    # interleaved: the two probes' processes alternate in the raw outputs' order of writing
    raw = sorted((out / "raw").glob("*.out"), key=lambda f: f.stat().st_mtime_ns)
    names = [f.name.rsplit(".p", 1)[0] for f in raw]
    assert names[:4] == ["cpu.loop", "cpu.syscall", "cpu.loop", "cpu.syscall"] or \
        names[:4] == ["cpu.syscall", "cpu.loop", "cpu.syscall", "cpu.loop"], names
    inter = doc["interference"]
    assert inter["cpu"] == doc["conditions"]["pinned_cpu"]
    assert inter["probes"]["cpu.syscall"]["wall_s"] > 0 and "interrupts" in inter["probes"]["cpu.syscall"]
    assert 0 <= inter["noise_start"]["lost_share"] < 1 and inter["noise_end"]["interruptions_per_s"] >= 0
    # each process's core clock at its start and its end, one pair per process
    clocks = inter["core_mhz"]["cpu.syscall"]
    assert len(clocks) == m["processes"]["n"] and all(len(c) == 2 and min(c) > 100 for c in clocks), clocks
    # and its width (adds per cycle of independent chains), likewise
    widths = inter["core_width"]["cpu.syscall"]
    assert len(widths) == len(clocks) and all(len(w) == 2 and 1 < min(w) < 9 for w in widths), widths


def test_results_of_one_kind_never_land_in_another(tmp_path):
    """A run into a campaign, a campaign into a run, an ab into either: each
    refused before anything runs, and nothing there is touched."""
    run = tmp_path / "run"
    camp = tmp_path / "camp"
    run.mkdir()
    camp.mkdir()
    (run / "results.json").write_text("{}")
    (camp / "campaign.json").write_text("{}")
    for args in (("run", "--probes", "cpu.syscall", "--out", str(camp)),
                 ("run", "--runs", "2", "--probes", "cpu.syscall", "--out", str(run)),
                 ("ab", "--a", "true", "--b", "true", "--rounds", "1", "--probes", "cpu.syscall", "--out", str(run)),
                 ("ab", "--a", "true", "--b", "true", "--rounds", "1", "--probes", "cpu.syscall", "--out", str(camp))):
        r = osmeter(*args)
        assert r.returncode == 2 and "already holds" in r.stderr, (args, r.stderr)
    assert sorted(p.name for p in run.iterdir()) == ["results.json"]
    assert sorted(p.name for p in camp.iterdir()) == ["campaign.json"]


def test_ab_refused_for_its_b_side_leaves_no_a_side(tmp_path):
    """An ab whose b/ already holds a campaign is refused before a/ gets a
    campaign.json or a lock: 'nothing was overwritten' and nothing added."""
    out = tmp_path / "ab"
    (out / "b").mkdir(parents=True)
    (out / "b" / "campaign.json").write_text("{}")
    r = osmeter("ab", "--a", "true", "--b", "true", "--rounds", "1", "--probes", "cpu.syscall", "--out", str(out))
    assert r.returncode == 2 and "already holds" in r.stderr, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["b"]
    assert sorted(p.name for p in (out / "b").iterdir()) == ["campaign.json"]


def test_a_venv_of_another_user_is_named_not_rebuilt(tmp_path):
    """The launcher run by a user who cannot use the checkout's .venv (its
    Python is root's, outside their reach): one message naming the owner
    and what to do, exit 1; no attempt to make the .venv again (it had
    failed with 'Permission denied ... pyvenv.cfg' and advice to install
    python3-venv). Mutant caught: the owner's check left out."""
    import shutil
    import tempfile

    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root (to become nobody) and setpriv")
    tree = Path(tempfile.mkdtemp(prefix="osmeter-other-"))
    try:
        tree.chmod(0o755)
        shutil.copy(ROOT / "osmeter", tree / "osmeter")
        shutil.copy(ROOT / "pyproject.toml", tree / "pyproject.toml")
        (tree / ".venv" / "bin").mkdir(parents=True)
        (tree / ".venv" / "bin" / "python").symlink_to("/root/.osmeter-test-no-such-python")
        r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(tree / "osmeter"),
                            "list"], capture_output=True, text=True, timeout=60, cwd="/")
        assert r.returncode == 1, r.stderr
        assert f"{tree}/.venv belongs to root" in r.stderr and "Run osmeter as root" in r.stderr, r.stderr
        assert "setting up" not in r.stderr and "python3-venv" not in r.stderr, r.stderr
    finally:
        shutil.rmtree(tree)
