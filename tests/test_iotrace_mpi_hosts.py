"""iotrace under MPI across hosts: ranks started on two network-namespace
hosts (each its own sshd and host name, tests/nshosts.py) by the MPI
launchers' own remote start, Open MPI's `--host` over ssh and MPICH's hydra
over ssh, recorded and replayed there; and a host the launcher cannot start.

The hosts share this machine's kernel and file system (what a cluster's
shared file system gives its nodes), so what is tested is the start, the
ranks' host names, their messages between hosts, the trace's merge and the
replay's files, not a second machine's speed."""
from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

import nshosts
from test_iotrace_mpi import IMPLS, IOTRACE, env_for, every_form, have, impl, read_rows, written_by_rank  # noqa: F401

RANKS = 2
GOOD, DOWN = (0, 1), (0, 2)  # host indexes: two that answer; the first and one whose sshd is not there


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    why = nshosts.available()
    if why:
        pytest.skip(why)
    base = tmp_path_factory.mktemp("mpi-hosts")
    with nshosts.ns_hosts(3, base / "hosts", own_names=True, broken={2: {"sshd": False}}) as hs:
        ssh = base / "ssh"  # the launchers' remote shell: ssh with the test's key and no host-key prompts
        ssh.write_text(f'#!/bin/sh\nexec ssh -F {hs.config} "$@"\n')
        ssh.chmod(0o755)
        hs.ssh = ssh
        yield hs


def launcher(impl: str, hs, which: tuple[int, ...]) -> str:
    addrs = ",".join(hs[i].addr for i in which)
    if impl == "openmpi":
        # --bind-to none: each host would bind its one rank to core 0, and here both are this machine's core 0
        return (f"mpirun.openmpi -np {len(which)} --host {addrs} --bind-to none --mca plm_rsh_agent {hs.ssh} "
                f"--mca oob_tcp_if_include 10.231.0.0/16 --mca btl tcp,self --mca btl_tcp_if_include 10.231.0.0/16")
    # -localhost: the address the hosts reach the launcher's machine by (its own name is not theirs to resolve)
    return f"mpiexec.mpich -n {len(which)} -hosts {addrs} -launcher ssh -launcher-exec {hs.ssh} -localhost 10.231.1.1"


