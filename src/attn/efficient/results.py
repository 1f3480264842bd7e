"""Measurements made by the scripts in ``benchmarks/`` (time, memory, training runs) and by
``scripts/long_range.py``, which the chapters show. They are machine-dependent: a chapter labels
them "measured on the build machine" and never quotes them as facts in prose.

They are written to ``benchmarks/measured/``, outside the package's source, and the build copies
them into the installed package as ``attn/measured/`` (``setup.py``), so that a chapter shows them
wherever it runs, Colab included. A source checkout (an editable install, ``PYTHONPATH=src``) reads
them where the benchmarks write them.
"""

from __future__ import annotations

import csv
import json
import pathlib

__all__ = ["MEASURED", "measured", "write_rows"]


def _folder() -> pathlib.Path:
    shipped = pathlib.Path(__file__).resolve().parents[1] / "measured"  # attn/measured in a built package
    if shipped.is_dir():
        return shipped
    return pathlib.Path(__file__).resolve().parents[3] / "benchmarks" / "measured"  # src/attn/efficient/ in a checkout


#: Where the measurements are read from (see the module's docstring).
MEASURED = _folder()


def _value(text: str):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"True": True, "False": False}.get(text, text)


def measured(name: str) -> list[dict] | dict:
    """The measurement ``name``: the rows of ``<name>.csv`` as dicts, numbers parsed (e.g.
    ``measured("efficient_tiled")``), or the object stored in ``<name>.json`` (``"long_range"``)."""
    for path in (MEASURED / f"{name}.csv", MEASURED / f"{name}.json"):
        if path.exists():
            break
    else:
        known = sorted(p.stem for p in MEASURED.glob("*.*"))
        raise FileNotFoundError(f"no measurement named {name!r}; run the benchmark that writes it (known: {known})")
    if path.suffix == ".json":
        return json.loads(path.read_text())
    with open(path, newline="") as f:
        return [{k: _value(v) for k, v in row.items()} for row in csv.DictReader(f)]


def write_rows(path: str | pathlib.Path, rows: list[dict]) -> pathlib.Path:
    """Write ``rows`` (dicts with the same keys, in order) to the CSV file ``path``, creating its
    folder: what the benchmarks write and :func:`measured` reads back. Returns the path."""
    if not rows:
        raise ValueError(f"no rows to write to {path}")
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path
