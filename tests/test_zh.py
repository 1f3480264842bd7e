"""The Chinese edition (中文版): one source with the English, and drift caught.

The translations live in i18n/zh/ (scripts/zh.py); zh/ is generated from them and from book/. These
tests fail when an English text changed after its translation, when a Chinese notebook differs from
its English source in a code cell (but for its comments, in Chinese) or an output (but for the words of
the package's tables and reports, in Chinese: tests/test_zh_outputs.py), when a code
unit changes more than comments (a number, a string, a line), when a glued number, inline code, maths or a
reference of the English is missing from its translation, and when a chapter does not use the
glossary's Chinese term (with the English in parentheses at its first use)."""

import copy
import json
import re

import nbformat
import pytest
import yaml

from scripts import notebooks
from scripts import reader
from scripts import zh
from scripts import zh_figures

FIX = "edit i18n/zh/, then run `python -m scripts.zh build`"


def _report(found: dict, kinds: set[str]) -> list[str]:
    return [f"{where}: {kind}: {item}" for where, by_kind in found.items()
            for kind, items in by_kind.items() if kind in kinds for item in items]


@pytest.fixture(scope="module")
def found():
    return zh.problems()


# --- the checks themselves can fail ----------------------------------------------------------------------

def test_an_overlay_parses_into_units_with_the_hash_of_the_english_they_translate():
    text = "<!-- header -->\n\n<!-- cell abc en:0123456789ab -->\n# 标题\n\n正文。\n\n<!-- alt abc en:ba9876543210 -->\n图。\n"
    assert zh.parse_overlay(text) == {("cell", "abc"): ("0123456789ab", "# 标题\n\n正文。"),
                                      ("alt", "abc"): ("ba9876543210", "图。")}
    with pytest.raises(ValueError, match="twice"):
        zh.parse_overlay("<!-- cell a en:0123456789ab -->\nx\n<!-- cell a en:0123456789ab -->\ny\n")


def test_a_changed_english_text_makes_its_translation_stale(tmp_path, monkeypatch):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("The cat sat on the mat today.", id="c1")])
    path = tmp_path / "demo.ipynb"
    nbformat.write(nb, path)
    monkeypatch.setattr(zh, "I18N", tmp_path)
    zh.write_overlay("demo", [("cell", "c1", zh.text_hash("The cat sat on the mat today."), "猫今天坐在垫子上。")])
    assert zh.chapter_problems(path) == {}
    nb.cells[0].source = "The dog sat on the mat today."
    nbformat.write(nb, path)
    assert zh.chapter_problems(path) == {"stale": ["cell c1"]}
    nb.cells.append(nbformat.v4.new_markdown_cell("A new cell with new words.", id="c2"))
    nbformat.write(nb, path)
    assert zh.chapter_problems(path)["missing"] == ["cell c2"]


CODE = ("scores = q @ k.T / 2.0  # scale the scores by the root of d_k\n"
        "# keep the key 'pad' out\n"
        "mask = scores.masked_fill(pad, float(\"-inf\"))\n"
        "f = lambda x: x  # noqa: E731  (B, L, D)\n")
CODE_ZH = ("scores = q @ k.T / 2.0  # 用 d_k 的平方根缩放分数\n"
           "# 不让键 'pad' 参与\n"
           "mask = scores.masked_fill(pad, float(\"-inf\"))\n"
           "f = lambda x: x  # noqa: E731  (B, L, D)\n")


def test_a_code_unit_may_change_its_comments_and_nothing_else():
    assert zh.code_difference(CODE, CODE_ZH) is None
    assert zh.code_difference(CODE, CODE) is None  # (untranslated, but not changed)
    for changed, found in (
            (CODE_ZH.replace('"-inf"', '"inf"'), "line 3, column 38: the English has STRING '\"-inf\"', the Chinese STRING '\"inf\"'"),
            (CODE_ZH.replace("2.0", "2.5"), "line 1, column 20: the English has NUMBER '2.0', the Chinese NUMBER '2.5'"),
            (CODE_ZH.replace("mask = scores.masked_fill(pad, float(\"-inf\"))\n", ""), "line 3, column 1: the English has NAME 'mask'"),
            (CODE_ZH.replace("# 不让键 'pad' 参与\n", ""), "line 2: the English has end of line, the Chinese NAME 'mask'"),
            (CODE_ZH.replace("用 d_k", "用\n# d_k"), "a comment line stays one line"),
            (CODE_ZH.replace("q @ k.T", "q@k.T"), "line 1: OP '@' moved from column 12"),
            (CODE_ZH.replace("# noqa: E731", "# 不检查"), "keep the comment '# noqa: E731'"),
            (CODE_ZH + "extra = 1\n", "the Chinese NAME 'extra'"),
            (CODE_ZH.replace("float(", "float(("), "does not tokenize")):
        assert found in (zh.code_difference(CODE, changed) or ""), (changed, zh.code_difference(CODE, changed))
    assert zh.code_untranslated(CODE, CODE) and not zh.code_untranslated(CODE, CODE_ZH)
    assert not zh.code_untranslated("f = lambda x: x  # noqa: E731\nx = 1  # (B, L, D)", "f = lambda x: x  # noqa: E731")