def run(argv: list[str], impl: str, tmp: Path, timeout: float = 120, extra: dict | None = None
        ) -> subprocess.CompletedProcess:
    """argv in a session of its own (extra added to its environment); past the timeout everything in that
    session is killed (iotrace, its launcher's group) before the test fails, so that a hang does not
    outlive it."""
    env = env_for(impl)
    env.update(extra or {})
    env["TMPDIR"] = str(tmp)
    p = subprocess.Popen([str(a) for a in argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        subprocess.run(["pkill", "-KILL", "-s", str(p.pid)], check=False)
        p.communicate()
        raise
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def left_running(prog: str) -> list[str]:
    """Processes of prog on any host (the namespaces share this machine's pids), a moment after the end."""
    time.sleep(1)
    out = subprocess.run(["pgrep", "-af", prog], capture_output=True, text=True).stdout
    return [ln for ln in out.splitlines() if "pgrep" not in ln]


@pytest.fixture(scope="module")
def across(impl, every_form, hosts, tmp_path_factory):
    """every_form's two ranks on two hosts, recorded."""
    base = tmp_path_factory.mktemp(f"across-{impl}")
    work, trace, tmp = base / "work", base / "every.trace", base / "tmp"
    work.mkdir(), tmp.mkdir()
    r = run([IOTRACE, "record", "--out", trace, "--launcher", launcher(impl, hosts, GOOD), "--", every_form, work],
            impl, tmp)
    assert r.returncode == 0, r.stdout + r.stderr
    said = {d["rank"]: d for d in map(json.loads, (ln for ln in r.stdout.splitlines() if ln.startswith("{")))}
    assert sorted(said) == [0, 1], r.stdout
    assert list(tmp.iterdir()) == [], "the recorder's directory is removed after the merge"
    return read_rows(trace), said, work, trace


def test_ranks_on_two_hosts_are_recorded_each_with_its_host(across, hosts):
    """Each rank's MPI_Init row names the host it ran on, as many MPI-IO
    calls per rank and call type as the program says it made, and the POSIX
    calls under them linked; `show` lists the ranks' hosts."""
    rows, said, _, trace = across
    init = {x["rank"]: x["args"] for x in rows if x["call"] == "MPI_Init"}
    assert {r: a["host"] for r, a in init.items()} == {0: hosts[0].ns, 1: hosts[1].ns}
    assert all(int(a["clock_err_ns"]) >= 0 for a in init.values())
    for rank, doc in said.items():
        for call, (n, _) in doc["calls"].items():
            if call.startswith("MPI_Wait") or call.startswith("MPI_Test"):
                continue  # a completion may be made by another form's row (done=0): test_iotrace_mpi checks them
            got = sum(x["rank"] == rank and x["call"] == call for x in rows)
            assert got == n, (rank, call, got, n)
    assert any(x["parent"] >= 0 and not x["call"].startswith("MPI_") for x in rows)
    shown = subprocess.run([str(IOTRACE), "show", str(trace)], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and hosts[0].ns in shown.stdout and hosts[1].ns in shown.stdout, shown.stdout


@pytest.mark.parametrize("under", IMPLS)
def test_a_trace_from_two_hosts_replays_on_two_hosts_under_each_mpi(across, impl, under, hosts, tmp_path):
    """The same calls again, rank by rank on the same two hosts, under either
    MPI: no mismatch, every rank's writes where the program's rank wrote,
    each rank's host in the output, nothing left in DIR but the program's
    file (the launch's mark removed)."""
    why = have(under)
    if why:
        pytest.skip(why)
    _, _, work, trace = across
    fid = next(ln.split(",")[7] for ln in trace.read_text().splitlines()[2:]
               if ",MPI_File_open," in ln and "every.dat" in ln)
    out = tmp_path / "out"
    out.mkdir()
    r = run([IOTRACE, "replay", trace, "--dir", out, "--launcher", launcher(under, hosts, GOOD)], under, tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    doc = json.loads(r.stdout.splitlines()[-1])
    assert doc["ranks"] == RANKS and doc["mismatch_count"] == 0, doc["mismatches"]
    assert doc["rank_hosts"] == [hosts[0].ns, hosts[1].ns]
    written_by_rank(work, out / fid, 7 * RANKS * 64 * 4)
    assert sorted(p.name for p in out.iterdir()) == [fid]
    assert "leaked" not in r.stderr, r.stderr  # MPICH names the datatypes a replay did not free


def test_a_host_the_launcher_cannot_start_is_an_error_with_nothing_left(impl, every_form, hosts, tmp_path):
    """One host's sshd is not there. Open MPI's mpirun fails the job; MPICH's
    hydra waits for ever with rank 0 started on the other host, so record
    and replay end the launch after --start-timeout. Each: a clear error,
    a non-zero exit, no trace, no rank left running, nothing in TMPDIR or
    DIR. Mutant caught: the start not bounded."""
    work, trace = tmp_path / "work", tmp_path / "t.trace"
    work.mkdir()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    bad = launcher(impl, hosts, DOWN)
    r = run([IOTRACE, "record", "--start-timeout", "8", "--out", trace, "--launcher", bad, "--", every_form, work],
            impl, tmp, timeout=45)
    assert r.returncode != 0, r.stderr
    said = r.stderr.splitlines()[-1]
    assert ("exited with status" in said or "not past MPI_Init 8 s after" in said) and bad in said, r.stderr[-2000:]
    assert not trace.exists() and list(tmp.iterdir()) == []
    assert left_running(str(every_form)) == []

    out = tmp_path / "out"
    out.mkdir()
    good = tmp_path / "good.trace"
    g = run([IOTRACE, "record", "--out", good, "--launcher", launcher(impl, hosts, GOOD), "--", every_form, work],
            impl, tmp)
    assert g.returncode == 0, g.stderr[-2000:]
    r = run([IOTRACE, "replay", good, "--dir", out, "--start-timeout", "8", "--launcher", bad], impl, tmp,
            timeout=45)
    assert r.returncode != 0 and '"ranks"' not in r.stdout, r.stdout[-2000:] + r.stderr[-2000:]
    said = r.stderr.splitlines()[-1]
    assert ("exited with status" in said or "not past MPI_Init 8 s after" in said) and bad in said, r.stderr[-2000:]
    assert left_running(f"iotrace-mpi-replay-{impl}") == []
    assert not [p for p in out.iterdir() if p.name.startswith(".iotrace")], list(out.iterdir())
