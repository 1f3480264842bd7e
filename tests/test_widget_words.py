"""The explorers in the reader's language (issue 35): one Chinese string table for every front end.

Every text an explorer shows or says (labels, buttons, titles, aria-labels, hover texts, messages,
legends) is English in its module and passes through ``tr = words(lang)`` (``_dom.js``); the Chinese is
``strings_zh.json``, English -> Chinese, with the same ``{name}`` placeholders. The language is the
widget's ``lang`` trait (``attn.set_language`` / ``ATTN_LANG`` in Jupyter); on the static site the page's
``<html lang>`` wins, since the Chinese edition reuses the English run's widget state.

Static: the table covers every text the modules translate, with the same placeholders, and nothing
else; each module carries only its own entries; no English phrase is shown outside ``tr``. Node:
``words`` fills placeholders once and falls back to English. Chromium: every explorer drawn by the
static site's runtime on a Chinese page speaks Chinese (visible text, aria-labels, titles, hover and
keyboard readouts), on an English page English, and fits a 390 px screen.
"""

import json
import os
import pathlib
import re
import shutil
import subprocess
import tempfile

import pytest
import torch
import yaml

import attn
from attn.book.widgets import (AttentionExplorer, GenerationExplorer, InductionExplorer, MaskExplorer,
                               OnlineSoftmaxExplorer, PositionalEncodingExplorer, WorkedExampleExplorer)
from attn.book.widgets._state import MARKED, front_end, marked_texts, words_table, zh_strings

ROOT = pathlib.Path(__file__).resolve().parents[1]
WIDGETS = ROOT / "src" / "attn" / "book" / "widgets"
NODE = shutil.which("node")
# each explorer's module, as its class builds it
MODULES = {
    "mask_explorer.js": ("_dom.js",), "attention_explorer.js": ("_dom.js",), "positional_explorer.js": ("_dom.js",),
    "worked_example.js": ("_dom.js", "_nn.js"), "online_softmax.js": ("_dom.js", "_nn.js"),
    "generation_explorer.js": ("_dom.js", "_nn.js"), "induction_explorer.js": ("_dom.js", "_nn.js"),
}
CLASSES = [MaskExplorer, AttentionExplorer, PositionalEncodingExplorer, WorkedExampleExplorer, OnlineSoftmaxExplorer,
           GenerationExplorer, InductionExplorer]
CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
SLOT = re.compile(r"\{\w+\}")


def _own(name: str) -> str:
    """The module's source as its class builds it, without the generated table in front."""
    src = front_end(name, parts=MODULES[name])
    return src.split("\n", 1)[1]


def _code(src: str) -> str:
    """JavaScript without its comments (the lines of a block comment start with *; a line comment is // )."""
    src = re.sub(r"^\s*(//|\*|/\*).*$", "", src, flags=re.M)
    return re.sub(r"\s//\s.*$", "", src, flags=re.M)


# --------------------------------------------------------------------------- the table
def test_every_module_is_a_front_end_of_an_explorer():
    for cls, name in zip(CLASSES, MODULES, strict=True):
        assert cls._esm == front_end(name, parts=MODULES[name]), name
    shown = {p.name for p in WIDGETS.glob("*.js")} - {"_dom.js", "_nn.js", "static_runtime.js"}
    assert shown == set(MODULES), "a new explorer's module must be listed here"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_text_a_front_end_translates_has_chinese_with_the_same_placeholders(name):
    zh, texts = zh_strings(), marked_texts(_own(name))
    assert len(texts) >= 10, "the module translates its words"
    missing = sorted({t for t in texts if t not in zh})
    assert missing == [], f"add to src/attn/book/widgets/strings_zh.json: {missing}"
    for t in texts:
        assert sorted(SLOT.findall(t)) == sorted(SLOT.findall(zh[t])), (t, zh[t])
        if re.search(r"[A-Za-z]{2,}", SLOT.sub("", t)) and t not in {"save PNG", "save SVG"}:
            assert CJK.search(zh[t]), f"not translated: {t!r} -> {zh[t]!r}"
    # tr's first argument is always a literal (or a text marked N_ elsewhere): a text built at run time
    # would escape this test
    calls = re.findall(r"\btr\(\s*([^\s)])", _code(_own(name)))
    dynamic = [c for c in calls if c != '"']
    assert len(dynamic) <= {"mask_explorer.js": 1}.get(name, 0), dynamic  # tr(LABELS[k]): LABELS' values are N_(...)