def test_a_commented_code_cell_is_a_unit_in_a_python_fence_and_its_chinese_reaches_the_notebook(tmp_path, monkeypatch):
    cells = [nbformat.v4.new_code_cell(CODE, id="k1"), nbformat.v4.new_code_cell("x = 1", id="k2"),
             nbformat.v4.new_code_cell("s = '```'  # a fence in a string", id="k3")]
    path = tmp_path / "demo.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    monkeypatch.setattr(zh, "I18N", tmp_path)
    assert [u[:2] for u in zh.english_units(json.loads(path.read_text()))] == [("code", "k1"), ("code", "k3")]
    assert zh.chapter_problems(path) == {"missing": ["code k1", "code k3"]}
    k3 = "s = '```'  # 字符串里的围栏"
    zh.write_overlay("demo", [("code", "k1", zh.text_hash(CODE), CODE), ("code", "k3", zh.text_hash(cells[2].source), k3)])
    assert "<!-- code k1 en:" in (tmp_path / "demo.md").read_text() and "````python\ns = '```'" in (tmp_path / "demo.md").read_text()
    assert zh.read_overlay("demo")[("code", "k3")][1] == k3
    assert zh.chapter_problems(path) == {"untranslated": ["code k1"]}
    zh.write_overlay("demo", [("code", "k1", zh.text_hash(CODE), CODE_ZH), ("code", "k3", zh.text_hash(cells[2].source), k3)])
    assert zh.chapter_problems(path) == {}
    built, missing = zh.chinese_notebook(path)
    assert [zh._source(c) for c in built["cells"]] == [CODE_ZH, "x = 1", k3] and missing == []
    zh.write_overlay("demo", [("code", "k1", zh.text_hash(CODE), CODE_ZH.replace("2.0", "2")),
                              ("code", "k3", zh.text_hash(cells[2].source), k3)])
    assert zh.chapter_problems(path) == {"changed": ["code k1: line 1, column 20: the English has NUMBER '2.0', "
                                                     "the Chinese NUMBER '2' (line 1)"]}
    built, missing = zh.chinese_notebook(path)
    assert zh._source(built["cells"][0]) == CODE, "a unit that changes the code leaves the English cell in the book"
    cells[0].source = CODE.replace("2.0", "3.0")
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    assert zh.chapter_problems(path) == {"stale": ["code k1"]}
    assert zh._source(zh.chinese_notebook(path)[0]["cells"][0]) == cells[0].source, "stale code is never shown"
    with pytest.raises(ValueError, match="code k1: its text must be"):
        zh.parse_overlay("<!-- code k1 en:0123456789ab -->\nx = 1  # 没有围栏\n")


def test_a_translation_still_in_english_is_found_but_a_cell_of_only_code_or_maths_is_not():
    assert zh.untranslated("The scores are divided by the root.", "The scores are divided by the root.")
    assert not zh.untranslated("The scores are divided.", "分数被除以根号。")
    assert not zh.untranslated("$$a = b$$\n\n`attn.functional`", "$$a = b$$\n\n`attn.functional`")


