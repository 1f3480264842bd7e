"""The API reference's docstrings in Chinese (issue 35): one source (the package's docstrings) and one
overlay (i18n/zh/docstrings/), applied to the Chinese build by _ext/attn_docstrings.py, checked without a
build by scripts/zh_docstrings.py (part of `python -m scripts.zh check`, which tests/test_zh.py holds clean)."""

import html
import json
import re
import sys

import pytest

from conftest import ROOT
from scripts import zh_docstrings

sys.path.insert(0, str(ROOT / "_ext"))
import attn_book  # noqa: E402 (the book's Sphinx extensions, from _ext/)
import attn_docstrings  # noqa: E402

CJK = re.compile(r"[\u4e00-\u9fff]")
UNITS = "<!-- header -->\n\n<!-- doc attn.x.f en:{h} -->\n返回 ``x`` 的两倍。\n\n<!-- doc attn.x.g en:000000000000 -->\n旧的。\n"


# --- the extension --------------------------------------------------------------------------------------

def test_the_hash_reads_words_not_layout():
    assert attn_docstrings.english_hash("Twice\n  ``x``.") == attn_docstrings.english_hash("Twice ``x``.")
    assert attn_docstrings.english_hash("Twice ``x``.") != attn_docstrings.english_hash("Thrice ``x``.")


def test_a_line_break_between_chinese_characters_is_joined_and_others_are_kept():
    lines = ["缩放分数，", "再取 softmax。", "", "Args:", "    q: 查询，", "        形状为 ``(B, L, E)``。", "    k: 键。",
             "", "术语", "    定义。"]
    assert attn_docstrings.join_cjk_lines(lines) == [
        "缩放分数，再取 softmax。", "", "Args:", "    q: 查询，形状为 ``(B, L, E)``。", "    k: 键。", "", "术语", "    定义。"]


def test_a_current_translation_replaces_the_docstring_and_a_stale_or_missing_one_leaves_it():
    h = attn_docstrings.english_hash("Twice ``x``.")
    units = attn_docstrings.parse(UNITS.format(h=h))
    assert set(units) == {"attn.x.f", "attn.x.g"} and units["attn.x.f"] == (h, "返回 ``x`` 的两倍。")
    lines = ["Twice", "``x``."]
    assert attn_docstrings.translate(units, "attn.x.f", lines) == "translated" and lines == ["返回 ``x`` 的两倍。", ""]
    lines = ["Changed since."]
    assert attn_docstrings.translate(units, "attn.x.g", lines) == "stale" and lines == ["Changed since."]
    assert attn_docstrings.translate(units, "attn.x.h", ["New."]) == "missing"
    assert attn_docstrings.translate(units, "attn.x.h", ["", ""]) == "empty"
    with pytest.raises(ValueError, match="attn.x.f appears twice"):
        attn_docstrings.parse(UNITS.format(h=h) + f"\n<!-- doc attn.x.f en:{h} -->\n又一次。\n")


# --- the checks without a build -------------------------------------------------------------------------

def test_each_units_english_is_found_in_the_package():
    masks = zh_docstrings.english_docstring("attn.masks")
    assert masks is not None and masks == __import__("inspect").getdoc(__import__("attn.masks").masks)
    assert zh_docstrings.english_docstring("attn.blocks.EncoderLayer.forward").startswith("``x``")
    # a package's name for a function that is also a module's name
    assert zh_docstrings.english_docstring("attn.book.widgets.model_state").startswith("``model`` (a :class:")
    assert zh_docstrings.english_docstring("attn.masks.no_such_thing") is None


def test_what_a_translation_must_keep_is_checked():
    en = ("Scale the scores.\n\nArgs:\n    q: queries ``(B, L, E)``.\n    scale (float): see :func:`attn.masks.causal`.\n\n"
          "Shape:\n    ``(B, L, S)``.\n")
    good = ("缩放分数。\n\nArgs:\n    q: 查询 ``(B, L, E)``。\n    scale (float): 见 :func:`attn.masks.causal`。\n\n"
            "形状:\n    ``(B, L, S)``。\n")
    assert zh_docstrings.invariant_differences(en, good) == []
    assert zh_docstrings.rest_errors(good) == [] and zh_docstrings.rendered_code(good) == zh_docstrings.rendered_code(en)
    found = zh_docstrings.invariant_differences(en, good.replace("    q:", "    queries:"))
    assert [d.split(":")[0] for d in found] == ["arguments"], found
    assert zh_docstrings.invariant_differences(en, good.replace("形状:", "形状说明")) != []
    changed = good.replace("``(B, L, E)``", "``(B, L, D)``").replace(":func:`attn.masks.causal`", "causal")
    assert zh_docstrings.rendered_code(changed) != zh_docstrings.rendered_code(en)
    # markup that touches a Chinese character is not markup to docutils, and no warning says so
    touching = good.replace("查询 ``(B, L, E)``。", "查询``(B, L, E)``的形状。")
    assert zh_docstrings.rest_errors(touching) == [] and "(B, L, E)" not in zh_docstrings.rendered_code(touching)
    assert zh_docstrings.rest_errors("缩放 ``scale 的分数。") != []
    # an inline "Shape: ..." after the arguments is prose, not an argument
    assert zh_docstrings.invariants("Args:\n    q: x.\n\nShape: y.\n")["arguments"] == ["q"]


