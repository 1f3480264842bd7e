"""The surface a reader meets (issue 21, items 4, 5 and 7): tables set as a book's, figures sharp and readable on
a phone, the searched word highlighted, no inert machinery published, a redirect and a 404 page that work, and
not one console warning on any page. Browser tests as tests/test_browser.py (Debian Chromium, the site served
on 127.0.0.1 as GitHub Pages serves it)."""

import io
import pathlib
import re
import sys
import tempfile

import pytest
import torch

import attn.book.viz as viz
from conftest import ROOT, PageWatch, serve_like_pages
from test_mobile import PHONE, PHONE_CONTEXT, assert_fits_the_phone, phone_show

sys.path.insert(0, str(ROOT / "_ext"))
import attn_book  # noqa: E402 (the book's Sphinx extension, from _ext/)


def _pages(built_site) -> list[str]:
    return sorted(str(p.relative_to(built_site)) for p in built_site.rglob("*.html") if "_static" not in p.parts)


# --------------------------------------------------------------------------- tables (item 4)
def test_columns_of_numbers_are_marked_and_text_columns_are_not():
    table = ('<table class="attn-table"><thead><tr><th></th><th>time</th><th>note</th></tr></thead><tbody>'
             '<tr><td>LSTM</td><td>0.239</td><td>B=2, L=3</td></tr>'
             '<tr><td>attention</td><td>1.5e-07 ± 2e-08</td><td>12 of 12</td></tr>'
             '<tr><td>GRU</td><td></td><td>3.2×</td></tr></tbody></table>')
    marked = attn_book.mark_number_columns(table)
    assert re.findall(r'<t[hd] class="attn-num">([^<]*)<', marked) == ["time", "0.239", "1.5e-07 ± 2e-08", ""]
    assert 'class="attn-table"' in marked and "<td>B=2, L=3</td>" in marked
    merged = table.replace("<th>note</th>", '<th colspan="1">note</th>')
    assert attn_book.mark_number_columns(merged) == merged, "tables with merged cells are left alone"


# The tables the text and the chapters' outputs show (the style sheet's selectors); not Sphinx's index.
TABLES = ".bd-article table.attn-table, .bd-article .cell_output table, .bd-article table.table"
TABLE_GAPS = """() => {
  const TABLES = '%s';
  const box = (cell) => {
    const r = document.createRange(); r.selectNodeContents(cell);
    const bs = [...r.getClientRects()].filter((b) => b.width > 0 && b.height > 0);
    return bs.length ? {left: Math.min(...bs.map((b) => b.left)), right: Math.max(...bs.map((b) => b.right)),
                        top: Math.min(...bs.map((b) => b.top)), bottom: Math.max(...bs.map((b) => b.bottom))} : null;
  };
  const close = [], wide = [], vw = window.innerWidth;
  // MathJax's copy of each formula for screen readers is clipped to nothing on the screen (and positioned
  // out of the flow): not text a reader sees, so not measured (its font's line box differs by language)
  const unseen = document.createElement('style');
  unseen.textContent = 'mjx-assistive-mml { display: none !important; }';
  document.head.appendChild(unseen);
  let tables = 0;
  for (const table of document.querySelectorAll(TABLES)) {
    tables++;
    if (table.getBoundingClientRect().right > vw + 0.5) {  // then it must scroll inside a box that fits
      let box = table.parentElement;
      while (box && !['auto', 'scroll'].includes(getComputedStyle(box).overflowX)) box = box.parentElement;
      if (!box || box.getBoundingClientRect().right > vw + 0.5) wide.push(table.textContent.trim().slice(0, 24));
    }
    const rows = [...table.rows].map((row) => [...row.cells].map(box));
    rows.forEach((cells, i) => cells.forEach((a, j) => {
      const b = cells.slice(j + 1).find((c) => c);
      const name = () => table.rows[i].cells[j].textContent.trim().slice(0, 24);
      if (a && b && b.left - a.right < 8) close.push([name(), 'side', Math.round(b.left - a.right)]);
      const below = rows[i + 1] && rows[i + 1][j];
      if (a && below && below.left < a.right && below.right > a.left && below.top - a.bottom < 8)
        close.push([name(), 'below', Math.round(below.top - a.bottom)]);
    }));
  }
  unseen.remove();
  const nums = [...document.querySelectorAll('.bd-article td.attn-num')].map((td) => getComputedStyle(td));
  return {tables, close, wide, nums: nums.length,
          numsRight: nums.every((s) => s.textAlign === 'right'),
          numsTabular: nums.every((s) => s.fontVariantNumeric.includes('tabular-nums'))};
}""" % TABLES


