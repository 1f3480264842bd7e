"""The words of the package's outputs in Chinese, from one string table, and the English run's numbers kept.

The output objects (attn.book.viz.Table and Results, attn.diagnose.Report and Finding,
attn.book.exercises.Verdict) write their words through attn._locale (English: as the code writes them;
Chinese: attn/_locale/zh.py). The Chinese book converts the English run's stored outputs through the
same table (scripts/zh.py: chinese_output). These tests fail when a translation loses, adds or moves a
number, when a Chinese output still holds a text the table translates, and when switching the language
back does not give the English byte for byte."""

import json
import re
from html import unescape

import nbformat
import pytest
import torch

import attn
from attn import _locale, diagnose
from attn._locale import NUMBER, translate, using
from attn._locale.zh import STRINGS
from attn.book import exercises
from attn.book.viz import Results, Table
from scripts import notebooks, reader, zh

FIX = "edit src/attn/_locale/zh.py (or scripts/zh.py), then run `python -m scripts.zh build`"
SLOT = re.compile(r"\{\*?\}")
TEXT = re.compile(r">([^<>]+)<")


def _outputs(nb: dict):
    """(cell id, index, output) of every stored output a package object wrote."""
    for cell in nb["cells"]:
        for i, out in enumerate(cell.get("outputs", []) if cell["cell_type"] == "code" else []):
            if out.get("data") and zh.output_object(out["data"]) is not None:
                yield cell["id"], i, out


# --- the table ------------------------------------------------------------------------------------------

def test_every_translation_keeps_the_slots_of_its_english_in_order():
    bad = [k for k, v in STRINGS.items() if SLOT.findall(k) != SLOT.findall(v)]
    assert bad == [], f"a translation must keep the {{}} (numbers) and {{*}} (texts) of its key, in order: {bad}"
    same = [k for k, v in STRINGS.items() if k == v]
    assert same == [], f"an entry that translates nothing: {same}"
    numbered = [k for k in STRINGS if "{*}" not in k and NUMBER.search(k) and NUMBER.sub("{}", k) in STRINGS]
    assert numbered == [], f"an exact key shadowed by a numbered one: {numbered}"


def test_a_number_in_a_translation_is_found_where_the_english_has_it():
    for key, value in STRINGS.items():
        if "{*}" in key:
            continue
        numbers = [str(n) for n in range(101, 101 + key.count("{}"))]
        english = key.format(*numbers)
        if english != key and translate(english, "zh") == value.format(*numbers):
            assert NUMBER.findall(value.format(*numbers)) == numbers, f"{key!r} -> {value!r}: the numbers read differently"


# --- the package ----------------------------------------------------------------------------------------

def _objects():
    table = Table([["row sums", 1.0], ["largest weight above the diagonal", 0.0]], ["", "value"])
    results = Results({"row sums": torch.ones(3), "weight above the diagonal": 0.0})
    report = diagnose.check(attn.MultiHeadAttention(16, 4), d_model=16, is_causal=True, only=("scaling",))
    verdict = exercises.Verdict("split heads", [("B=2, L=3, D=8, H=2, padding mask", True, "")])
    return table, results, report, report["scaling"], verdict


def test_the_package_switched_to_chinese_writes_chinese_and_switched_back_writes_the_english_byte_for_byte():
    objs = _objects()
    english = [(repr(o), getattr(o, "_repr_html_", lambda: "")()) for o in objs]
    assert attn.language() == "en" and "row sums" in english[0][0] and "diagnose" in english[2][0]
    attn.set_language("zh")
    try:
        chinese = [(repr(o), getattr(o, "_repr_html_", lambda: "")()) for o in objs]
    finally:
        attn.set_language(None)
    assert [(repr(o), getattr(o, "_repr_html_", lambda: "")()) for o in objs] == english
    for (en_text, en_html), (zh_text, zh_html) in zip(english, chinese, strict=True):
        assert zh.CJK.search(zh_text) and NUMBER.findall(zh_text) == NUMBER.findall(en_text)
        assert NUMBER.findall(zh_html) == NUMBER.findall(en_html)
    assert "行和" in chinese[0][0] and "诊断" in chinese[2][0] and "缩放" in chinese[2][1] and "拆分多头" in chinese[4][0]


