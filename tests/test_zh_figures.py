"""The Chinese edition's figures are drawn in Chinese (issue 35, items 3 and 5): the package writes a figure's
words through its string table under attn.set_language("zh") (attn.book.viz.localise_figure), in Noto Sans
CJK SC, English where no CJK font is installed; `python -m scripts.zh figures` keeps the chapters' figures
drawn under ATTN_LANG=zh (i18n/zh/figures/), and `scripts.zh build` shows them in zh/ while they are current."""

import base64
import io
import json
import re

import matplotlib
import nbformat
import pytest

matplotlib.use("Agg")

import attn  # noqa: E402
from attn._locale import strings, translate, using  # noqa: E402
from attn.book import diagram, viz  # noqa: E402
from scripts import zh, zh_figures  # noqa: E402

CJK = re.compile(r"[\u4e00-\u9fff]")
# Names a Chinese figure keeps in Latin letters, as the Chinese prose does.
NAMES = {"LSTM", "GRU", "RNN", "Transformer", "RoPE", "ALiBi", "BERT", "GPT", "ViT", "MLM", "softmax", "BigBird",
         "Shaw", "Longformer", "DateTask", "alignment", "True", "False", "NaN", "inf", "nats", "ln", "exp", "max",
         "sin", "cos", "far", "near", "CLS", "SEP", "MASK", "pad", "bos", "eos", "unk", "FlashAttention", "float16",
         "float32", "bfloat16", "KV", "MLP", "FFN", "LayerNorm", "Linear", "MultiHead", "logits", "sdpa", "MiB", "tanh", "ReLU", "GELU", "sqrt", "cuda", "cpu"}

# The words of the chapters' toy sentences: data a figure shows, the same in both editions.
TOKENS = {"the", "cat", "sat", "mat", "down", "because", "was", "tired", "apple", "pear", "lemon", "chat"}


def english_words(text: str) -> list[str]:
    """The English words of a figure's text: words of three or more Latin letters that are not names, code
    (with ``_``, ``.`` or ``()``) or maths (``$...$``)."""
    text = re.sub(r"\$[^$]*\$", " ", text)
    text = re.sub(r"\b[A-Za-z_]\w*=(?!=)", " ", text)  # a keyword argument: memory=True
    words = re.findall(r"[A-Za-z_][A-Za-z0-9_.()]*", text)
    return [w for w in words if len(w) >= 3 and w.isalpha() and w not in NAMES | TOKENS]


def english_left(text: str) -> bool:
    """A text of a Chinese figure still in English: with no Chinese, a phrase (two English words or more) or
    a word the string table translates (``key 1``: not a token of the data); or a text the table translates."""
    if translate(text, "zh") != text:
        return True
    words = english_words(text)
    return not CJK.search(text) and (len(words) >= 2 or any(translate(w, "zh") != w for w in words))


@pytest.fixture(scope="module")
def cjk() -> str:
    if viz.cjk_font() is None:
        pytest.skip("no CJK font installed (apt-get install fonts-noto-cjk)")
    return viz.cjk_font()


def _drawn(make, lang: str) -> tuple[list[str], bytes, float]:
    from PIL import Image

    with using(lang):
        fig = make()
        png, _ = viz.png_2x(fig)
        texts = viz.figure_texts(fig)
    matplotlib.pyplot.close(fig)
    return texts, png, float(Image.open(io.BytesIO(png)).text[viz.TEXT_PX_KEY])


DIAGRAMS = {
    "transformer_diagram": lambda: diagram.transformer_diagram(),
    "soft_lookup": lambda: diagram.soft_lookup(["apple", "pear", "lemon"], [3, 4, 1], [0.72, 0.27, 0.01],
                                               query="apple?"),
    "qkv_flow": lambda: diagram.qkv_flow(["the", "cat", "sat"], 1),
    "head_split": lambda: diagram.head_split(),
    "mask_before_softmax": lambda: diagram.mask_before_softmax(),
    "kv_cache_loop": lambda: diagram.kv_cache_loop(),
    "encoder_decoder": lambda: diagram.encoder_decoder(),
    "tiled_pass": lambda: diagram.tiled_pass(),
    "chain_vs_hop": lambda: diagram.why_attention.chain_vs_hop(["the", "cat", "sat", "down"]),
}


