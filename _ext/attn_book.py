"""Sphinx extension for the book.

1. The site's "download .ipynb" button serves each chapter's reader edition (reader/book/<x>.ipynb,
   made by ``python -m scripts.notebooks reader``) instead of the MyST source, so a downloaded
   chapter reads in Jupyter as it does on the site.

2. Each page loads only what it uses: MathJax only where the page has maths (myst-nb and the
   root toctree would otherwise put it on every page), and none of sphinx-thebe's files, since
   thebe is off (sphinx-thebe 0.3.1 inlines its configuration twice, a page error on every page).

3. Make embedded widget state safe to put inside <script> tags.

myst-nb writes each page's widget state as JSON inside ``<script type="application/vnd.jupyter.
widget-state+json">`` and escapes only the exact text ``</script>``. An HTML parser ends the
script at ``</SCRIPT>``, ``</script >`` or ``</Script`` too, and treats ``<!--`` specially, so a
token such as ``</SCRIPT>`` shown by a widget would cut the state short and break the page (or
let the rest be parsed as HTML). Escaping every ``</`` and ``<!--`` keeps the content the same
for JSON and JavaScript readers (``<\\/`` and ``\\u003c!--`` decode to the same characters).

4. Add the book's own page styles, ``_ext/attn_book.css`` (long headings and inline code wrap on a phone).
"""

from __future__ import annotations

import pathlib
import re
import shutil

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
    has_math = 'class="math' in context.get("body", "")

    def unused(asset) -> bool:
        name, inline = _name(asset), _inline(asset)
        if "thebe" in name or "THEBE_JS_URL" in inline:
            return True
        return not has_math and ("mathjax" in name or "window.MathJax" in inline)

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


def setup(app):
    from myst_nb.core import render

    app.add_css_file(CSS.name)
    app.connect("build-finished", copy_page_css)

    render.sanitize_script_content = sanitize_script_content
    app.connect("build-finished", serve_reader_editions)
    app.connect("build-finished", drop_unused_theme_files)
    app.connect("html-page-context", trim_page_assets, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
