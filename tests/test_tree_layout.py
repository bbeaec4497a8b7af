"""The layout's promises: a new probe is its C file and its area's module; the
harness has no import circles; methodology states methods, never one
machine's figures."""
from __future__ import annotations

import ast
import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from osmeter.probes import registry

HARNESS = ROOT / "harness" / "osmeter"

NOP_PROBE = r"""/* nop.c - an empty batch: the smallest probe there is. */
#include "osm.h"

static void body(void *ctx, uint64_t n)
{
    (void)ctx;
    for (uint64_t i = 0; i < n; i++)
        OSM_BARRIER();
}

static const struct osm_probe_info info = {
    .name = "toy_nop",
    .summary = "An empty loop turn, as a probe written for a test.",
    .default_samples = 10,
};

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);
    struct osm_meas m;
    osm_meas_init(&m, "toy.nop", o.samples);
    osm_run_batched(&m, body, NULL, o.iterations, o.samples, 0);
    osm_emit(&m);
    osm_meas_free(&m);
    return 0;
}
"""

# A new area's whole module: its AREA, its probe and its figure, nothing named elsewhere.
TOY_AREA = '''"""A toy area, written by a test: one probe and one figure."""
from __future__ import annotations

from osmeter.probes.model import Area, Probe, measure

AREA = Area("toy", "A toy area", 99)

PROBES = (
    Probe(name="toy.nop", binary="toy_nop", measures=(measure("toy.nop", "ns", "an empty loop turn"),),
          methodology="An empty loop turn in batches.", presets={"quick": ("--samples", "10")}),
)


def nop_bar(doc, est=None):
    """An empty loop turn: the median of toy.nop, drawn by its own area."""
    from osmeter.present.plots import measured, plt

    d = measured(doc).get("toy.nop")
    if not d:
        return None
    fig, ax = plt.subplots()
    ax.bar([0], [d["median"]])
    return fig


FIGURES = (nop_bar,)
'''


