"""The LaTeX format (`osmeter compare --tex FILE`): of two sides, the
before/after section (the sides, the method, the conditions that differ,
a forest plot per area and the table); of a fleet, the Fleet section (also
`osmeter report FLEETDIR`'s). Each is a document of its own
(present/latexdoc.py), its figures beside it, and its PDF."""
from __future__ import annotations

from pathlib import Path

from osmeter.analysis import outliers
from osmeter.analysis.fleet import FleetComparison, table
from osmeter.analysis.formats.plot import fleet_figure
from osmeter.analysis.formats.text import describe_side, method_line, pct_or_dash
from osmeter.analysis.kparts import moved_text
from osmeter.analysis.model import DIRECTIONS, Comparison, verdict_text
from osmeter.analysis.verdicts import area_changes, counts
from osmeter.present.latexdoc import build_pdf, document
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
        out.append(f"{esc(r.id)} & {esc(fmt_value(r.figure_a, r.unit))} & {esc(fmt_value(r.figure_b, r.unit))} & "
                   f"{r.ratio:.3f} & {r.ci[0]:.3f}--{r.ci[1]:.3f} & {r.q:.2g} & {esc(pct_or_dash(r.detectable))} & "
                   f"{esc(verdict_text(r))} \\\\")
    out += [r"\bottomrule", r"\end{longtable}}", ""]
    return "\n".join(out)


def path_safe(s: str) -> str:
    """Text for \\path{...}: braces would end it early."""
    return s.replace("{", "(").replace("}", ")")


def fleet_latex(fc: FleetComparison, figdir: Path, prefix: str = "fleet") -> str:
    """The Fleet section: the hosts and their steps, a figure of every host against the baseline, the
    table, the slow node and the conditions that differ."""
    from osmeter.present.plots import plt

    idx = fc.index
    out = [r"\section{Fleet}",
           esc(f"{len(fc.hosts)} hosts with results ({', '.join(fc.hosts)}), baseline {fc.baseline}; source: "
               f"{idx.get('source', '?')}; hosts run {'all at once' if idx.get('parallel') else 'one after another'}; "
               f"osmeter run {' '.join(idx.get('osmeter_run_args', []))}."), ""]
    basis = {c.basis for c in fc.columns.values()}
    if "within-run" in basis:
        out.append(r"\paragraph{Method.} One run per host: each verdict compares the trials of one run with "
                   r"those of the other, \emph{within-run only}; run each host with \texttt{--runs 3} or more for "
                   r"verdicts against run-to-run drift.")
    else:
        out.append(r"\paragraph{Method.} " + esc(method_line(next(iter(fc.columns.values())))) + ".")
    steps = ("check", "ship", "build", "setup", "run", "fetch")
    out += [r"\paragraph{Hosts and the time of each step (s).}", r"{\small\begin{longtable}{@{}ll" + "r" * len(steps)
            + r"@{}}", r"\toprule", "Host & Status & " + " & ".join(steps) + r" \\", r"\midrule", r"\endhead"]
    for h in idx.get("hosts", []):
        st = h.get("steps", {})
        out.append(f"{esc(h['target'])} & {esc(h['status'])} & "
                   + " & ".join(f"{st[s]:.1f}" if s in st else "--" for s in steps) + r" \\")
    out += [r"\bottomrule", r"\end{longtable}}"]
    for s in fc.skipped:
        out.append(esc(f"No results: {s}.") + r"\\")
    if len(fc.hosts) > 1:
        figdir.mkdir(parents=True, exist_ok=True)
        fig = fleet_figure(fc)
        name = f"{prefix}-ratios.pdf"
        save_figure(fig, figdir / name, bbox_inches="tight")
        plt.close(fig)
        out += [r"\begin{figure}[H]\centering",
                f"\\includegraphics[width=0.85\\linewidth,height=0.8\\textheight,keepaspectratio]"
                f"{{{figdir.name}/{name}}}", r"\end{figure}"]
        head, rows = table(fc)
        out += [r"{\small\begin{longtable}{@{}ll" + "r" * (len(head) - 2) + r"@{}}", r"\toprule",
                " & ".join(esc(h) for h in head) + r" \\", r"\midrule", r"\endhead"]
        out += [" & ".join(esc(c) for c in row) + r" \\" for row in rows]
        out += [r"\bottomrule", r"\end{longtable}}"]
        out += _slow_nodes_latex(fc.outliers, figdir, prefix)
    if fc.conditions:
        out += [r"\paragraph{Conditions that differ across hosts.}",
                r"{\scriptsize\begin{longtable}{@{}p{0.28\linewidth}" + "p{%.2f\\linewidth}" % (0.68 / len(fc.hosts))
                * len(fc.hosts) + r"@{}}", r"\toprule", "Condition & " + " & ".join(esc(x) for x in fc.hosts) + r" \\",
                r"\midrule", r"\endhead"]
        out += [f"\\path{{{path_safe(k)}}} & " + " & ".join(esc(v) for v in vs) + r" \\"
                for k, vs in fc.conditions]
        out += [r"\bottomrule", r"\end{longtable}}"]
    return "\n".join(out) + "\n"


