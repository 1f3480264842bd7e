"""Sphinx extension for the book.

1. The site's "download .ipynb" button serves each chapter's reader edition (reader/book/<x>.ipynb,
   made by ``python -m scripts.notebooks reader``) instead of the MyST source, so a downloaded
   chapter reads in Jupyter as it does on the site.

2. Each page loads only what it uses: none of sphinx-thebe's files, since thebe is off (sphinx-thebe
   0.3.1 inlines its configuration twice, a page error on every page). (No page loads MathJax: the
   maths are typeset at build time, attn_maths.py.)

3. Make embedded widget state safe to put inside <script> tags.

myst-nb writes each page's widget state as JSON inside ``<script type="application/vnd.jupyter.
widget-state+json">`` and escapes only the exact text ``</script>``. An HTML parser ends the
script at ``</SCRIPT>``, ``</script >`` or ``</Script`` too, and treats ``<!--`` specially, so a
token such as ``</SCRIPT>`` shown by a widget would cut the state short and break the page (or
let the rest be parsed as HTML). Escaping every ``</`` and ``<!--`` keeps the content the same
for JSON and JavaScript readers (``<\\/`` and ``\\u003c!--`` decode to the same characters).

4. Add the book's own page styles, ``_ext/attn_book.css`` (long headings and inline code wrap on a phone).

5. Publish only what a reader's browser uses: no sphinx-thebe configuration block (it names
   sphinx-thebe's default Binder repository, unrelated to this book; thebe is off), no theme template
   fragments (``*webpack-macros.html``) and no source maps (``*.map`` and the comments pointing at
   them). ``index.html`` redirects to the first chapter with a link for browsers that do not follow
   the redirect, and the 404 page finds its styles whether the site is served under
   ``notfound_urls_prefix`` (GitHub Pages) or at a host's root.

7. Figures made by ``attn.book.viz.png_2x`` (every matplotlib figure in a chapter that imports ``attn.book.viz``)
   get a minimum width at which their smallest text is 9 px; narrower screens scroll them sideways.

6. Mark the table columns that hold numbers (class ``attn-num``), which ``_css/attn.css`` right-aligns.

8. Fold the optional sections: a section whose label ends in ``-deeper`` (``(self_attention-deeper)=``
   above its heading, "Going deeper") keeps its heading and folds its body into a ``<details>``
   element, closed until the reader opens it. The reader editions keep such a section whole.

9. The API reference names a class's public ancestors in its "Bases" line: a private base shared
   inside a module (``attn.variants._Family``) is replaced by its own bases; and it leaves out a method
   whose only docstring is another library's (a ``forward`` would show PyTorch's boilerplate).
"""

from __future__ import annotations

import inspect
import math
import pathlib
import re
import shutil
import sys

from docutils import nodes

_CLOSE = re.compile(r"</", flags=re.IGNORECASE)


def sanitize_script_content(content: str) -> str:
    return _CLOSE.sub(r"<\\/", content).replace("<!--", "\\u003c!--")


def serve_reader_editions(app, exception) -> None:
    """Replace ``_sources/<page>.ipynb`` (the download button's target) by the reader edition."""
    if exception is not None or app.builder.format != "html":
        return
    srcdir, outdir = pathlib.Path(app.srcdir), pathlib.Path(app.outdir)
    for source in (outdir / "_sources").rglob("*.ipynb"):
        rel = source.relative_to(outdir / "_sources")
        edition = srcdir / "reader" / rel
        if not edition.exists():
            raise FileNotFoundError(f"{rel} has no reader edition at reader/{rel}: run `python -m scripts.notebooks reader`")
        shutil.copyfile(edition, source)


def _name(asset) -> str:
    return (getattr(asset, "filename", None) or str(asset) or "").lower()


def _inline(asset) -> str:
    return getattr(asset, "attributes", {}).get("body", "") or ""


