"""The notebook (notebooks/estimates_vs_measured.ipynb) executed into a
results directory: notebook.ipynb with its outputs, and notebook.html
beside it (nbconvert), so its tables and figures can be read in any
browser without starting Jupyter. `osmeter notebook DIR` opens it in
Jupyter's own front end (notebook 7)."""
from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from osmeter.core.errors import RunError
from osmeter.results import reader, store
from osmeter.results.writer import write_text_atomic

SOURCE = Path("notebooks") / "estimates_vs_measured.ipynb"


def _parameters(results: Path, estimates, root: Path) -> str:
    """The notebook's parameters cell, filled in (papermill's idea: the
    executed copy says what it read, and runs again as it is). Paths are
    relative to the results directory, where the executed copy lives."""
    rel = lambda p: os.path.relpath(p, results)  # noqa: E731
    est = estimates.path if estimates is not None and estimates.path else None
    return "\n".join([
        "# Parameters (filled in by osmeter when it executed this notebook; paths relative to this directory)",
        "import os",
        'RESULTS = "."',
        f"ESTIMATES = {json.dumps(rel(est.resolve()) if est else '')}",
        f"ESTIMATES_ARE_THE_EXAMPLE = {bool(estimates is not None and estimates.example)}",
        f"OSMETER_ROOT = {json.dumps(rel(root))}",
        'QUOTE = "mean"  # the measured figure: "mean" (CSE 221) or "median"',
        'COMPARE_A = os.environ.get("OSMETER_COMPARE_A", "")',
        'COMPARE_B = os.environ.get("OSMETER_COMPARE_B", "")',
        'FLEET = os.environ.get("OSMETER_FLEET", "")  # a fleet directory; by default the one this run is a host of',
    ])


def area_tables(doc: dict, est: dict, quote: str = "mean") -> list[tuple[str, str]]:
    """(area title, Markdown table) per area: the report's columns, numbers
    right-aligned, the reasoning of each estimate under its table."""
    from osmeter.present.rows import KERNEL_HEAD, KERNEL_NOTE, REPORT_HEAD, estimate_rows, traced
    from osmeter.present.values import md
    from osmeter.probes import registry

    curves = {m.id for _, m in registry.all_measures() if m.curve}
    by_id = {m["id"]: m for m in doc["measurements"]}
    out = []
    for area in registry.AREAS:
        ms = [by_id[i] for p in registry.PROBES if p.area == area.name for i in p.ids() if i in by_id]
        rows = estimate_rows(ms, est, curves, quote)
        if not rows:
            continue
        kernel = traced(rows)
        head = REPORT_HEAD + ((KERNEL_HEAD,) if kernel else ())
        lines = ["| " + " | ".join(map(md, head)) + " |", "|:---|:---|" + "---:|" * (len(head) - 2)]
        lines += ["| " + " | ".join(map(md, r.report_cells() + ((r.kernel_cell(),) if kernel else ()))) + " |"
                  for r in rows]
        why = [f"- **{md(r.id)}**: {md(est[r.id].note)}" for r in rows if r.id in est and est[r.id].note]
        why += [f"- *{md(KERNEL_NOTE)}*"] if kernel else []
        out.append((area.title, "\n".join(lines + ([""] + why if why else []))))
    return out


def tail_table(doc: dict) -> str:
    """Every latency's tail: p50, p99, p99.9 and max where its samples support them."""
    from osmeter.present.values import fmt_value, md

    lines = ["| id | p50 | p90 | p99 | p99.9 | max | n |", "|:---|---:|---:|---:|---:|---:|---:|"]
    for m in doc["measurements"]:
        t = m.get("tail")
        if not t:
            continue
        cells = [fmt_value(t.get(k), m["unit"]) if t.get(k) is not None else "n too small"
                 for k in ("p50", "p90", "p99", "p99.9", "max")]
        lines.append("| " + " | ".join(map(md, [m["id"], *cells, str(m.get("n"))])) + " |")
    return "\n".join(lines)


def between_runs(run_dir: Path) -> tuple[str, list]:
    """For a run of a campaign of two runs or more, the report's 'Between
    runs' (stability.between_runs): its method and table as Markdown, and
    its figures; ("", []) for any other run."""
    from osmeter.analysis.model import DESIGNS
    from osmeter.analysis.stability import BETWEEN_HEAD, DETECT, between_cells, between_method
    from osmeter.analysis.stability import between_runs as of_campaign
    from osmeter.present import plots
    from osmeter.present.values import markdown_table, md

    try:
        got = of_campaign(run_dir)
    except ValueError as e:
        return f"This run belongs to a campaign whose runs could not be read: {md(e)}.", []
    if got is None:
        return "", []
    runs, rows = got
    return (md(between_method(len(runs))) + "\n\n" + markdown_table(BETWEEN_HEAD, between_cells(rows)),
            plots.detectable_changes(rows, DESIGNS, DETECT))


