"""Every figure in the book has a caption and alt text (book/figures/<chapter>.yml), in the notebooks and on the site."""

import re

import nbformat

from scripts import notebooks


def test_every_figure_in_every_chapter_has_a_caption_and_alt_text():
    texts = notebooks.figure_texts()
    missing = []
    for path in notebooks.chapters():
        nb = nbformat.read(path, as_version=4)
        for cell in notebooks.figure_cells(nb):
            entry = texts.get(path.stem, {}).get(cell.get("id"), {})
            if len(entry.get("caption", "").strip()) < 15 or len(entry.get("alt", "").strip()) < 20:
                missing.append(f"{path.stem}: cell {cell.get('id')}")
            meta = cell.metadata.get("mystnb", {})
            assert meta.get("figure", {}).get("caption") == entry.get("caption", "").strip() or not entry, (
                f"{path.stem}/{cell.get('id')}: run `python -m scripts.notebooks figures`")
    assert missing == [], "figures without caption/alt text in book/figures/<chapter>.yml:\n" + "\n".join(missing)


def test_figures_yml_names_only_cells_that_draw_figures():
    texts = notebooks.figure_texts()
    chapters = {p.stem: p for p in notebooks.chapters()}
    for name, cells in texts.items():
        assert name in chapters, f"book/figures/<chapter>.yml names {name}, not a chapter"
        ids = {c.get("id") for c in notebooks.figure_cells(nbformat.read(chapters[name], as_version=4))}
        assert set(cells) <= ids, f"{name}: entries for cells that draw no figure: {set(cells) - ids}"


def test_a_figure_cell_shows_only_its_figure():
    """myst-nb puts every output of a captioned cell inside the figure, so a table or printed line
    there would sit under the figure's caption: results go in a cell of their own."""
    extra = []
    for path in notebooks.chapters():
        for cell in notebooks.figure_cells(nbformat.read(path, as_version=4)):
            shown = [o for o in cell.get("outputs", []) if o.output_type == "stream"
                     or any(not m.startswith("application/papermill") for m in o.get("data", {}))]
            if len(shown) != 1 or "image/png" not in shown[0].get("data", {}):
                extra.append(f"{path.stem}: cell {cell.get('id')} shows {len(shown)} outputs")
    assert extra == [], "figure cells with outputs besides the figure:\n" + "\n".join(extra)


def test_site_shows_captions_and_alt_text(built_site):
    page = (built_site / "book/self_attention.html").read_text()
    imgs = re.findall(r"<img [^>]*>", page)
    assert imgs and all('alt="' in i and not re.search(r'alt="[^"]*\.png"', i) for i in imgs), imgs[:2]
    assert page.count("<figcaption") >= len(notebooks.figure_cells(
        nbformat.read(notebooks.ROOT / "book/self_attention.ipynb", as_version=4)))