def test_prose_is_the_text_the_parser_finds_without_code_maths_roles_options_targets_or_html():
    text = ("(sec-demo)=\n## Scaled *dot-product* `code`\n\n"
            "The scores $QK^\\top$ are {glue:text}`err` big, see [the paper](https://example.org/x \"t\") "
            "and ![a heat map](fig.png).\nNext <span class=\"x\">line</span>. {{ subst }}\n\n"
            "$$\nsoftmax\n$$\n\n\\begin{equation}\nmaths\n\\end{equation}\n\n```python\nhidden = code\n```\n\n"
            "```{literalinclude} ../src/attn/masks.py\n:pyobject: causal\n```\n\n"
            "```{eval-rst}\n.. autofunction:: attn.masks.causal\n```\n\n"
            ":::{dropdown} Solution words\n:open:\nThe answer is **yes**.\n:::\n\n"
            "<div>raw html</div>\n\n| column | other |\n|---|---|\n| cell text | {cite:p}`vaswani2017` |\n")
    assert zh.prose_of(text) == ("## Scaled dot-product \n\nThe scores  are  big, see the paper and a heat map.\nNext line. \n\n"
                                 "Solution words\n\nThe answer is yes.\n\ncolumn\n\nother\n\ncell text")
    for gone in ("sec-demo", "code", "QK", "err", "example.org", "fig.png", "span", "subst", "softmax", "maths",
                 "hidden", "pyobject", "masks.py", "autofunction", "open", "raw html", "vaswani"):
        assert gone not in zh.prose_of(text)


def test_a_translation_that_drops_a_glued_number_code_maths_or_a_reference_is_found():
    en = "The error is {glue:text}`err` with `attn.sdpa` on $QK^\\top$, see {doc}`causal_attention` {cite:p}`vaswani2017`."
    good = "用 `attn.sdpa` 在 $QK^\\top$ 上的误差为 {glue:text}`err`，见 {doc}`causal_attention` {cite:p}`vaswani2017`。"
    assert zh.invariant_differences(en, good) == []
    # a code span wrapped over two lines is the span on one line; a code block is compared whole
    assert zh.invariant_differences("Call `f(a,\nb)` now.\n\n```python\nx = 1\n```", "现在调用 `f(a, b)`。\n\n```python\nx = 1\n```") == []
    assert zh.invariant_differences("Run:\n\n```python\nx = 1\n```", "运行：\n\n```python\nx = 2\n```") != []
    # inside a dropdown too
    assert "glued value missing: k" in zh.invariant_differences("```{dropdown} Solution\nIt is {glue:text}`k`.\n```",
                                                                 "```{dropdown} 参考答案\n它是 5。\n```")
    bad = "误差为 0.1，见 {doc}`causal_attention`。$QK^T$"
    found = "\n".join(zh.invariant_differences(en, bad))
    for what in ("glued value missing: err", "inline code missing: attn.sdpa", "maths missing: QK^\\top",
                 "reference missing: {cite:p}`vaswani2017`", "maths not in the English: QK^T"):
        assert what in found


def test_the_terminology_check_wants_the_glossary_term_with_its_english_at_first_use():
    terms = [(["attention"], "注意力"), (["self-attention"], "自注意力"), (["soft alignment"], "软对齐"),
             (["head"], "头"), (["fully masked row"], "全掩码行")]
    en = "# Self-attention\n\nSelf-attention is attention. A soft alignment. Each head."
    good = "# 自注意力\n\n自注意力（self-attention）是一种注意力（attention）。软对齐（soft alignment）。每个头（head）。"
    assert zh.terminology_problems(en, good, terms) == []
    # the first use outside the heading lacks the English; 注意力 inside 自注意力 does not count as its use
    late = "# 自注意力\n\n自注意力是一种注意力（attention）。后来：自注意力（self-attention）。软对齐（soft alignment）。头（head）。"
    [problem] = zh.terminology_problems(en, late, terms)
    assert problem.startswith("the first use of 自注意力 lacks its English term")
    other = "# 自注意力\n\n自注意力（self-attention）是注意力（attention）。软性对准（soft alignment）。头（head）。"
    assert zh.terminology_problems(en, other, terms) == ["软对齐 (soft alignment) is not used; the English chapter uses 'soft alignment'"]
    assert zh.terminology_problems("Nothing here uses a term.", "", terms) == []
    # a core term glossed in an earlier chapter is used bare (zh.CORE_TERMS), but it is still used
    bare = "# 自注意力\n\n自注意力（self-attention）是一种注意力。软对齐（soft alignment）。每个头（head）。"
    assert zh.terminology_problems(en, bare, terms, glossed_before=frozenset({"注意力"})) == []
    [problem] = zh.terminology_problems(en, bare, terms)
    assert problem.startswith("the first use of 注意力 lacks its English term")
    [problem] = zh.terminology_problems(en, bare.replace("一种注意力", "一种机制"), terms, glossed_before=frozenset({"注意力"}))
    assert problem.startswith("注意力 (attention) is not used")


