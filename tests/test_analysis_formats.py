"""analysis/formats/: the reporters of compare, the fleet view and
stability. A format is its module alone: the commands take its option and
its output from the catalogue (which kinds it shows, its option, its order),
and an option for a kind its format does not show is refused before
anything is printed or written."""
from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from osmeter import cli
from osmeter.analysis import formats
from test_analysis_compare import make_run

# a format of the test's own: each id of two sides, or of several runs, as a JSON line
JSONL_FORMAT = '''"""Each id as a JSON line."""
import json

def _compare(c):
    return "".join(json.dumps({"id": r.id, "ratio": r.ratio}) + "\\n" for r in c.rows)

def _stability(runs):
    return json.dumps({"runs": len(runs)}) + "\\n"

OPTION = ("--jsonl", "FILE", "also write each id as a JSON line")
ORDER = 50
RENDER = {"compare": _compare, "stability": _stability}
'''


@pytest.fixture
def jsonl_format(tmp_path, monkeypatch):
    """The JSON-lines format, a file in a directory the formats package also searches."""
    d = tmp_path / "more_formats"
    d.mkdir()
    (d / "jsonl.py").write_text(JSONL_FORMAT)
    monkeypatch.setattr(formats, "__path__", [*formats.__path__, str(d)])
    yield
    sys.modules.pop(f"{formats.__name__}.jsonl", None)


def _runs(tmp_path, n=2, scale=1.0):
    rng = np.random.default_rng(3)
    out = []
    for k in range(n):
        d = tmp_path / f"run{scale}-{k}"
        make_run(d, {"cpu.a": ("ns", scale * 100 * np.exp(rng.normal(0, 0.01, 30))),
                     "cpu.b": ("ns", 50 * np.exp(rng.normal(0, 0.01, 30)))})
        out.append(d)
    return out


def _help(command: str, capsys) -> str:
    with pytest.raises(SystemExit):
        cli.main([command, "--help"])
    return capsys.readouterr().out


def test_the_catalogue_gives_each_command_the_options_of_the_formats_that_show_its_kinds(capsys):
    """compare (two sides, a fleet) has --csv, --tex, --plot and --junit in that
    order; stability has none of them: no format with an option shows
    several runs' spread; the exports (no option) are export's --format choices.
    Mutant caught: a command given every format's option."""
    assert [f.__name__.rsplit(".", 1)[1] for f in formats.catalogue()] == [
        "text", "csv_table", "latex", "plot", "markdown", "junit", "benchstat", "pyperf", "openmetrics", "gab"]
    assert formats.terminal().__name__.endswith(".text")
    assert sorted(formats.exporters()) == ["benchstat", "gab-bigger", "gab-smaller", "openmetrics", "pyperf"]
    h = _help("compare", capsys)
    assert h.index("--csv FILE") < h.index("--tex FILE") < h.index("--plot FILE") < h.index("--junit FILE") \
        < h.index("--min-change")
    assert "FILE" not in _help("stability", capsys)
    for fmt in formats.catalogue():
        assert set(getattr(fmt, "RENDER", {})) | set(getattr(fmt, "WRITE", {})) <= set(formats.KINDS), fmt


def test_a_new_format_is_one_file_and_every_command_that_shows_its_kinds_writes_it(tmp_path, jsonl_format, capsys):
    """The JSON-lines format, one file, shows two sides and several runs:
    compare and stability take --jsonl and write what it renders, beside
    their terminal output, which stays as it was."""
    a, b = _runs(tmp_path, 1), _runs(tmp_path, 1, scale=1.3)
    assert "--jsonl FILE" in _help("compare", capsys) and "--jsonl FILE" in _help("stability", capsys)
    assert cli.main(["compare", str(a[0]), str(b[0])]) == 0
    plain = capsys.readouterr().out
    assert cli.main(["compare", str(a[0]), str(b[0]), "--jsonl", str(tmp_path / "c.jsonl")]) == 0
    assert capsys.readouterr().out == plain
    got = {d["id"]: d["ratio"] for d in map(json.loads, (tmp_path / "c.jsonl").read_text().splitlines())}
    assert set(got) == {"cpu.a", "cpu.b"} and got["cpu.a"] == pytest.approx(1.3, rel=0.02)
    assert cli.main(["stability", *map(str, a + b), "--jsonl", str(tmp_path / "s.jsonl")]) == 0
    assert json.loads((tmp_path / "s.jsonl").read_text()) == {"runs": 2}
    assert capsys.readouterr().out.startswith("2 runs.")


def test_an_option_for_a_kind_its_format_does_not_show_is_refused_before_anything_is_written(
        tmp_path, jsonl_format, capsys):
    """A fleet directory given --jsonl (a format of two sides and several
    runs) and --csv: refused with what --jsonl shows, exit 2, nothing
    printed, no CSV. Mutant caught: the refusal after the first output."""
    from test_fleet import _fleet_dir

    out = _fleet_dir(tmp_path, [{"target": "root@a", "label": "a", "status": "ok", "results": "a"},
                                {"target": "root@b", "label": "b", "status": "ok", "results": "b"}])
    r = cli.main(["compare", str(out), "--csv", str(tmp_path / "f.csv"), "--jsonl", str(tmp_path / "f.jsonl")])
    got = capsys.readouterr()
    assert r == 2 and got.out == "", got
    assert "not for a fleet: --jsonl shows compare or stability only" in got.err
    assert not (tmp_path / "f.csv").exists() and not (tmp_path / "f.jsonl").exists()
    assert cli.main(["compare", str(out), "--csv", str(tmp_path / "f.csv")]) == 0  # the fleet's CSV alone
    assert (tmp_path / "f.csv").read_text().splitlines()[1] == "id,unit,host,figure,baseline_figure,ratio,verdict"


def test_a_file_format_that_cannot_write_its_file_is_a_clear_error(tmp_path, capsys):
    """--plot to a kind of image matplotlib cannot make, and --csv into a
    directory that is a file: one line each, exit 2, no traceback."""
    a, b = _runs(tmp_path, 1), _runs(tmp_path, 1, scale=1.3)
    (tmp_path / "plain").write_text("")
    for flag, path, says in (("--plot", tmp_path / "x.xyz", "is not supported"),
                             ("--csv", tmp_path / "plain" / "x.csv", "cannot write it")):
        assert cli.main(["compare", str(a[0]), str(b[0]), flag, str(path)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"osmeter: error: {flag} {path}: ") and says in err and len(err.splitlines()) == 1

