"""compare's table and forest plots as LaTeX, the body of the document
`osmeter compare --tex` writes (report/latex.py writes it and builds the
PDF)."""
from __future__ import annotations

from pathlib import Path

from osmeter.analysis.formats.text import describe_side, method_line, pct_or_dash
from osmeter.analysis.kparts import moved_text
from osmeter.analysis.model import DIRECTIONS, Comparison, verdict_text
from osmeter.analysis.verdicts import area_changes, counts
from osmeter.present.values import esc, fmt_value, tex_file_name
from osmeter.results.writer import save_figure


def to_latex(c: Comparison, figdir: Path, prefix: str = "compare") -> str:
    """A LaTeX section: the sides, the method, the conditions that differ,
    the change per area, a forest plot per area and the table. Figures are
    written to figdir and included by their names relative to the document."""
    from osmeter.present.plots import forest, plt

    la, lb = c.labels
    out = [r"\section{Before and after}",
           esc(describe_side(la, c.a)) + r"\\", esc(describe_side(lb, c.b)), "",
           r"\paragraph{Method.} " + esc(method_line(c)[0].upper() + method_line(c)[1:]) + ".", ""]
    if c.conditions:
        out += [r"\paragraph{Conditions that differ.} Every recorded fact of the machine and the run that is not "
                r"the same on both sides; a side whose runs disagree among themselves lists each value.",
                r"{\small\begin{longtable}{@{}p{0.3\linewidth}p{0.32\linewidth}p{0.32\linewidth}@{}}", r"\toprule",
                f"Condition & {esc(la)} & {esc(lb)} \\\\", r"\midrule", r"\endhead"]
        out += [f"\\path{{{path_safe(k)}}} & {esc(va)} & {esc(vb)} \\\\" for k, va, vb in c.conditions]
        out += [r"\bottomrule", r"\end{longtable}}"]
    else:
        out.append(r"\paragraph{Conditions.} Every recorded condition is the same on both sides.")
    if c.notes:
        out += [r"\paragraph{Notes.}", r"\begin{itemize}"] + [f"\\item {esc(n)}" for n in c.notes] + [r"\end{itemize}"]
    per = area_changes(c.rows)
    tally = ", ".join(f"{n} {esc(v)}" for v, n in counts(c.rows).items())
    out += [r"\paragraph{Summary.} " + f"Over {len(c.rows)} ids: {tally}."
            + (" The geometric mean of the cost ratio per area (time per operation; rates inverted, so above 1 "
               f"means {esc(lb)} is slower): " + "; ".join(f"{esc(a)} {g:.3f} ({n} ids)" for a, g, n in per) + "."
               if per else ""), ""]
    figdir.mkdir(parents=True, exist_ok=True)
    areas = list(dict.fromkeys(r.area for r in c.rows))
    for area in areas:
        rows = [r for r in c.rows if r.area == area]
        fig = forest(rows, f"{area}: {lb} against {la}", c.min_change, c.labels)
        name = f"{tex_file_name(prefix)}-{tex_file_name(area)}.pdf"
        save_figure(fig, figdir / name, bbox_inches="tight")
        plt.close(fig)
        out += [r"\begin{figure}[H]\centering",
                f"\\includegraphics[width=0.85\\linewidth]{{{tex_file_name(figdir.name)}/{name}}}",
                r"\end{figure}"]
    changed = [r for r in c.rows if r.parts and r.verdict in DIRECTIONS]
    if changed:
        from osmeter.present.plots import kernel_path_change

        out += [r"\paragraph{Which part moved.} Where both sides were traced (\texttt{--kernel-paths}), each "
                r"component of a changed id's kernel path (its traced runs' mean time per operation) is compared "
                r"like the ids themselves; the bars stack the components of each side, the changed ones hatched.",
                r"\begin{itemize}"] + [f"\\item {esc(r.id)}: {esc(moved_text(r))}" for r in changed] + [r"\end{itemize}"]
        for k, r in enumerate(changed):
            fig = kernel_path_change(r, c.labels)
            name = f"{tex_file_name(prefix)}-kpath-{k}.pdf"
            save_figure(fig, figdir / name)
            plt.close(fig)
            out += [r"\begin{figure}[H]\centering", f"\\includegraphics{{{tex_file_name(figdir.name)}/{name}}}",
                    r"\end{figure}"]
    out += [r"{\small\begin{longtable}{@{}lrrrrrrl@{}}", r"\toprule",
            f"Measurement & {esc(la)} & {esc(lb)} & {esc(lb)}/{esc(la)} & 95\\% interval & $q$ & Detectable & "
            f"Verdict \\\\", r"\midrule", r"\endhead"]
    for r in c.rows:
        out.append(f"{esc(r.id)} & {esc(fmt_value(r.median_a, r.unit))} & {esc(fmt_value(r.median_b, r.unit))} & "
                   f"{r.ratio:.3f} & {r.ci[0]:.3f}--{r.ci[1]:.3f} & {r.q:.2g} & {esc(pct_or_dash(r.mdc))} & "
                   f"{esc(verdict_text(r))} \\\\")
    out += [r"\bottomrule", r"\end{longtable}}", ""]
    return "\n".join(out)


def path_safe(s: str) -> str:
    """Text for \\path{...}: braces would end it early."""
    return s.replace("{", "(").replace("}", ")")