@pytest.mark.usefixtures("cjk")
@pytest.mark.parametrize("name", DIAGRAMS)
def test_a_diagram_drawn_in_chinese_has_every_label_from_the_table_and_its_text_no_smaller(name):
    """Every label of the diagram has its entry in the string table (none left in English), and the Chinese
    figure's smallest text is the English one's (the site's 9 px rule reads it from the PNG)."""
    en_texts, en_png, en_px = _drawn(DIAGRAMS[name], "en")
    zh_texts, zh_png, zh_px = _drawn(DIAGRAMS[name], "zh")
    assert len(zh_texts) == len(en_texts) and zh_png != en_png
    left = [t for t in zh_texts if english_left(t)]
    assert left == [], f"{name}: labels without a Chinese entry in attn/_locale/zh_figures.py: {left}"
    assert sum(bool(CJK.search(t)) for t in zh_texts) >= 3
    assert zh_px == pytest.approx(en_px)


def test_english_figures_are_untouched_and_without_a_cjk_font_the_chinese_ones_stay_english(monkeypatch):
    make = DIAGRAMS["mask_before_softmax"]
    texts, png, _ = _drawn(make, "en")
    assert not any(CJK.search(t) for t in texts)
    monkeypatch.setattr(viz, "cjk_font", lambda: None)
    zh_texts, zh_png, _ = _drawn(make, "zh")
    assert zh_texts == texts and zh_png == png, "no CJK font: the figure keeps its English words (no empty boxes)"


@pytest.mark.usefixtures("cjk")
def test_a_label_is_translated_whole_or_line_by_line_and_fixed_tick_labels_too():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.bar(["the", "chance"], [1, 2])
    ax.set_title("attention weight\ntraining step")
    ax.set_xlabel("held-out accuracy")
    with using("zh"):
        assert viz.localise_figure(fig)
        viz.png_2x(fig)
        texts = viz.figure_texts(fig)
    assert ax.get_title() == "注意力权重\n训练步数" and ax.get_xlabel() == translate("held-out accuracy", "zh")
    assert "the" in texts and translate("chance", "zh") in texts, "a token stays, a word of the table is translated"
    plt.close(fig)


# --- the stored Chinese figures of the chapters ---------------------------------------------------------

def test_every_figure_of_every_chapter_has_its_current_chinese_figure():
    """Run `python -m scripts.zh figures CHAPTER` after a figure's cell or its drawing changes."""
    found = {p.stem: zh_figures.figure_problems(p) for p in zh.chapters()}
    found = {k: v for k, v in found.items() if v}
    assert found == {}, f"Chinese figures missing or stale (python -m scripts.zh figures CHAPTER): {found}"


def test_the_chinese_figures_leave_no_english_phrase_and_keep_the_text_size():
    from PIL import Image

    left, small = [], []
    for path in zh.chapters():
        nb = nbformat.read(path, as_version=4)
        english = {c.id: zh_figures.images(c) for c in nb.cells if c.cell_type == "code" and zh_figures.images(c)}
        for cid, entry in zh_figures.manifest(path.stem).items():
            for i, image in enumerate(entry["images"]):
                left += [f"{path.stem}/{cid}: {t!r}" for t in image["texts"] if english_left(t)]
                zh_px = float(Image.open(zh_figures.FIGURES / path.stem / f"{cid}-{i}.png").text[viz.TEXT_PX_KEY])
                en_png = base64.b64decode("".join(english[cid][i]["data"]["image/png"]))
                en_px = float(Image.open(io.BytesIO(en_png)).text[viz.TEXT_PX_KEY])
                if zh_px < en_px - 0.01:
                    small.append(f"{path.stem}/{cid}: {zh_px} < {en_px}")
    assert left == [], "texts left in English in the Chinese figures:\n" + "\n".join(left)
    assert small == [], small


