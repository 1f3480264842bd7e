"""Maths typeset when the site is built, not in the reader's browser (issue 34).

Sphinx writes each formula as TeX for MathJax to typeset in the browser: ``<span class="math ...">\\(...\\)</span>``
inline, ``<div class="math ...">\\[...\\]</div>`` displayed (myst's dollarmath and amsmath, and notebook
outputs with text/latex, which myst-nb turns into the same nodes with classes of their own). On a phone that cost most of a chapter's
main-thread time (MathJax's script, then the style and layout of what it writes).

Here the same MathJax (3.2.2, node_modules/mathjax-full) typesets every formula of the edition once, at
build-finished, in one Node process (scripts/mathjax_render.cjs), with the same TeX packages and the same
CHTML output, so the look is MathJax's exactly; each formula keeps MathJax's assistive MathML copy
(mjx-assistive-mml) for screen readers. The pages load no MathJax script at all: html-page-context drops
the script and its inline configuration. Each page with maths carries, inline in its head, the CHTML
stylesheet for the glyphs it draws (a few kB gzipped: cheaper than one more render-blocking request for
a shared sheet); the glyph fonts are the site's own copy of MathJax's (scripts/assets.py), shown with
font-display: swap (CHTML sizes each glyph from the stylesheet, not from the font; see FONTS_EARLY for the
one font whose metrics do place the glyphs, and how the fonts arrive before the first paint).

A TeX error, or a renderer failure, fails the build naming the page and the TeX.
"""

from __future__ import annotations

import base64
import html
import json
import os
import pathlib
import re
import shutil
import subprocess
import time

from sphinx.util import logging

logger = logging.getLogger(__name__)

ROOT = pathlib.Path(__file__).resolve().parents[1]
RENDERER = ROOT / "scripts" / "mathjax_render.cjs"
MATHJAX_FULL = ROOT / "node_modules" / "mathjax-full"
# Where scripts/assets.py puts MathJax's CHTML fonts (html_static_path _assets -> _static).
FONTS = "_static/mathjax/woff-v2"

# What Sphinx's HTML translator writes for a formula (sphinx.ext.mathjax: visit_math, visit_displaymath):
# the element (with the node's own classes, as myst-nb's text/latex outputs have, and an id for a
# labelled equation), a labelled equation's number, then the TeX in its delimiters.
MATH = re.compile(r'(?P<open><(?P<tag>span|div) class="(?:[^"]* )?math notranslate nohighlight(?: [^"]*)?"[^>]*>)'
                  r'(?P<eqno>\s*<span class="eqno">.*?</span>)?(?P<body>.*?)</(?P=tag)>', re.S)
# The browser build sized each formula to the text around it (CHTML's matchFontHeight: it measures the
# ex-height of the page's font); on the book's text that is 119.5% (measured in Chromium on every
# chapter of both editions before this change). Node has no fonts to measure, so the scale is fixed.
SCALE = 1.195
TYPESET = "<mjx-container"


class MathsError(RuntimeError):
    pass


def split_tex(body: str, display: bool) -> str:
    """The TeX inside a math element's text, without the delimiters Sphinx put around it."""
    tex = html.unescape(body).strip()
    pairs = [("\\[", "\\]"), ("$$", "$$")] if display else [("\\(", "\\)")]
    for left, right in pairs:
        if tex.startswith(left) and tex.endswith(right) and len(tex) >= len(left) + len(right):
            return tex[len(left):-len(right)]
    if display and tex.startswith("\\begin{"):
        return tex  # an amsmath environment (myst's amsmath extension) is its own delimiter
    raise MathsError(f"no TeX delimiters around {tex!r}")


def drop_mathjax_scripts(app, pagename, templatename, context, doctree) -> None:  # noqa: ARG001 (html-page-context)
    """No page loads MathJax: sphinx.ext.mathjax's script and the inline configuration myst-nb gives it."""
    if "script_files" in context:
        context["script_files"] = [
            s for s in context["script_files"]
            if "mathjax" not in (getattr(s, "filename", None) or str(s) or "").lower()
            and "window.MathJax" not in (getattr(s, "attributes", {}).get("body", "") or "")
        ]