# The check runs in the one pass over the site at a phone's width, with the console check (below).


# --------------------------------------------------------------------------- figures (item 5)
def _fig():
    weights = torch.softmax(torch.randn(25, 25, generator=torch.Generator().manual_seed(0)) * 0.3, -1)  # ~0.04
    tokens = [f"t{i}" for i in range(25)]
    return weights, viz.heatmap(weights, tokens, tokens, title="25 keys, weights near 1/25")


def test_heatmap_colour_scale_reaches_the_largest_weight_not_one():
    weights, fig = _fig()
    image = fig.axes[0].images[0]
    assert image.norm.vmin == 0.0 and image.norm.vmax == pytest.approx(float(weights.max()))
    assert fig.axes[1].get_ylabel() == "attention weight", "the colour bar is labelled"
    fixed = viz.heatmap(weights, vmax=1.0)
    assert fixed.axes[0].images[0].norm.vmax == 1.0, "a given vmax is kept"


def test_figures_are_png_at_twice_their_display_size_with_their_smallest_text_recorded():
    from PIL import Image

    _, fig = _fig()
    png, meta = viz.png_2x(fig)
    img = Image.open(io.BytesIO(png))
    assert img.size[0] // 2 == meta["width"] and img.size[1] // 2 == meta["height"]
    sizes = [t.get_fontsize() for t in fig.findobj(lambda a: hasattr(a, "get_fontsize") and hasattr(a, "get_text"))
             if t.get_visible() and t.get_text().strip()]
    assert float(img.text[viz.TEXT_PX_KEY]) == pytest.approx(min(sizes) * fig.dpi / 72, abs=0.01)


@pytest.mark.slow
def test_a_notebook_that_imports_attn_viz_stores_its_figures_as_2x_pngs(tmp_path, monkeypatch):
    """The chapters' own path: a kernel imports attn.book.viz, draws with plt.show(); the output is the 2x PNG."""
    import base64

    import nbformat
    from nbclient import NotebookClient
    from PIL import Image

    import os

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import matplotlib.pyplot as plt\nimport attn.book.viz\n"
                                          "plt.rcParams['figure.dpi'] = 90\nplt.plot([0, 1], [1, 0])\nplt.show()")]
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    [out] = [o for o in nb.cells[0].outputs if "image/png" in o.get("data", {})]
    img = Image.open(io.BytesIO(base64.b64decode(out["data"]["image/png"])))
    assert img.size[0] == 2 * out["metadata"]["image/png"]["width"]
    assert float(img.text[viz.TEXT_PX_KEY]) == pytest.approx(10 * 90 / 72, abs=0.01)  # 10 pt ticks at 90 dpi


FIGURE_TEXT = """(img) => {
  const r = img.getBoundingClientRect();
  return {rendered: r.width, natural: img.naturalWidth / 2, page: document.documentElement.scrollWidth,
          right: r.right, box: img.parentElement.getBoundingClientRect().right};
}"""


# The screen width below which figures keep their readable width: the style sheet's own media query.
_READABLE_WIDTH_BELOW = float(re.search(r"@media \(max-width: ([\d.]+)px\) \{\s*\.bd-article img\[data-min-width\]",
                                        (ROOT / "_css" / "attn.css").read_text()).group(1))


