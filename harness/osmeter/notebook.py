"""The notebook (notebooks/estimates_vs_measured.ipynb) executed into a
results directory: notebook.ipynb with its outputs, and notebook.html
beside it (nbconvert), so its tables and figures can be read in any
browser without starting Jupyter. `osmeter notebook DIR` opens it in
Jupyter's own front end (notebook 7)."""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from .results import write_text_atomic

SOURCE = Path("notebooks") / "estimates_vs_measured.ipynb"


def _parameters(results: Path, estimates: Path | None, root: Path) -> str:
    """The notebook's parameters cell, filled in (papermill's idea: the
    executed copy says what it read, and runs again as it is)."""
    return "\n".join([
        "# Parameters (filled in by osmeter when it executed this notebook)",
        "import os",
        f"RESULTS = {json.dumps(str(results))}",
        f"ESTIMATES = {json.dumps(str(estimates) if estimates else '')}",
        f"OSMETER_ROOT = {json.dumps(str(root))}",
        'COMPARE_A = os.environ.get("OSMETER_COMPARE_A", "")',
        'COMPARE_B = os.environ.get("OSMETER_COMPARE_B", "")',
    ])


def execute(run_dir: Path, estimates: Path | None, root: Path, timeout: float = 600) -> tuple[bool, str]:
    """Runs the notebook on run_dir's results and writes notebook.ipynb and
    notebook.html there. (ok, message). A cell that fails still leaves both
    files, its error shown in its output, and ok False."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
    from nbconvert import HTMLExporter

    run_dir = run_dir.resolve()
    nb = nbformat.read(root / SOURCE, as_version=4)
    params = next((c for c in nb.cells if c.cell_type == "code" and c.source.startswith("# Parameters")), None)
    if params is None:
        return False, f"{root / SOURCE} has no '# Parameters' cell"
    params.source = _parameters(run_dir, (estimates or root / "estimates" / "example.toml").resolve(), root.resolve())
    failed = ""
    try:
        # (the kernel listens on 127.0.0.1 only; its warning about that is not the user's business)
        NotebookClient(nb, timeout=timeout, kernel_name="python3", extra_arguments=["--IPKernelApp.log_level=ERROR"],
                       resources={"metadata": {"path": str(root / SOURCE.parent)}}).execute()
    except CellExecutionError as e:
        failed = str(e).strip().splitlines()[-1] if str(e).strip() else "a cell failed"
    except Exception as e:  # the kernel would not start, or died: say so, keep the run
        failed = f"{type(e).__name__}: {e}"
    ipynb = run_dir / "notebook.ipynb"
    write_text_atomic(ipynb, nbformat.writes(nb))
    html, _ = HTMLExporter().from_notebook_node(nb)
    write_text_atomic(run_dir / "notebook.html", html)
    if failed:
        return False, f"the notebook failed ({failed}); its outputs so far are in {ipynb}"
    return True, f"notebook: {ipynb} (and notebook.html)"


def front_end() -> str | None:
    """Jupyter's notebook 7 front end in this Python's environment."""
    exe = Path(sys.executable).parent / "jupyter-notebook"
    return str(exe) if exe.exists() else shutil.which("jupyter-notebook")


def open_in_jupyter(run_dir: Path, estimates: Path | None, root: Path, extra: list[str]) -> int:
    """Executes the notebook into run_dir when it is not there yet, then
    starts notebook 7 on it (the server runs until Ctrl-C)."""
    ipynb = run_dir / "notebook.ipynb"
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
