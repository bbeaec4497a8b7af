"""How a value is written: with its unit (fmt_value, convert), in a text
table, in Markdown and in LaTeX (md, esc, cell), one function each for
every output of osmeter. The rows built of them are rows.py's."""
from __future__ import annotations

import math
from typing import Sequence

from osmeter.core.units import rate_time_pair

QUOTED = "median"  # the figure every output quotes for a measurement: the median across trials


def convert(v: float | None, frm: str, to: str) -> float | None:
    """Between a rate and its time per unit (units.py's pairs: MB/s <-> ns/B,
    IOPS <-> us/IO, ...); the same unit passes through."""
    if v is None or frm == to:
        return v
    pair = rate_time_pair(frm)
    if pair is None or pair[0] != to:
        raise ValueError(f"cannot convert {frm} to {to}")
    return pair[1] / v if v else float("inf")


def fmt_value(v: float | None, unit: str) -> str:
    """A number with a sensible precision, and a human unit for ns and bytes."""
    if v is None or not isinstance(v, (int, float)) or not math.isfinite(v):
        return "-"
    if unit == "bytes" and abs(v) >= 1024:
        for scale, name in ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
            if abs(v) >= scale:
                return f"{v / scale:.3g} {name}" if abs(v / scale) < 1000 else f"{v / scale:,.0f} {name}"
    if unit == "ns":
        for scale, name in ((1e9, "s"), (1e6, "ms"), (1e3, "us")):
            if abs(v) >= scale:
                v, unit = v / scale, name
                break
        if abs(v) >= 1e6:
            return f"{v:.3g} {unit}"
        return f"{v:.3g} {unit}" if abs(v) < 100 else f"{v:.1f} {unit}"
    if abs(v) >= 1e15:
        return f"{v:.3g} {unit}"
    if abs(v) >= 1000:
        return f"{v:,.0f} {unit}"
    return f"{v:.4g} {unit}"


def printable(s) -> str:
    """Text safe for a terminal (names, paths, ids: anything not ours): each
    control character (C0, DEL, C1: a newline, an escape sequence's ESC) in
    caret notation or as \\x9b, so nothing from a run moves the cursor,
    retitles the window or splits a table's line."""
    def one(c: str) -> str:
        o = ord(c)
        if o < 0x20 or o == 0x7F:
            return "^" + chr(o ^ 0x40)
        return f"\\x{o:02x}" if 0x80 <= o < 0xA0 else c
    s = str(s)
    return s if s.isprintable() else "".join(map(one, s))


def text_table(head: Sequence[str], rows: Sequence[Sequence[str]], left: Sequence[int] = (0,)) -> str:
    """Columns padded to their widest cell; numbers to the right, the
    columns named in `left` to the left; a rule under the header. Every
    cell printable()."""
    rows = [tuple(map(printable, head))] + [tuple(map(printable, r)) for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]

    def line(cells):
        return "  ".join(c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    out = [line(rows[0]), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in rows[1:]]
    return "\n".join(x.rstrip() for x in out)


_MD_SPECIAL = set("\\`*_[]()|#!~{}")


def md(s) -> str:
    """Text safe for Markdown that becomes HTML (the notebook): anything from
    a results directory (ids, host facts, notes) shows as the literal text,
    never as markup, a link or HTML (&, <, > as entities; Markdown's
    punctuation backslash-escaped)."""
    out = []
    for c in str(s):
        if c in "&<>":
            out.append({"&": "&amp;", "<": "&lt;", ">": "&gt;"}[c])
        elif c in _MD_SPECIAL:
            out.append("\\" + c)
        elif c in "\r\n\t":
            out.append(" ")
        else:
            out.append(c)
    return "".join(out)


def markdown_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """The same cells as a Markdown table (the notebook), every cell escaped (md)."""
    out = ["| " + " | ".join(map(md, head)) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(map(md, r)) + " |" for r in rows]
    return "\n".join(out)


def tex_file_name(s: str) -> str:
    """A file name safe inside \\includegraphics{...}: ASCII letters, digits,
    - and _ only (an id or a file stem from elsewhere could end the brace
    or carry TeX)."""
    return "".join(c if (c.isascii() and c.isalnum()) or c in "-_" else "_" for c in str(s)) or "_"


# --------------------------------------------------------------- LaTeX text

_ESC = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_\allowbreak{}", "{": r"\{",
        "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


# characters a note or a name may hold that T1 text fonts lack: typeset as math or named
_ESC_WIDE = {"≈": r"$\approx$", "≤": r"$\leq$", "≥": r"$\geq$", "≠": r"$\neq$", "±": r"$\pm$", "×": r"$\times$",
             "÷": r"$\div$", "→": r"$\rightarrow$", "←": r"$\leftarrow$", "∞": r"$\infty$", "−": "-",
             "µ": r"\textmu{}", "μ": r"\textmu{}", "°": r"\textdegree{}", "–": "--", "—": "---", "…": r"\ldots{}",
             "‘": "`", "’": "'", "“": "``", "”": "''", "\u00a0": "~"}


def _esc_char(c: str) -> str:
    if c in _ESC:
        return _ESC[c]
    if c in _ESC_WIDE:
        return _ESC_WIDE[c]
    o = ord(c)
    if c in "\n\r\t":
        return " "
    if o < 0x20 or 0x7F <= o < 0xA0:  # a control character: shown in caret notation, never sent to TeX
        return r"\textasciicircum{}" + ("?" if o == 0x7F else _ESC.get(chr((o & 0x1F) + 0x40), chr((o & 0x1F) + 0x40)))
    if o > 0xFF:  # beyond Latin-1 the fonts have no glyph: named by its code point
        return f"[U+{o:04X}]"
    return c


def esc(s) -> str:
    """Text safe for LaTeX (names, paths, notes: anything not ours): TeX's
    specials escaped, common symbols typeset, control characters shown in
    caret notation, characters the fonts lack named by code point; `--`
    stays two hyphens (an option), not an en dash."""
    return "-{}-".join("".join(map(_esc_char, part)) for part in str(s).split("--"))


def cell(s) -> str:
    """A LaTeX table cell: escaped, with the lower-bound sign typeset."""
    return esc(s).replace(">= ", r"$\geq$ ")