@pytest.mark.parametrize("width", [390, 820, 1366])
def test_figure_text_is_at_least_9px_on_a_phone_and_the_figure_fits_a_desktop(built_site, browser, site_server, width):
    """A figure drawn by attn.book.viz, wider than the text column, placed in a chapter page as the build places
    them (with myst-nb's own style attribute): on a phone or a tablet its smallest text, as rendered, at
    least 9 px and the page no wider than the screen (the figure scrolls in its own box); on a desktop the
    whole figure in the column (its text then 8.2 px: a figure cut at the column's edge reads worse)."""
    _, fig = _fig()
    png, meta = viz.png_2x(fig)
    from PIL import Image

    text_px = float(Image.open(io.BytesIO(png)).text[viz.TEXT_PX_KEY])
    # The page and its figure are served from memory (routes), not written into the built site,
    # which other tests walk at the same time.
    name, path = "0" * 64 + ".png", "book/figure-text-test.html"
    html = (built_site / "book" / "self_attention.html").read_text()
    img = (f'<figure class="align-default"><img alt="test figure" src="../_images/{name}" '
           f'style="width: {meta["width"]}px; height: {meta["height"]}px;" /></figure>')
    html = html.replace("</article>", img + "</article>", 1)
    with tempfile.TemporaryDirectory() as images:
        (pathlib.Path(images) / name).write_bytes(png)
        html = attn_book.add_figure_min_widths(html, pathlib.Path(images))
    context = browser.new_context(viewport={"width": width, "height": 900}, device_scale_factor=2)
    try:
        page = context.new_page()
        page.route(f"{site_server}/{path}", lambda r: r.fulfill(body=html, content_type="text/html"))
        page.route(f"{site_server}/_images/{name}", lambda r: r.fulfill(body=png, content_type="image/png"))
        page.goto(f"{site_server}/{path}", wait_until="load")
        got = page.locator(f'img[src$="{name}"]').evaluate(FIGURE_TEXT)
        assert abs(got["natural"] - meta["width"]) <= 0.5
        assert got["natural"] > 1000, "wider than the column at every width"
        if width <= _READABLE_WIDTH_BELOW:  # phones and tablets (_css/attn.css)
            assert text_px * got["rendered"] / got["natural"] >= 9 - 0.05, (got, text_px)
        else:
            assert got["right"] <= got["box"] + 0.5 and got["rendered"] < got["natural"], got
        assert got["page"] <= width, f"the page is {got['page']} px wide on a {width} px screen"
    finally:
        context.close()


def test_every_chapter_figure_is_a_2x_png_with_its_text_size(built_site):
    pngs = sorted(set(re.findall(r'src="\.\./_images/([0-9a-f]+\.png)"', "".join(
        (built_site / p).read_text() for p in _pages(built_site) if p.startswith("book/")))))
    assert len(pngs) >= 40
    missing = [n for n in pngs if attn_book.figure_min_width(built_site / "_images" / n) is None]
    assert missing == [], f"{len(missing)} of {len(pngs)} figures without attn.book.viz.png_2x's text size"


# --------------------------------------------------------------------------- the smaller items (item 7)
def test_no_inert_thebe_block_source_maps_or_template_fragments_are_published(built_site):
    for path in _pages(built_site):
        text = (built_site / path).read_text()
        assert "x-thebe-config" not in text and "binder-examples" not in text, path
    static = built_site / "_static"
    assert sorted(p.name for p in built_site.rglob("*.map")) == []
    assert sorted(p.name for p in static.rglob("*macros.html")) == []
    for p in [*static.rglob("*.js"), *static.rglob("*.css")]:
        assert not re.search(r"^\s*(//|/\*)# sourceMappingURL=(?!data:)", p.read_text(errors="replace"), re.M), p


