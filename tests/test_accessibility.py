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


# --------------------------------------------------------------------------- axe-core on every page
def _pages(built_site: pathlib.Path) -> list[str]:
    """Every page of both editions but the two index.html redirects (they leave at once for the first chapter)."""
    return sorted(str(p.relative_to(built_site)) for p in built_site.rglob("*.html")
                  if "_static" not in p.parts and p.relative_to(built_site).as_posix() not in {"index.html", "zh/index.html"})


def test_axe_finds_no_critical_or_serious_fault_on_any_page(built_site, site_server, browser):
    """Two tabs take turns: while axe checks one page, the next one loads and its explorers are drawn (a page's
    runtime draws the views off the screen a while after the load: most of a page's time here is that
    waiting). axe reports the violations only (resultTypes): its rules all run, but it does not write out
    the thousands of nodes that pass, which was a third of its time on a chapter."""
    if not AXE.exists():
        pytest.fail(f"{AXE.relative_to(ROOT)} is missing: run `make setup` (axe-core is pinned in package-lock.json)")
    axe = AXE.read_text()
    pages = _pages(built_site)
    assert len(pages) >= 40 and "book/explorers.html" in pages and "zh/book/references.html" in pages
    context = browser.new_context(viewport={"width": 1280, "height": 900})  # one context for every page: fast
    tabs = [context.new_page(), context.new_page()]
    faults, checked = [], []
    try:
        tabs[0].goto(f"{site_server}/{pages[0]}", wait_until="commit")
        for i, rel in enumerate(pages):
            tab = tabs[i % 2]
            if i + 1 < len(pages):  # the next page starts loading in the other tab
                tabs[(i + 1) % 2].goto(f"{site_server}/{pages[i + 1]}", wait_until="commit")
            tab.wait_for_load_state("networkidle")
            # the explorers are drawn by the page's runtime: wait until each view is (one .attn-w root each)
            tab.wait_for_function(f"document.querySelectorAll('{VIEWS}').length <= document.querySelectorAll('.attn-w').length",
                                  timeout=30000)
            tab.add_script_tag(content=axe)
            result = tab.evaluate("(tags) => axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']})",
                                  WCAG_TAGS)
            assert result["url"].endswith("/" + rel), (result["url"], rel)  # the tab checked the page it was sent to
            checked.append(rel)
            for rule in result["violations"]:
                for node in rule["nodes"]:
                    impact = node.get("impact") or rule["impact"]
                    if impact in BLOCKING:
                        faults.append(f"{rule['id']} ({impact}) on {rel}: {' '.join(map(str, node['target']))}")
    finally:
        context.close()
    assert checked == pages
    assert faults == [], f"{len(faults)} critical or serious accessibility faults:\n" + "\n".join(faults[:60])