def test_the_chinese_notebooks_show_the_chinese_figures():
    """zh/book/<chapter>.ipynb (scripts.zh build): each figure is the stored Chinese one, every other output
    the English run's."""
    shown = 0
    for path in zh.chapters():
        zh_nb = json.loads((zh.ZH / "book" / path.name).read_text(encoding="utf-8"))
        have = zh_figures.manifest(path.stem)
        for cell in zh_nb["cells"]:
            if cell["cell_type"] != "code" or not zh_figures.images(cell):
                continue
            for i, out in enumerate(zh_figures.images(cell)):
                stored = (zh_figures.FIGURES / path.stem / f"{cell['id']}-{i}.png").read_bytes()
                assert base64.b64decode("".join(out["data"]["image/png"])) == stored, f"{path.stem}/{cell['id']}"
                meta = have[cell["id"]]["images"][i]
                assert out["metadata"]["image/png"] == {"width": meta["width"], "height": meta["height"]}
                shown += 1
    assert shown >= 60


def test_the_figure_words_are_merged_into_the_one_table_without_overriding_it():
    from attn._locale import zh_figures as words

    table = strings("zh")
    assert all(k in table for k in words.FIGURE_STRINGS)
    assert attn.set_language is not None and translate("attention weight", "zh") == "注意力权重"


def test_the_chinese_pages_show_the_chinese_figures_and_the_english_pages_the_english_ones(built_site):
    """Each chapter page of the built site (zh/book/<chapter>.html) shows its stored Chinese figures, and no
    English figure that has a Chinese one; the English page shows none of the Chinese figures."""
    import hashlib

    def shown(html_path) -> set[str]:
        images = html_path.parent.parent / "_images"
        names = set(re.findall(r'src="\.\./_images/([^"]+\.png)"', html_path.read_text(encoding="utf-8")))
        return {hashlib.sha256((images / n).read_bytes()).hexdigest() for n in names}

    checked = 0
    for path in zh.chapters():
        have = zh_figures.manifest(path.stem)
        if not have:
            continue
        en_nb = json.loads(path.read_text(encoding="utf-8"))
        zh_png, zh_only, en_only = set(), set(), set()  # *_only: the figures that differ between the editions
        for cell in en_nb["cells"]:
            for i, out in enumerate(zh_figures.images(cell) if cell["cell_type"] == "code" else []):
                if cell["id"] in have:
                    cn = (zh_figures.FIGURES / path.stem / f"{cell['id']}-{i}.png").read_bytes()
                    en = base64.b64decode("".join(out["data"]["image/png"]))
                    zh_png.add(hashlib.sha256(cn).hexdigest())
                    if en != cn:
                        zh_only.add(hashlib.sha256(cn).hexdigest())
                        en_only.add(hashlib.sha256(en).hexdigest())
        on_zh = shown(built_site / "zh" / "book" / f"{path.stem}.html")
        on_en = shown(built_site / "book" / f"{path.stem}.html")
        assert zh_png <= on_zh, f"zh/book/{path.stem}.html lacks {len(zh_png - on_zh)} of its Chinese figures"
        assert not on_zh & en_only, f"zh/book/{path.stem}.html shows English figures"
        assert en_only <= on_en and not on_en & zh_only, f"book/{path.stem}.html: its figures are not the English ones"
        checked += len(zh_only)
    assert checked >= 60


def test_a_changed_figure_cell_or_figure_makes_its_chinese_figure_stale_and_the_book_keeps_the_english(tmp_path):
    path = zh.ROOT / "book" / "causal_attention.ipynb"
    nb = json.loads(path.read_text(encoding="utf-8"))
    cells = [c for c in nb["cells"] if c["cell_type"] == "code" and zh_figures.images(c)]
    assert zh_figures.figure_problems(path) == {} and zh_figures.chinese_images(path.stem, cells[0]) is not None
    cells[0]["source"] = "".join(cells[0]["source"]) + "\n"  # the code changed
    png = zh_figures.images(cells[1])[0]["data"]
    png["image/png"] = "".join(png["image/png"])[:-8] + "AAAAAAA="  # the drawing changed
    changed = tmp_path / path.name
    changed.write_text(json.dumps(nb), encoding="utf-8")
    assert zh_figures.figure_problems(changed) == {"figure stale": [f"cell {cells[0]['id']}", f"cell {cells[1]['id']}"]}
    assert zh_figures.chinese_images(path.stem, cells[0]) is None
    kept = json.loads(json.dumps(cells[1]))
    assert not zh_figures.replace_images(path.stem, kept) and kept == cells[1], "the English figure stays"