def test_a_new_probe_with_a_figure_is_two_files(tmp_path):
    """A new probe with its figure, in a new area, is two files: its C file
    (bench/toy/nop.c, built by the Makefile's pattern rule) and its area's
    module (probes/areas/toy.py: AREA, the Probe, the figure). In a copy of the
    tree it is listed, runs alone, has its section and its figure (a PDF
    under the figure function's caption) in the report, with "no estimate",
    and its row in compare, in its area. Mutant caught: collect() not
    handing the module's FIGURES to its area."""
    tree = tmp_path / "tree"
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           capture_output=True, text=True, check=True).stdout.split("\0")
    for f in filter(None, files):
        if (ROOT / f).is_file():
            (tree / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, tree / f)
    shutil.copytree(ROOT / "build", tree / "build", symlinks=True)  # what is built stays built
    before = {p for p in tree.rglob("*") if p.is_file()}
    (tree / "bench" / "toy").mkdir()
    (tree / "bench" / "toy" / "nop.c").write_text(NOP_PROBE)
    (tree / "harness" / "osmeter" / "probes" / "areas" / "toy.py").write_text(TOY_AREA)
    assert {p for p in tree.rglob("*") if p.is_file()} - before == {
        tree / "bench" / "toy" / "nop.c", tree / "harness" / "osmeter" / "probes" / "areas" / "toy.py"}
    env = dict(os.environ, OSMETER_ROOT=str(tree), PYTHONPATH=str(tree / "harness"))
    run = [sys.executable, "-m", "osmeter"]
    listed = subprocess.run([*run, "list"], capture_output=True, text=True, env=env, cwd=tree)
    assert "toy.nop" in listed.stdout, listed.stderr
    outs = [tmp_path / "a", tmp_path / "b"]
    for out in outs:
        r = subprocess.run([*run, "run", "--probes", "toy.nop", "--out", str(out)], capture_output=True, text=True,
                           env=env, cwd=tree, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((outs[0] / "results.json").read_text())
    assert [m["id"] for m in doc["measurements"]] == ["toy.nop"]
    assert doc["measurements"][0]["median"] > 0
    # its section, with no estimate, and its figure: a PDF under its caption
    tex = (outs[0] / "report" / "report.tex").read_text()
    assert "A toy area" in tex and "toy.nop" in tex and "no estimate" in tex
    cap = r"\caption{A toy area. An empty loop turn: the median of toy.nop, drawn by its own area.}"
    assert cap in tex, "the toy area's figure is not in the report"
    graphic = tex[:tex.index(cap)].rsplit("\\includegraphics{", 1)[1].split("}")[0]
    assert (outs[0] / "report" / graphic).read_bytes().startswith(b"%PDF-")
    # compare: its row, in its area
    r = subprocess.run([*run, "compare", *map(str, outs), "--csv", str(tmp_path / "c.csv")], capture_output=True,
                       text=True, env=env, cwd=tree, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = list(csv.DictReader(ln for ln in (tmp_path / "c.csv").open() if not ln.startswith("#")))  # notes
    assert [(x["id"], x["unit"], x["area"]) for x in rows] == [("toy.nop", "ns", "toy")], rows
    assert "toy.nop" in r.stdout


def test_each_declaration_has_its_modules_area_unwritten():
    """A declaration in probes/areas/<area>.py leaves its area out: collect()
    stamps the module's AREA on each probe and derived figure, and one that
    names another area is refused. Mutant caught: collect() not stamping."""
    import importlib
    import pkgutil

    from osmeter.probes import areas
    from osmeter.probes.model import Probe, measure

    for info in pkgutil.iter_modules(areas.__path__):
        mod = importlib.import_module(f"osmeter.probes.areas.{info.name}")
        names = {p.name for p in mod.PROBES}
        assert {p.area for p in registry.PROBES if p.name in names} == {mod.AREA.name}, info.name
        ids = {d.measure.id for d in getattr(mod, "DERIVED", ())}
        assert {d.area for d in registry.DERIVED if d.measure.id in ids} <= {mod.AREA.name}, info.name
        assert 'area="' not in (HARNESS / "probes" / "areas" / f"{info.name}.py").read_text(), info.name
    wrong = Probe(name="cpu.x", binary="cpu_x", area="mem", measures=(measure("cpu.x", "ns", "x"),), methodology="x")
    with pytest.raises(ValueError, match="cpu.x says area 'mem', but its module's AREA is 'cpu'"):
        areas.in_area(wrong, registry.area("cpu"), "osmeter.probes.areas.cpu")


def test_ids_probes_and_binaries_are_named_for_their_area():
    """An id and its probe begin with their area's name, and a probe's C
    program is named for its area too (bench/<area>/, built as
    <area>_<name>), so that ids, areas and folders agree; iogen, ping and
    iotrace are the disk, net and app areas' outside programs. Mutant:
    sched_timer's id named timer.latency again."""
    outside = {"iogen": "disk", "ping": "net", "iotrace": "app"}
    for p in registry.PROBES:
        assert p.name.startswith(p.area + "."), p.name
        assert all(i.startswith(p.area + ".") for i in p.ids()), (p.name, p.ids())
        assert p.binary.startswith(p.area + "_") or outside.get(p.binary) == p.area, (p.name, p.binary)
    for d in registry.DERIVED:
        assert d.measure.id.startswith(d.area + "."), d.measure.id


def _imports(path: Path, package: str) -> set[str]:
    """The modules of `package` that a module imports (anywhere in it)."""
    tree = ast.parse(path.read_text())
    mod = path.relative_to(HARNESS.parent).with_suffix("").as_posix().replace("/", ".")
    if mod.endswith(".__init__"):
        mod = mod[: -len(".__init__")]
        base = mod.split(".")
    else:
        base = mod.split(".")[:-1]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = base[: len(base) - node.level + 1] + (node.module.split(".") if node.module else [])
            else:
                parts = (node.module or "").split(".")
            name = ".".join(parts)
            if name.startswith(package):
                out.add(name)
                for alias in node.names:  # from . import registry
                    sub = f"{name}.{alias.name}"
                    path_of = HARNESS.parent / sub.replace(".", "/")
                    if path_of.with_suffix(".py").exists() or (path_of / "__init__.py").exists():
                        out.add(sub)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith(package))
    # a module's own packages are imported before it ("from . import x" in a
    # package names the package too): no edge to them
    out -= {".".join(mod.split(".")[:k]) for k in range(1, mod.count(".") + 2)}
    return out


def _import_graph() -> dict[str, set[str]]:
    """Each harness module -> the harness modules it imports (anywhere in it)."""
    mods = {}
    for path in HARNESS.rglob("*.py"):
        name = path.relative_to(HARNESS.parent).with_suffix("").as_posix().replace("/", ".")
        name = name[: -len(".__init__")] if name.endswith(".__init__") else name
        mods[name] = {m for m in _imports(path, "osmeter") if m != "osmeter"}
    return mods


def test_the_harness_has_no_import_circles():
    mods = _import_graph()
    # depth-first search for a cycle
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str):
        state[m] = 1
        stack.append(m)
        for n in sorted(mods.get(m, ())):
            if n not in mods:
                continue
            if state.get(n) == 1:
                raise AssertionError("import circle: " + " -> ".join(stack[stack.index(n):] + [n]))
            if not state.get(n):
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(mods):
        if not state.get(m):
            visit(m)


# The harness's packages, bottom to top, each with its job in one sentence
# (its __init__.py's docstring): a module imports from its own package and
# from those below it, never from one above.
LAYERS = ("core", "results", "host", "remote", "ktrace", "apptrace", "present", "probes", "analysis", "running", "fleet",
          "report", "history", "cli")


def _package(mod: str) -> str | None:
    """osmeter.results.store -> results; the top's own modules -> None."""
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 and parts[1] != "__main__" else None


def upward_imports(mods: dict[str, set[str]]) -> list[str]:
    """Every import of a module from a package above its own (LAYERS)."""
    bad = []
    for m, deps in sorted(mods.items()):
        p = _package(m)
        for n in sorted(deps):
            q = _package(n)
            if p is not None and q is not None and q != p and LAYERS.index(q) > LAYERS.index(p):
                bad.append(f"{m} ({p}) imports {n} ({q}), a package above it")
    return bad