def test_the_language_comes_from_set_language_or_attn_lang_and_an_unknown_one_is_refused(monkeypatch):
    monkeypatch.setenv("ATTN_LANG", "zh")
    assert _locale.language() == "zh" and translate("row sums") == "行和"
    with using("en"):
        assert translate("row sums") == "row sums"
    monkeypatch.delenv("ATTN_LANG")
    assert _locale.language() == "en"
    with pytest.raises(ValueError, match="no string table"):
        attn.set_language("fr")


def test_chinese_text_is_aligned_by_its_width_on_screen():
    with using("zh"):
        lines = repr(Table([["row sums", 1.0], ["x", 2.0]], ["", "value"])).splitlines()
    assert len({_locale.width(line) for line in lines}) == 1, lines


def test_numbers_and_free_texts_fill_the_slots_in_order():
    assert translate("outputs span 28 of 30 dimensions", "zh") == "输出张成 28 维（共 30 维）"
    assert translate("diagnose TruncatedHeads: 2 of 8 checks failed", "zh") == "诊断 TruncatedHeads：2 项检查未通过（共 8 项）"
    shuffled = "shuffling the tokens moved the last output by < 1e-04 beyond the shuffle: ignores positions"
    assert translate(shuffled, "zh") == "打乱词元后，最后一个输出除随之重排外还变化了 < 1e-04：不看位置"
    assert translate("a text the table does not have", "zh") == "a text the table does not have"


# --- the Chinese book -----------------------------------------------------------------------------------

@pytest.mark.parametrize("path", notebooks.chapters(), ids=lambda p: p.stem)
def test_each_chinese_output_has_the_english_runs_numbers_and_no_text_the_table_translates(root, path):
    english = {(c, i): o for c, i, o in _outputs(json.loads(path.read_text()))}
    chinese = {(c["id"], i): o for c in json.loads((root / "zh" / "book" / path.name).read_text())["cells"]
               for i, o in enumerate(c.get("outputs", []))}
    assert english.keys() <= chinese.keys(), f"zh/book/{path.name}: {FIX}"
    for key, en in english.items():
        for mime, text in en["data"].items():
            cn = zh._joined(chinese[key]["data"][mime])
            assert NUMBER.findall(cn) == NUMBER.findall(zh._joined(text)), \
                f"zh/book/{path.name} cell {key[0]} ({mime}): the numbers differ from the English run's: {FIX}"
        html = zh._joined(chinese[key]["data"].get("text/html", ""))
        nodes = [unescape(t).strip() for t in TEXT.findall(html)] or zh._joined(chinese[key]["data"]["text/plain"]).splitlines()
        left = [t for t in nodes if t and translate(t, "zh") != t]
        assert left == [], f"zh/book/{path.name} cell {key[0]}: still in English though the table has it: {left}: {FIX}"


def test_the_chinese_reader_editions_switch_the_package_to_chinese_and_the_english_ones_do_not(root):
    path = notebooks.chapters()[0]
    cn = nbformat.read(reader.reader_path(root / "zh" / "book" / path.name), as_version=4)
    en = nbformat.read(reader.reader_path(path), as_version=4)
    first = next(c for c in cn.cells if c.cell_type == "code")
    assert 'os.environ["ATTN_LANG"] = "zh"' in first.source
    assert not any("ATTN_LANG" in c.source for c in en.cells if c.cell_type == "code")


def test_a_markdown_output_is_translated_cell_by_cell_and_line_by_line_with_its_table_and_numbers_kept():
    md = ("Measured on the build machine (processor time, one thread):\n\n| model | steps | trained by |\n"
          "|---|---:|---|\n| BERT | 1500 | this page (mean of 3 seeds) |\n| a text the table does not have | 7 | x |")
    out = zh.translate_markdown(md)
    assert out.splitlines() == ["在构建机器上测得（处理器时间，单线程）：", "", "| 模型 | 步数 | 训练脚本 |", "|---|---:|---|",
                                "| BERT | 1500 | 本页（3 个种子的均值） |", "| a text the table does not have | 7 | x |"]
    stored = {"output_type": "display_data", "metadata": {}, "data": {"text/markdown": md, "text/plain": "<Markdown>"}}
    assert zh.chinese_output(stored)["data"] == {"text/markdown": out, "text/plain": "<Markdown>"}
