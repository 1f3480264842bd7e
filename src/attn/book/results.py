"""Stored results: what the scripts in ``benchmarks/`` measure (time, memory, training runs) and what
``scripts/`` trains, written once and shown by the chapters. They are machine-dependent: a chapter
labels them "measured on the build machine" and never quotes them as facts in prose.

One way to write them, :func:`write`, and one way to read them back, :func:`measured`: a table
(a list of rows, each a dict with the same keys in the same order) as CSV, anything else (a dict
of metadata and runs) as JSON. :func:`stored` is the file a result named ``name`` is written to.

They live in ``benchmarks/measured/``, outside the package's source, and the build copies them
into the installed package as ``attn/book/measured/`` (``setup.py``), so that a chapter shows them
wherever it runs, Colab included. A source checkout (an editable install, ``PYTHONPATH=src``)
reads them where the scripts write them.
"""

from __future__ import annotations

import csv
import json
import pathlib

__all__ = ["MEASURED", "measured", "stored", "write"]


def _folder() -> pathlib.Path:
    here = pathlib.Path(__file__).resolve().parent
    shipped = here / "measured"  # attn/book/measured in a built package
    if shipped.is_dir():
        return shipped
    return here.parents[2] / "benchmarks" / "measured"  # src/attn/book/ in a checkout


#: Where the results are read from and written to (see the module's docstring).
MEASURED = _folder()


def _value(text: str):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"True": True, "False": False}.get(text, text)


def stored(name: str, data: list[dict] | dict) -> pathlib.Path:
    """The file the result ``name`` with ``data`` is written to: ``MEASURED/<name>.csv`` for rows,
    ``MEASURED/<name>.json`` for anything else."""
    return MEASURED / f"{name}.{'csv' if isinstance(data, list) else 'json'}"


def write(path: str | pathlib.Path, data: list[dict] | dict) -> pathlib.Path:
    """Write a result to ``path`` (a name such as ``"kv_cache"`` for the file :func:`measured` reads,
    see :func:`stored`, or a path to write elsewhere), creating its folder; returns the path.

    ``data`` is a table, rows with the same keys in the same order (CSV, numbers written as
    Python prints them), or a JSON object (indented by one space, one value per line).

    Raises:
        ValueError: no rows, rows with different keys, or a path whose suffix does not fit the data.
        TypeError: data that is neither a list of dicts nor a dict.
    """
    rows = isinstance(data, list)
    if rows and not (data and all(isinstance(r, dict) for r in data)):
        raise ValueError(f"rows must be a non-empty list of dicts, got {data!r:.80}")
    if not rows and not isinstance(data, dict):
        raise TypeError(f"data must be a list of rows (dicts) or a dict, got {type(data).__name__}")
    path = pathlib.Path(path)
    if path.suffix == "" and path.parent == pathlib.Path("."):
        path = stored(str(path), data)
    if path.suffix != (".csv" if rows else ".json"):
        raise ValueError(f"{path} must end in {'.csv' if rows else '.json'} for {'rows' if rows else 'an object'}")
    path.parent.mkdir(parents=True, exist_ok=True)
    if rows:
        keys = list(data[0])
        odd = [i for i, r in enumerate(data) if list(r) != keys]
        if odd:
            raise ValueError(f"every row must have the keys {keys} in that order; row {odd[0]} has {list(data[odd[0]])}")
        with open(path, "w", newline="") as f:
            out = csv.DictWriter(f, fieldnames=keys, lineterminator="\n")
            out.writeheader()
            out.writerows(data)
    else:
        path.write_text(json.dumps(data, indent=1) + "\n")
    return path


def measured(name: str) -> list[dict] | dict:
    """The result ``name``: the rows of ``<name>.csv`` as dicts, numbers parsed (e.g.
    ``measured("efficient_tiled")``), or the object stored in ``<name>.json`` (``"long_range"``)."""
    for path in (MEASURED / f"{name}.csv", MEASURED / f"{name}.json"):
        if path.exists():
            break
    else:
        known = sorted(p.stem for p in MEASURED.glob("*.*"))
        raise FileNotFoundError(f"no result named {name!r}; run the script that writes it (known: {known})")
    if path.suffix == ".json":
        return json.loads(path.read_text())
    with open(path, newline="") as f:
        return [{k: _value(v) for k, v in row.items()} for row in csv.DictReader(f)]
