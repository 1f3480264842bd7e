"""Maths typeset when the site is built (_ext/attn_maths.py, scripts/mathjax_render.cjs): every formula of
both editions is MathJax's CHTML with its assistive MathML, and no page loads MathJax's script."""

from __future__ import annotations

import html
import pathlib
import re
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))

import attn_maths  # noqa: E402

MATH_ELEMENT = re.compile(r'<(span|div) class="(?:[^"]* )?math notranslate nohighlight[ "]')
# What MathJax in a browser would take for TeX still to typeset, once code and scripts are set aside.
RAW_TEX = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$|\\begin\{|\\frac|\\sqrt")
NOT_PROSE = re.compile(r"<(script|style|pre|code|textarea|math)\b.*?</\1>", re.S)


def _render(*formulas: tuple[str, bool]) -> list[str]:
    result = attn_maths.render([{"page": "t.html", "fontURL": "fonts", "scale": 1,
                                 "formulas": [{"tex": t, "display": d} for t, d in formulas]}])
    return result["pages"][0]["html"]


# ----- the renderer, on its own

def test_renderer_typesets_the_tex_the_book_uses_with_assistive_mathml():
    out = _render((r"\operatorname{softmax}(x)_i", False), (r"\boldsymbol{x} \in \mathbb{R}^{d}", False),
                  (r"\text{score}(q, k) = \frac{q \cdot k}{\sqrt{d_k}}", True),
                  (r"\begin{align} a &= b \\ c &\le \lVert d \rVert \end{align}", True))
    assert len(out) == 4
    for formula in out:
        assert formula.startswith("<mjx-container") and "<mjx-merror" not in formula
        assert re.search(r"<mjx-assistive-mml[^>]*><math ", formula), formula[:200]
    assert 'display="true"' in out[2] and 'display="true"' not in out[0]
    assert "<mi>softmax</mi>" in out[0] or "softmax" in re.sub("<[^>]+>", "", out[0])
    assert "<mtable" in out[3]  # the align environment is a table of rows


def test_a_tex_error_fails_naming_the_page_and_the_tex():
    with pytest.raises(attn_maths.MathsError, match=r"t\.html: .*\\notamacro") as err:
        _render(("x", False), (r"\notamacro{y}", False))
    assert "Undefined control sequence" in str(err.value)
    with pytest.raises(attn_maths.MathsError, match=r"\\frac\{a"):
        _render((r"\frac{a", True))


def test_without_node_the_build_says_run_make_setup(monkeypatch):
    monkeypatch.setattr(attn_maths.shutil, "which", lambda _name: None)
    with pytest.raises(attn_maths.MathsError, match="run make setup"):
        _render(("x", False))


def test_tex_is_taken_from_between_the_delimiters_sphinx_writes():
    assert attn_maths.split_tex(r"\(a &lt; b\)", display=False) == "a < b"
    assert attn_maths.split_tex(r" \[x^2\] ", display=True) == "x^2"
    env = r"\begin{align}a&=b\end{align}"
    assert attn_maths.split_tex(env, display=True) == env
    with pytest.raises(attn_maths.MathsError):
        attn_maths.split_tex("x^2", display=False)


def test_a_page_is_typeset_in_place_keeping_what_sphinx_wrote_around_the_tex(tmp_path):
    """Labelled equations (id, number), a notebook's text/latex output (its own classes), escaped TeX."""
    (tmp_path / "_static").mkdir()
    page = tmp_path / "book" / "p.html"
    page.parent.mkdir()
    (tmp_path / "output.html").write_text(  # a page whose one formula is a notebook's text/latex output
        '<html><head></head><body><div class="output text_latex math notranslate nohighlight">\\[y\\]</div></body></html>')
    page.write_text(
        '<html><head><title>t</title></head><body><p>Let <span class="math notranslate nohighlight">\\(a &lt; b\\)</span>.</p>\n'
        '<div class="math notranslate nohighlight" id="equation-e1">\n<span class="eqno">(1)<a class="headerlink" '
        'href="#equation-e1">#</a></span>\\[x^2\\]</div>\n'
        '<div class="output text_latex math notranslate nohighlight">$$\\frac{1}{2}$$</div></body></html>')
    app = type("App", (), {"outdir": str(tmp_path), "builder": type("B", (), {"format": "html"})})
    attn_maths.typeset_pages(app, None)
    text = page.read_text()
    assert text.count("<mjx-container") == 3 and "\\(" not in text and "$$" not in text
    assert '<div class="math notranslate nohighlight" id="equation-e1">\n<span class="eqno">(1)<a' in text
    assert '<div class="output text_latex math notranslate nohighlight"><mjx-container' in text
    assert "<mo>&lt;</mo>" in text  # the TeX was unescaped before typesetting, the MathML escaped again
    assert 'url("../_static/mathjax/woff-v2/' in text and text.count('<style id="attn-maths">') == 1
    before = text
    attn_maths.typeset_pages(app, None)  # a page already typeset (an incremental build) is left alone
    assert page.read_text() == before
    assert "<mjx-container" in (tmp_path / "output.html").read_text()


def test_formulas_that_can_scroll_are_focusable_and_the_fonts_drawn_with_are_named(tmp_path):
    """Displayed formulas and inline ones in an API description (the style sheet lets them scroll sideways)
    take the keyboard focus; inline prose maths does not. No font is preloaded (Chromium would hold the first
    paint for it); MJXZERO, whose metrics place every glyph, is in the stylesheet; drawn_families names the
    fonts the page draws with, for attn_perf to start loading as the body starts."""
    page = tmp_path / "p.html"
    page.write_text(
        '<html><head></head><body><p><span class="math notranslate nohighlight">\\(a\\)</span></p>'
        '<div class="math notranslate nohighlight">\\[\\sum_i x_i\\]</div>'
        '<dl class="py function"><dt>f</dt><dd><dl class="field-list"><dt>k</dt><dd>v</dd></dl>'
        '<p><span class="math notranslate nohighlight">\\(b\\)</span></p></dd></dl>'
        '<p><span class="math notranslate nohighlight">\\(c + 2\\)</span></p></body></html>')
    fonts = tmp_path / attn_maths.FONTS
    fonts.mkdir(parents=True)
    (fonts / attn_maths.ZERO_FONT).write_bytes(b"wOFF zero")
    app = type("App", (), {"outdir": str(tmp_path), "builder": type("B", (), {"format": "html"})})
    attn_maths.typeset_pages(app, None)
    text = page.read_text()
    focusable = re.findall(r"<mjx-container[^>]*>", text)
    assert ['tabindex="0"' in tag for tag in focusable] == [False, True, True, False]
    head = text.split("</head>")[0]
    assert 'rel="preload"' not in head
    assert 'font-family: MJXZERO;src: url("data:font/woff;base64,d09GRiB6ZXJv")' in head
    assert 'url("_static/mathjax/woff-v2/MathJax_Main-Regular.woff")' in head
    # a, i, x, c in italic (TEX-I), the displayed sum from the size-2 font, + and 2 from the main font
    assert attn_maths.drawn_families(text) == ["MJXZERO", "MJXTEX-I", "MJXTEX-S2", "MJXTEX"]
    assert attn_maths.drawn_families("<html><head></head><body><p>no maths</p></body></html>") == []


def test_a_formula_in_a_heading_or_a_link_names_itself_in_a_line_of_text(tmp_path):
    """A heading or a link is named by its text, which a formula's MathML leaves empty in Chromium ("Why divide
    by ?"): there its <math> carries the formula as Unicode text; in prose the MathML is left to screen readers."""
    page = tmp_path / "p.html"
    page.write_text(
        '<html><head></head><body><h2>Why divide by <span class="math notranslate nohighlight">\\(\\sqrt{d_k}\\)</span>?</h2>'
        '<nav><a href="#w">Why divide by <span class="math notranslate nohighlight">\\(\\sqrt{d_k}\\)</span>?</a></nav>'
        '<p>Cost <span class="math notranslate nohighlight">\\(O(L^2 d)\\)</span>.</p></body></html>')
    app = type("App", (), {"outdir": str(tmp_path), "builder": type("B", (), {"format": "html"})})
    attn_maths.typeset_pages(app, None)
    assert re.findall(r"<math\b[^>]*>", page.read_text()) == [
        '<math aria-label="√dₖ" xmlns="http://www.w3.org/1998/Math/MathML">'] * 2 + [
        '<math xmlns="http://www.w3.org/1998/Math/MathML">']


@pytest.mark.parametrize(("tex", "text"), [
    ("6PT", "6PT"), ("(L, S)", "(L, S)"), ("1/\\sqrt{d_k}", "1/√dₖ"), ("d = 4", "d = 4"),
    ("x_{i,j}^{2}", "x_(i, j)²"), ("a \\text{ if } b", "a if b"), ("\\frac{QK^\\top}{\\sqrt{d}}", "(QK^⊤)/√d"), ("\\mathrm{softmax}(x)", "softmax(x)"),
])
def test_a_formula_as_a_line_of_text(tex, text):
    mathml = re.search(r"<math\b.*?</math>", _render((tex, False))[0], re.S)[0]
    assert attn_maths.linear_text(mathml) == text


# ----- the built site, both editions

def _pages(built_site: pathlib.Path) -> list[pathlib.Path]:
    return sorted(p for p in built_site.rglob("*.html") if not {"_static", "_sources"} & set(p.parts))


def test_every_formula_of_both_editions_is_typeset_with_assistive_mathml(built_site):
    counts = {"en": 0, "zh": 0}
    for page in _pages(built_site):
        rel = page.relative_to(built_site).as_posix()
        text = page.read_text(encoding="utf-8")
        elements = len(MATH_ELEMENT.findall(text))
        containers = re.findall(r"<mjx-container\b.*?</mjx-container>", text, re.S)
        assert len(containers) == elements, f"{rel}: {elements} formulas, {len(containers)} typeset"
        assert "<mjx-merror" not in text, f"{rel}: a TeX error in a formula"
        for c in containers:
            assert re.search(r"<mjx-assistive-mml[^>]*><math ", c), f"{rel}: no assistive MathML in {c[:300]}"
        prose = html.unescape(re.sub(r"<[^>]+>", " ", NOT_PROSE.sub(" ", text)))
        raw = [prose[max(0, m.start() - 40):m.end() + 40] for m in RAW_TEX.finditer(prose)]
        assert raw == [], f"{rel}: TeX left in the page's text: {raw[:3]}"
        # no MathJax runtime: neither its script nor the configuration it read
        assert not re.search(r"<script[^>]*mathjax", text, re.I) and "window.MathJax" not in text, rel
        counts["zh" if rel.startswith("zh/") else "en"] += len(containers)
    assert counts["en"] > 500 and counts["zh"] > 500, counts  # (the book has ~1,500 formulas per edition)
    assert not list((built_site / "_static" / "mathjax").rglob("*.js")), "no MathJax script is served"


def test_each_page_with_maths_carries_the_stylesheet_for_its_glyphs_and_the_fonts_exist(built_site):
    for page in _pages(built_site):
        text = page.read_text(encoding="utf-8")
        if "<mjx-container" not in text:
            assert 'id="attn-maths"' not in text, page
            continue
        css = re.search(r'<style id="attn-maths">(.*?)</style>', text, re.S)
        assert css, f"{page}: formulas without MathJax's stylesheet"
        urls = re.findall(r'url\("([^"]+)"\)', css.group(1))
        assert urls and css.group(1).count("font-display:swap") == css.group(1).count("@font-face")
        inline = [u for u in urls if u.startswith("data:")]
        assert len(inline) == 1 and "font-family: MJXZERO;src: url(\"data:font/woff;base64," in css.group(1), page
        for url in set(urls) - set(inline):
            assert (page.parent / url).resolve().is_file(), f"{page}: {url} is not in the site"
        # only the glyphs this page draws: every character class the page uses has its rule, and a
        # glyph no page of the book draws (the integral sign) has none
        used = set(re.findall(r'<mjx-c class="(mjx-c[0-9A-F]+)', text))
        for cls in used:
            assert f"mjx-c.{cls}" in css.group(1), f"{page}: no style for {cls}"
        styled = set(re.findall(r"mjx-c\.(mjx-c[0-9A-F]+)", css.group(1)))
        assert styled <= used, f"{page}: styles for glyphs it does not draw: {sorted(styled - used)[:5]}"


# ----- the fonts, cut down to what the pages draw
ASSETS_FONTS = ROOT / "_assets" / "mathjax" / "woff-v2"  # MathJax's whole fonts (scripts/assets.py)


def test_the_characters_drawn_are_read_from_the_glyph_rules_css_escapes_included():
    css = ('mjx-c.mjx-c2208::before{padding: 0.54em 0.667em 0.04em 0;content: "\\2208";}'
           'mjx-c.mjx-c1D43F.TEX-I::before{padding: 0.683em 0.681em 0 0;content: "L";}'
           'mjx-c.mjx-c211D.TEX-A::before{content: "R";}mjx-c.mjx-c22::before{content: "\\"";}'
           'mjx-stretchy-v.mjx-c7B>mjx-beg>mjx-c::before{content: "\\23A7 ";}')
    assert attn_maths.drawn_characters(f'<style id="attn-maths">{css}</style>') == {"\u2208", "L", "R", '"', "\u23a7"}
    assert attn_maths.drawn_characters("<p>content: \"x\"</p>") == set(), "only the maths stylesheet counts"


def _glyphs(font) -> dict:
    """Each character's (advance, outline) in ``font``."""
    from fontTools.pens.recordingPen import RecordingPen

    glyphs, widths = font.getGlyphSet(), font["hmtx"].metrics
    out = {}
    for code, name in font.getBestCmap().items():
        pen = RecordingPen()
        glyphs[name].draw(pen)
        out[code] = (widths[name][0], pen.value)
    return out


def _metrics(font) -> tuple:
    return (font["head"].unitsPerEm, font["hhea"].ascent, font["hhea"].descent, font["OS/2"].sTypoAscender,
            font["OS/2"].sTypoDescender, font["OS/2"].usWinAscent, font["OS/2"].usWinDescent)


def _same_glyphs_for_what_is_drawn(original: pathlib.Path, cut: pathlib.Path, drawn: set[str]) -> None:
    from fontTools.ttLib import TTFont

    whole, kept = _glyphs(TTFont(original)), _glyphs(TTFont(cut))
    want = {code: g for code, g in whole.items() if chr(code) in drawn}
    assert {code: kept.get(code) for code in want} == want, f"{cut.name}: a drawn character's glyph lost or changed"
    # beyond them only what the font's own substitutions reach from them (Main's U+2208 -> U+220B, for one)
    extra = set(kept) - set(want)
    assert all(kept[code] == whole[code] for code in extra) and len(extra) <= max(2, len(want) // 4), \
        (cut.name, sorted(extra)[:10])
    assert _metrics(TTFont(cut)) == _metrics(TTFont(original)), cut.name


def test_a_font_is_cut_to_the_characters_drawn_with_its_glyphs_and_metrics_as_they_were(tmp_path):
    fonts = tmp_path / attn_maths.FONTS
    fonts.mkdir(parents=True)
    names = ["MathJax_Main-Regular.woff", "MathJax_AMS-Regular.woff", attn_maths.ZERO_FONT]
    for name in names:
        (fonts / name).write_bytes((ASSETS_FONTS / name).read_bytes())
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "a.html").write_text('<style id="attn-maths">mjx-c.mjx-c1D43F.TEX-I::before{content: "L";}'
                                              'mjx-c.mjx-c2208::before{content: "\\2208";}</style>')
    (tmp_path / "b.html").write_text('<style id="attn-maths">mjx-c.mjx-c211D.TEX-A::before{content: "R";}</style>')
    (fonts / "c.html").write_text('<style id="attn-maths">mjx-c::before{content: "Q";}</style>')  # not a page
    chars, before, after = attn_maths.subset_fonts(tmp_path)
    assert chars == 3 and after < before / 3, (chars, before, after)
    for name in names[:2]:
        _same_glyphs_for_what_is_drawn(ASSETS_FONTS / name, fonts / name, {"L", "\u2208", "R"})
    assert (fonts / attn_maths.ZERO_FONT).read_bytes() == (ASSETS_FONTS / attn_maths.ZERO_FONT).read_bytes()
    from fontTools.ttLib import TTFont

    for name in names[:2]:  # the font's dates are its own, not the build's (the same bytes from every build)
        assert (TTFont(fonts / name)["head"].modified == TTFont(ASSETS_FONTS / name)["head"].modified), name
    cut = {name: (fonts / name).read_bytes() for name in names}
    attn_maths.subset_fonts(tmp_path)
    assert {name: (fonts / name).read_bytes() for name in names} == cut, "cutting again changes nothing"


@pytest.mark.parametrize("edition", ["", "zh"])
def test_the_sites_fonts_hold_the_glyphs_its_pages_draw_as_they_were(built_site, edition):
    outdir = built_site / edition
    drawn = set()
    for page in outdir.rglob("*.html"):
        if not (edition == "" and page.relative_to(outdir).parts[0] == "zh"):
            drawn |= attn_maths.drawn_characters(page.read_text(encoding="utf-8"))
    assert len(drawn) > 50
    fonts = sorted((outdir / attn_maths.FONTS).glob("*.woff"))
    assert len(fonts) > 20
    for font in fonts:
        if font.name != attn_maths.ZERO_FONT:
            _same_glyphs_for_what_is_drawn(ASSETS_FONTS / font.name, font, drawn)
    whole = sum((ASSETS_FONTS / f.name).stat().st_size for f in fonts)
    assert sum(f.stat().st_size for f in fonts) < whole * 0.7


@pytest.mark.parametrize("path", ["book/self_attention.html", "zh/book/debugging_attention.html"])
def test_headings_and_links_with_a_formula_are_named_with_it_in_chromium(watch, path):
    """As a screen reader lists a page's headings and links: the names Chromium computes hold the formula
    (label_for_names), not a gap ("Why divide by ?")."""
    page = watch.goto(path)
    nodes = watch.context.new_cdp_session(page).send("Accessibility.getFullAXTree")["nodes"]
    named = [(n["role"]["value"], n["name"]["value"]) for n in nodes
             if n.get("role", {}).get("value") in ("heading", "link") and "√dₖ" in n.get("name", {}).get("value", "")]
    assert sorted({role for role, _ in named}) == ["heading", "link"], named
    want = r"Why divide by √dₖ ?\?" if path.startswith("book/") else r"1\. 缺少 1/√dₖ"
    assert all(re.fullmatch(want, name) for _, name in named), named
    # and every formula in a heading of the built page carries its text
    headings = re.findall(r"<h[1-6]\b.*?</h[1-6]>", page.content(), re.S)
    maths = [m for h in headings for m in re.findall(r"<math\b[^>]*>", h)]
    assert maths and all("aria-label=" in m for m in maths), maths


@pytest.mark.parametrize("path", ["book/self_attention.html", "zh/book/causal_attention.html"])
def test_formulas_are_drawn_in_chromium_with_the_sites_own_fonts(watch, path):
    page = watch.goto(path)
    # every font the page asked for has arrived or failed (a loaded machine can take seconds)
    page.wait_for_function("document.fonts.status === 'loaded' && [...document.fonts].every(f => f.status !== 'loading')",
                           timeout=30000)
    drawn = page.evaluate("""() => {
        const shown = [...document.querySelectorAll('mjx-container')].filter(c => c.checkVisibility());
        const empty = shown.filter(c => { const r = c.getBoundingClientRect(); return !(r.width > 0 && r.height > 0); });
        const fonts = [...document.fonts].filter(f => f.family.startsWith('MJX'));
        return {shown: shown.length, empty: empty.length,
                loaded: fonts.filter(f => f.status === 'loaded').map(f => f.family),
                failed: fonts.filter(f => f.status === 'error').map(f => f.family)};
    }""")
    assert drawn["shown"] > 20 and drawn["empty"] == 0, drawn
    assert "MJXTEX-I" in drawn["loaded"] and drawn["failed"] == [], drawn
    assert watch.failed == [] and watch.offhost == [], (watch.failed, watch.offhost)
    assert any("/_static/mathjax/woff-v2/" in u for u in watch.requests)
    assert not any("/mathjax/" in u and u.endswith(".js") for u in watch.requests)


SHIFTS = """window.__shifts = [];
new PerformanceObserver(l => { for (const e of l.getEntries()) window.__shifts.push(e.value); })
    .observe({type: 'layout-shift', buffered: true});"""


@pytest.mark.parametrize("path", ["book/glossary.html", "zh/book/causal_attention.html", "book/api/positional.html"])
def test_fonts_arriving_after_the_first_paint_move_nothing_and_none_is_found_late(browser, site_server, path):
    """On a phone whose MathJax fonts arrive 0.3 s late each (the first paint does not wait for them), the page
    shifts nothing when they swap in: MJXZERO, whose metrics place each glyph, is in the page's stylesheet
    (attn_maths.FONTS_EARLY). Every font file the page fetches is one its early script preloads
    (attn_perf.load_fonts_early): a font found only by the first layout would arrive after it and lay the page
    out again."""
    import time

    from conftest import PageWatch

    w = PageWatch(browser, site_server, viewport={"width": 412, "height": 823}, is_mobile=True, has_touch=True)
    try:
        w.page.add_init_script(SHIFTS)
        w.page.route("**/_static/mathjax/woff-v2/*", lambda route: (time.sleep(0.3), route.continue_()))
        page = w.goto(path)
        page.wait_for_function("document.fonts.status === 'loaded' && [...document.fonts].every(f => f.status !== 'loading')",
                               timeout=30000)
        page.wait_for_timeout(300)
        got = page.evaluate("""() => ({
            shifts: window.__shifts,
            preloaded: [...document.querySelectorAll('link[rel=preload][as=font]')].map(l => l.href),
            loaded: [...document.fonts].filter(f => f.status === 'loaded').map(f => f.family)})""")
        fetched = {u for u in w.requests if re.search(r"\.woff2?$", u)}
    finally:
        w.close()
    assert sum(got["shifts"]) < 0.005, (path, got["shifts"])
    assert fetched and fetched <= set(got["preloaded"]), (path, sorted(fetched - set(got["preloaded"])))
    assert {"MJXZERO", "MJXTEX-I"} <= set(got["loaded"]), got["loaded"]