def _slow_nodes_latex(o: outliers.Outliers, figdir: Path, prefix: str) -> list[str]:
    """The slow-node view: its rule, the hosts named by area, the heat map."""
    from osmeter.present.plots import plt

    out = [r"\paragraph{The slow node.}"]
    if o.note:
        return out + [esc(f"Not judged: {o.note}.")]
    out.append(esc(outliers.method(o)))
    if not o.groups:
        out.append(esc("No host lies outside its siblings' spread."))
    else:
        out += [r"\begin{itemize}"]
        for g in o.groups:
            out.append(r"\item " + esc(f"{g.host}, {g.area} ({len(g.flags)} ids): ")
                       + esc("; ".join(outliers.ratio_text(f) for f in g.flags[:8])
                             + (f"; and {len(g.flags) - 8} more" if len(g.flags) > 8 else "")))
        out += [r"\end{itemize}"]
    if o.areas:
        fig = outliers.heat_figure(o)
        name = f"{prefix}-heat.pdf"
        save_figure(fig, figdir / name, bbox_inches="tight")
        plt.close(fig)
        out += [r"\begin{figure}[H]\centering",
                f"\\includegraphics[width=0.8\\linewidth,height=0.5\\textheight,keepaspectratio]"
                f"{{{figdir.name}/{name}}}", r"\caption{" + esc("Each host against its siblings' median, by area: "
                                                            "the median of log2(host / siblings) over the area's ids, "
                                                            "worse positive; * where the host is named.") + "}",
                r"\end{figure}"]
    return out


def _built(tex: Path) -> str:
    pdf, msg = build_pdf(tex)
    return f"compare: {tex}; {msg}"


def _figures(tex: Path) -> Path:
    return tex.parent / f"{tex_file_name(tex.stem)}-figures"


def compare_document(c: Comparison, tex: Path) -> str:
    """A document of its own for `osmeter compare --tex FILE`: the before/after section, its figures in
    FILE's directory (<stem>-figures), and its PDF where LaTeX is installed."""
    document(tex, "osmeter: before and after", to_latex(c, _figures(tex), prefix=tex_file_name(tex.stem)))
    return _built(tex)


def fleet_document(fc: FleetComparison, tex: Path) -> Path:
    """The Fleet section as a document of its own (`osmeter report FLEETDIR` writes FLEETDIR/fleet.tex)."""
    return document(tex, "osmeter: fleet", fleet_latex(fc, _figures(tex), prefix=tex_file_name(tex.stem)))


def fleet_written(fc: FleetComparison, tex: Path) -> str:
    return _built(fleet_document(fc, tex))


# the option of the commands that show a comparison or a fleet (formats/__init__.py), its place among them, and
# what it writes of each kind (the .tex, its figures beside it, the PDF)
OPTION = ("--tex", "FILE", "also write a LaTeX document (forest plots, conditions diff, table); PDF when LaTeX is there")
ORDER = 20
WRITE = {"compare": compare_document, "fleet": fleet_written}