def test_index_redirects_to_the_first_chapter_and_links_it_for_browsers_that_do_not(built_site, watch):
    """In each edition's language, with the book's icon: without one a browser asks the host's root for
    /favicon.ico, outside the site under GitHub Pages' prefix (a 404 in the console, now and then)."""
    from scripts import zh

    for index, lang, link in (("index.html", "en", "continue to the book"),
                              ("zh/index.html", "zh-CN", zh.strings()["index_link"])):
        text = (built_site / index).read_text(encoding="utf-8")
        assert re.search(r'<meta http-equiv="refresh" content="0; url=book/intro\.html">', text)
        assert re.search(r'<a href="book/intro\.html">[^<]+: ' + link + "</a>", text) and "<title>" in text, index
        assert f'<html lang="{lang}">' in text, index
        icon = re.search(r'<link rel="icon" href="([^"]+)">', text)
        assert icon and (built_site / index).parent.joinpath(icon.group(1)).is_file(), index
    page = watch.goto("index.html")
    page.wait_for_url("**/book/intro.html")
    assert watch.errors == []


def test_404_page_finds_its_styles_at_the_site_root_too(built_site, browser):
    """Served at a host's root (a custom domain, a local server), the 404 page loads its style sheets."""
    server, base = serve_like_pages(built_site, prefix="")
    context = browser.new_context()
    failed = []
    try:
        page = context.new_page()
        page.on("response", lambda r: r.status >= 400 and failed.append(r.url))
        response = page.goto(f"{base}/book/deep/no-such-page.html", wait_until="networkidle")
        assert response.status == 404
        assert failed == [f"{base}/book/deep/no-such-page.html"], failed
        assert page.evaluate("document.styleSheets.length") > 3
        assert page.evaluate("getComputedStyle(document.querySelector('.bd-header, header')).display") != "inline"
    finally:
        context.close()
        server.shutdown()


def test_the_page_reached_from_search_highlights_the_searched_word(watch):
    page = watch.goto("search.html?q=softmax")
    page.wait_for_selector("#search-results li a", timeout=20000)
    page.locator("#search-results li a").first.click()
    page.wait_for_load_state("networkidle")
    page.wait_for_selector(".bd-article span.highlighted", timeout=5000, state="attached")
    marks = page.locator(".bd-article span.highlighted").evaluate_all(
        "ms => ms.map(m => [m.textContent.toLowerCase(), getComputedStyle(m).backgroundColor])")
    assert marks and all(t == "softmax" for t, _ in marks)
    assert all(bg not in ("rgba(0, 0, 0, 0)", "transparent") for _, bg in marks)


# What reaches past a phone's screen in the article, outside the boxes that may scroll sideways on their own
# (figures, tables in the theme's or myst-nb's scrolling box, code, maths, outputs).
WIDENING = """() => [...document.querySelectorAll('.bd-article *')]
  .filter((n) => n.getBoundingClientRect().right > window.innerWidth + 0.5
                 && !n.closest('.attn-figure, .table-wrapper, .pst-scrollable-table-container, pre, mjx-container, .MathJax, .cell_output, .highlight'))
  .map((n) => n.tagName + ' ' + (n.textContent || '').trim().slice(0, 40)).slice(0, 5)"""
# Pages wider than a phone's screen today, found when this pass took over test_mobile's walk of three pages
# (the page scrolls sideways at 390 px): each stays listed only while it is still too wide (the pass then
# fails and asks to remove it), so that a fix is checked from then on like every other page.
WIDE_ON_A_PHONE_TODAY: dict[str, str] = {}
# Each figure of the page (a PNG of the book's), loaded even where lazy: its source, its width as rendered,
# whether the build gave it its readable width (data-min-width), and the file the browser chose from its srcset.
FIGURES = r"""async () => {
  const imgs = [...document.querySelectorAll('.bd-article img')]
    .filter((i) => /_images\/[0-9a-f]+\.png$/.test(i.getAttribute('src')));
  imgs.forEach((i) => { i.loading = 'eager'; });  // lazy figures below the screen load when asked
  await Promise.all(imgs.map((i) => i.decode().catch(() => null)));
  return imgs.map((i) => [i.getAttribute('src').split('/').pop(), i.getBoundingClientRect().width,
                          i.hasAttribute('data-min-width'), i.currentSrc.split('/').pop()]);
}"""