def pages_with_maths(outdir: pathlib.Path) -> list[pathlib.Path]:
    pages = []
    for page in sorted(outdir.rglob("*.html")):
        rel = page.relative_to(outdir).parts
        if rel[0] in {"_static", "_sources", "_images"}:
            continue
        if "math notranslate nohighlight" in page.read_text(encoding="utf-8"):  # (see MATH)
            pages.append(page)
    return pages


def render(pages: list[dict]) -> dict:
    """Run scripts/mathjax_render.cjs once over ``pages`` (see the script for the format)."""
    node = shutil.which("node")
    if node is None or not (MATHJAX_FULL / "package.json").is_file():
        raise MathsError("maths are typeset at build time with Node and node_modules/mathjax-full, and "
                         f"{'node' if node is None else 'node_modules/mathjax-full'} is missing: run make setup")
    proc = subprocess.run([node, str(RENDERER)], input=json.dumps({"pages": pages}), capture_output=True,
                          text=True, encoding="utf-8", cwd=ROOT, check=False)
    if proc.returncode != 0:
        raise MathsError(f"scripts/mathjax_render.cjs failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    result = json.loads(proc.stdout)
    if result["errors"]:
        lines = [f"  {e['page']}: {e['message']} in TeX: {e['tex']}" for e in result["errors"]]
        raise MathsError("TeX errors in the book's maths:\n" + "\n".join(lines))
    return result


# A formula that can scroll sideways (a displayed one, or an inline one in the API's descriptions: the
# book's style sheet, _css/attn.css, lets them scroll rather than widen the page on a phone) must be
# reachable by keyboard, or a keyboard user cannot scroll it (WCAG 2.1.1; axe's scrollable-region-
# focusable). MathJax's browser build made every formula focusable for its menu; here only these.
FOCUSABLE = '<mjx-container tabindex="0"'
_DL = re.compile(r'<dl\b[^>]*>|</dl>')


def python_descriptions(text: str) -> list[tuple[int, int]]:
    """The spans of ``text`` inside an autodoc description (``<dl class="py ...">``, nested lists counted)."""
    spans, stack = [], []
    for m in _DL.finditer(text):
        if m[0] == "</dl>":
            if stack:
                start, is_py = stack.pop()
                if is_py and not any(p for _, p in stack):
                    spans.append((start, m.start()))
        else:
            stack.append((m.start(), re.search(r'class="py\b', m[0]) is not None))
    return spans


# A heading or a link is named by its text (a screen reader's list of headings, the page's contents), and the
# name Chromium computes from a formula's assistive MathML is empty: "Why divide by ?". A formula inside one
# carries the formula as a line of text instead (aria-label on its <math>), in Unicode (√dₖ, (L, S)) that a
# screen reader speaks in its own language; elsewhere the MathML is left for screen readers that read maths.
_NAMED_BY_CONTENT = re.compile(r"<(h[1-6]|a|button|summary|th|caption)\b[^>]*>.*?</\1>", re.S)
_SUB = dict(zip("0123456789+-=()aehijklmnoprstuvx", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ", strict=True))
_SUP = dict(zip("0123456789+-=()in", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁱⁿ", strict=True))
_SPACED = {"=", "+", "\u2212", "<", ">", "\u2264", "\u2265", "\u2248", "\u2260", "\u2192", "\u00D7", "\u22C5", "\u2208"}


def named_by_content(text: str) -> list[tuple[int, int]]:
    """The spans of ``text`` that are an element named by its content: a heading, a link, a button, a summary,
    a table header cell, a caption."""
    return [m.span() for m in _NAMED_BY_CONTENT.finditer(text)]


def linear_text(mathml: str) -> str:
    """A formula's MathML as one line of Unicode text: sub- and superscripts as such characters where each has
    one (d_k -> dₖ), else after _ and ^; a fraction a/b; a root √; a compound part in brackets."""
    import xml.etree.ElementTree as ET

    def wrap(s: str) -> str:  # brackets around a part with an operator in it
        return f"({s})" if any(c in " +-\u2212=/,<>_^" for c in s) else s

    def script(s: str, table: dict, mark: str) -> str:
        return "".join(table[c] for c in s) if s and all(c in table for c in s) else mark + wrap(s)

    def line(el) -> str:
        tag = el.tag.rsplit("}", 1)[-1]
        parts = [line(child) for child in el]
        if tag in {"mi", "mn"}:
            return (el.text or "").strip()
        if tag in {"mtext", "ms"}:  # words keep the spaces around them (\text{ if })
            return el.text or ""
        if tag == "mo":
            op = (el.text or "").strip()
            return f" {op} " if op in _SPACED else (", " if op == "," else op)
        if tag == "msub" and len(parts) == 2:
            return parts[0] + script(parts[1], _SUB, "_")
        if tag == "msup" and len(parts) == 2:
            return parts[0] + script(parts[1], _SUP, "^")
        if tag == "msubsup" and len(parts) == 3:
            return parts[0] + script(parts[1], _SUB, "_") + script(parts[2], _SUP, "^")
        if tag == "mfrac" and len(parts) == 2:
            return f"{wrap(parts[0])}/{wrap(parts[1])}"
        if tag == "msqrt":
            return "√" + wrap("".join(parts))
        if tag == "mroot" and len(parts) == 2:
            return f"{wrap(parts[0])}^(1/{parts[1]})"
        return "".join(parts)

    return re.sub(r"\s+", " ", line(ET.fromstring(mathml))).strip()


def label_for_names(chtml: str) -> str:
    """The typeset formula with its text (linear_text) as the name of its <math>, for a formula in an element
    named by its content."""
    mathml = re.search(r"<math\b.*?</math>", chtml, re.S)
    if mathml is None:
        raise MathsError(f"no assistive MathML in a typeset formula: {chtml[:200]}")
    label = html.escape(linear_text(mathml[0]), quote=True)
    return chtml[:mathml.start()] + f'<math aria-label="{label}"' + chtml[mathml.start() + len("<math"):]


# FONTS_EARLY. A formula's glyphs are boxes sized by the stylesheet, but where each box puts its baseline
# comes from the metrics of the first font in its family list, MJXZERO (CHTML's line-height 0 sets a line's
# baseline half the font's ascent minus descent below the middle; every MathJax font has ascent = descent).
# While MJXZERO has not loaded, the browser's fallback font (ascent > descent) moves every glyph's baseline, and
# rows of maths change height when it arrives (seen: a glossary row 38.5 -> 33.2 px). So MJXZERO (1.4 kB) is
# written into the stylesheet as a data: URL, and the page starts loading its fonts as soon as its body starts
# (attn_perf.load_fonts_early, with drawn_families and font_urls below), before the first layout, which then
# has them. Not with <link rel=preload> in <head>: Chromium holds the first paint for fonts preloaded there
# (its RenderBlockingFonts, up to 1.5 s from navigation), and under Lighthouse that hold ran to its limit in
# about half the loads of a page with maths, the fonts long arrived (first paint 1.3 s instead of 0.2-0.4 s).
ZERO_FONT = "MathJax_Zero.woff"
_VARIANT = re.compile(r'\.(TEX-[A-Z0-9]+)\s*\{\s*font-family:\s*MJXZERO,\s*(MJXTEX-[A-Z0-9]+)\s*;?\s*\}')
_GLYPH_CLASS = re.compile(r'<mjx-c class="([^"]*)"')
STYLE = re.compile(r'<style id="attn-maths">(.*?)</style>', re.S)
_STRETCHY = re.compile(r"mjx-stretchy-v mjx-c,\s*mjx-stretchy-h mjx-c\s*\{\s*font-family:([^;}]*)")


def drawn_families(page: str) -> list[str]:
    """The MathJax font families a typeset page draws with, in the order first drawn: MJXZERO (first in every
    family list), MJXTEX for glyphs of no other variant, then each variant class's own family (TEX-I -> MJXTEX-I)."""
    style = STYLE.search(page)
    if not style:
        return []
    variants = dict(_VARIANT.findall(style[1]))
    families = ["MJXZERO"]
    for classes in _GLYPH_CLASS.findall(page):
        named = [variants[c] for c in classes.split() if c in variants]
        for family in named or ([] if any(c.startswith("TEX-") for c in classes.split()) else ["MJXTEX"]):
            if family not in families:
                families.append(family)
    # a stretched delimiter (mjx-stretchy-v/-h: a tall brace, a long arrow) is drawn in pieces, from the fonts
    # of one shared rule; the pieces are in its size fonts (MJXTEX-S1, MJXTEX-S4), tried in its order
    stretchy = _STRETCHY.search(style[1]) if "<mjx-stretchy-" in page else None
    for family in re.findall(r"MJXTEX-S\d", stretchy[1]) if stretchy else []:
        if family not in families:
            families.append(family)
    return families


_FACE_URL = re.compile(r'@font-face\s*\{[^}]*?font-family:\s*([\w-]+);\s*src:\s*url\("?([^")]+)"?\)')


def font_urls(page: str) -> dict[str, str]:
    """Each MathJax family's font file, as a typeset page's stylesheet names it (a data: URL for MJXZERO)."""
    style = STYLE.search(page)
    return dict(_FACE_URL.findall(style[1])) if style else {}


# CHTML draws each glyph as the content of an mjx-c's ::before, one rule per glyph in the page's stylesheet
# (a stretched delimiter's pieces too): content: "L", content: "\2208".
_CONTENT = re.compile(r'content:\s*"((?:[^"\\]|\\.)*)"')
_CSS_ESCAPE = re.compile(r"\\([0-9A-Fa-f]{1,6})\s?|\\(.)", re.S)


def drawn_characters(page: str) -> set[str]:
    """The characters a typeset page's maths draws, in any of MathJax's fonts (its stylesheet's contents)."""
    style = STYLE.search(page)
    if not style:
        return set()
    unescape = lambda m: chr(int(m[1], 16)) if m[1] else m[2]  # noqa: E731
    return {ch for content in _CONTENT.findall(style[1]) for ch in _CSS_ESCAPE.sub(unescape, content)}


def subset_fonts(outdir: pathlib.Path) -> tuple[int, int, int]:
    """Cut each of MathJax's fonts in the built edition (``outdir``/FONTS) down to the characters its pages draw:
    the whole fonts are made for all of TeX (AMS-Regular 41 kB, for a book that draws its R of R^{L x d} from it),
    and the fonts a page draws with load before its first paint, at a phone's 1.6 Mbit/s under Lighthouse. Every
    font keeps every drawn character it has, whichever variant draws it, so a glyph is found in the same font as
    before; outlines, advances and the font's metrics are kept as they were (tests/test_maths.py compares them).
    All pages count, those an incremental build did not write too (Sphinx copies the whole fonts again on each
    build). MJXZERO stays whole: it is written into each page (FONTS_EARLY). Returns (characters, bytes before,
    bytes after)."""
    from fontTools import subset

    chars = set()
    for page in outdir.rglob("*.html"):
        if page.relative_to(outdir).parts[0] not in {"_static", "_sources", "_images"}:
            chars |= drawn_characters(page.read_text(encoding="utf-8"))
    before = after = 0
    for path in sorted((outdir / FONTS).glob("*.woff")):
        if path.name == ZERO_FONT:
            continue
        options = subset.Options()
        options.flavor = "woff"
        options.drop_tables += ["FFTM"]  # FontForge's timestamps, which fontTools cannot subset
        options.notdef_outline = True
        options.name_IDs = ["*"]
        options.name_languages = ["*"]
        # loaded with the options (recalc_timestamp off): fontTools' TTFont alone stamps the time of the save into
        # the font's head table, and the built fonts' bytes differed from one build to the next
        font = subset.load_font(str(path), options)
        cutter = subset.Subsetter(options)
        cutter.populate(unicodes=sorted(ord(c) for c in chars if ord(c) in font.getBestCmap()))
        cutter.subset(font)
        before += path.stat().st_size
        subset.save_font(font, str(path), options)
        after += path.stat().st_size
    return len(chars), before, after


def stylesheet(css: str, zero_font: bytes | None = None) -> str:
    """MathJax's CHTML stylesheet made compact, its fonts shown with font-display: swap, and MJXZERO (given
    its file's bytes) written in as a data: URL (see FONTS_EARLY)."""
    css = re.sub(r"/\*.*?\*/", "", css)
    css = re.sub(r"\s*([{};,>])\s*", r"\1", css.strip())
    css = css.replace("@font-face{", "@font-face{font-display:swap;")
    if zero_font is not None:
        data = "data:font/woff;base64," + base64.b64encode(zero_font).decode("ascii")
        zero = [url for _, url in _FACE_URL.findall(css) if url.endswith("/" + ZERO_FONT)]
        if len(zero) != 1 or css.count(zero[0]) != 1:
            raise MathsError(f"MathJax's stylesheet names {ZERO_FONT} {len(zero)} times, expected once")
        css = css.replace(zero[0], data)
    return f'<style id="attn-maths">{css}</style>'


def typeset_pages(app, exception) -> None:
    """Replace every formula of every written page by MathJax's CHTML (see the module docstring), then cut
    the fonts down to what the pages draw (subset_fonts)."""
    if exception is not None or app.builder.format != "html":
        return
    outdir = pathlib.Path(app.outdir)
    texts, requests = {}, []
    for page in pages_with_maths(outdir):
        rel = page.relative_to(outdir).as_posix()
        text = page.read_text(encoding="utf-8")
        formulas = []
        for match in MATH.finditer(text):
            if match["body"].startswith(TYPESET):
                continue  # a page an incremental build did not write again
            display = match["tag"] == "div"
            try:
                formulas.append({"tex": split_tex(match["body"], display), "display": display})
            except MathsError as err:
                raise MathsError(f"{rel}: {err}") from None
        if not formulas:
            continue
        font_url = os.path.relpath(outdir / FONTS, page.parent).replace(os.sep, "/")
        texts[rel] = text
        requests.append({"page": rel, "fontURL": font_url, "scale": SCALE, "formulas": formulas})
    if requests:
        write_typeset(outdir, texts, requests)
    if (outdir / FONTS).is_dir():
        chars, before, after = subset_fonts(outdir)
        logger.info(f"maths: fonts cut to the {chars} characters the pages draw, {before // 1024} -> {after // 1024} kB")


def write_typeset(outdir: pathlib.Path, texts: dict, requests: list[dict]) -> None:
    start = time.perf_counter()
    result = render(requests)
    zero = outdir / FONTS / ZERO_FONT
    zero_font = zero.read_bytes() if zero.is_file() else None
    for done in result["pages"]:
        rendered = iter(done["html"])
        page_text = texts[done["page"]]
        in_api, named = python_descriptions(page_text), named_by_content(page_text)

        def replace(match, rendered=rendered, in_api=in_api, named=named):
            # The element Sphinx wrote stays as it was, with its class (the theme lays formulas out by it),
            # any equation id and number (links to it keep working); only the TeX becomes MathJax's CHTML.
            if match["body"].startswith(TYPESET):
                return match[0]
            chtml = next(rendered)
            if match["tag"] == "div" or any(a <= match.start() < b for a, b in in_api):
                chtml = chtml.replace("<mjx-container", FOCUSABLE, 1)
            if any(a <= match.start() < b for a, b in named):
                chtml = label_for_names(chtml)
            return f'{match["open"]}{match["eqno"] or ""}{chtml}</{match["tag"]}>'

        text = MATH.sub(replace, page_text)
        text = text.replace("</head>", stylesheet(done["css"], zero_font) + "\n</head>", 1)
        (outdir / done["page"]).write_text(text, encoding="utf-8")
    count = sum(len(r["formulas"]) for r in requests)
    logger.info(f"maths: {count} formulas on {len(requests)} pages typeset in {time.perf_counter() - start:.1f} s")


def setup(app):
    # after sphinx.ext.mathjax's install_mathjax (priority 500) has added the script
    app.connect("html-page-context", drop_mathjax_scripts, priority=900)
    app.connect("build-finished", typeset_pages, priority=500)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
