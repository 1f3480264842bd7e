"""Accessibility (issue 34, item 3): axe-core's WCAG 2.1 A and AA rules find no critical or serious fault on any
page of either edition, the theme's and myst-nb's markup and the explorers included; and the build-time fixes
of _ext/attn_a11y.py each do what they say. The site is served as GitHub Pages serves it and read by Debian's
Chromium (tests/conftest.py); axe-core comes from the npm registry, pinned in package-lock.json."""

import json
import pathlib
import re
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "_ext"))
import attn_a11y  # noqa: E402 (the book's Sphinx extension, from _ext/)

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
BLOCKING = {"critical", "serious"}
VIEWS = 'script[type="application/vnd.jupyter.widget-view+json"]'


# --------------------------------------------------------------------------- the build-time fixes
def test_a_code_cell_fold_is_named_by_the_text_it_shows():
    html = ('<details class="admonition hide above-input">\n<summary aria-label="Toggle hidden content">\n'
            '<p class="collapsed admonition-title">Show code cell source</p>')
    fixed = attn_a11y.fix_page(html)
    assert "aria-label" not in fixed and "<summary>\n<p" in fixed and "Show code cell source" in fixed


def test_a_table_of_contents_fold_is_named_after_its_entry():
    toggle = '<details><summary><span class="toctree-toggle" role="presentation"><i class="x"></i></span></summary>'
    html = ('<li class="toctree-l1"><a class="reference internal" href="glossary.html">Glossary</a></li>'
            '<li class="toctree-l1 has-children"><a class="reference internal" href="api.html">API: the '
            f'<code class="docutils literal">attn</code> &amp; co</a>{toggle}<ul></ul></details></li>')
    fixed = attn_a11y.fix_page(html)
    assert fixed.count("<summary") == 1 and '<summary aria-label="Pages of API: the attn &amp; co">' in fixed
    assert fixed.replace(' aria-label="Pages of API: the attn &amp; co"', "") == html, "nothing else changes"
    assert '<summary aria-label="API: the attn &amp; co的各页">' in attn_a11y.fix_page(html, "zh")
    assert attn_a11y.fix_page(html.replace(toggle, "")) == html.replace(toggle, ""), "no fold, no change"
    opened = html.replace("<details>", '<details open="open">')  # on a page under the entry
    assert '<summary aria-label="Pages of API: the attn &amp; co">' in attn_a11y.fix_page(opened)
    own = opened.replace('class="reference internal" href="api.html"', 'class="current reference internal" href="#"')
    assert '<summary aria-label="Pages of API: the attn &amp; co">' in attn_a11y.fix_page(own), "on the entry's own page"


def test_the_references_are_a_list_of_list_items():
    html = ('<div role="list" class="citation-list">\n<div class="citation" id="id41" role="doc-biblioentry">\n'
            '<span class="label">[A23]</span><p>A. Paper.</p></div></div>')
    fixed = attn_a11y.fix_page(html)
    assert 'id="id41" role="listitem"' in fixed and "doc-biblioentry" not in fixed


def test_a_result_table_has_row_and_column_headers():
    table = ('<table class="attn-table"><thead><tr><th></th><th class="attn-num">x 0</th><th>note</th></tr></thead>'
             '<tbody><tr><td>the</td><td class="attn-num">1</td><td>a</td></tr>'
             '<tr><td class="attn-num">2</td><td class="attn-num">0</td><td>b</td></tr></tbody></table>')
    fixed = attn_a11y.fix_page(f"<p>before</p>{table}<table><tr><td>other</td></tr></table>")
    head, body = fixed.split("<tbody>")
    assert re.findall(r"<th\b[^>]*>", head) == ['<th scope="col" class="attn-num">', '<th scope="col">']
    assert "<td></td>" in head, "the empty corner is a plain cell, not an empty header"
    assert re.findall(r"<tr><th[^>]*>([^<]*)</th>", body) == ["the", "2"]
    assert '<th scope="row" class="attn-num">2</th>' in body and body.split("</table>")[0].count("<td") == 4
    assert "<table><tr><td>other</td></tr></table>" in fixed, "only the result tables change"


def test_a_page_gets_the_explorers_current_front_ends():
    from attn.book.widgets import MaskExplorer

    state = {"version_major": 2, "state": {
        "m1": {"model_name": "AnyModel", "state": {"_anywidget_id": "attn.book.widgets.mask_explorer.MaskExplorer",
                                                  "_esm": "old()", "_css": ".old {}", "L": 4}},
        "m2": {"model_name": "AnyModel", "state": {"_anywidget_id": "someone.Else", "_esm": "theirs()"}}}}
    html = f'<p>x</p><script type="application/vnd.jupyter.widget-state+json">{json.dumps(state)}</script>'
    fixed = attn_a11y.fix_page(html)
    blob = re.search(r"json\">(.*)</script>", fixed, re.S).group(1)
    assert "</" not in blob.replace("<\\/", ""), "the JSON stays safe inside <script>"
    models = json.loads(blob)["state"]
    assert models["m1"]["state"]["_esm"] == MaskExplorer._esm and models["m1"]["state"]["_css"] == str(MaskExplorer._css)
    assert models["m1"]["state"]["L"] == 4 and models["m2"]["state"]["_esm"] == "theirs()"
    gone = html.replace("mask_explorer.MaskExplorer", "mask_explorer.Gone")
    with pytest.raises(RuntimeError, match="mask_explorer.Gone"):
        attn_a11y.fix_page(gone)