def trim_page_assets(app, pagename, templatename, context, doctree) -> None:  # noqa: ARG001 (html-page-context handler)
    """Drop the scripts and styles a page does not use (see the module docstring)."""

    def unused(asset) -> bool:
        name, inline = _name(asset), _inline(asset)
        return "thebe" in name or "THEBE_JS_URL" in inline

    for key in ("script_files", "css_files"):
        if key in context:
            context[key] = [a for a in context[key] if not unused(a)]


CSS = pathlib.Path(__file__).with_name("attn_book.css")


def copy_page_css(app, exception) -> None:
    """Put ``attn_book.css`` in the site's ``_static`` folder (linked from every page by ``setup``)."""
    if exception is None and app.builder.format == "html":
        shutil.copyfile(CSS, pathlib.Path(app.outdir) / "_static" / CSS.name)


# The theme's Font Awesome script is not loaded by any page (_templates/static/webpack-macros.html):
# its 3 MB (script and source map) stay out of the published site.
UNUSED_THEME_FILES = ("fontawesome.js", "fontawesome.js.map", "fontawesome.js.LICENSE.txt")


def drop_unused_theme_files(app, exception) -> None:
    if exception is None and app.builder.format == "html":
        for name in UNUSED_THEME_FILES:
            (pathlib.Path(app.outdir) / "_static" / "scripts" / name).unlink(missing_ok=True)


def drop_thebe_config(app) -> None:
    """Disconnect sphinx-thebe's per-page configuration block (Jupyter Book always loads sphinx-thebe)."""
    for listeners in app.events.listeners.values():
        for listener in list(listeners):
            if getattr(listener.handler, "__module__", "") == "sphinx_thebe" and listener.handler.__name__ == "update_thebe_context":
                app.disconnect(listener.id)


TEMPLATE_FRAGMENTS = ("webpack-macros.html", "sbt-webpack-macros.html")
SOURCE_MAP_COMMENT = re.compile(r"\n?(?://# sourceMappingURL=[^\n]*|/\*# sourceMappingURL=[^*]*\*/)[ \t]*$", re.M)


def drop_unpublished_files(app, exception) -> None:
    """Remove template fragments and source maps from ``_static`` (and the comments naming the maps)."""
    if exception is not None or app.builder.format != "html":
        return
    static = pathlib.Path(app.outdir) / "_static"
    for name in TEMPLATE_FRAGMENTS:
        (static / name).unlink(missing_ok=True)
    for path in static.rglob("*.map"):
        path.unlink()
    for path in [*static.rglob("*.js"), *static.rglob("*.css")]:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        if "sourceMappingURL=" in text:
            path.write_text(SOURCE_MAP_COMMENT.sub("", text), encoding="utf-8", errors="surrogateescape")


INDEX = """<!DOCTYPE html>
<html lang="{lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="refresh" content="0; url={target}">
<link rel="canonical" href="{target}">
<link rel="icon" href="{icon}">
<title>{title}</title>
</head>
<body>
<p><a href="{target}">{title}: {link}</a></p>
</body>
</html>
"""


def write_index(app, exception) -> None:
    """``index.html``: a redirect to the first page, with a link for browsers that do not follow it, in
    the edition's language (``attn_index_link``), and the book's icon (without one, a browser asks the
    host's root for /favicon.ico, outside the site when it is served under a prefix).
    (Runs before sphinx-external-toc's build-finished handler, which then leaves the file alone.)"""
    if exception is not None or app.builder.format != "html" or app.config.master_doc == "index":
        return
    from html import escape

    target = escape(app.builder.get_target_uri(app.config.master_doc))
    icon = "_static/" + pathlib.Path(app.config.html_favicon).name if app.config.html_favicon else "favicon.ico"
    (pathlib.Path(app.outdir) / "index.html").write_text(INDEX.format(
        target=target, title=escape(app.config.html_title or app.config.project), link=escape(app.config.attn_index_link),
        lang=(app.config.language or "en").replace("_", "-"), icon=escape(icon)), encoding="utf-8")


