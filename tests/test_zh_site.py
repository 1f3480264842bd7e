"""The site in both languages: the Chinese edition under zh/, a language switch on every page that
lands on the same page, Chinese search, Colab and downloads opening the Chinese reader editions, and
the explorers working on Chinese pages; and every Chinese page walked as the English ones are (the walks of
tests/test_browser.py, at a desktop's width, and tests/test_reading_surface.py, on a phone), here."""

import json
import pathlib
import re
import sys
import urllib.parse

import pytest
import torch

from attn.book.widgets import MaskExplorer
from scripts import notebooks
from scripts import reader
from scripts import zh

sys.path.insert(0, str(notebooks.ROOT / "_ext"))
import attn_theme_words  # noqa: E402 (the book's Sphinx extension, from _ext/)

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

def test_every_chinese_page_loads_only_from_the_site_without_errors_and_within_its_weight_budget(built_site, desktop_walk):
    from test_browser import check_loads_at_desktop_width

    check_loads_at_desktop_width(built_site, desktop_walk("zh"), "zh")


def test_axe_finds_no_critical_or_serious_fault_on_any_chinese_page(built_site, desktop_walk):
    from test_accessibility import check_axe

    check_axe(built_site, desktop_walk("zh"), "zh")


def test_no_chinese_page_is_more_than_five_percent_english(built_site, desktop_walk):
    from test_zh_english import check_english_share

    check_english_share(built_site, desktop_walk("zh"))


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


# --- the theme's words (issue 35: tooltips, accessible names and placeholders in Chinese) ---------------

CHROME_ATTRIBUTES = ("title", "aria-label", "placeholder", "alt", "data-bs-title")
# The English the themes write on every page of the site, each through one of attn_theme_words' three ways:
# Sphinx's and the themes' gettext messages (the catalogues), and the templates' own English (the pages table).
THEME_MESSAGES = {
    "sphinx": ["Link to this definition", "Link to this heading", "Link to this image", "Color mode", "System Settings",
               "Light", "Dark"],
    "booktheme": ["Print to PDF", "Source repository", "Source repositories", "Repository", "Open issue",
                  "Launch interactive content", "Launch on", "logo", "Download source file", "Fullscreen mode"],
}
TEMPLATE_ENGLISH = ["Toggle primary sidebar", "Toggle secondary sidebar", "Main", "Page", "Search this book..."]
# Taiwanese wording in the themes' zh catalogues, which a page in simplified Chinese does not use
TAIWANESE = ("列印", "檔案", "程式", "資料", "搜尋", "網頁", "設定", "連結")


