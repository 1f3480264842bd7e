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
font-display: swap (CHTML sizes each glyph from the stylesheet, not from the font, so the swap moves nothing).

A TeX error, or a renderer failure, fails the build naming the page and the TeX.
"""

from __future__ import annotations

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


# Preloaded with the page, the fonts its formulas surely use arrive before the first paint rather than
# after it, when swapping them in re-flows what is laid out around the maths (seen: a glossary table's
# rows moved 39 px, a layout shift of 0.07 under Lighthouse's slow-4G phone). Only fonts the page
# draws with (a preloaded font left unused is a console warning): MJXZERO (first in every family, so
# always fetched), MJXTEX for glyphs of no other variant, MJXTEX-I for italic letters; rarer variants
# (bold, sizes, AMS) load when drawn, as before.
_FACE = re.compile(r'@font-face\s*\{[^}]*?font-family:\s*([\w-]+);\s*src:\s*url\("?([^")]+)"?\)')
_GLYPH_CLASS = re.compile(r'<mjx-c class="([^"]*)"')


def font_preloads(css: str, maths_html: str) -> str:
    faces = dict(_FACE.findall(re.sub(r"/\*.*?\*/", "", css)))
    classes = [c.split() for c in _GLYPH_CLASS.findall(maths_html)]
    families = ["MJXZERO"] if classes else []
    if any(not any(k.startswith("TEX-") for k in c) for c in classes):
        families.append("MJXTEX")
    if any("TEX-I" in c for c in classes):
        families.append("MJXTEX-I")
    return "".join(f'<link rel="preload" href="{faces[f]}" as="font" type="font/woff" crossorigin>\n'
                   for f in families if f in faces)


def stylesheet(css: str) -> str:
    """MathJax's CHTML stylesheet made compact, its fonts shown with font-display: swap."""
    css = re.sub(r"/\*.*?\*/", "", css)
    css = re.sub(r"\s*([{};,>])\s*", r"\1", css.strip())
    css = css.replace("@font-face{", "@font-face{font-display:swap;")
    return f'<style id="attn-maths">{css}</style>'


def typeset_pages(app, exception) -> None:
    """Replace every formula of every written page by MathJax's CHTML (see the module docstring)."""
    if exception is not None or app.builder.format != "html":
        return
    start = time.perf_counter()
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
    if not requests:
        return
    result = render(requests)
    for done in result["pages"]:
        rendered = iter(done["html"])
        page_text = texts[done["page"]]
        in_api = python_descriptions(page_text)

        def replace(match, rendered=rendered, in_api=in_api):
            # The element Sphinx wrote stays as it was, with its class (the theme lays formulas out by it),
            # any equation id and number (links to it keep working); only the TeX becomes MathJax's CHTML.
            if match["body"].startswith(TYPESET):
                return match[0]
            chtml = next(rendered)
            if match["tag"] == "div" or any(a <= match.start() < b for a, b in in_api):
                chtml = chtml.replace("<mjx-container", FOCUSABLE, 1)
            return f'{match["open"]}{match["eqno"] or ""}{chtml}</{match["tag"]}>'

        text = MATH.sub(replace, page_text)
        text = text.replace("</head>", font_preloads(done["css"], "".join(done["html"])) + stylesheet(done["css"]) + "\n</head>", 1)
        (outdir / done["page"]).write_text(text, encoding="utf-8")
    count = sum(len(r["formulas"]) for r in requests)
    logger.info(f"maths: {count} formulas on {len(requests)} pages typeset in {time.perf_counter() - start:.1f} s")


def setup(app):
    # after sphinx.ext.mathjax's install_mathjax (priority 500) has added the script
    app.connect("html-page-context", drop_mathjax_scripts, priority=900)
    app.connect("build-finished", typeset_pages, priority=500)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