def test_the_chinese_table_has_no_text_that_no_front_end_uses_and_is_sorted():
    used = {t for name in MODULES for t in marked_texts(_own(name))}
    zh = zh_strings()
    assert sorted(set(zh) - used) == []
    assert list(zh) == sorted(zh), "keep strings_zh.json sorted (python: json.dumps(..., sort_keys=True))"
    assert all(v.strip() == v or k.startswith(" ") or k.endswith(" ") for k, v in zh.items())


@pytest.mark.parametrize("name", sorted(MODULES))
def test_each_module_carries_the_chinese_of_its_own_texts_only(name):
    src = front_end(name, parts=MODULES[name])
    head = src.split("\n", 1)[0]
    assert head == words_table(_own(name)).rstrip("\n")
    table = json.loads(head.removeprefix("const ZH = ").removesuffix(";"))
    assert table == {t: zh_strings()[t] for t in marked_texts(_own(name))}
    assert len(head.encode()) < 4_000, "the table travels in every saved state of the explorer"


# A phrase of two English words in a literal a module shows without tr: the literals left after removing
# the translated ones, less the few that are not words for the reader.
NOT_WORDS = re.compile(r"system-ui|data:image|^http://www\.w3\.org/2000/svg$|repeat\(|linear-gradient\(|translate\(|\[data-"
                       r"|^change:\w+$"
                       r"|^unknown weights encoding")  # thrown for a programmer (the page shows that the explorer failed)
IDENTIFIER = re.compile(r"[\w-]*[-_][\w-]*")  # a class name, a trait: attn-cell, max_new_tokens


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_english_phrase_is_shown_without_tr(name):
    # the module and _dom.js; not _nn.js, the models' maths, whose errors name arguments for a programmer
    # (an explorer checks what the reader types before _nn.js sees it)
    src = MARKED.sub("", _code((WIDGETS / "_dom.js").read_text() + (WIDGETS / name).read_text()))
    phrases = []
    for lit in re.findall(r'"(?:[^"\\\n]|\\.)*"|`(?:[^`\\]|\\.)*`', src):
        text = re.sub(r"\$\{[^}]*\}", " ", lit[1:-1])
        words_ = [w for w in re.split(r"[\s,:;.]+", text) if re.search("[a-z]{2,}", w) and not IDENTIFIER.fullmatch(w)]
        if len(words_) >= 2 and not NOT_WORDS.search(text):
            phrases.append(lit)
    assert phrases == [], f"{name} shows English the table cannot translate: {phrases}"


# --------------------------------------------------------------------------- Python: the lang trait
def test_lang_follows_the_packages_language_when_made_and_is_checked(monkeypatch):
    monkeypatch.delenv("ATTN_LANG", raising=False)
    assert MaskExplorer().lang == "en"
    with attn._locale.using("zh"):
        e = MaskExplorer()
    assert e.lang == "zh" and e.get_state()["lang"] == "zh"
    assert MaskExplorer().lang == "en", "a widget made later follows the language then"
    monkeypatch.setenv("ATTN_LANG", "zh")
    assert PositionalEncodingExplorer().lang == "zh"
    e.lang = "en"
    with pytest.raises(ValueError, match=r"lang must be one of \['en', 'zh'\], got 'fr'"):
        e.lang = "fr"
    assert e.lang == "en"