def chrome_attributes(html: str):
    """(attribute, value) of every tooltip, accessible name, placeholder and alt text of a page, but those of
    citations (a paper's authors and title, in English in either edition, as scripts/zh_english.py counts)."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    for cite in soup.select(".bibtex-citation"):
        cite.decompose()
    for el in soup.find_all(True):
        for name in CHROME_ATTRIBUTES:
            if el.get(name):
                yield name, el[name]


def _all_pages(site):
    return sorted(p for p in site.rglob("*.html") if "_static" not in p.relative_to(site).parts)


def test_every_chinese_page_names_its_controls_in_chinese_and_every_english_one_in_english(built_site):
    from scripts import zh_english

    english = {}
    for page in _all_pages(built_site / "zh"):
        for name, value in chrome_attributes(page.read_text()):
            # an English value: English words (by scripts/zh_english.py's rules: names, identifiers and symbols
            # are not) and no Chinese; a figure's alt text in Chinese quoting its English labels is the chapter's
            if (zh_english.english_words(value) and not zh.CJK.search(value)) or any(w in value for w in TAIWANESE):
                english.setdefault(f'{name}="{value}"', page.relative_to(built_site).as_posix())
    assert not english, f"{len(english)} English or Taiwanese values on Chinese pages: {english}"
    # the English edition as the themes write it: none of the Chinese table reaches it
    theme = zh.strings()["theme"]
    chinese = {*theme["pages"].values(), *(v for table in theme["catalogues"].values() for v in table.values())}
    en_pages = [p for p in _all_pages(built_site) if p.relative_to(built_site).parts[0] != "zh"]
    for page in en_pages:
        for name, value in chrome_attributes(page.read_text()):
            assert not any(word in value for word in chinese), f'{page.relative_to(built_site)}: {name}="{value}"'
    chapter = (built_site / "book" / "causal_attention.html").read_text()
    for english_value in ("Link to this heading", "Toggle primary sidebar", "Print to PDF", "Search this book...",
                          "Color mode", "Launch on Colab", "Colab logo", "Source repositories"):
        assert f'="{english_value}"' in chapter, english_value
    # the 404 page, and the catalogues compiled by the build, not committed
    assert "<h1>找不到页面</h1>" in (built_site / "zh" / "404.html").read_text()
    assert not [p for p in (zh.ZH / zh.LOCALE).rglob("*.mo") if not _ignored(p)], "a compiled catalogue is committed"


def _ignored(path) -> bool:
    import subprocess

    return subprocess.run(["git", "check-ignore", "-q", str(path)], cwd=zh.ROOT).returncode == 0


def test_the_theme_words_reach_every_message_and_template_string_they_name(tmp_path, monkeypatch):
    """The mechanism, without a build: the catalogues written from i18n/zh/strings.yml are compiled as Sphinx
    compiles them and put before Sphinx's and the themes' own (attn_theme_words.install_catalogues), and the
    templates' English is replaced in a page. Each English string above must come out Chinese: an entry taken
    out of the table leaves it English (or in the theme's Taiwanese wording) and fails here."""
    import collections
    import gettext
    import os
    import types

    import pydata_sphinx_theme
    import sphinx
    import sphinx_book_theme
    from sphinx import locale
    from sphinx.util.i18n import CatalogRepository

    monkeypatch.setattr(locale, "translators", collections.defaultdict(gettext.NullTranslations))
    for name, text in zh.catalogues().items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    config = types.SimpleNamespace(language="zh_CN", locale_dirs=[zh.LOCALE], source_encoding="utf-8-sig",
                                   gettext_allow_fuzzy_translations=False)
    # as Sphinx starts (Sphinx._init_i18n): the project's sphinx.po compiled, its catalogues first
    repo = CatalogRepository(str(tmp_path), config.locale_dirs, config.language, config.source_encoding)
    for catalog in repo.catalogs:
        if catalog.domain == "sphinx":
            catalog.write_mo(config.language)
    locale.init([*repo.locale_dirs, None, os.path.join(os.path.dirname(sphinx.__file__), "locale")], config.language)
    # then the themes register theirs (their setup), then the builder starts (builder-inited)
    locale.init([os.path.join(os.path.dirname(pydata_sphinx_theme.__file__), "locale")], config.language)
    book_locales = os.path.join(os.path.dirname(sphinx_book_theme.__file__), "theme", "sphinx_book_theme", "static", "locales")
    locale.init([book_locales], config.language, "booktheme")
    attn_theme_words.install_catalogues(types.SimpleNamespace(config=config, srcdir=str(tmp_path)))
    assert sorted(p.name for p in tmp_path.rglob("*.mo")) == ["booktheme.mo", "sphinx.mo"]
    for domain, messages in THEME_MESSAGES.items():
        translate = locale.get_translation(domain)
        for message in messages:
            text = str(translate(message))
            assert zh.CJK.search(text) and not any(w in text for w in TAIWANESE), f"{domain}: {message!r} -> {text!r}"
    assert str(locale.get_translation("booktheme")("Print to PDF")) == "打印为 PDF"
    # a message the table does not name keeps the theme's translation
    assert str(locale.get_translation("booktheme")("Fullscreen mode")) == "全屏模式"
    words = zh.config()["sphinx"]["config"]["attn_theme_words"]
    for english in TEMPLATE_ENGLISH:
        for name in CHROME_ATTRIBUTES:
            page = f'<nav class="x" {name}="{english}"></nav><p>{english}</p>'
            out = attn_theme_words.translate_attributes(page, words)
            assert zh.CJK.search(out.split("<p>")[0]) and out.endswith(f"<p>{english}</p>"), (english, name)
        # only a whole value is replaced, and nothing without the table (the English edition)
        assert attn_theme_words.translate_attributes(f'<a title="{english} x">', words) == f'<a title="{english} x">'
        assert attn_theme_words.translate_attributes(f'<a title="{english}">', None) == f'<a title="{english}">'


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_tooltips_and_the_search_fields_placeholder_are_in_the_pages_language(watch, lang):
    """What a reader sees: Bootstrap's tooltips (data-bs-toggle="tooltip", shown on hover from the title or
    data-bs-title) and the search dialog's placeholder, Chinese on a Chinese page, English on the English one."""
    page = watch.goto(("zh/" if lang == "zh" else "") + "book/causal_attention.html")
    shown = {}
    for selector in (".primary-toggle", ".theme-switch-button", ".btn-fullscreen-button",
                     ".search-button-field"):
        page.mouse.move(1, 1)
        page.wait_for_function("() => !document.querySelector('.tooltip.show')", timeout=5000)
        page.locator(selector).first.hover()
        tip = page.locator(".tooltip.show .tooltip-inner")
        tip.wait_for(state="visible", timeout=5000)
        shown[selector] = tip.inner_text().strip()
    page.mouse.move(1, 1)
    page.keyboard.press("Control+k")
    field = page.locator("#pst-search-dialog input[type=search]")
    field.wait_for(state="visible", timeout=5000)
    shown["placeholder"] = field.get_attribute("placeholder")
    if lang == "zh":
        assert all(zh.CJK.search(text) for text in shown.values()), shown
        assert shown["placeholder"] == "搜索本书……" and shown[".primary-toggle"] == "显示或隐藏导航栏", shown
    else:
        assert not any(zh.CJK.search(text) for text in shown.values()), shown
        assert shown["placeholder"] == "Search this book..." and shown[".primary-toggle"] == "Toggle primary sidebar", shown
    assert watch.errors == []