def test_the_themes_icons_are_hidden_and_nothing_else():
    html = ('<a class="left-prev" href="a.html"><i class="fa-solid fa-angle-left"></i><p>Previous</p></a>'
            '<button aria-label="Menu"><span class="fa-solid fa-bars"></span></button><i class="fab fa-github" aria-hidden="true"></i>'
            '<span class="fabulous">text</span><i>emphasis</i>')
    assert attn_a11y.hide_icons(html) == html.replace('fa-angle-left"', 'fa-angle-left" aria-hidden="true"').replace(
        'fa-bars"', 'fa-bars" aria-hidden="true"')


def test_names_in_chromium_hold_no_icon_character_and_the_seed_field_is_named_by_its_label(built_site, watch):
    """What a screen reader says for the links, buttons and fields of a chapter (Chromium's accessibility tree):
    no private-use character of an icon font ("\uf104 Previous"), and the mask explorer's seed field named
    "seed", not with the button its label also holds ("seed new seed")."""
    for page in sorted(built_site.rglob("*.html")):
        if "_static" not in page.parts:
            icons = re.findall(r'<(?:i|span) class="fa[bsr]?[ -][^>]*>', page.read_text(encoding="utf-8"))
            assert all('aria-hidden="true"' in tag for tag in icons), (page, [t for t in icons if "aria-hidden" not in t])
    page = watch.goto("book/self_attention.html")
    page.wait_for_selector(".attn-mask-explorer input[name=seed]", timeout=30000)
    nodes = watch.context.new_cdp_session(page).send("Accessibility.getFullAXTree")["nodes"]
    named = [(n["role"]["value"], n["name"]["value"]) for n in nodes
             if n.get("role", {}).get("value") in ("link", "button", "spinbutton", "slider", "combobox") and n.get("name", {}).get("value")]
    assert [name for _, name in named if re.search("[\ue000-\uf8ff]", name)] == []
    assert ("link", "Previous Why attention") in named and ("link", "Next Multi-head attention") in named
    assert ("spinbutton", "seed") in named and ("button", "new seed") in named


# --------------------------------------------------------------------------- axe-core on every page
# Run on each page of both editions by the one desktop walk over every page (tests/test_browser.py
# walk_at_desktop_width; its tests: test_axe_finds_no_critical_or_serious_fault_on_any_english_page there,
# and on any Chinese page in tests/test_zh_site.py), once the page's explorers are drawn and its folds open.
def axe_findings(page, path: str) -> list[list[str]]:
    """axe-core's WCAG 2.1 A and AA rules on the page shown in ``page`` (a Playwright page at ``path``): each
    faulty node as [rule, impact, target]. axe reports the violations only (resultTypes): its rules all run,
    but it does not write out the thousands of nodes that pass, which was a third of its time on a chapter."""
    if not AXE.exists():
        pytest.fail(f"{AXE.relative_to(ROOT)} is missing: run `make setup` (axe-core is pinned in package-lock.json)")
    page.add_script_tag(content=AXE.read_text())
    result = page.evaluate("(tags) => axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']})",
                           WCAG_TAGS)
    assert result["url"].split("?")[0].endswith("/" + path), (result["url"], path)  # axe checked the page it was sent to
    return [[rule["id"], node.get("impact") or rule["impact"], " ".join(map(str, node["target"]))]
            for rule in result["violations"] for node in rule["nodes"]]


def check_axe(built_site: pathlib.Path, records: dict[str, dict], lang: str) -> None:
    """No critical or serious fault on any page of the edition (the walk's records), the index.html redirect aside:
    it leaves at once for the first chapter."""
    from test_browser import _site_pages

    every = set(_site_pages(built_site, lang, every=True))
    pages = sorted(p for p, r in records.items() if r["axe"] is not None)
    assert set(records) == every and set(every) - set(pages) == {("zh/" if lang == "zh" else "") + "index.html"}
    assert {"book/explorers.html", "book/references.html", "search.html", "404.html"} <= {p.removeprefix("zh/") for p in pages}
    faults = [f"{rule} ({impact}) on {path}: {target}" for path in pages for rule, impact, target in records[path]["axe"]
              if impact in BLOCKING]
    assert faults == [], f"{len(faults)} critical or serious accessibility faults:\n" + "\n".join(faults[:60])


def test_axe_reports_a_button_without_a_name_and_an_image_without_alt(browser):
    """The check above can fail: a page with a button with no name and an image with no text alternative
    gives two serious or critical findings."""
    context = browser.new_context()
    try:
        page = context.new_page()
        page.route("http://attn.test/a.html", lambda r: r.fulfill(
            body='<html lang="en"><head><title>t</title></head><body><main><h1>t</h1><button></button>'
                 '<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw="></main></body></html>', content_type="text/html"))
        page.goto("http://attn.test/a.html")
        found = axe_findings(page, "a.html")
    finally:
        context.close()
    assert sorted(rule for rule, impact, _ in found if impact in BLOCKING) == ["button-name", "image-alt"], found
