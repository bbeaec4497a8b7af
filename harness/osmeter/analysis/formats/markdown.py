"""The Markdown format: two sides compared, as the notebook shows them."""
from __future__ import annotations

from osmeter.analysis.formats.text import cells, describe_side, method_line
from osmeter.analysis.kparts import moved_text
from osmeter.analysis.model import DIRECTIONS, Comparison
from osmeter.analysis.verdicts import counts
from osmeter.present.values import markdown_table, md


def markdown(c: Comparison) -> str:
    """For the notebook: the sides, the conditions that differ, the table."""
    la, lb = c.labels
    out = [f"**{md(describe_side(la, c.a))}**  ", f"**{md(describe_side(lb, c.b))}**", ""]
    if c.conditions:
        out += [markdown_table(("condition", la, lb), c.conditions), ""]
    else:
        out += ["Every recorded condition is the same on both sides.", ""]
    out += [f"- {md(n)}" for n in c.notes] + [""] if c.notes else []
    out += [markdown_table(*cells(c)), ""]
    moved = [f"- {md(r.id)}: {md(moved_text(r))}" for r in c.rows if r.parts and r.verdict in DIRECTIONS]
    if moved:
        out += ["**Which part moved** (kernel paths of the traced runs, per operation):", "", *moved, ""]
    out += [md(f"{', '.join(f'{n} {v}' for v, n in counts(c.rows).items())}. ") + f"*Method:* {md(method_line(c))}."]
    return "\n".join(out)


# no option of its own: the notebook renders it (formats/__init__.py)
OPTION = None
ORDER = 40
RENDER = {"compare": markdown}
