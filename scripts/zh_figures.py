"""The Chinese edition's figures: the chapters' figures drawn with their words in Chinese (issue 35, item 3).

    python -m scripts.zh figures [CHAPTER ...]   # execute the chapters under ATTN_LANG=zh, keep their figures

A figure's words go through the package's string table when it is drawn (``attn.book.viz.localise_figure``,
called by ``png_2x``): executing a chapter under ``ATTN_LANG=zh`` draws its figures in Chinese, with the
same data as the English run. ``figures`` does that on purpose, once, and keeps only the figures:

- ``i18n/zh/figures/<chapter>/<cell id>-<n>.png``: the ``n``-th image of that code cell, in Chinese;
- ``i18n/zh/figures/<chapter>.json``: per cell, the hash of the English cell it was drawn from (its source
  and its stored English images: ``english_hash``), each image's display size, and every text the Chinese
  figure drew (what tests/test_zh_figures.py reads for English left in it).

``python -m scripts.zh build`` puts a cell's Chinese images in place of the English ones while the hash
matches; when the English cell or its figure changes, the Chinese figure is *stale*: the Chinese book shows
the English figure and ``python -m scripts.zh check`` reports it until ``figures`` is run again.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import os
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIGURES = ROOT / "i18n" / "zh" / "figures"

# Run first in the kernel (and not kept): the book's PNG formatter, with each figure's drawn texts added to
# its output's metadata, so that they can be stored with the figure. attn.book.viz registers png_2x when
# first imported; importing it here first means the chapter's own import leaves this formatter in place.
_RECORD_TEXTS = """\
import attn.book.viz as _attn_viz
from matplotlib.figure import Figure as _Figure

def _attn_png_with_texts(fig):
    out = _attn_viz.png_2x(fig)
    if out is not None:
        out[1]["attn_texts"] = _attn_viz.figure_texts(fig)
    return out

get_ipython().display_formatter.formatters["image/png"].for_type(_Figure, _attn_png_with_texts)
"""


def _joined(value) -> str:
    return "".join(value) if isinstance(value, list) else value


def images(cell) -> list[dict]:
    """The image outputs of a code cell (those with a PNG), in order."""
    return [o for o in cell.get("outputs", []) if "image/png" in o.get("data", {})]


def english_hash(cell) -> str:
    """What a Chinese figure was drawn from: the English cell's source and its stored PNGs."""
    h = hashlib.sha256(_joined(cell.get("source", "")).encode("utf-8"))
    for o in images(cell):
        h.update(b"\0" + _joined(o["data"]["image/png"]).encode("ascii"))
    return h.hexdigest()[:12]


def manifest(name: str) -> dict:
    path = FIGURES / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def figure_problems(path: pathlib.Path) -> dict[str, list[str]]:
    """The English chapter's figures without a current Chinese one: ``figure missing`` (never drawn in
    Chinese) and ``figure stale`` (the English cell or its figure changed since); and ``figure orphan``:
    Chinese figures of cells the chapter no longer draws."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    have = manifest(path.stem)
    found: dict[str, list[str]] = {"figure missing": [], "figure stale": [], "figure orphan": []}
    drawn = set()
    for cell in nb["cells"]:
        if cell["cell_type"] != "code" or not images(cell):
            continue
        cid = cell["id"]
        drawn.add(cid)
        entry = have.get(cid)
        if entry is None:
            found["figure missing"].append(f"cell {cid}")
        elif entry["en"] != english_hash(cell) or len(entry["images"]) != len(images(cell)):
            found["figure stale"].append(f"cell {cid}")
    found["figure orphan"] = [f"cell {c}" for c in sorted(set(have) - drawn)]
    return {k: v for k, v in found.items() if v}


def chinese_images(name: str, cell, en_hash: str | None = None) -> list[dict] | None:
    """The cell's image outputs in Chinese (copies of the English outputs with the Chinese PNG and its
    size), or None where the chapter has no current Chinese figure for the cell. ``en_hash``: the English
    cell's :func:`english_hash`, for a cell whose source is no longer the English (its comments in Chinese)."""
    entry = manifest(name).get(cell.get("id"))
    outs = images(cell)
    en_hash = en_hash or english_hash(cell)
    if not outs or entry is None or entry["en"] != en_hash or len(entry["images"]) != len(outs):
        return None
    new = []
    for i, (o, meta) in enumerate(zip(outs, entry["images"], strict=True)):
        png = (FIGURES / name / f"{cell['id']}-{i}.png").read_bytes()
        o = copy.deepcopy(o)
        o["data"]["image/png"] = base64.b64encode(png).decode("ascii")
        o.setdefault("metadata", {})["image/png"] = {"width": meta["width"], "height": meta["height"]}
        new.append(o)
    return new