def test_the_core_terms_are_glossed_once_in_the_book_and_bare_after_their_first_chapter():
    first: dict[str, str] = {}
    for path in zh.chapters():
        english, chinese = zh.chapter_prose(path)
        for forms, term in zh.glossary_terms():
            if term in zh.CORE_TERMS and any(zh._uses(english, f) for f in forms):
                glossed = re.search(re.escape(term) + r"[*_]*\s*[（(](?:" + "|".join(forms) + r")", chinese, re.I)
                if term not in first:
                    first[term] = path.stem
                    assert glossed, f"{term} is first used in {path.stem}: it needs its English there"
    assert set(first) == set(zh.CORE_TERMS), f"core terms never used: {set(zh.CORE_TERMS) - set(first)}"


def test_lines_broken_between_chinese_characters_are_joined_but_not_a_heading_or_a_directive_line():
    text = ":::{dropdown} 参考答案\n取值为三。\n# 标题\n第一段的\n第二行。\n\n新的一段\nand English\n```{literalinclude} ../src/attn/masks.py\n"
    assert zh.localise_markdown(text) == (":::{dropdown} 参考答案\n取值为三。\n# 标题\n第一段的第二行。\n\n新的一段\nand English\n"
                                          "```{literalinclude} ../../src/attn/masks.py\n")


# --- the committed translation ---------------------------------------------------------------------------

def test_every_chapter_and_page_is_translated(found):
    problems = _report(found, {"missing", "untranslated", "orphan"})
    assert problems == [], f"{len(problems)} units lack a translation ({FIX}; `python -m scripts.zh skeleton` adds "\
        "new units):\n" + "\n".join(problems[:40])


def test_no_translation_is_stale(found):
    stale = _report(found, {"stale"})
    assert stale == [], ("the English changed after these were translated; see what changed with "
                         "`python -m scripts.zh diff CHAPTER 'cell ID'`, update the Chinese and its marker's hash:\n"
                         + "\n".join(stale))


def test_translations_keep_every_number_code_span_formula_and_reference(found):
    changed = _report(found, {"changed", "glue"})
    assert changed == [], "\n".join(changed[:40])


def test_every_chapter_uses_the_glossary_terms_with_the_english_at_first_use(found):
    terms = _report(found, {"terms"})
    assert terms == [], f"{len(terms)} terminology problems (book/glossary.md is the one source of terms):\n" + "\n".join(terms[:60])


def test_the_glossary_gives_one_chinese_term_per_row_and_the_terms_the_issue_asked_for():
    terms = zh.glossary_terms()
    assert len(terms) >= 90
    for forms, term in terms:
        assert term and not re.search(r"[（()）/，,、]", term), f"{forms[0]}: one Chinese term in the 中文 column, not {term!r}"
    english = [f.lower() for forms, _ in terms for f in forms]
    assert len(english) == len(set(english)), "an English term appears in two rows"
    chinese = {term for _, term in terms}
    assert len(chinese) == len(terms), "two rows share a Chinese term"
    for wanted in ("片段级循环", "片段破坏", "全掩码行", "依赖矩阵", "带线性偏置的注意力", "掩码自注意力", "逐位置前馈网络",
                   "正余弦位置编码", "软对齐", "预训练-微调", "低秩近似", "IO 感知", "双向", "置换等变性"):
        assert wanted in chinese, wanted
    assert "置换不变" in zh.GLOSSARY.read_text(), "the glossary notes the source's 置换不变 (invariant) against the book's equivariant"


def test_the_chinese_glossary_page_keeps_the_terms_of_the_english_one(root):
    def rows(text):
        return [tuple(c.strip() for c in line.strip().strip("|").split("|"))[:3]
                for line in text.splitlines() if line.startswith("|") and not set(line) <= set("|- ")]

    en = rows((root / "book" / "glossary.md").read_text())
    zh_rows = rows((root / "i18n" / "zh" / "pages" / "glossary.md").read_text())
    assert zh_rows[1:] == en[1:], "the first three columns of the Chinese glossary are the English glossary's"


# --- zh/ is generated, and its notebooks are the English ones in code and outputs (figures drawn in Chinese) --

def _without_captions(cell: dict) -> dict:
    cell = json.loads(json.dumps(cell))
    mystnb = cell.get("metadata", {}).get("mystnb", {})
    mystnb.pop("figure", None)
    mystnb.pop("image", None)
    return cell


