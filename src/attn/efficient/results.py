"""Measurements made by the scripts in ``benchmarks/`` (time, memory, training runs), shipped with
the package so a chapter can show them wherever it runs. They are machine-dependent: a chapter
labels them "measured on the build machine" and never quotes them as facts in prose."""

from __future__ import annotations

import csv
import pathlib

__all__ = ["MEASURED", "measured"]

#: Where the benchmark scripts write their CSV files.
MEASURED = pathlib.Path(__file__).parent / "measured"


def _value(text: str):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"True": True, "False": False}.get(text, text)


def measured(name: str) -> list[dict]:
    """Rows of ``measured/<name>.csv`` as dicts, numbers parsed (e.g. ``measured("efficient_tiled")``)."""
    path = MEASURED / f"{name}.csv"
    if not path.exists():
        known = sorted(p.stem for p in MEASURED.glob("*.csv"))
        raise FileNotFoundError(f"no measurement named {name!r}; run the benchmark that writes it (known: {known})")
    with open(path, newline="") as f:
        return [{k: _value(v) for k, v in row.items()} for row in csv.DictReader(f)]