def replace_images(name: str, cell, en_hash: str | None = None) -> bool:
    """Put the cell's Chinese figures in place of its English ones (in place); whether there were any."""
    zh = chinese_images(name, cell, en_hash)
    if zh is None:
        return False
    it = iter(zh)
    cell["outputs"] = [next(it) if "image/png" in o.get("data", {}) else o for o in cell["outputs"]]
    return True


def draw(path: pathlib.Path) -> dict:
    """Execute one English chapter under ATTN_LANG=zh (the notebook itself untouched) and store its figures."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    english = {c.id: c for c in nb.cells if c.cell_type == "code" and images(c)}
    run = copy.deepcopy(nb)
    run.cells.insert(0, nbformat.v4.new_code_cell(_RECORD_TEXTS))
    # the kernel imports attn from this tree (its cwd is book/, where a relative PYTHONPATH would not reach)
    path_before = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {"ATTN_LANG": "zh", "ATTN_QUIET": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), *(str(pathlib.Path(p).resolve()) for p in path_before)])}
    before = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    start = time.perf_counter()
    try:
        NotebookClient(run, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}},
                       record_timing=False, extra_arguments=["--InteractiveShell.xmode=Minimal"]).execute()
    finally:
        for k, v in before.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    seconds = time.perf_counter() - start
    out_dir = FIGURES / path.stem
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("*.png"):
        old.unlink()
    entries = {}
    for cell in run.cells[1:]:
        if cell.cell_type != "code" or cell.id not in english:
            continue
        outs = images(cell)
        if len(outs) != len(images(english[cell.id])):
            raise RuntimeError(f"{path.stem}: cell {cell.id} drew {len(outs)} figures under ATTN_LANG=zh, "
                               f"{len(images(english[cell.id]))} in English")
        metas = []
        for i, o in enumerate(outs):
            (out_dir / f"{cell.id}-{i}.png").write_bytes(base64.b64decode(_joined(o["data"]["image/png"])))
            meta = o.get("metadata", {}).get("image/png", {})
            metas.append({"width": meta["width"], "height": meta["height"], "texts": meta.get("attn_texts", [])})
        entries[cell.id] = {"en": english_hash(english[cell.id]), "images": metas}
    (FIGURES / f"{path.stem}.json").write_text(json.dumps(entries, ensure_ascii=False, indent=1) + "\n",
                                               encoding="utf-8")
    print(f"{path.stem}: {sum(len(e['images']) for e in entries.values())} Chinese figures in {seconds:.1f} s")
    return entries


def main(argv: list[str]) -> int:
    from attn.book import viz
    from scripts.zh import chapters

    if viz.cjk_font() is None:
        print(f"no {viz.CJK_FONT} font installed (Debian: apt-get install fonts-noto-cjk): the figures would stay "
              "in English", file=sys.stderr)
        return 2

    names = set(argv)
    paths = [p for p in chapters() if not names or p.stem in names]
    if names - {p.stem for p in paths}:
        print(f"no such chapter: {sorted(names - {p.stem for p in paths})}", file=sys.stderr)
        return 2
    for path in paths:
        nb = json.loads(path.read_text(encoding="utf-8"))
        if any(c["cell_type"] == "code" and images(c) for c in nb["cells"]):
            draw(path)
    return 0