def _joined(cell: dict) -> dict:
    """A code cell with each output's texts as one string (a notebook file may store them as a list of lines)."""
    outputs = [{**o, **({"data": {k: zh._joined(v) for k, v in o["data"].items()}} if "data" in o else {})}
               for o in cell.get("outputs", [])]
    return {**cell, "outputs": outputs}


@pytest.mark.parametrize("path", notebooks.chapters(), ids=lambda p: p.stem)
def test_each_chinese_notebook_is_the_english_one_in_every_code_cell_and_output(root, path):
    en = json.loads(path.read_text())
    zh_path = root / "zh" / "book" / path.name
    assert zh_path.exists(), f"zh/book/{path.name} is missing: {FIX}"
    cn = json.loads(zh_path.read_text())
    assert [(c["cell_type"], c["id"]) for c in cn["cells"]] == [(c["cell_type"], c["id"]) for c in en["cells"]]
    for a, b in zip(en["cells"], cn["cells"], strict=True):
        if a["cell_type"] == "code":  # the same cell and outputs, the code the same but for its comments
            en_src, zh_src = "".join(a["source"]), "".join(b["source"])
            assert zh.code_difference(en_src, zh_src) is None, f"zh/book/{path.name} cell {a['id']}: " \
                f"{zh.code_difference(en_src, zh_src)}: {FIX}"
            # the outputs the English run stored, their words through the string table (tests/test_zh_outputs.py)
            a = {**a, "outputs": [zh.chinese_output(o) for o in a.get("outputs", [])]}
            # and its figures drawn in Chinese where they are current (tests/test_zh_figures.py)
            zh_figures.replace_images(path.stem, a)
            assert _joined(_without_captions({**b, "source": ""})) == _joined(_without_captions({**a, "source": ""})), \
                f"zh/book/{path.name} cell {a['id']} differs: {FIX}"
    # the same metadata, but the explorers' saved state speaks Chinese (lang, tests/test_widget_words.py)
    want = copy.deepcopy(en["metadata"])
    for model in want.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {}).values():
        if model.get("model_module") == "anywidget":
            model["state"]["lang"] = "zh"
    assert cn["metadata"] == want
    generated, _ = zh.chinese_notebook(path)
    assert nbformat.writes(nbformat.from_dict(generated)) + "\n" == zh_path.read_text(), f"zh/book/{path.name} is stale: {FIX}"


def test_the_chinese_pages_config_toc_and_reader_editions_are_current(root):
    for name, data in (("_config.yml", zh.config()), ("_toc.yml", zh.toc())):
        assert yaml.safe_load((root / "zh" / name).read_text()) == data, f"zh/{name} is stale: {FIX}"
    # the theme's words as message catalogues (i18n/zh/strings.yml, theme.catalogues), and no other
    catalogues = zh.catalogues()
    assert sorted(p.relative_to(root / "zh").as_posix() for p in (root / "zh" / zh.LOCALE).rglob("*.po")) == sorted(catalogues)
    for name, text in catalogues.items():
        assert (root / "zh" / name).read_text() == text, f"zh/{name} is stale: {FIX}"
    for name in zh.PAGES:
        page = (root / "i18n" / "zh" / "pages" / f"{name}.md").read_text()
        want = zh.localise_markdown(zh.MARKER.sub("", page, count=1).lstrip("\n"))
        assert (root / "zh" / "book" / f"{name}.md").read_text() == want, f"zh/book/{name}.md is stale: {FIX}"
    url = notebooks.repository()[0]
    names = {p.stem for p in notebooks.chapters()}
    citations = reader.Citations(root / "references.bib")
    paths = [root / "zh" / "book" / p.name for p in notebooks.chapters()]
    titles = {p.stem: zh.title(p) for p in paths}
    committed = sorted((root / "zh" / "reader").rglob("*.ipynb"))
    exercises = [reader.exercise_path(p) for p in paths if reader.has_exercises(nbformat.read(p, as_version=4))]
    assert committed == sorted([*(reader.reader_path(p) for p in paths), *exercises])
    for path in paths:
        nb = reader.reader_edition(path, citations=citations, chapters=names, repo_url=url, lang="zh", titles=titles)
        assert reader.reader_path(path).read_text() == nbformat.writes(nb) + "\n", f"{reader.reader_path(path)} is stale: {FIX}"
        assert zh.CJK.search(nb.cells[0].source), "the Chinese reader edition opens with a Chinese header"
