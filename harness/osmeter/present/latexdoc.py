"""A LaTeX document of osmeter's: report/<template> with its <<FIELD>>
markers and the shared preamble filled (report.tex for a run, compare.tex for
a comparison or a fleet), and its PDF, built so that no half-written PDF is
ever left."""
from __future__ import annotations

import datetime as dt
import os
import re
import shutil
import subprocess
from pathlib import Path

from osmeter.core.tree import repo_root
from osmeter.present.values import esc
from osmeter.results.writer import write_text_atomic


def fill(template: str, path: Path, fields: dict[str, str], root: Path | None = None) -> Path:
    """report/<template> with its <<FIELD>> markers (and the shared preamble) filled, written to path."""
    root = root or repo_root()
    fields = {"PREAMBLE": (root / "report" / "preamble.tex").read_text(), **fields}
    tex = (root / "report" / template).read_text()
    return write_text_atomic(path, re.sub(r"<<([A-Z]+)>>", lambda mo: fields[mo.group(1)], tex))


def document(path: Path, title: str, body: str) -> Path:
    """A document of its own around one section (compare --tex, a fleet): compare.tex."""
    return fill("compare.tex", path, {"TITLE": esc(title), "DATE": esc(dt.date.today().isoformat()), "BODY": body})


LATEX_HINT = ("LaTeX is not installed; the .tex is ready. To get the PDF: sudo apt-get install texlive-latex-base "
              "texlive-latex-recommended texlive-fonts-recommended, then ./osmeter report DIR")


def latex_installed() -> bool:
    return bool(shutil.which("latexmk") or shutil.which("pdflatex"))


def build_pdf(tex: Path) -> tuple[Path | None, str]:
    """(pdf, message). Uses latexmk, else pdflatex twice (longtable widths).
    LaTeX writes under a job name of its own (<stem>-partial) and the PDF
    takes its name only once whole: an interrupted or failed build leaves no
    half-written PDF (and the previous one, if any, as it was; a failed one
    its log). A whole one leaves only the PDF beside the .tex."""
    cwd = tex.parent
    job = f"{tex.stem}-partial"
    if shutil.which("latexmk"):
        cmds = [["latexmk", "-pdf", "-interaction=nonstopmode", "-halt-on-error", f"-jobname={job}", tex.name]]
    elif shutil.which("pdflatex"):
        cmds = [["pdflatex", "-interaction=nonstopmode", "-halt-on-error", f"-jobname={job}", tex.name]] * 2
    else:
        return None, f"no PDF: {LATEX_HINT}"
    partial, pdf = cwd / f"{job}.pdf", tex.with_suffix(".pdf")
    try:
        for cmd in cmds:
            r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)
            if r.returncode != 0:
                log = cwd / f"{job}.log"
                tail = log.read_text(errors="replace")[-1500:] if log.exists() else r.stdout[-1500:]
                return None, f"LaTeX failed on {tex}:\n{tail}"
        os.replace(partial, pdf)
    finally:
        partial.unlink(missing_ok=True)
    for f in cwd.glob(f"{job}.*"):  # LaTeX's own files (aux, log, fls ...): kept only when it failed
        f.unlink(missing_ok=True)
    return pdf, f"PDF: {pdf}"
