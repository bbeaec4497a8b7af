"""present/: how a value is written (with its unit, in a text table, in
Markdown, in LaTeX), each once for every output; the text from a run that
reaches a terminal, a notebook or TeX arrives as literal text."""
from __future__ import annotations

import pytest

from osmeter.present.values import (cell, convert, esc, fmt_value, markdown_table, md, printable, tex_file_name,
                                    text_table)


@pytest.mark.parametrize("v,unit,want", [
    (12.345, "ns", "12.3 ns"), (123.45, "ns", "123.5 ns"), (1500.0, "ns", "1.5 us"), (2.5e6, "ns", "2.5 ms"),
    (3e9, "ns", "3 s"), (512, "bytes", "512 bytes"), (1536, "bytes", "1.5 KiB"), (3 * 2**30, "bytes", "3 GiB"),
    (12345.6, "MB/s", "12,346 MB/s"), (0.5, "cycles", "0.5 cycles"), (None, "ns", "-"), (float("nan"), "ns", "-"),
    (float("inf"), "ns", "-"),
])
def test_a_value_is_written_with_its_unit_at_a_sensible_precision(v, unit, want):
    assert fmt_value(v, unit) == want


def test_a_rate_and_its_time_per_unit_convert_both_ways_and_nothing_else_does():
    assert convert(1000.0, "MB/s", "ns/B") == pytest.approx(1.0)
    assert convert(convert(250.0, "MB/s", "ns/B"), "ns/B", "MB/s") == pytest.approx(250.0)
    assert convert(7.0, "ns", "ns") == 7.0 and convert(None, "MB/s", "ns/B") is None
    with pytest.raises(ValueError):
        convert(1.0, "ns", "MB/s")


def test_a_text_table_aligns_numbers_right_names_left_and_shows_control_characters():
    got = text_table(["id", "median"], [["cpu.call", "1.2 ns"], ["a\x1b[2Jb\nc", "10.5 ns"]]).splitlines()
    assert got[0] == "id           median" and set(got[1]) == {"-", " "}
    assert got[2] == "cpu.call     1.2 ns"
    assert got[3] == "a^[[2Jb^Jc  10.5 ns"  # the escape and the newline in caret notation: one line, no cursor move
    assert len(got) == 4 and len({len(x) for x in got[1:]}) == 1
    assert printable("ok\x9bx\x7f") == "ok\\x9bx^?" and printable("plain") == "plain"


def test_markdown_shows_markup_from_a_run_as_literal_text():
    assert md("<img src=x onerror=1>") == "&lt;img src=x onerror=1&gt;"
    assert md("[a](http://x) *b* |c|") == r"\[a\]\(http://x\) \*b\* \|c\|"
    assert md("two\nlines") == "two lines"
    table = markdown_table(["id", "v"], [["a|b", "1"]]).splitlines()
    assert table == ["| id | v |", "|---|---|", r"| a\|b | 1 |"]


@pytest.mark.parametrize("s,want", [
    ("50% & $5 #1", r"50\% \& \$5 \#1"), ("a_b", r"a\_\allowbreak{}b"), (r"\input{x}", r"\textbackslash{}input\{x\}"),
    ("~^", r"\textasciitilde{}\textasciicircum{}"), ("--dirty", "-{}-dirty"), ("±3 µs", r"$\pm$3 \textmu{}s"),
    ("tab\there", "tab here"), ("bell\x07", r"bell\textasciicircum{}G"), ("漢", "[U+6F22]"),
])
def test_latex_text_escapes_every_special_and_names_what_the_fonts_lack(s, want):
    assert esc(s) == want


def test_a_latex_cell_types_the_bound_and_a_file_name_keeps_only_safe_characters():
    assert cell(">= 3 runs") == r"$\geq$ 3 runs"
    assert tex_file_name("cpu.call/../x}") == "cpu_call____x_" and tex_file_name("") == "_"