# --------------------------------------------------------------------------- node: words()
@pytest.mark.skipif(NODE is None, reason="node is not on PATH")
def test_words_fills_each_placeholder_once_and_falls_back_to_english():
    source = front_end("mask_explorer.js") + "\nexport const say = (lang, text, args) => words(lang)(text, args);\n"
    key = "query {q} \u2192 key {k}: blocked (False), additive \u2212\u221e, softmax weight {w}"
    calls = [["zh-CN", key, {"q": 3, "k": 5, "w": "0.0000"}], ["zh", key, {"q": "{k}", "k": 1, "w": 0}],
             ["en", key, {"q": 3, "k": 5, "w": "0.0000"}], [None, "new seed", {}], ["zh", "new seed", {}],
             ["zh", "not in the table {x}", {}], ["fr", "new seed", {}]]
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "m.js"
        path.write_text(source)
        out = subprocess.run([NODE, str(ROOT / "tests" / "js" / "run_esm.mjs"), str(path)], capture_output=True, text=True,
                             input=json.dumps([{"fn": "say", "args": a} for a in calls]), timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [
        "查询 3 \u2192 键 5：屏蔽（False），加性形式 \u2212\u221e，softmax 权重 0.0000",
        "查询 {k} \u2192 键 1：屏蔽（False），加性形式 \u2212\u221e，softmax 权重 0",  # a value is not filled again
        "query 3 \u2192 key 5: blocked (False), additive \u2212\u221e, softmax weight 0.0000",
        "new seed", "换一个种子", "not in the table {x}", "new seed"]


# --------------------------------------------------------------------------- the language switch
def test_the_language_switchs_tooltip_is_in_the_pages_language_and_its_label_in_the_one_it_links_to():
    en = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]["config"]["attn_other_edition"]
    zh = yaml.safe_load((ROOT / "i18n" / "zh" / "strings.yml").read_text())["switch"]
    assert en["hreflang"] == "zh-CN" and not CJK.search(en["title"]) and CJK.search(en["label"])
    assert zh["hreflang"] == "en" and zh["title"] == "阅读本页英文版" and not CJK.search(zh["label"])


# --------------------------------------------------------------------------- Chromium
# Latin words a Chinese explorer may show: names and notation (the book's Chinese chapters keep them too)
KEPT = {"softmax", "True", "False", "NaN", "BigBird", "Longformer", "PNG", "SVG", "Python", "KV", "PE", "W_Q", "W_K", "W_V",
        "inf", "Enter"}  # and a key's name


@pytest.fixture
def site(widget_page):
    """open(widgets, lang, width) -> a page of the static site's runtime showing them (conftest's widget_page)."""
    return widget_page


def _explorers(lang="en"):
    with attn._locale.using(lang):
        weights = torch.softmax(torch.randn(2, 2, 3, 3, generator=torch.Generator().manual_seed(0)), -1)
        return [MaskExplorer("padding", 6), AttentionExplorer(["the", "cat", "sat"], weights), PositionalEncodingExplorer(), WorkedExampleExplorer(), OnlineSoftmaxExplorer(), GenerationExplorer(),
                InductionExplorer()]


# Everything an explorer shows or says: its visible text and its elements' names, titles and descriptions.
READ = """(root) => {
  const out = [];
  const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const e = n.parentElement;
    if (n.textContent.trim() && e && !e.closest('[hidden]')) out.push(['text', e.tagName, n.textContent.trim()]);
  }
  for (const e of root.querySelectorAll('[aria-label], [title], [placeholder], [aria-valuetext]')) {
    for (const a of ['aria-label', 'title', 'placeholder', 'aria-valuetext']) if (e.getAttribute(a)) out.push([a, e.tagName, e.getAttribute(a)]);
  }
  for (const t of root.querySelectorAll('title')) out.push(['svg title', 'title', t.textContent]);
  for (const o of root.querySelectorAll('option')) out.push(['option', 'option', o.textContent]);
  return out;
}"""