def figures_read_at_9_px(built_site, page, path: str) -> int:
    """The page's figures as rendered, each at least as wide as its text needs to be 9 px (the text as
    rendered: the PNG's recorded size times rendered width over display width), and the file the browser
    chose from the figure's srcset sharp (at least 2 image pixels per CSS pixel, as on a 2x phone, where the
    display needs it); returns their number."""
    from PIL import Image

    images = built_site / pathlib.Path(path).parts[0] / "_images" if path.startswith("zh/") else built_site / "_images"
    n = 0
    for name, rendered, marked, chosen in page.evaluate(FIGURES):
        text_px, width = attn_book.figure_text(images / name)
        if text_px <= 0:
            continue  # not a figure of attn.book.viz (none today: test_every_chapter_figure_is_a_2x_png_...)
        assert marked, f"{path}: {name} carries its text size but the build gave it no readable width"
        pixels = Image.open(images / chosen).size[0]
        assert pixels >= min(2 * rendered, 2 * width) - 1, \
            f"{path}: {chosen} ({pixels} px) is not sharp at {rendered:.0f} CSS px on a 2x phone"
        assert width * attn_book.MIN_TEXT_PX / text_px <= 1.5 * width, f"{path}: {name} would be blown up too far"
        shown = text_px * rendered / width
        assert shown >= attn_book.MIN_TEXT_PX - 0.05, \
            f"{path}: {name}'s smallest text is {shown:.1f} px as rendered ({rendered:.0f} px of its {width:.0f})"
        n += 1
    return n


# Each of the page's ``n`` explorers has drawn its content, not only its empty root (the mask, attention
# and positional explorers: their grid, tokens, point; the others: anything).
EXPLORERS_DRAWN = """(n) => {
  const drawn = {'attn-mask-explorer': '.attn-mask-grid [data-allowed]', 'attn-head-view': '.attn-tok',
                 'attn-pe-explorer': 'circle.attn-pe-point'};
  const roots = [...document.querySelectorAll('.attn-w')];
  return roots.length >= n && roots.every((r) => {
    const kind = Object.keys(drawn).find((c) => r.classList.contains(c));
    return kind ? !!r.querySelector(drawn[kind]) : r.childElementCount > 0;
  });
}"""


def test_every_page_on_a_phone_fits_the_screen_sets_tables_apart_and_logs_no_console_warning(built_site, browser, site_server):
    """The English edition's pages (the Chinese ones: tests/test_zh_site.py, in parallel)."""
    walk_on_a_phone(built_site, browser, site_server, "en")