def _end_kernel(client) -> None:
    """No kernel left and nothing at exit: nbclient registers its clean-up with atexit before the kernel
    answers, and leaves it there when the kernel never does (the clean-up then fails at exit, its manager
    gone)."""
    atexit.unregister(client._cleanup_kernel)
    if getattr(client, "km", None) is not None:
        with contextlib.suppress(Exception):
            client._cleanup_kernel()


def kernel_timeout(default: int = 600) -> int:
    """Seconds the kernel has to start and each cell to run: OSMETER_NOTEBOOK_TIMEOUT, else default."""
    v = os.environ.get("OSMETER_NOTEBOOK_TIMEOUT", "")
    if not v:
        return default
    if not v.isdigit() or not 0 < int(v) < 10**6:
        raise RunError(f"OSMETER_NOTEBOOK_TIMEOUT={v!r}: whole seconds, 1 or more")
    return int(v)


def execute(run_dir: Path, estimates, root: Path, timeout: int | None = None) -> tuple[bool, str]:
    """Runs the notebook on run_dir's results and writes notebook.ipynb and
    notebook.html there. (ok, message). A cell that fails still leaves both
    files, its error shown in its output, and ok False; so does a kernel that
    does not answer within the timeout (kernel_timeout()), and no kernel is
    left."""
    timeout = timeout or kernel_timeout()
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
    from nbconvert import HTMLExporter
    from traitlets.config import Config

    run_dir = run_dir.resolve()
    nb = nbformat.read(root / SOURCE, as_version=4)
    params = next((c for c in nb.cells if c.cell_type == "code" and c.source.startswith("# Parameters")), None)
    if params is None:
        return False, f"{root / SOURCE} has no '# Parameters' cell"
    params.source = _parameters(run_dir, estimates, root.resolve())
    failed = ""
    with tempfile.TemporaryDirectory(prefix="osmeter-kernel-") as sockets:
        # the kernel's channels on Unix sockets, not TCP on the loopback: a shaped loopback (tc on lo, as
        # before/after users set up) does not reach them
        cfg = Config()
        cfg.KernelManager.transport = "ipc"
        cfg.KernelManager.ip = str(Path(sockets) / "k")
        client = NotebookClient(nb, timeout=timeout, startup_timeout=timeout, kernel_name="python3", config=cfg,
                                extra_arguments=["--IPKernelApp.log_level=ERROR"],
                                resources={"metadata": {"path": str(run_dir)}})
        try:
            client.execute()
        except CellExecutionError as e:
            failed = str(e).strip().splitlines()[-1] if str(e).strip() else "a cell failed"
        except Exception as e:  # the kernel would not start, or died: say so, keep the run
            failed = f"{type(e).__name__}: {e}"
        finally:
            _end_kernel(client)
    ipynb = run_dir / store.NOTEBOOK
    write_text_atomic(ipynb, nbformat.writes(nb))
    host = ""
    try:
        host = reader.read_json(run_dir / store.RESULTS).get("machine", {}).get("hostname", "")
    except (OSError, ValueError, AttributeError):
        pass
    nb.metadata["title"] = f"osmeter: {host}" if host else "osmeter"  # the HTML page's title
    html, _ = HTMLExporter().from_notebook_node(nb)
    write_text_atomic(run_dir / store.NOTEBOOK_HTML, html)
    if failed:
        return False, f"the notebook failed ({failed}); its outputs so far are in {ipynb}"
    return True, f"notebook: {ipynb} (and {store.NOTEBOOK_HTML})"


def front_end() -> str | None:
    """Jupyter's notebook 7 front end in this Python's environment."""
    exe = Path(sys.executable).parent / "jupyter-notebook"
    return str(exe) if exe.exists() else shutil.which("jupyter-notebook")


def open_in_jupyter(run_dir: Path, estimates, root: Path, extra: list[str]) -> int:
    """Executes the notebook into run_dir when it is not there yet, then
    starts notebook 7 on it (the server runs until Ctrl-C)."""
    ipynb = run_dir / store.NOTEBOOK
    if not ipynb.exists():
        ok, msg = execute(run_dir, estimates, root)
        print(msg, file=sys.stdout if ok else sys.stderr)
    exe = front_end()
    if exe is None:
        print("osmeter: Jupyter's front end is not installed: ./osmeter --setup installs it into .venv "
              "(the 'notebook' package)", file=sys.stderr)
        return 2
    env = dict(os.environ, OSMETER_ROOT=str(root))
    argv = [exe, f"--ServerApp.root_dir={run_dir.resolve()}", *(["--allow-root"] if os.geteuid() == 0 else []),
            *extra, str(ipynb.resolve())]
    sys.stdout.flush()
    os.execve(exe, argv, env)  # Jupyter in this process's place: Ctrl-C and signals reach it alone