ROOT_SCRIPT = """<script>
/* This page is served for any missing path, at any depth: its links are written from the site root, which is
   {prefix} where the host serves the site under it (GitHub Pages) and / elsewhere (a custom domain, a local
   server). Styles and scripts are written by document.write so that the browser fetches them from there only. */
var attnRoot = location.pathname.indexOf({prefix_js}) === 0 ? {prefix_js} : "/";
document.write("<base href=" + JSON.stringify(attnRoot) + ">");
</script>"""
_RESOURCE_TAG = re.compile(r'<(?:link\b[^>]*|script\b[^>]*\bsrc="[^"]*"[^>]*)>(?:</script>)?')
_FETCHED = re.compile(r'\brel="(?:stylesheet|preload|icon|shortcut icon)"|^<script')
_RELATIVE_URL = re.compile(r'\b(?:href|src)="((?![a-z]+:|/|#)[^"]+)"')


def make_404_work_at_any_root(app, exception) -> None:
    """Rewrite the 404 page's absolute links (``notfound_urls_prefix`` + path) as paths from the site root:
    a first script in ``<head>`` finds the root (ROOT_SCRIPT) and sets ``<base>`` for the page's links, and
    each style sheet and script of the page is written by a script from that root (a plain tag would be
    fetched from the missing page's folder by the browser's look-ahead before ``<base>`` is set)."""
    import json

    prefix = getattr(app.config, "notfound_urls_prefix", None)
    page = pathlib.Path(app.outdir) / "404.html"
    if exception is not None or app.builder.format != "html" or not prefix or not page.exists():
        return
    js = lambda text: json.dumps(text).replace("</", "<\\/")  # noqa: E731
    text = re.sub(r'((?:href|src)=")' + re.escape(prefix), r"\1", page.read_text(encoding="utf-8"))

    def written(m):
        tag = m.group(0)
        url = _RELATIVE_URL.search(tag)
        if not _FETCHED.search(tag) or url is None:
            return tag
        before, after = tag[: url.start(1)], tag[url.end(1):]
        return f"<script>document.write({js(before)} + attnRoot + {js(url.group(1))} + {js(after)});</script>"

    text = _RESOURCE_TAG.sub(written, text)
    text = text.replace("<head>", "<head>\n" + ROOT_SCRIPT.format(prefix=prefix, prefix_js=js(prefix)), 1)
    page.write_text(text, encoding="utf-8")


# A cell holds a number when its text is one: a sign, digits (with , or _ grouping), decimals, an exponent,
# an optional "± spread" and a short unit or factor (%, x, ×, ms, MB, GFLOP/s ...).
NUMBER = re.compile(r"^[−+\-~≈<>≤≥]?\s*(?:\d[\d,_]*(?:\.\d+)?|\.\d+)(?:[eE][−+\-]?\d+)?"
                    r"(?:\s*(?:±|\+/-)\s*\d[\d.]*(?:[eE][−+\-]?\d+)?)?\s*(?:%|×|x|[a-zA-Zµ]{1,5}(?:/s)?)?$")
_TABLE = re.compile(r"<table\b.*?</table>", re.S | re.I)
_ROW = re.compile(r"<tr\b.*?</tr>", re.S | re.I)
_CELL = re.compile(r"<(t[hd])\b([^>]*)>(.*?)</\1>", re.S | re.I)
_TAG = re.compile(r"<[^>]+>")


def _is_number(cell_html: str) -> bool:
    from html import unescape

    return bool(NUMBER.match(unescape(_TAG.sub("", cell_html)).strip()))