def _english_left(items, data_words: set[str]):
    """The (where, tag, text) whose text has an English word (3+ letters) that is neither kept nor data."""
    left = []
    for where, tag, text in items:
        if where == "text" and tag in {"CODE", "INPUT", "TEXTAREA"}:
            continue
        words_ = set(re.findall(r"[A-Za-z_]{3,}", text)) - KEPT - data_words
        if words_:
            left.append((where, tag, text[:80], sorted(words_)))
    return left


def _data_words(widgets) -> set[str]:
    """Latin words that are the explorers' data (tokens, encoding names, prompts, the model's letters)."""
    found = set()
    for w in widgets:
        st = w.get_state()
        for k in ("tokens", "key_tokens", "names", "layer_names", "prompt", "generated", "segment", "encoding", "kinds"):
            v = st.get(k)
            for s in v if isinstance(v, list) else [v] if isinstance(v, str) else []:
                found |= set(re.findall(r"[A-Za-z_]{3,}", str(s)))
        for k in (st.get("encodings") or {}):
            found |= set(re.findall(r"[A-Za-z_]{3,}", k))
    return found


def test_browser_every_explorer_speaks_chinese_on_a_chinese_page_and_english_on_an_english_one(site):
    widgets = _explorers("en")  # the Chinese edition reuses the English run's state: the page's language wins
    page = site(widgets, "zh-CN")
    roots = page.locator(".attn-w")
    assert roots.count() == len(widgets)
    data = _data_words(widgets)
    for n in range(len(widgets)):
        assert roots.nth(n).get_attribute("lang") == "zh-CN", "screen readers voice it in Chinese"
        items = roots.nth(n).evaluate(READ)
        assert len(items) > 5
        assert _english_left(items, data) == [], type(widgets[n]).__name__
        labels = roots.nth(n).locator("label.attn-field > span, button, summary, legend").all_inner_texts()
        assert all(CJK.search(t) or not re.search(r"[A-Za-z]{2,}", t) for t in labels if t.strip()), labels
    assert page.locator(".attn-mask-explorer [data-control=seed] button").inner_text() == "换一个种子"
    assert page.locator(".attn-mask-explorer [data-control=kind] option[value=causal]").inner_text() == "因果"

    en = site(widgets, "en")
    for n in range(len(widgets)):
        assert en.locator(".attn-w").nth(n).get_attribute("lang") == "en"
        items = en.locator(".attn-w").nth(n).evaluate(READ)
        assert not any(CJK.search(text) for _, _, text in items), type(widgets[n]).__name__
    assert en.locator(".attn-mask-explorer [data-control=seed] button").inner_text() == "new seed"


def test_browser_a_page_without_a_language_uses_the_saved_one_and_a_pages_language_wins(site):
    zh = _explorers("zh")[:1]
    assert zh[0].lang == "zh"
    assert site(zh, None).locator("[data-control=seed] button").inner_text() == "换一个种子"  # as in Jupyter
    assert site(zh, "en").locator("[data-control=seed] button").inner_text() == "new seed"


