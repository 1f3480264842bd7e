"""The site in both languages: the Chinese edition under zh/, a language switch on every page that
lands on the same page, Chinese search, Colab and downloads opening the Chinese reader editions, and
the explorers working on Chinese pages. (The walks over every page of tests/test_browser.py and
tests/test_reading_surface.py cover the Chinese pages too: they take every page of the site.)"""

import json
import pathlib
import re
import urllib.parse

import pytest
import torch

from attn.book.widgets import MaskExplorer
from scripts import notebooks
from scripts import reader

LINK = re.compile(r'<p class="attn-lang"><a href="([^"]+)" hreflang="([^"]+)"')


def _content_pages(site):
    """The pages written from the book's sources (the generated index and search pages have no article)."""
    return sorted(p for p in site.rglob("*.html")
                  if "_static" not in p.parts and p.name not in {"404.html", "index.html", "genindex.html", "search.html", "py-modindex.html"})


def test_both_editions_have_the_same_pages_and_the_chinese_ones_say_they_are_chinese(built_site):
    en = {p.relative_to(built_site) for p in _content_pages(built_site) if p.relative_to(built_site).parts[0] != "zh"}
    zh = {p.relative_to(built_site / "zh") for p in _content_pages(built_site / "zh")}
    api_pages = len(list((notebooks.ROOT / "book" / "api").glob("*.md")))
    # the chapters, intro, glossary, API (its overview and a page per part), references
    assert en == zh and len(en) == len(notebooks.chapters()) + 4 + api_pages > 4 + 10
    for rel in zh:
        head = (built_site / "zh" / rel).read_text()[:400]
        assert '<html lang="zh-CN"' in head, f"zh/{rel}: not marked as Chinese"
    assert '<html lang="en"' in (built_site / "book" / "self_attention.html").read_text()[:400]


def test_every_page_links_to_the_same_page_in_the_other_language(built_site):
    for page in _content_pages(built_site):
        rel = page.relative_to(built_site)
        text = page.read_text()
        found = LINK.findall(text)
        assert len(found) == 1, f"{rel}: {len(found)} language links"
        href, lang = found[0]
        target = (page.parent / href).resolve()
        want = built_site / (rel.relative_to("zh") if rel.parts[0] == "zh" else pathlib.Path("zh", rel))
        assert target == want.resolve(), f"{rel}: the language link leads to {target}, not {want}"
        assert lang == ("en" if rel.parts[0] == "zh" else "zh-CN")
        # the alternate is absolute, on the published site (tests/test_seo.py checks them all)
        assert f'<link rel="alternate" hreflang="{lang}" href="https://attn-book.github.io/attn-book/{want.relative_to(built_site).as_posix()}">' in text


def test_chinese_chapters_open_their_chinese_reader_editions_in_colab_binder_and_for_download(built_site, root):
    url, branch = notebooks.repository()
    slug = url.removeprefix("https://github.com/")
    for nb in notebooks.chapters():
        rel = nb.relative_to(root)  # book/x.ipynb
        page = (built_site / "zh" / rel.with_suffix(".html")).read_text()
        edition = reader.reader_path(root / "zh" / rel).relative_to(root).as_posix()
        assert edition == f"zh/reader/{rel.as_posix()}"
        assert f"https://colab.research.google.com/github/{slug}/blob/{branch}/{edition}" in page, rel
        assert f"https://mybinder.org/v2/gh/{slug}/{branch}?urlpath=lab/tree/{edition}" in page, rel
        served = (built_site / "zh" / "_sources" / rel).read_bytes()
        assert served == (root / edition).read_bytes(), f"zh/{rel}: the download is not the Chinese reader edition"


def test_the_chinese_search_index_holds_chinese_words(built_site):
    text = (built_site / "zh" / "searchindex.js").read_text()
    index = json.loads(text[text.index("(") + 1: text.rindex(")")])
    terms, titles = index["terms"], index["titleterms"]  # a word of a page's title is indexed as a title word only
    for word in ("注意力", "掩码", "多头", "位置", "编码", "softmax"):
        assert word in terms, f"{word} is not in the Chinese search index"
    causal = index["docnames"].index("book/causal_attention")
    assert causal in _as_list(terms["掩码"]) + _as_list(titles.get("掩码", []))


