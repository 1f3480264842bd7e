"""The English a reader meets on the Chinese pages (issue 35, item 5): measured in Chromium on every built
Chinese page (scripts/zh_english.py: English words against Chinese characters / 1.5, in the visible text
outside maths, citations and code, code comments counted), and bounded at 5% a page. Pages still above
the bound are listed in ABOVE_TODAY with the reason and their measured share as a ceiling."""

import html
import re
import sys

import pytest

from conftest import ROOT, serve_like_pages
from scripts import zh_english
from scripts.zh_english import BOUND, count, english_words, share

# Pages still above the bound, with what keeps them there and a ceiling a little above their share as
# measured, so that the test fails if they get worse; a page under the bound is reported, to be taken off
# the list. None today: the API reference's 13 pages (70-88% English while their docstrings were English)
# measured 1.0-4.9% on 2026-12-05 with the docstrings in Chinese (i18n/zh/docstrings/).
ABOVE_TODAY: dict[str, tuple[str, float]] = {}


# --- the count ------------------------------------------------------------------------------------------

def test_english_words_are_counted_and_names_symbols_identifiers_and_glosses_are_not():
    assert english_words("注意力（attention）把每个词元的值混合起来") == []
    assert english_words("多头注意力（multi-head attention，见下一章）") == []
    assert english_words("用 PyTorch 的 softmax 训练 GPT-2、BERT 和 RoPE，d_model 与 attn.masks 的 x 和 L") == []
    assert english_words("The weights sum to one for every query.") == \
        ["The", "weights", "sum", "to", "one", "for", "every", "query"]
    # a gloss is a term, not a sentence: five words or more in parentheses count
    assert english_words("注意力（see the figure below for this）") == ["see", "the", "figure", "below", "for", "this"]
    # and only right after Chinese: an English parenthesis in an English sentence counts
    assert english_words("the scores (before softmax)") == ["the", "scores", "before"]
    assert english_words("# every token sees every real token") == ["every", "token", "sees", "every", "real", "token"]


def test_the_share_is_english_words_against_chinese_characters_over_one_and_a_half():
    assert share(0, 300) == 0 and share(5, 0) == 1 and share(0, 0) == 0
    assert share(10, 285) == pytest.approx(10 / (10 + 190))
    c = count(["这是一句中文。", "and this is English"])
    assert (c.english, c.chinese) == (4, 6) and c.share == pytest.approx(4 / 8)


# --- in the browser, on a page made to fail ------------------------------------------------------------

FIXTURE = """<!DOCTYPE html><html lang="zh-CN"><head><meta charset="utf-8"><title>t</title></head><body>
<p>注意力（attention）把每个词元的值按权重混合起来，权重来自查询与键的相似度，每一行的和为一。</p>
<p>This sentence was left in English by mistake and should be caught.</p>
<p><span class="math"><mjx-container>softmax of the scaled scores over the keys</mjx-container></span>
<span class="bibtex-citation">Vaswani and others, Attention is all you need</span></p>
<div class="highlight"><pre><span class="k">def</span> attend(query, keys, values): <span class="c1"># mix the values by weight</span></pre></div>
<p style="display: none">hidden words are not read by anyone at all today</p>
<details><summary>答案</summary><p>folded words are read once opened</p></details>
<div class="attn-w"><p>plotted token labels the explorer draws</p></div>
<dl class="py function"><dt class="sig sig-object py"><span class="sig-name">causal</span>(<em class="sig-param">offset: int = 0</em>)</dt>
<dd><dl class="field-list"><dt>参数</dt><dd><p><strong>offset</strong> (<em>int</em><em> | </em><em>None</em>) – 偏移，
<em>read as prose</em></p></dd><dt>返回类型</dt><dd><p><em>Tensor</em></p></dd></dl></dd></dl>
</body></html>"""


def test_a_page_with_an_english_sentence_is_above_the_bound_and_what_is_not_prose_is_left_out(browser, tmp_path):
    (tmp_path / "page.html").write_text(FIXTURE, encoding="utf-8")
    (tmp_path / "404.html").write_text("<p>not found</p>", encoding="utf-8")  # the server's answer to /favicon.ico
    server, base = serve_like_pages(tmp_path, prefix="")
    try:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        try:
            got = zh_english.measure(context.new_page(), f"{base}/page.html")
        finally:
            context.close()
    finally:
        server.shutdown()
    words = got.text.words
    # the English sentence (12 words), the code comment (5), the opened fold (6) and an API description's
    # emphasis (3); not the maths, the citation, the code, the hidden paragraph, the explorer (counted apart),
    # an API signature or a parameter's name and types
    assert words == ["This", "sentence", "was", "left", "in", "English", "by", "mistake", "and", "should", "be",
                     "caught", "mix", "the", "values", "by", "weight", "folded", "words", "are", "read", "once",
                     "opened", "read", "as", "prose"], words
    assert got.text.chinese == zh_english.chinese_chars(FIXTURE.split("<p>")[1]) + 2 + 8  # + 答案, 参数 返回类型 偏移
    assert got.widget.english == 6
    assert got.share > BOUND


