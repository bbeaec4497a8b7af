"""JUnit XML (`osmeter compare --junit FILE`, `osmeter decide --junit FILE`), which CI systems show as tests:
one test suite of the comparison, one test case per id (classname osmeter.<area>, name the id).

- A failure: the id is worse on B (compare's verdict "slower": a longer time or a lower rate, significant and
  at least the smallest change that counts). Its message gives B/A, the interval and p.
- Skipped: compare cannot tell yet ("too few runs"), or, of decide, an id not decided when it stopped.
- Passed: every other verdict (unchanged, equivalent, better, or a change in a unit with no better way).
  Its system-out line gives the verdict and B/A, so a CI page shows what each id did.
- The suite's properties: the conditions that differ between the sides, and compare's notes.
A test case has no time: osmeter measured the id, not a test; the attribute is left out as JUnit allows.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET

NAME = "junit"
OPTION = ("--junit", "FILE", "also write a JUnit XML: a test per id, a failure for each id worse on B")
ORDER = 50


def _num(v: float) -> str:
    return f"{v:.4g}" if isinstance(v, (int, float)) and math.isfinite(v) else "n/a"


def case_line(r) -> str:
    return (f"{r.id}: {r.verdict}; B/A {_num(r.ratio)} (95% {_num(r.ci[0])}..{_num(r.ci[1])}), p {_num(r.p)}, "
            f"{r.n_a} v {r.n_b} runs; A {_num(r.figure_a)} {r.unit}, B {_num(r.figure_b)} {r.unit}")


def suite(rows, name: str, conditions=(), notes=(), undecided=frozenset()) -> str:
    """The rows as a JUnit document: failed where verdict is "slower", skipped where compare could not tell
    or where the id is in undecided."""
    from osmeter.analysis.model import area_of

    top = ET.Element("testsuites", name="osmeter")
    s = ET.SubElement(top, "testsuite", name=name)
    props = ET.SubElement(s, "properties")
    for k, va, vb in conditions:
        ET.SubElement(props, "property", name=f"condition differs: {k}", value=f"{va} -> {vb}")
    for k, n in enumerate(notes):
        ET.SubElement(props, "property", name=f"note {k + 1}", value=str(n))
    failures = skipped = 0
    for r in rows:
        case = ET.SubElement(s, "testcase", classname=f"osmeter.{area_of(r.id)}", name=r.id)
        line = case_line(r)
        if r.verdict == "slower":
            failures += 1
            ET.SubElement(case, "failure", message=f"worse on B: B/A {_num(r.ratio)}", type="slower").text = line
        elif r.verdict == "too few runs" or r.id in undecided:
            skipped += 1
            need = f": {r.runs_needed} runs a side would tell" if r.runs_needed else ""
            ET.SubElement(case, "skipped", message=f"cannot tell yet{need}").text = line
        ET.SubElement(case, "system-out").text = line
    for el in (top, s):
        el.set("tests", str(len(rows)))
        el.set("failures", str(failures))
        el.set("errors", "0")
    s.set("skipped", str(skipped))
    if not len(props):
        s.remove(props)
    ET.indent(top)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(top, encoding="unicode") + "\n"


def compare_junit(c) -> str:
    la, lb = c.labels
    return suite(c.rows, f"osmeter compare {la} v {lb}", c.conditions, c.notes)


RENDER = {"compare": compare_junit}