def test_browser_chinese_hover_and_keyboard_readouts_and_messages(site):
    page = site([MaskExplorer("causal", 6), OnlineSoftmaxExplorer(), WorkedExampleExplorer()], "zh-CN")
    grid = page.locator(".attn-mask-grid")
    assert grid.get_attribute("aria-label") == "掩码网格，6 个查询 × 6 个键；方向键移动光标"
    grid.focus()
    page.keyboard.press("ArrowRight")  # the cursor starts at (0, 0): one step right
    readout = page.locator(".attn-mask-explorer .attn-readout").inner_text()
    assert readout.startswith("查询 0 \u2192 键 1：屏蔽（False），加性形式 \u2212\u221e，softmax 权重 0.0000"), readout
    page.keyboard.press("ArrowDown")
    assert page.locator(".attn-mask-explorer .attn-readout").inner_text().startswith("查询 1 \u2192 键 1：允许（True）")
    page.locator(".attn-mask-explorer .attn-mask-grid [data-q='3'][data-k='5']").hover()
    assert page.locator(".attn-mask-explorer .attn-readout").inner_text().startswith("查询 3 \u2192 键 5：屏蔽")
    # a bad entry: the message names it in Chinese
    page.fill(".attn-online input[name=scores]", "1, x, 2")
    note = page.locator(".attn-online .attn-note")
    assert note.inner_text() == "未更新：分数：第 2 项（“x”）不是数字。下面的步骤对应上一次有效的输入。"
    assert page.locator(".attn-online input[name=scores]").get_attribute("aria-invalid") == "true"
    page.fill(".attn-worked input[name=X][data-i='0'][data-j='0']", "")
    assert page.locator(".attn-worked .attn-note").inner_text().startswith("未更新：")
    assert "为空" in page.locator(".attn-worked .attn-note").inner_text()


def test_browser_chinese_explorers_fit_a_phone(site):
    """At 390 px no control of a Chinese explorer is wider than the explorer (nothing cut off or pushing
    the page sideways); a figure wider than the column scrolls inside its own box (as in English)."""
    page = site(_explorers("en"), "zh-CN", width=390)
    over = page.evaluate("""() => [...document.querySelectorAll('.attn-w')].flatMap((root) => {
      const r = root.getBoundingClientRect();
      return [...root.querySelectorAll('.attn-field, button, .attn-note, .attn-readout, .attn-legend, summary')]
        .filter((e) => e.offsetParent !== null && !e.closest('.attn-figure'))
        .map((e) => [e.getBoundingClientRect(), e.textContent.trim().slice(0, 30)])
        .filter(([b]) => b.left < r.left - 1 || b.right > r.right + 1).map(([b, t]) => [t, b.left, b.right, r.right]);
    })""")
    assert over == []
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    if os.environ.get("ATTN_SHOTS"):  # screenshots to look at: ATTN_SHOTS=<folder>
        page.screenshot(path=f"{os.environ['ATTN_SHOTS']}/zh-390.png", full_page=True)


def test_built_site_explorers_speak_the_editions_language(browser, site_server):  # site_server: the built site
    """The built explorers page and a chapter with an explorer, in both editions: the Chinese pages draw
    the English run's state in Chinese, the English ones in English; the page's language switch has a
    tooltip in the language it links to."""
    from conftest import PageWatch

    for path, lang in (("zh/book/explorers.html", "zh-CN"), ("book/explorers.html", "en"),
                       ("zh/book/causal_attention.html", "zh-CN"), ("book/causal_attention.html", "en")):
        w = PageWatch(browser, site_server)
        w.page.add_init_script("window.requestIdleCallback = (f) => setTimeout(f, 0);")
        try:
            page = w.goto(path)
            page.wait_for_function("() => window.attnWidgets !== undefined", timeout=60_000)
            assert page.evaluate("document.documentElement.lang") == lang
            roots = page.locator(".attn-w")
            assert roots.count() >= 1
            for n in range(roots.count()):
                assert roots.nth(n).get_attribute("lang") == lang, (path, n)
                labels = [t for t in roots.nth(n).locator("label.attn-field > span, button").all_inner_texts() if t.strip()]
                if lang == "zh-CN":
                    assert all(CJK.search(t) or not re.search(r"[A-Za-z]{2,}", t) for t in labels), (path, labels)
                else:
                    assert not any(CJK.search(t) for t in labels), (path, labels)
            switch = page.locator("p.attn-lang a")
            title, hreflang = switch.get_attribute("title"), switch.get_attribute("hreflang")
            assert bool(CJK.search(title)) == (lang == "zh-CN"), (path, title)
            assert switch.locator("span").get_attribute("lang") == hreflang, path
            assert w.errors == [] and w.offhost == [], (w.errors, w.offhost)
        finally:
            w.close()