def walk_on_a_phone(built_site, browser, site_server, lang: str) -> None:
    """The one pass over every page of one edition at a phone's width (390 px, touch, 2x pixels: test_mobile's PHONE_CONTEXT;
    the desktop width's pass is tests/test_browser.py's), one load per page, every fold of the article opened:
    - strict: no console warning or error, nothing thrown, no request to another host, no failed request
      (404 aside, whose own status is its point); explorer pages are given time to draw their explorers;
    - the page no wider than the screen, and nothing in the article reaching past it outside the boxes
      that scroll sideways on their own (figures, tables, code, maths, outputs);
    - every explorer fits the phone (test_mobile.assert_fits_the_phone: its box on the screen, its labels
      inside its figures, a figure wider than the screen scrolls in its own box with a visible cue, no
      control cut off);
    - tables: no two cells' text closer than 8 px (side by side in a row, or one above the other in a
      column), in every table; cells of number columns right-aligned in tabular figures; no table
      widens the page;
    - figures: every figure's smallest text at least 9 px as rendered (it scrolls in its own box)."""
    w = PageWatch(browser, site_server, **PHONE_CONTEXT)
    found, seen, numbers, explorers, figures = [], 0, 0, 0, 0
    try:
        for path in _pages(built_site):
            if path == "404.html" or (path.startswith("zh/") != (lang == "zh")):
                continue
            for got in (w.errors, w.warnings, w.offhost, w.failed):
                got.clear()
            page = w.goto(path)
            views = (built_site / path).read_text().count("application/vnd.jupyter.widget-view+json")
            if views:
                page.wait_for_function(EXPLORERS_DRAWN, arg=views, timeout=20000)
            w.open_folds()  # what the folds hold is measured as a reader who opens them sees it
            page.wait_for_timeout(200)
            found += [f"{path}: {m}" for m in w.errors + w.warnings + [f"off-host {u}" for u in w.offhost]
                      + [f"failed {u}" for u in w.failed]]
            if path == "index.html":
                continue  # the redirect to the first chapter
            width, wide = page.evaluate("document.documentElement.scrollWidth"), page.evaluate(WIDENING)
            if path in WIDE_ON_A_PHONE_TODAY:
                assert width > PHONE["width"], f"{path} fits a phone now: remove it from WIDE_ON_A_PHONE_TODAY"
            else:
                assert width <= PHONE["width"] and wide == [], f"{path}: {width} px wide on a 390 px screen; past it: {wide}"
            if views:
                explorers += len(assert_fits_the_phone(page, expect_explorers=views)["explorers"])
            got = page.evaluate(TABLE_GAPS)
            assert got["close"] == [], f"{path}: cells closer than 8 px (text, where, px): {got['close'][:5]}"
            assert got["numsRight"] and got["numsTabular"], path
            assert got["wide"] == [], f"{path}: tables that widen the page: {got['wide']}"
            seen, numbers = seen + got["tables"], numbers + got["nums"]
            figures += figures_read_at_9_px(built_site, page, path)
    finally:
        w.close()
    assert found == [], found
    assert figures >= 50, figures
    assert seen >= 50 and numbers >= 200, (seen, numbers)
    assert explorers >= 10, explorers


CONTRAST = """() => {
  const rgb = (c) => (c.match(/[\\d.]+/g) || []).slice(0, 3).map(Number);
  const lum = (c) => { const [r, g, b] = rgb(c).map((v) => { v /= 255; return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
                       return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
  const low = [];
  let n = 0;
  for (const el of document.querySelectorAll('.attn-w svg text, .attn-w .attn-tick, .attn-w .attn-axis-k, .attn-w .attn-axis-q')) {
    if (!el.textContent.trim() || !el.getBoundingClientRect().width) continue;
    const st = getComputedStyle(el), ink = el instanceof SVGElement ? st.fill : st.color;
    const [r0, g0, b0] = rgb(ink);
    if (!ink.startsWith('rgb') || r0 !== g0 || g0 !== b0) continue;  // grey ink: ticks, axis names, labels
    n++;
    const r = ratio(ink, 'rgb(255, 255, 255)');
    if (r < 4.5) low.push([el.textContent.trim().slice(0, 20), ink, Math.round(r * 100) / 100]);
  }
  return {n, low};
}"""


def test_explorer_axis_text_has_at_least_4_5_to_1_contrast(browser):
    """Tick labels, axis names and other grey text of the three explorers (text in a head's colour aside), rendered from the package's current front ends (the
    site's copies are the chapters' saved widget state, refreshed by `make execute`), on the explorers' white."""
    from attn.book.widgets import AttentionExplorer, MaskExplorer, PositionalEncodingExplorer

    weights = torch.softmax(torch.randn(1, 2, 6, 6, generator=torch.Generator().manual_seed(0)), -1)
    for view in ("heatmap", "lines"):
        page = phone_show(browser, MaskExplorer("causal", 8), AttentionExplorer(list("abcdef"), weights, view=view),
                          PositionalEncodingExplorer())
        try:
            got = page.evaluate(CONTRAST)
            assert got["n"] >= 20 and got["low"] == [], (view, got)
            assert page.errors == []
        finally:
            page.close()