def _as_list(v):
    return v if isinstance(v, list) else [v]


# --- in the browser -----------------------------------------------------------------------------------

def test_the_language_link_leads_to_the_same_chapter_and_back(watch):
    page = watch.goto("book/causal_attention.html")
    page.locator("p.attn-lang a").click()
    page.wait_for_url("**/zh/book/causal_attention.html", timeout=20000)
    assert page.locator("html").get_attribute("lang") == "zh-CN"
    assert re.search(r"[\u4e00-\u9fff]", page.locator("h1").first.inner_text()), "the Chinese chapter has a Chinese title"
    page.locator("p.attn-lang a").click()
    page.wait_for_url("**/book/causal_attention.html", timeout=20000)
    assert "/zh/" not in page.url
    assert watch.errors == []


@pytest.mark.parametrize(("query", "chapter"), [("多头注意力", "multi_head_attention"), ("因果掩码", "causal_attention"),
                                                ("softmax", "self_attention")])
def test_chinese_search_finds_the_chapter_of_a_chinese_query(watch, query, chapter):
    page = watch.goto("zh/search.html?q=" + urllib.parse.quote(query))
    page.wait_for_selector("#search-results li a", timeout=30000)
    hrefs = page.locator("#search-results li a").evaluate_all("as => as.map(a => a.getAttribute('href'))")
    assert any(f"book/{chapter}.html" in h for h in hrefs), f"{query}: {hrefs[:8]}"
    assert watch.errors == []


def test_the_mask_explorer_works_on_the_chinese_explorers_page(watch):
    from test_browser import _controls, _grid, _mask_page, _set_range

    page, root = _mask_page(watch, "zh/book/explorers.html")
    root.locator("select[name=kind]").select_option("sliding_window")
    _set_range(root, "L", 10)
    page.wait_for_function("r => r.dataset.l === '10'", arg=root.element_handle(), timeout=10000)
    kw = _controls(root)
    assert kw["kind"] == "sliding_window" and kw["L"] == 10
    torch.testing.assert_close(_grid(root), MaskExplorer(**kw).mask())
    assert watch.errors == []


# --- every Chinese page, as tests/test_browser.py and tests/test_reading_surface.py check the English ones --

def test_every_chinese_page_loads_only_from_the_site_without_errors_and_within_its_weight_budget(built_site, browser, site_server):
    from test_browser import walk_at_desktop_width

    walk_at_desktop_width(built_site, browser, site_server, "zh")


def test_every_chinese_page_on_a_phone_fits_the_screen_sets_tables_apart_and_logs_no_console_warning(built_site, browser, site_server):
    from test_reading_surface import walk_on_a_phone

    walk_on_a_phone(built_site, browser, site_server, "zh")


def test_on_a_phone_the_chinese_chapter_list_and_contents_lead_where_they_point(browser, site_server):
    """tests/test_navigation.py's checks on a Chinese page, at 390 px with touch."""
    from conftest import PageWatch
    from test_navigation import SCREENS, _follow, _the_one_shown, _wait_shown

    height, _ = SCREENS[390]
    w = PageWatch(browser, site_server, viewport={"width": 390, "height": height}, is_mobile=True, has_touch=True,
                  device_scale_factor=2)
    w.press = lambda loc: loc.tap()
    try:
        page = w.goto("zh/book/self_attention.html")
        chapters = page.locator("nav.bd-docs-nav")
        w.press(_the_one_shown(page, ".primary-toggle"))
        assert _wait_shown(page, chapters), "☰ does not open the chapter list"
        _follow(w, chapters, "多头注意力", "**/zh/book/multi_head_attention.html")
        assert page.locator("h1").first.inner_text().strip().rstrip("#").strip() == "多头注意力"
        contents = page.locator(".bd-sidebar-secondary nav.page-toc")
        w.press(_the_one_shown(page, ".secondary-toggle"))
        assert _wait_shown(page, contents), "the contents button does not open the contents"
        _follow(w, contents, "小结", "**/zh/book/multi_head_attention.html#*")
        assert page.locator("h2", has_text="小结").first.is_visible()
        assert w.errors == [] and w.offhost == [] and w.failed == []
    finally:
        w.close()