def mark_number_columns(table: str) -> str:
    """Add class ``attn-num`` to every cell of the columns whose body cells all hold numbers (empty cells
    aside), header included, so that the style sheet right-aligns them. Tables with merged cells or
    nested tables are left as they are."""
    if re.search(r"colspan|rowspan", table, re.I) or len(re.findall(r"<table\b", table, re.I)) > 1:
        return table
    rows = [[(m.group(1).lower(), m.group(3)) for m in _CELL.finditer(r)] for r in _ROW.findall(table)]
    body = [r for r in rows if r and all(kind == "td" for kind, _ in r)]
    ncols = max((len(r) for r in rows), default=0)
    numeric = set()
    for j in range(ncols):
        texts = [r[j][1] for r in body if j < len(r) and _TAG.sub("", r[j][1]).strip()]
        if texts and all(_is_number(t) for t in texts):
            numeric.add(j)
    if not numeric:
        return table

    def row(m):
        col = iter(range(10**6))

        def cell(c):
            j = next(col)
            if j not in numeric:
                return c.group(0)
            attrs = c.group(2)
            if re.search(r"\bclass=([\"'])", attrs):
                attrs = re.sub(r"\bclass=([\"'])", r"class=\1attn-num ", attrs, count=1)
            else:
                attrs += ' class="attn-num"'
            return f"<{c.group(1)}{attrs}>{c.group(3)}</{c.group(1)}>"

        return _CELL.sub(cell, m.group(0))

    return _ROW.sub(row, table)


def mark_numbers_in_tables(app, pagename, templatename, context, doctree) -> None:  # noqa: ARG001 (html-page-context handler)
    if "body" in context and "<table" in context["body"]:
        context["body"] = _TABLE.sub(lambda m: mark_number_columns(m.group(0)), context["body"])


#: The smallest text a figure may show on any screen, in CSS pixels (issue 21: 9 px on a 390 px phone).
MIN_TEXT_PX = 9.0
_IMG = re.compile(r'<img\b[^>]*\bsrc="(?:\.\./)*_images/([0-9a-f]+\.png)"[^>]*?(/?)>')


def figure_text(png_path: pathlib.Path) -> tuple[float, float]:
    """``(smallest text, width)`` of a figure at its display size, in CSS px, from what ``attn.book.viz.png_2x``
    stores in the PNG (text 0.0 for a PNG without it)."""
    from attn_seo import TEXT_PX_KEY
    from PIL import Image

    with Image.open(png_path) as img:
        text_px = float(getattr(img, "text", {}).get(TEXT_PX_KEY, 0) or 0)
        return text_px, img.size[0] / 2  # png_2x draws at twice the display size


def figure_min_width(png_path: pathlib.Path) -> int | None:
    """The narrowest width (CSS px) at which a figure's smallest text is still ``MIN_TEXT_PX`` (None for a
    PNG without its text size). A figure whose text is smaller even at its display size (the diagrams of
    ``attn.book.diagram``, labelled in 6-7 pt) is shown wider than that size on a phone (1.2 times at most
    today; the tests allow 1.5): its PNG, drawn at twice the display size, still has more than one image
    pixel per CSS pixel."""
    text_px, natural = figure_text(png_path)
    if text_px <= 0:
        return None
    return math.ceil(natural * MIN_TEXT_PX / text_px)


_STYLE = re.compile(r'\sstyle="([^"]*)"')


def add_figure_min_widths(html: str, images: pathlib.Path, cache: dict | None = None) -> str:
    """``html`` with a ``min-width`` (and ``data-min-width``) on each ``<img>`` of a PNG in ``images`` that
    carries attn.book.viz.png_2x's text size (see figure_min_width); other images are left as they are.
    The width goes into the tag's own ``style`` (myst-nb writes the display size there: a second
    ``style`` attribute would be ignored by the browser) as ``--attn-min-width``, which the style sheet
    applies below a desktop's width (``_css/attn.css``); the fixed height gives way to ``auto`` so that
    a figure narrowed to the column keeps its proportions."""
    cache = {} if cache is None else cache

    def add(m):
        name = m.group(1)
        if name not in cache:
            png = images / name
            cache[name] = figure_min_width(png) if png.exists() else None
        tag = m.group(0)
        if cache[name] is None:
            return tag
        own = _STYLE.search(tag)
        rules = [r.strip() for r in (own.group(1) if own else "").split(";") if r.strip()]
        rules = [r for r in rules if r.split(":")[0].strip() not in ("height", "--attn-min-width")]
        style = "; ".join([*rules, "height: auto", f"--attn-min-width: {cache[name]}px"])
        if own:
            tag = tag[:own.start()] + tag[own.end():]
        end = len(tag) - len(m.group(2)) - 1
        return f'{tag[:end].rstrip()} style="{style}" data-min-width="{cache[name]}" {tag[end:]}'

    return _IMG.sub(add, html)


