"""iotrace under MPI where a Slurm allocation exists: srun starts the ranks
(tests/slurmhosts.py: a real slurmctld and two slurmd nodes in network
namespaces with their own host names), Open MPI through srun's pmix plugin
and MPICH through its pmi2 plugin, with no mpirun at all. A trace recorded
on the nodes under one MPI replays on them under the other.

The nodes share this machine's kernel and file system (a cluster's shared
file system): what is tested is Slurm's start of the ranks, the MPI a rank
was started under told from srun's environment, the ranks' host names, the
merge and the replay's files, not several machines' speed."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import slurmhosts
from test_iotrace_mpi import IMPLS, IOTRACE, every_form, have, impl, read_rows, written_by_rank  # noqa: F401
from test_iotrace_mpi_hosts import run

why = slurmhosts.available()
pytestmark = pytest.mark.skipif(why is not None, reason=why or "")
RANKS = 2
PLUGIN = {"openmpi": "pmix", "mpich": "pmi2"}  # the srun --mpi plugin each Debian MPI speaks


def srun(impl: str) -> str:
    return f"srun --mpi={PLUGIN[impl]} --nodes={RANKS} --ntasks={RANKS} --job-name=iotrace-test"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with slurmhosts.slurm_cluster(RANKS, tmp_path_factory.mktemp("slurm")) as c:
        yield c


def in_cluster(argv: list, impl: str, c, tmp: Path, timeout: float = 120):
    """argv with the cluster's SLURM_CONF, as a user on its login node runs it."""
    return run(argv, impl, tmp, timeout=timeout, extra={"SLURM_CONF": str(c.conf)})


@pytest.fixture(scope="module")
def on_nodes(impl, every_form, cluster, tmp_path_factory):
    """every_form's two ranks started by srun on the two nodes, recorded; no --mpi given to iotrace."""
    base = tmp_path_factory.mktemp(f"srun-{impl}")
    work, trace, tmp = base / "work", base / "every.trace", base / "tmp"
    work.mkdir(), tmp.mkdir()
    r = in_cluster([IOTRACE, "record", "--out", trace, "--launcher", srun(impl), "--", every_form, work], impl,
                   cluster, tmp)
    return r, work, trace


def recorded(on_nodes):
    """The trace's rows, what each rank said it did, the program's directory and the trace: the record's
    failure is the test's (not the fixture's error)."""
    r, work, trace = on_nodes
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    said = {d["rank"]: d for d in map(json.loads, (ln for ln in r.stdout.splitlines() if ln.startswith("{")))}
    assert sorted(said) == [0, 1], r.stdout
    return read_rows(trace), said, work, trace


def test_ranks_started_by_srun_are_recorded_each_with_its_node(on_nodes, cluster):
    """Each rank's MPI_Init row names the node srun put it on and its
    clock's offset; every MPI-IO call the program says each rank made is in
    the trace; the MPI's POSIX calls linked under them. Mutant caught: a
    PMIx rank not taken for Open MPI (the ranks fail before MPI_Init)."""
    rows, said, _, _ = recorded(on_nodes)
    init = {x["rank"]: x["args"] for x in rows if x["call"] == "MPI_Init"}
    assert {r: a["host"] for r, a in init.items()} == {0: cluster.nodes[0], 1: cluster.nodes[1]}
    assert all(int(a["clock_err_ns"]) >= 0 for a in init.values())
    for rank, doc in said.items():
        for call, (n, _) in doc["calls"].items():
            if call.startswith(("MPI_Wait", "MPI_Test")):
                continue  # a completion may be made by another form's row (done=0): test_iotrace_mpi checks them
            got = sum(x["rank"] == rank and x["call"] == call for x in rows)
            assert got == n, (rank, call, got, n)
    assert any(x["parent"] >= 0 and not x["call"].startswith("MPI_") for x in rows)


def test_a_trace_recorded_under_srun_replays_under_srun_with_the_other_mpi(on_nodes, impl, cluster, tmp_path):
    """The trace recorded with one MPI replays under srun with the other, on
    the same two nodes: no mismatch, each rank on its node, every rank's
    writes where the program's rank wrote them, nothing left in DIR but the
    program's file."""
    under = next(i for i in IMPLS if i != impl)
    why_not = have(under)
    if why_not:
        pytest.skip(why_not)
    _, _, work, trace = recorded(on_nodes)
    fid = next(ln.split(",")[7] for ln in trace.read_text().splitlines()[2:]
               if ",MPI_File_open," in ln and "every.dat" in ln)
    out = tmp_path / "out"
    out.mkdir()
    r = in_cluster([IOTRACE, "replay", trace, "--dir", out, "--launcher", srun(under)], under, cluster, tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    doc = json.loads(r.stdout.splitlines()[-1])
    assert doc["ranks"] == RANKS and doc["mismatch_count"] == 0, doc["mismatches"]
    assert doc["rank_hosts"] == cluster.nodes
    written_by_rank(work, out / fid, 7 * RANKS * 64 * 4)
    assert sorted(p.name for p in out.iterdir()) == [fid]
    assert cluster.run("squeue", "-h").stdout.strip() == ""


def test_open_mpis_mpirun_inside_an_allocation_starts_its_ranks_on_the_nodes(every_form, cluster, tmp_path):
    """iotrace inside `salloc --nodes=2`: Open MPI's mpirun finds the
    allocation and starts its daemons on the nodes by srun; each rank's
    MPI_Init row names its node, and the job ends with the command."""
    if every_form.parent.name != "mpi-openmpi":
        pytest.skip("mpirun inside an allocation: Open MPI's (MPICH's hydra there is not tested, docs/iotrace.md)")
    work, trace = tmp_path / "work", tmp_path / "t.trace"
    work.mkdir()
    mpirun = ("mpirun.openmpi -np 2 --bind-to none --mca oob_tcp_if_include 10.231.0.0/16 --mca btl tcp,self "
              "--mca btl_tcp_if_include 10.231.0.0/16")
    r = in_cluster(["salloc", f"--nodes={RANKS}", "--job-name=iotrace-test", IOTRACE, "record", "--out", trace,
                    "--launcher", mpirun, "--", every_form, work], "openmpi", cluster, tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    init = {x["rank"]: x["args"]["host"] for x in read_rows(trace) if x["call"] == "MPI_Init"}
    assert init == {0: cluster.nodes[0], 1: cluster.nodes[1]}
    slurmhosts.wait("the job's end", lambda: cluster.run("squeue", "-h").stdout.strip() == "", timeout=30)
