"""attn.book.results: one way to write stored results (rows as CSV, an object as JSON) and one way to
read them back, and every result a chapter reads ships with the package."""

import json
import pathlib
import re

import pytest

from attn.book import results

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_every_result_a_chapter_reads_is_shipped_and_loads():
    """Every ``measured("name")`` of every chapter names a shipped, non-empty result (the test fails
    if there are none, rather than looping over nothing)."""
    used = set()
    for path in sorted((ROOT / "book").glob("*.ipynb")):
        used |= set(re.findall(r'measured\(\\"(\w+)\\"\)', path.read_text()))
    shipped = {p.stem for p in results.MEASURED.glob("*.*")}
    assert len(used) >= 10 and used <= shipped, (sorted(used), sorted(shipped))
    for name in sorted(used):
        data = results.measured(name)
        assert data, f"{name} is empty"
        if isinstance(data, list):
            assert all(isinstance(v, (int, float, bool, str)) for row in data for v in row.values())
    with pytest.raises(FileNotFoundError, match="no result named 'nope'"):
        results.measured("nope")


def test_measured_parses_numbers_and_booleans(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "MEASURED", tmp_path)
    (tmp_path / "x.csv").write_text("n,t,ok,kind\n3,0.5,True,tiled\n-2,1e-3,False,3x\n")
    assert results.measured("x") == [{"n": 3, "t": 0.5, "ok": True, "kind": "tiled"},
                                     {"n": -2, "t": 0.001, "ok": False, "kind": "3x"}]


def test_write_stores_rows_as_csv_and_an_object_as_json_where_measured_reads_them(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "MEASURED", tmp_path / "measured")
    rows = [{"L": 64, "ms": 1.5, "kind": "tiled"}, {"L": 128, "ms": 3.25, "kind": "full"}]
    run = {"meta": {"steps": 3}, "runs": [{"seed": 0, "acc": 0.5}]}
    assert results.write("bench_x", rows) == tmp_path / "measured" / "bench_x.csv"
    assert results.write("sweep_y", run) == tmp_path / "measured" / "sweep_y.json"
    assert results.measured("bench_x") == rows
    assert results.measured("sweep_y") == run
    assert (tmp_path / "measured" / "bench_x.csv").read_bytes() == b"L,ms,kind\n64,1.5,tiled\n128,3.25,full\n"
    assert (tmp_path / "measured" / "sweep_y.json").read_text() == json.dumps(run, indent=1) + "\n"
    elsewhere = results.write(tmp_path / "sub" / "speed.csv", rows)  # a path: written there
    assert elsewhere.read_text().startswith("L,ms,kind\n")


def test_write_refuses_what_measured_could_not_read_back(tmp_path):
    with pytest.raises(ValueError, match="non-empty list of dicts"):
        results.write(tmp_path / "empty.csv", [])
    with pytest.raises(ValueError, match=r"keys \['a', 'b'\] in that order; row 1 has \['b', 'a'\]"):
        results.write(tmp_path / "x.csv", [{"a": 1, "b": 2}, {"b": 2, "a": 1}])
    with pytest.raises(ValueError, match=r"must end in \.json for an object"):
        results.write(tmp_path / "x.csv", {"a": 1})
    with pytest.raises(ValueError, match=r"must end in \.csv for rows"):
        results.write(tmp_path / "x.json", [{"a": 1}])
    with pytest.raises(TypeError, match="list of rows .* or a dict, got str"):
        results.write(tmp_path / "x.json", "text")