def test_each_package_imports_only_those_below_it():
    """The packages follow the data's path: every package of the harness is
    a layer of LAYERS, opens with the sentence that says its job, and
    imports only from the layers below it (anywhere in a module: an import
    inside a function counts). Mutant caught: the store importing compare."""
    packages = {p.parent.name for p in HARNESS.glob("*/__init__.py")}
    assert packages == set(LAYERS), packages ^ set(LAYERS)
    assert {p.name for p in HARNESS.glob("*.py")} == {"__init__.py", "__main__.py"}
    for p in LAYERS:
        doc = ast.get_docstring(ast.parse((HARNESS / p / "__init__.py").read_text())).split("\n\n")[0]
        assert doc and doc.count(". ") == 0 and doc.endswith("."), f"{p}: its job in one sentence"
    mods = _import_graph()
    assert {m for m in mods if _package(m) and _package(m) not in LAYERS} == set()
    assert upward_imports(mods) == []


def test_the_layer_check_catches_an_upward_import():
    mods = {"osmeter.core.units": {"osmeter.core.errors"}, "osmeter.results.store": {"osmeter.analysis.compare"},
            "osmeter.cli": {"osmeter.running.runner"}}
    assert upward_imports(mods) == ["osmeter.results.store (results) imports osmeter.analysis.compare (analysis), "
                                    "a package above it"]


# What reads results (compare, the report, the notebook, the figures) reads them
# through store.py: it never reaches the code that runs probes (the report and
# the notebook, above running among the layers, included).
ANALYSIS = ("analysis.compare", "analysis.fleet", "report.latex", "report.notebook", "present.plots",
            "analysis.stability")
RUNNING = ("running.runner", "running.campaign")


def _reaches(mods: dict[str, set[str]], start: str, goal: str) -> list[str] | None:
    """An import path from start to goal (directly or through others), or None."""
    seen, todo = {start}, [[start]]
    while todo:
        path = todo.pop()
        for n in sorted(mods.get(path[-1], ())):
            if n == goal:
                return path + [n]
            if n not in seen:
                seen.add(n)
                todo.append(path + [n])
    return None


def test_analysis_does_not_import_the_runner():
    mods = _import_graph()
    for m in list(mods):  # importing osmeter.analysis.fleet runs osmeter/analysis/__init__.py first
        parent = m.rsplit(".", 1)[0]
        if parent in mods:
            mods[m] = mods[m] | {parent}
    for a in ANALYSIS:
        assert f"osmeter.{a}" in mods, a
        for r in RUNNING:
            path = _reaches(mods, f"osmeter.{a}", f"osmeter.{r}")
            assert path is None, "analysis reaches the runner: " + " -> ".join(path)


def _layout_names() -> tuple[set[str], set[str]]:
    """store.py's file names, and its directory names (those a path is joined with)."""
    from osmeter.results import store

    names = {v for k, v in vars(store).items() if k.isupper() and isinstance(v, str)}
    names -= {store.CAMPAIGN_SCHEMA, store.RUN_GLOB}
    names -= {store.REPORT, store.REPORT_TEX}  # also the repository's templates: report/report.tex
    dirs = {n for n in names if "." not in n}
    return names - dirs, dirs


# The two spellings that are not the results layout's.
NOT_THE_LAYOUT = {
    ("agent.py", ".osmeter.lock"): "agent.py runs as a script on a fleet host, where osmeter is not importable",
    ("machine.py", "raw"): "sysfs's SMBIOS entry file, not a results directory's raw/",
}