# --- the comments of the package's source in Chinese (_ext/attn_source_comments.py) ----------------------

sys.path.insert(0, str(ROOT / "_ext"))
import attn_source_comments as source_comments  # noqa: E402 (the book's Sphinx extension, from _ext/)

TABLE = ROOT / "i18n" / "zh" / "source_comments.yml"


def test_comments_are_translated_from_the_table_and_the_code_is_left_as_it_is():
    code = ('def f(x):\n    # first line of a run\n    # and its second\n    y = "# not a comment"  # end of line\n'
            '    return y  # not in the table\n')
    table = {"first line of a run and its second": "一段注释\n分两行", "end of line": "行尾注释"}
    assert source_comments.translate_comments(code, table) == (
        'def f(x):\n    # 一段注释\n    # 分两行\n    y = "# not a comment"  # 行尾注释\n    return y  # not in the table\n')
    assert source_comments.translate_comments("def (broken", table) == "def (broken"


def _package_comments() -> set[str]:
    return {text for path in (ROOT / "src" / "attn").rglob("*.py")
            for _, _, text, _ in source_comments.comments(path.read_text(encoding="utf-8"))}


def test_every_entry_of_the_comment_table_is_a_comment_of_the_package_and_keeps_its_numbers():
    found = _package_comments()
    table = source_comments.load(TABLE)
    assert len(table) >= 50
    stale = [k for k in table if k not in found]
    assert stale == [], f"i18n/zh/source_comments.yml: no longer comments of src/attn (edit or remove them): {stale}"
    for en, zh in table.items():
        assert re.findall(r"\d+", en) == re.findall(r"\d+", zh), f"{en!r}: the numbers differ in {zh!r}"


def _included_source_comments(page_html: str) -> list[str]:
    """The comments of the code blocks of a built page that are not a notebook cell's ({literalinclude} and the
    text's code blocks)."""
    text = re.sub(r'<div class="cell_input.*?</pre>', "", page_html, flags=re.S)
    blocks = re.findall(r'<div class="highlight-(?:python|default)[^"]*"><div class="highlight"><pre[^>]*>(.*?)</pre>',
                        text, re.S)
    return [t for b in blocks for _, _, t, _ in source_comments.comments(html.unescape(re.sub(r"<[^>]+>", "", b)))]


def test_the_chinese_chapters_show_the_packages_source_with_chinese_comments(built_site):
    package = _package_comments()  # not the comments of a code block in the text (the overlays translate those)
    table = source_comments.load(TABLE)
    chinese = {" ".join(line.strip() for line in zh.split("\n")) for zh in table.values()}
    left, seen = [], 0
    for page in sorted((built_site / "zh" / "book").glob("*.html")):
        if page.name == "api.html":
            continue  # the reference overview shows no package source
        found = [t for t in _included_source_comments(page.read_text(encoding="utf-8")) if t in package | chinese]
        seen += len(found)
        # still the English (the table's entries equal to their English: notation kept as it is)
        left += [f"{page.name}: {t}" for t in found if t in package and english_words(t) and table.get(t) != t]
    assert seen >= 60, seen
    assert left == [], "English comments in the package's source on Chinese pages (add them to " \
                       "i18n/zh/source_comments.yml):\n" + "\n".join(left)
    english = _included_source_comments((built_site / "book" / "self_attention.html").read_text(encoding="utf-8"))
    assert any("Masked softmax" in t for t in english), "the English edition keeps the English comments"


# --- every Chinese page ---------------------------------------------------------------------------------

def test_the_exceptions_are_above_the_bound_with_a_reason():
    for page, (why, ceiling) in ABOVE_TODAY.items():
        assert page.startswith("zh/") and why and BOUND < ceiling < 1, page


def check_english_share(built_site, records: dict[str, dict]) -> None:
    """No Chinese page a reader reads is more than 5% English (ABOVE_TODAY aside), as read by the one desktop walk
    over every Chinese page (tests/test_browser.py walk_at_desktop_width; the test: tests/test_zh_site.py
    test_no_chinese_page_is_more_than_five_percent_english), once the page's explorers are drawn."""
    pages = zh_english.chinese_pages(built_site)
    assert len(pages) >= 18 and "zh/book/self_attention.html" in pages and set(ABOVE_TODAY) <= set(pages)
    assert all(records[p]["text"] is not None for p in pages) and sum(r["text"] is not None for r in records.values()) == len(pages)
    counts = [zh_english.counted(p, records[p]["text"]) for p in pages]
    print(zh_english.table(counts, top=12))
    over = [f"{c.page}: {c.share:.1%} English ({c.text.english} words, {c.text.chinese} Chinese characters; "
            f"most often: {', '.join(sorted(set(c.text.words), key=c.text.words.count, reverse=True)[:12])})"
            for c in counts if c.share > ABOVE_TODAY.get(c.page, ("", BOUND))[1]]
    done = [c.page for c in counts if c.page in ABOVE_TODAY and c.share <= BOUND]
    if done:
        print(f"under the bound now, take it off ABOVE_TODAY: {done}")
    assert over == [], "Chinese pages above their bound:\n" + "\n".join(over)