def keep_figure_text_readable(app, exception) -> None:
    """Give each figure made by ``attn.book.viz.png_2x`` the width at which its text stays readable; on a phone
    or a tablet a narrower screen makes the figure scroll sideways in its own box (``_css/attn.css``)
    instead of shrinking; on a desktop it fits the text column."""
    if exception is not None or app.builder.format != "html":
        return
    out, cache = pathlib.Path(app.outdir), {}
    for page in out.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        if "_images/" in text:
            new = add_figure_min_widths(text, out / "_images", cache)
            if new != text:
                page.write_text(new, encoding="utf-8")


# the title in the page's language (a reader of this page reads it), the label in the language it names
LANGUAGE_LINK = ('<p class="attn-lang"><a href="{href}" hreflang="{hreflang}" title="{title}">'
                 '<span lang="{hreflang}">{label}</span></a></p>\n')


def link_other_edition(app, pagename, templatename, context, doctree) -> None:  # noqa: ARG001 (html-page-context handler)
    """8. Every page links to the same page of the book's other language (``attn_other_edition`` in the
    configuration: the other edition's root relative to this site's root, the link's label, title and
    language), at the top of the page. (Its ``<link rel="alternate" hreflang>``, by absolute URL: attn_seo.)"""
    from html import escape

    other = app.config.attn_other_edition
    if not other or pagename == "404" or "body" not in context:
        return
    href = context["pathto"](other["root"] + pagename + ".html", 1)
    context["body"] = LANGUAGE_LINK.format(href=escape(href), hreflang=escape(other["hreflang"]),
                                           title=escape(other["title"]), label=escape(other["label"])) + context["body"]


# 9. Chinese search: Sphinx indexes a Chinese page with jieba's words; a query is cut into the same
# words by longest match against the index's own vocabulary (no dictionary to download), so that
# 多头注意力 finds the pages holding 多头 and 注意力. A run of Han characters the index has no word for
# is dropped (single characters are not indexed).
SPLIT_QUERY_HAN = r"""
var splitQuery = (query) => {
  const index = (typeof Search !== "undefined" && Search._index) || {};
  const known = (w) => (index.terms && w in index.terms) || (index.titleterms && w in index.titleterms);
  const out = [];
  for (const word of query.split(/[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/gu)) {
    for (const part of word.split(/(\p{Script=Han}+)/u)) {
      if (!part) continue;
      if (!/\p{Script=Han}/u.test(part)) { out.push(part); continue; }
      for (let i = 0; i < part.length;) {
        let j = part.length;
        while (j > i + 1 && !known(part.slice(i, j))) j--;
        if (known(part.slice(i, j))) out.push(part.slice(i, j));
        i = j;
      }
    }
  }
  return out;
};
"""


def add_chinese_search(app) -> None:
    from sphinx.search.zh import SearchChinese

    class SearchChineseBook(SearchChinese):
        js_splitter_code = SPLIT_QUERY_HAN

    app.add_search_language(SearchChineseBook)


# --- 8. optional sections, folded ----------------------------------------------------------------

FOLD_LABEL = {"en": "Optional: open this section", "zh": "选读：展开本节"}


class folded_section(nodes.General, nodes.Element):
    """The body of an optional section: rendered as <details> in HTML (module level: Sphinx pickles
    the doctrees)."""


def fold_optional_sections(app, doctree) -> None:
    lang = "zh" if str(app.config.language or "en").startswith("zh") else "en"
    for section in list(doctree.findall(nodes.section)):
        if not any(i.endswith("-deeper") for i in section["ids"]) or len(section.children) < 2:
            continue
        body = section.children[1:]
        fold = folded_section(label=FOLD_LABEL[lang])
        for child in body:
            section.remove(child)
        fold.extend(body)
        section.append(fold)