def layout_literals(path: Path) -> list[str]:
    """Where a module spells a name of the results layout itself: a string
    (not a docstring) that is one of store.py's file names, or has one as a
    path's part (".../results.json", "*/results.json"), or a path joined
    with one of its directory names (x / "samples", "samples/...")."""
    files, dirs = _layout_names()
    file_rx = re.compile(r"(?:^|[/*])(?:" + "|".join(map(re.escape, sorted(files))) + r")(?=$|[\s/)'\"])")
    dir_rx = re.compile(r"^(?:" + "|".join(map(re.escape, sorted(dirs))) + r")/")
    tree = ast.parse(path.read_text())
    docs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and isinstance(node.right, ast.Constant) \
                and node.right.value in dirs | files:
            if (path.name, node.right.value) not in NOT_THE_LAYOUT:
                found.append(f"{path.name}:{node.lineno}: / {node.right.value!r}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs \
                and (path.name, node.value) not in NOT_THE_LAYOUT:
            if node.value in files or file_rx.search(node.value) or dir_rx.match(node.value):
                found.append(f"{path.name}:{node.lineno}: {node.value[:60]!r}")
    return found


def test_only_the_store_spells_the_results_layout():
    spelled = {p.name: layout_literals(p) for p in sorted(HARNESS.rglob("*.py")) if p.name != "store.py"}
    bad = [x for found in spelled.values() for x in found]
    assert bad == [], "the results layout spelled outside store.py (use its names): " + "; ".join(bad)


def test_the_layout_check_catches_what_it_should(tmp_path):
    f = tmp_path / "m.py"
    for code in ('p = out / "results.json"', 'ResultsDir(out, "campaign.json")', 'd = out / "samples"',
                 'name = f"kpaths/{x}.npz"', 'runs = root.glob("*/results.json")', 'cmd = f"test -e {q}/fleet.json"'):
        f.write_text(code + "\n")
        assert layout_literals(f), code
    f.write_text('"""results.json and samples/ belong to store.py."""\nmsg = "see its results.json)"\nx = m["samples"]\n')
    assert layout_literals(f) == []


# A figure of a particular machine: a rate or a found size stated as a result,
# or words that point at the machine the text was written on.
MACHINE_FIGURE = [
    re.compile(r"\d[\d,.]*\s*(?:[kMGT]?B/s|[KMG]iB/s|IOPS|files/s|creates/s|ops/s)\b"),
    re.compile(r"\bfinds \d"),
    re.compile(r"\b(?:gave|measures at|came to|was)\s+\d", re.I),
    re.compile(r"\bmeasured (?:at )?\d[\d,.]*\s*(?:[num]s|s|cycles|%)\b"),
    re.compile(r"\b(?:this|our|these) (?:project's )?(?:VMs?|machines?|guests?|hosts?)\b", re.I),
    re.compile(r"\bhere\b", re.I),
]


def test_methodology_states_methods_not_one_machines_figures():
    texts = [(p.name, p.full_methodology()) for p in registry.PROBES]
    texts += [(d.measure.id, d.methodology) for d in registry.DERIVED]
    bad = [(name, rx.pattern, rx.search(text).group(0)) for name, text in texts for rx in MACHINE_FIGURE
           if rx.search(text)]
    assert bad == [], bad


def test_the_machine_figure_check_catches_what_it_should():
    for text in ("Ground truth: under a 256 MiB memory cgroup it finds 248 MiB.",
                 "on this project's VMs the same probe gave 1,200 to 90,000 creates/s",
                 "CPUID costs 4.7 us here"):
        assert any(rx.search(text) for rx in MACHINE_FIGURE), text
    assert not any(rx.search("a 64 MiB file in /var/tmp, read in 4 KiB blocks, 1000 files of 10 KiB")
                   for rx in MACHINE_FIGURE)


def _object_graph(objs: list[Path]) -> dict[str, set[str]]:
    """Which object file calls (or reads) which, from nm's defined and
    undefined symbols."""
    defined, needs = {}, {}
    for o in objs:
        out = subprocess.run(["nm", str(o)], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "U":
                needs.setdefault(o.stem, set()).add(parts[1])
            elif len(parts) == 3 and parts[1] in "TDBRC":
                defined[parts[2]] = o.stem
    return {o.stem: {defined[s] for s in needs.get(o.stem, ()) if s in defined and defined[s] != o.stem}
            for o in objs}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if not state.get(m):
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if not state.get(n):
            found = visit(n)
            if found:
                return found
    return None


def test_the_c_parts_have_no_circles():
    """bench/common is layered (msg <- opts, timing <- emit <- batch <- args;
    json alone; opts over msg alone, so that the MPI replayer, which mpicc
    builds without the rest, links the option parser), and so are iogen's
    files (main -> options, run, output)."""
    for area in ("common", "iogen"):
        objs = sorted((ROOT / "build" / "obj" / area).rglob("*.o"))
        assert objs, area
        graph = _object_graph(objs)
        assert _cycle(graph) is None, f"bench/{area}: " + " -> ".join(_cycle(graph))
    common = _object_graph(sorted((ROOT / "build" / "obj" / "common").glob("*.o")))
    assert common["msg"] == set() and common["json"] == set()
    assert common["opts"] == {"msg"}, common["opts"]


def _program_parts(program: str) -> list[str]:
    """The parts a program's README.md lists (bench/<program>/README.md: one
    indented line per part folder, lowest first)."""
    return re.findall(r"^    ([a-z_]+)/ ", (ROOT / "bench" / program / "README.md").read_text(), re.M)


def _upward_calls(obj_root: Path, order: list[str]) -> list[str]:
    """The calls of a program's objects (build/obj/<program>/<part>/*.o; its
    main directly in build/obj/<program>/) that go to a part listed after
    the caller's own: lowest first, main above all."""
    part = {o.stem: o.parent.name if o.parent != obj_root else None for o in obj_root.rglob("*.o")}
    rank = {p: i for i, p in enumerate(order)}
    graph = _object_graph(sorted(obj_root.rglob("*.o")))
    return sorted(f"{o} ({part[o]}) -> {d} ({part[d]})" for o, deps in graph.items() for d in deps
                  if part[o] is not None and (part[d] is None or rank[part[d]] > rank[part[o]]))


def test_iogen_and_iotrace_name_their_parts_and_are_layered():
    """bench/iogen and bench/iotrace are programs of parts, one folder each,
    which their README.md lists: every folder listed exists and every one
    that exists is listed; each program's objects call only their own part
    and those its README lists before it (main, iogen.o or iotrace.o, above
    all, and alone in its file: it defines main and nothing else). Mutant
    caught: iotrace's base/ calling a command of a part above it."""
    for program in ("iogen", "iotrace"):
        listed = _program_parts(program)
        assert listed and sorted(listed) == sorted(d.name for d in (ROOT / "bench" / program).iterdir()
                                                   if d.is_dir()), (program, listed)
        objs = ROOT / "build" / "obj" / program
        assert len(list(objs.rglob("*.o"))) > len(listed) // 2, program
        assert _upward_calls(objs, listed) == [], program
        assert _cycle(_object_graph(sorted(objs.rglob("*.o")))) is None, program
    defined = subprocess.run(["nm", "--defined-only", "--extern-only", str(ROOT / "build/obj/iotrace/iotrace.o")],
                             capture_output=True, text=True, check=True).stdout.split()
    assert [w for w in defined if len(w) > 1 and not re.fullmatch(r"[0-9a-f]+", w)] == ["main"], defined


def test_the_part_order_check_catches_an_upward_call():
    """Told that output/ is iogen's lowest part, the check names its
    objects' calls into run/, measure/ and spec/."""
    order = _program_parts("iogen")
    order.remove("output")
    found = _upward_calls(ROOT / "build" / "obj" / "iogen", ["output"] + order)
    assert any(f.startswith("report (output) -> ") and f.endswith("(measure)") for f in found), found


ALLOWED_EXTERN_STATE = {("interrupt.h", "extern volatile sig_atomic_t interrupted;")}


def _iogen_shared_state(obj_dir: Path) -> tuple[set[str], set[str]]:
    """Of iogen's objects: those that read a symbol iogen.o (main) defines,
    and the writable globals (objdump: a global object outside read-only
    data) one object defines and another reads."""
    objs = sorted(obj_dir.rglob("*.o"))
    assert objs, obj_dir
    graph = _object_graph(objs)
    data, needs = {}, {}
    for o in objs:
        for line in subprocess.run(["nm", str(o)], capture_output=True, text=True, check=True).stdout.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "U":
                needs.setdefault(o.stem, set()).add(parts[1])
        for line in subprocess.run(["objdump", "-t", str(o)], capture_output=True, text=True,
                                   check=True).stdout.splitlines():
            m = re.match(r"[0-9a-f]+ g +O (\S+)\s+[0-9a-f]+ (\S+)$", line)
            if m and not m.group(1).startswith((".rodata", ".data.rel.ro")):
                data[m.group(2)] = o.stem
    readers_of_main = {o for o, deps in graph.items() if "iogen" in deps}
    shared = {s for o, syms in needs.items() for s in syms if s in data and data[s] != o}
    return readers_of_main, shared


def test_iogen_passes_its_job_instead_of_sharing_globals():
    """iogen.c (main) holds the config and the runs' state and hands them
    down: no other object of bench/iogen reads a symbol of iogen.o, the one
    writable global two objects share is the signal flag (interrupt.h), and
    no header of bench/iogen declares other extern state (an extern const
    table, such as engine_default, is no state)."""
    readers_of_main, shared = _iogen_shared_state(ROOT / "build" / "obj" / "iogen")
    assert readers_of_main == set(), readers_of_main
    assert shared == {"interrupted"}, shared
    found = set()
    for h in sorted((ROOT / "bench" / "iogen").rglob("*.h")):
        for line in h.read_text().splitlines():
            if re.match(r"\s*extern\s+(?!const\s)[^(]*;", line):
                found.add((h.name, line.strip()))
    assert found == ALLOWED_EXTERN_STATE, found


ECHO_ENGINE = r"""/* engine_echo.c - pread/pwrite, one call per request, made in queue;
 * its one option names what it set up. */
#include "engine.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *word = "quiet";

static void set_word(const char *name, const char *v) { (void)name; word = v; }
static bool word_set(void) { return strcmp(word, "quiet") != 0; }

static const struct engine_option table[] = {
    { "--echo-word", "WORD", "what engine_setup says", set_word },
    { NULL, NULL, NULL, NULL },
};
static const struct engine_options options = { .owner = "echo", .table = table, .set = word_set };

struct echo {
    const int *fds;
    struct io *done;
};

static int e_init(struct engine *e, const int *fds, unsigned nfds, struct io *slots, unsigned n, size_t bufsize,
                  char *err, size_t errlen)
{
    (void)nfds, (void)slots, (void)n, (void)bufsize;
    struct echo *p = calloc(1, sizeof *p);
    if (!p)
        return snprintf(err, errlen, "out of memory"), -1;
    p->fds = fds;
    e->priv = p;
    snprintf(e->setup, sizeof e->setup, "echo %s", word);
    return 0;
}
static void e_queue(struct engine *e, struct io *io)
{
    struct echo *p = e->priv;
    int fd = p->fds[io->target];
    ssize_t r = io->write ? pwrite(fd, io->buf, io->len, (off_t)io->off) : pread(fd, io->buf, io->len, (off_t)io->off);
    io->res = r < 0 ? -errno : r;
    e->syscalls++;
    p->done = io;
}
static int e_submit_reap(struct engine *e, unsigned min, struct io **done, unsigned max, char *err, size_t errlen)
{
    (void)min, (void)err, (void)errlen;
    struct echo *p = e->priv;
    if (!p->done || !max)
        return 0;
    done[0] = p->done;
    p->done = NULL;
    return 1;
}
static void e_exit(struct engine *e) { free(e->priv); e->priv = NULL; }

const struct engine_ops engine_echo = {
    .name = "echo",
    .summary = "pread/pwrite, one call per request (a test's)",
    .sync = true,
    .options = &options,
    .init = e_init,
    .queue = e_queue,
    .submit_reap = e_submit_reap,
    .exit = e_exit,
};
"""


def test_a_new_iogen_engine_with_an_option_is_its_file_and_its_name(tmp_path):
    """An engine owns its options: a new one with an option is its
    engines/engine_<name>.c (the option a row of its table) and its name in
    engines/engine.c's ENGINES line; iogen then lists it, takes its option, runs
    its pread/pwrite on a file, and refuses the option with any other
    engine."""
    tree = tmp_path / "tree"
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           capture_output=True, text=True, check=True).stdout.split("\0")
    for f in filter(None, files):
        if f.startswith(("bench/", "Makefile")) and (ROOT / f).is_file():
            (tree / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, tree / f)
    (tree / "bench" / "iogen" / "engines" / "engine_echo.c").write_text(ECHO_ENGINE)
    engine_c = tree / "bench" / "iogen" / "engines" / "engine.c"
    text = engine_c.read_text()
    assert text.count(" X(nop)\n") == 1
    engine_c.write_text(text.replace(" X(nop)\n", " X(nop) X(echo)\n"))
    r = subprocess.run(["make", "-s", "-j2", "-C", str(tree), "build/bin/iogen"], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    iogen = tree / "build" / "bin" / "iogen"
    lines = subprocess.run([str(iogen), "--help"], capture_output=True, text=True).stdout.splitlines()
    echo = next(i for i, line in enumerate(lines) if line.startswith("  echo "))
    assert lines[echo + 1].split()[:2] == ["--echo-word", "WORD"]
    target = tmp_path / "t.dat"
    r = subprocess.run([str(iogen), "--engine", "echo", "--echo-word", "hello", "--target", str(target), "--size", "1M",
                        "--buffered", "--workload", "database", "--qd", "2", "--time", "0.2", "--ramp", "0"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    o = json.loads(r.stdout.splitlines()[0])
    # its I/O reached the file: reads and writes, one system call each
    assert o["engine"] == "echo" and o["engine_setup"] == "echo hello", o
    assert o["reads"] > 0 and o["writes"] > 0 and o["syscalls_per_io"] == 1, o
    r = subprocess.run([str(iogen), "--engine", "nop", "--echo-word", "hello", "--workload", "4k-random-read"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--echo-word is echo's: not for --engine nop" in r.stderr, r.stderr


MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 80


def too_long(root: Path) -> list[str]:
    """The Python files under root over MAX_FILE_LINES lines, and the
    functions (methods and nested ones too) over MAX_FUNCTION_LINES, from
    their def (decorators left out) to their last line."""
    found = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text()
        name = path.relative_to(root).as_posix()
        if len(text.splitlines()) > MAX_FILE_LINES:
            found.append(f"{name}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    found.append(f"{name}:{node.lineno}: {node.name} is {n} lines")
    return found


def test_no_harness_file_over_500_lines_and_no_function_over_80():
    """A file a newcomer opens is one concept, read in one sitting: split
    a long one along its concepts, not at the line."""
    assert too_long(HARNESS) == []


def test_the_length_check_catches_what_it_should(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(80))
    (tmp_path / "f.py").write_text("def long():\n" + body + "\n\ndef short():\n    pass\n" + "\n" * 420)
    (tmp_path / "g.py").write_text("class C:\n    def m(self):\n" + "    " + body.replace("\n    ", "\n        ")[:-1]
                                   + "\n")
    assert too_long(tmp_path) == ["f.py: 505 lines", "f.py:1: long is 81 lines", "g.py:2: m is 81 lines"]


def _design_map() -> tuple[list[str], list[str], list[str]]:
    """DESIGN.md's map: the packages it names, the bench/ areas, and the
    harness files its walk of one measurement names."""
    text = (ROOT / "docs" / "DESIGN.md").read_text()
    section = text.split("\n## The map\n", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    packages = re.findall(r"^    ([a-z_]+)/ ", section, re.M)
    areas = re.findall(r"^    bench/([a-z_]+)/ ", section, re.M)
    walk = section.split("One measurement's walk", 1)[1]
    files = re.findall(r"\b((?:[a-z_]+/)+[a-z_]+\.py)\b", walk)
    return packages, areas, files


def test_the_design_map_names_every_package_and_area_and_no_other():
    """docs/DESIGN.md opens with a map: one line per harness package (in
    LAYERS' order) and per bench/ area; every one that exists is named,
    every one named exists, and every file the walk of a measurement names
    is there."""
    packages, areas, files = _design_map()
    assert packages == list(LAYERS), packages
    assert sorted(areas) == sorted(p.name for p in (ROOT / "bench").iterdir() if p.is_dir()), areas
    assert files and [f for f in files if not (HARNESS / f).is_file()] == []
    # the README's Layout points to this map and names the packages in the same order
    readme = (ROOT / "README.md").read_text().split("\n## Layout\n", 1)[1]
    named = re.search(r"`harness/osmeter/`: ([a-z_, \n]+), lowest first", readme)
    assert named and re.split(r",\s*", named.group(1).strip()) == list(LAYERS), named


def misnamed_tests(names: list[str], rooms: set[str]) -> list[str]:
    """The test files whose name is not test_<room>.py or
    test_<room>_<topic>.py for one of rooms (tests/README.md)."""
    rx = re.compile(rf"test_(?:{'|'.join(sorted(rooms))})(?:_[a-z0-9_]+)?\.py")
    return sorted(n for n in names if not rx.fullmatch(n))


def test_every_harness_package_has_a_test_file_of_its_own():
    names = [p.name for p in (ROOT / "tests").glob("test_*.py")]
    assert [room for room in LAYERS if not any(n == f"test_{room}.py" or n.startswith(f"test_{room}_")
                                               for n in names)] == []


def test_each_test_file_is_named_for_its_room():
    """tests/ follows the tree: each test file begins with its room, a
    harness package, a folder of bench/ (a probe area or a program), tools
    or tree, so that a package's or an area's tests are found by name."""
    rooms = set(LAYERS) | {p.name for p in (ROOT / "bench").iterdir() if p.is_dir()} | {"tools", "tree"}
    assert set(LAYERS) == {p.name for p in HARNESS.iterdir() if (p / "__init__.py").is_file()}
    assert misnamed_tests([p.name for p in (ROOT / "tests").glob("test_*.py")], rooms) == []


def test_the_test_name_check_catches_what_it_should():
    assert misnamed_tests(["test_disk.py", "test_results.py", "test_resultsx.py", "test_host_isolate.py",
                           "test_tree.py", "test_host.py", "test_host_.py"],
                          {"results", "host", "tree"}) == ["test_disk.py", "test_host_.py", "test_resultsx.py"]


def _mutants():
    sys.path.insert(0, str(ROOT / "tests"))
    import mutants

    return mutants


def mutant_problems(listed) -> list[str]:
    """What in a list of mutants would not run as written: a file that is
    not there, a snippet that is not in its file exactly once, a test file
    or test named by node id that is not there, or a -k word that no test
    of the named files contains."""
    found = []
    for m in listed:
        path = ROOT / m.file
        if not path.is_file() or path.read_text().count(m.old) != 1:
            found.append(f"{m.name}: its snippet is not once in {m.file}")
            continue
        tokens = m.tests.split()
        words = [tokens[i + 1] for i, t in enumerate(tokens) if t == "-k"]
        names = set()
        for t in tokens:
            if not t.startswith("tests/"):
                continue
            file, *node = t.split("::")
            if not (ROOT / file).is_file():
                found.append(f"{m.name}: {file} is not there")
                continue
            defined = {n.name for n in ast.walk(ast.parse((ROOT / file).read_text()))
                       if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
            names |= defined
            found += [f"{m.name}: {file} has no {n}" for n in node if n.split("[")[0] not in defined]
        found += [f"{m.name}: no test of {m.tests.split(' -k')[0]} contains {w}" for w in words
                  if not any(w in n for n in names if n.startswith("test_"))]
    return found


def test_every_mutant_applies_once_and_names_tests_that_exist():
    """Each mutant's snippet is in its file exactly once, and the tests it
    names exist: files, tests by node id, -k words (a renamed file or test
    is caught here, not only when make mutants reaches its mutant)."""
    assert mutant_problems(_mutants().MUTANTS) == []


def test_the_mutant_check_catches_what_it_should():
    Mutant = _mutants().Mutant
    layout, src, once = "tests/test_tree_layout.py", "tests/mutants.py", "def run_one(m: Mutant"
    listed = [Mutant("fine", src, once, "x", f"{layout}::test_the_mutant_check_catches_what_it_should -k check"),
              Mutant("twice", src, "import ", "x", layout),
              Mutant("no-file", src, once, "x", "tests/test_disk.py::test_x"),
              Mutant("no-test", src, once, "x", f"{layout}::test_gone"),
              Mutant("no-word", src, once, "x", f"{layout} -k gone_word")]
    assert [p.split(":")[0] for p in mutant_problems(listed)] == ["twice", "no-file", "no-test", "no-word"]


# Files a text may name that are no file of this tree: a kernel header, a user's own program in an example
# (and build/'s, which make writes).
CITED_ELSEWHERE = {"include/linux/sched.h", "my.c"}


def cited_files(text: str) -> set[str]:
    """The source paths a text names (a/b/c.py, x.c, y.h), whole words only."""
    return set(re.findall(r"(?<![\w/.<>-])((?:[a-z0-9_]+/)*[a-z0-9_]+\.(?:py|c|h))\b", text))


def test_every_source_file_the_docs_and_docstrings_cite_exists():
    """docs/, the READMEs and the harness's modules name the files they mean by path or by the path's
    tail (history/changes.py, changes.py); each is a file of the tree, so a file moved or renamed
    leaves no text pointing at its old place (issue 58 found present.py, ktrace.py and units.py)."""
    tree = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True, check=True).stdout.split()
    texts = [*ROOT.glob("docs/*.md"), ROOT / "README.md", ROOT / "tests" / "README.md", *ROOT.glob("bench/*/README.md"),
             *HARNESS.rglob("*.py")]
    missing = sorted(f"{p.relative_to(ROOT)}: {c}" for p in texts for c in cited_files(p.read_text())
                     if c not in CITED_ELSEWHERE and not c.startswith("build/") and not any(t == c or t.endswith("/" + c) for t in tree))
    assert missing == []
    assert cited_files("see present.py and bench/common/args.c, not x.pyc") == {"present.py", "bench/common/args.c"}


# A dotted name in a text is a citation when its first word is a module or package of the harness (changes,
# store, results.readings, osmeter.core.stats). It must then name an attribute or submodule of such a module,
# a probe or an id (ids and probes begin with their area's word: fs.meta, mem.lat.curve), a key of a run's
# conditions in results.json (conditions.no_halt), or a file by its suffix (kpaths.lock, results.json).
FILE_SUFFIXES = {"json", "jsonl", "py", "c", "h", "tex", "csv", "txt", "md", "npz", "html", "ipynb", "pdf", "sh",
                 "log", "svg", "png", "toml", "icf", "tsv", "so", "a", "o", "out", "err", "db", "lock", "trace", "xml",
                 "prom"}
DOTTED = re.compile(r"(?<![\w./-])([a-z_][a-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+)(?![\w/(-])")


def harness_modules() -> dict[str, list[str]]:
    """The last word of each harness module's dotted name (osmeter for the package itself) -> the modules."""
    found: dict[str, list[str]] = {"osmeter": ["osmeter"]}
    for path in HARNESS.rglob("*.py"):
        parts = path.relative_to(HARNESS.parent).with_suffix("").parts
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        if parts[-1] != "__main__":  # it runs the command line when imported
            found.setdefault(parts[-1], []).append(".".join(parts))
    return found


def _resolves(chain: list[str], module: str) -> bool:
    import importlib

    obj, name = importlib.import_module(module), module
    for word in chain:
        if hasattr(obj, word):
            obj, name = getattr(obj, word), f"{name}.{word}"
            continue
        try:
            obj, name = importlib.import_module(f"{name}.{word}"), f"{name}.{word}"
        except ImportError:
            return False
    return True


def unresolved_names(text: str, modules: dict[str, list[str]], named: set[str]) -> list[str]:
    """The dotted names a text cites that name nothing: `named` holds the probes' and ids' names and their
    leading words."""
    bad = []
    for token in dict.fromkeys(m.group(1) for m in DOTTED.finditer(text)):
        chain = token.split(".")
        if chain[0] not in modules or chain[-1].lower() in FILE_SUFFIXES or token in named or chain[0] == "conditions":
            continue
        if not any(_resolves(chain[1:], m) for m in modules[chain[0]]):
            bad.append(token)
    return bad


def _prose(path: Path) -> str:
    """A module's docstrings and comments (its code names what exists, or it would not run)."""
    import io
    import tokenize

    src = path.read_text()
    parts = [ast.get_docstring(n) or "" for n in ast.walk(ast.parse(src))
             if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]
    parts += [t.string for t in tokenize.generate_tokens(io.StringIO(src).readline) if t.type == tokenize.COMMENT]
    return "\n".join(parts)


def test_every_module_and_name_the_docs_and_docstrings_cite_exists():
    """docs/, the READMEs and the harness's docstrings and comments cite code by dotted name
    (readings.measurement_clock, inference.variance_split); each names a module, or an attribute of one, that
    exists, so a function moved to another module leaves no text pointing at its old home (issue 58 found
    interference.noisy_runs, stats.variance_split, compare.clock_adjust and runner.choose_cpu). The dated
    notes are left as they were written: they cite the tree of their day."""
    modules = harness_modules()
    named = set()
    for name in [*(p.name for p in registry.PROBES), *(m.id for _, m in registry.all_measures())]:
        words = name.split(".")
        named.update(".".join(words[:k]) for k in range(2, len(words) + 1))
    texts = {p: p.read_text() for p in [*ROOT.glob("docs/*.md"), ROOT / "README.md", ROOT / "tests" / "README.md",
                                        *ROOT.glob("bench/*/README.md")]}
    texts.update({p: _prose(p) for p in HARNESS.rglob("*.py")})
    bad = sorted(f"{p.relative_to(ROOT)}: {b}" for p, t in texts.items() for b in unresolved_names(t, modules, named))
    assert bad == []
    # the check itself: a moved name is found; an id, a file, a module's name and code called are not
    assert unresolved_names("store.load_side, stats.variance_split, fs.meta, results.json, osmeter.core.stats, "
                            "per_id.clock_adjust(row)", modules, {"fs.meta"}) == ["stats.variance_split"]


MAX_C_FUNCTION_LINES = 120
# The C functions over MAX_C_FUNCTION_LINES, each at its length: none may grow and none may join them; each
# leaves this list as it is split. Issue 58 found 6 (the longest 205 lines); all are split.
C_LONG_TODAY: dict[str, int] = {}


def c_functions(text: str) -> dict[str, int]:
    """The functions of a C file in this tree's style (the body's braces alone on their lines) and their
    lengths, from the first line of the definition to the closing brace."""
    lines = text.splitlines()
    found = {}
    for i, ln in enumerate(lines):
        if ln != "{":
            continue
        start = i
        while start > 0 and lines[start - 1].strip() and not lines[start - 1].startswith(("}", "#", " *", "/*")):
            start -= 1
        name = re.findall(r"(\w+)\s*\(", " ".join(lines[start:i]))
        end = next((k for k in range(i + 1, len(lines)) if lines[k] == "}"), len(lines) - 1)
        if name:
            found[name[0] if name[0] not in ("static", "inline") else name[-1]] = end - start + 1
    return found


def test_no_c_function_grows_past_120_lines():
    """A C function a newcomer reads is one step, as a Python one is (80 lines there): the ones longer
    today are listed at their length, to be split, and may not grow; no other passes 120."""
    over, listed = {}, {}
    for path in sorted((ROOT / "bench").rglob("*.c")):
        for name, n in c_functions(path.read_text()).items():
            key = f"{path.relative_to(ROOT).as_posix()}:{name}"
            listed[key] = n
            if n > max(MAX_C_FUNCTION_LINES, C_LONG_TODAY.get(key, 0)):
                over[key] = n
    assert over == {}
    assert [k for k in C_LONG_TODAY if listed.get(k, 0) <= MAX_C_FUNCTION_LINES] == []  # split: off the list
    assert c_functions("static int\nf(int a,\n  int b)\n{\n    return a;\n}\n\nvoid g(void)\n{\n}\n") == {"f": 6, "g": 3}