# --- the built site -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def report(built_site):
    path = built_site.parent / "edition-zh" / "_build" / ".doctrees" / attn_docstrings.REPORT
    return json.loads(path.read_text(encoding="utf-8"))


def test_every_docstring_on_a_chinese_page_is_translated(report):
    units = [(name, unit) for page in report.values() for name, unit in page.items()]
    assert len(units) > 400 and {u["what"] for _, u in units} >= {"module", "class", "function", "method", "data"}
    not_current = [f"{name}: {u['status']}" for name, u in units if u["status"] != "translated"]
    assert not_current == [], f"{len(not_current)} docstrings shown in English: python -m scripts.zh docstrings"
    # and translated means Chinese, not the English stub kept under its marker
    table = attn_docstrings.load(zh_docstrings.FOLDER)
    english = [name for name, u in units if len(re.findall(r"[A-Za-z]{3,}", u["english"])) >= 3 and not CJK.search(table[name][1])]
    assert english == []


def test_the_checks_without_a_build_find_what_the_build_shows(report):
    """zh_docstrings.english_docstring (the stale check of scripts.zh check) reads the same English as autodoc."""
    differ = [name for page in report.values() for name, u in page.items()
              if attn_docstrings.english_hash(zh_docstrings.english_docstring(name) or "") != u["en"]]
    assert differ == []


def test_the_chinese_reference_shows_the_chinese_docstrings_and_the_english_one_is_untouched(built_site):
    table = attn_docstrings.load(zh_docstrings.FOLDER)
    _, chinese = table["attn.masks.causal"]
    first = re.sub(r"``|:[a-z:]+:`([^`]*)`", r"\1", chinese.split("\n\n")[0]).split("\n")[0]
    zh_page = (built_site / "zh" / "book" / "api" / "maths.html").read_text(encoding="utf-8")
    en_page = (built_site / "book" / "api" / "maths.html").read_text(encoding="utf-8")
    assert CJK.search(first) and first[:12] in html.unescape(re.sub(r"<[^>]+>", "", zh_page))
    article = en_page.split("<article", 1)[1].split("</article>")[0]
    article = re.sub(r'<p class="attn-lang">.*?</p>', "", article, flags=re.S)  # the link to the other edition
    assert not CJK.search(re.sub(r"<[^>]+>", "", article))


def test_no_method_shows_pytorchs_boilerplate(built_site):
    import attn.blocks

    assert attn_book.inherits_foreign_docstring(attn.blocks.Decoder.forward)  # none of its own: PyTorch's
    assert not attn_book.inherits_foreign_docstring(attn.blocks.EncoderLayer.forward)  # its own
    pages = [*(built_site / "book" / "api").glob("*.html"), *(built_site / "zh" / "book" / "api").glob("*.html")]
    assert len(pages) == 26
    assert [p.name for p in pages if "Define the computation performed at every call" in p.read_text(encoding="utf-8")] == []


# --- the package's source shown in the chapters ({literalinclude}, _ext/attn_source_comments.py) --------

def test_a_docstring_of_included_source_is_replaced_by_its_translation_and_the_code_is_not():
    import attn_source_comments

    code = 'class A:\n    def f(self, x):\n        """Twice\n        ``x``."""\n        return 2 * x  # """kept"""\n'
    table = {attn_docstrings.english_hash("Twice ``x``."): "``x`` 的\n两倍。"}
    assert attn_source_comments.translate_docstrings(code, table) == (
        'class A:\n    def f(self, x):\n        """``x`` 的\n        两倍。\n        """\n        return 2 * x  # """kept"""\n')
    assert attn_source_comments.translate_docstrings(code, {}) == code
    assert attn_source_comments.translate_docstrings("def f(:\n", table) == "def f(:\n"  # not Python: as it is


def test_the_chinese_chapters_show_the_included_sources_docstrings_in_chinese(built_site):
    def docstrings(page):
        blocks = re.findall(r"<pre[^>]*>(.*?)</pre>", page.read_text(encoding="utf-8"), re.S)
        return [d for b in blocks for d in re.findall(r'"""(.*?)"""', html.unescape(re.sub(r"<[^>]+>", "", b)), re.S)]

    table = attn_docstrings.load(zh_docstrings.FOLDER)
    merge = table["attn.attention.MultiHeadAttention._merge_heads"][1]
    zh = docstrings(built_site / "zh" / "book" / "multi_head_attention.html")
    en = docstrings(built_site / "book" / "multi_head_attention.html")
    assert any(d.strip() == merge for d in zh) and any(d.startswith("Concatenate the heads") for d in en)