def visit_folded_section(self, node) -> None:
    from html import escape

    self.body.append(f'<details class="attn-deeper"><summary>{escape(node["label"])}</summary>\n')


def depart_folded_section(self, node) -> None:  # noqa: ARG001 (a Sphinx visitor)
    self.body.append("</details>\n")


def public_bases(app, name, obj, options, bases) -> None:  # noqa: ARG001  (Sphinx's signature)
    """``autodoc-process-bases``: each private base in ``bases`` gives way to its own bases (in place)."""
    i = 0
    while i < len(bases):
        base = bases[i]
        if isinstance(base, type) and base.__name__.startswith("_"):
            bases[i : i + 1] = [b for b in base.__bases__ if b not in bases]
        else:
            i += 1


def inherits_foreign_docstring(obj) -> bool:
    """Whether ``obj``, a method of one of the package's classes without a docstring of its own, would show
    the docstring of a method of another library's class it overrides (every ``forward`` would read
    PyTorch's "Define the computation performed at every call. Should be overridden by all subclasses")."""
    if not inspect.isfunction(obj) or obj.__doc__ is not None or "." not in obj.__qualname__:
        return False
    owner = sys.modules.get(obj.__module__)
    for part in obj.__qualname__.split(".")[:-1]:
        owner = getattr(owner, part, None)
    if not inspect.isclass(owner):
        return False
    for cls in owner.__mro__[1:]:
        doc = getattr(cls.__dict__.get(obj.__name__), "__doc__", None)
        if doc:
            return not cls.__module__.startswith("attn")
    return False


def skip_foreign_docstrings(app, what, name, obj, skip, options):  # noqa: ARG001  (Sphinx's signature)
    """``autodoc-skip-member``: leave out a method whose only docstring is another library's
    (:func:`inherits_foreign_docstring`); the class's own docstring says what its call does."""
    return True if inherits_foreign_docstring(obj) else None


def setup(app):
    app.connect("autodoc-skip-member", skip_foreign_docstrings)
    app.add_node(folded_section, html=(visit_folded_section, depart_folded_section))
    app.connect("doctree-read", fold_optional_sections)
    app.connect("autodoc-process-bases", public_bases)
    app.add_config_value("attn_other_edition", None, "html")
    app.add_config_value("attn_index_link", "continue to the book", "html")  # index.html's link text
    app.connect("html-page-context", link_other_edition)
    add_chinese_search(app)
    from myst_nb.core import render

    app.add_css_file(CSS.name)
    app.connect("build-finished", copy_page_css)

    render.sanitize_script_content = sanitize_script_content
    app.connect("build-finished", serve_reader_editions)
    app.connect("build-finished", drop_unused_theme_files)
    app.connect("builder-inited", drop_thebe_config)
    app.connect("build-finished", drop_unpublished_files)
    app.connect("build-finished", write_index, priority=400)
    app.connect("build-finished", make_404_work_at_any_root)
    app.connect("build-finished", keep_figure_text_readable)
    app.connect("html-page-context", trim_page_assets, priority=900)
    app.connect("html-page-context", mark_numbers_in_tables)
    # Issue 34 (a fast, accessible, printable site), one module each: maths typeset at build time,
    # accessibility fixes to the theme's and myst-nb's markup, SEO (descriptions, hreflang, sitemap,
    # figures), the page's loading, print and PDF.
    # Issue 35: the Chinese edition shows the package's source with its comments in Chinese, its API
    # reference with the docstrings in Chinese, and the theme's words in Chinese (attn_theme_words).
    for name in ("attn_maths", "attn_a11y", "attn_seo", "attn_perf", "attn_print", "attn_widget_state",
                 "attn_source_comments", "attn_docstrings", "attn_theme_words"):
        app.setup_extension(name)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
