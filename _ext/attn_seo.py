"""The book's Sphinx extension for issue 34, search engines and figures (loaded by attn_book.setup).

1. A meta description on every page: the page's front matter ``description`` where it has one, else its
   first paragraph of prose as plain text, cut at a sentence (else a word) boundary to what a result page
   shows (DESCRIPTION_CHARS). Pages without a source (index, search, modules) get a fixed line.

2. Absolute alternates: search engines ignore a relative ``<link rel="alternate" hreflang>``, so each page
   names, by absolute URL on the published site, itself (its own language), the same page of the other
   edition, and the English page as ``x-default`` (the version for a reader of neither language, as
   Google documents hreflang), with a ``rel="canonical"`` to its own published URL. The published URL has
   one source: the repository URL (``repository.url`` in _config.yml; GitHub Pages serves
   ``https://github.com/<owner>/<repo>`` at ``https://<owner>.github.io/<repo>/``); the edition's place on
   the site is its ``notfound_urls_prefix`` below that (tests/test_site.py holds the two to agree).

3. A sitemap: each edition writes its own (``sitemap-<hreflang>.xml`` at its root: its pages, each with its
   alternates), and the edition at the site's root also writes ``sitemap.xml``, the index of both (a
   sitemap may list only URLs under its own folder, and one file is either a list of pages or an index).

4. Figures: every ``<img>`` carries its display size (``width``/``height``: the browser keeps the box before
   the file arrives, no layout shift), ``decoding="async"``, and loads lazily unless it is the article's
   first image with less than a phone's screen of text before it (FIRST_SCREEN_CHARS: it may be what the
   reader sees first, the page's largest paint; further down, fetched at once it would only compete with
   what the first screen needs: zh causal_attention's first figure, 42 kB after 4,700 characters). Each figure drawn at twice
   its display size (attn.book.viz.png_2x) is also written at the sizes a screen needs (FIGURE_SIZES,
   Pillow) and offered with ``srcset``/``sizes``: a phone at 2 device pixels per CSS pixel gets twice the
   width it shows the figure at, which on a phone is its readable width (``data-min-width``,
   attn_book.keep_figure_text_readable), so its text stays sharp.
"""

from __future__ import annotations

import pathlib
import re
from html import escape, unescape
from urllib.parse import urljoin

from docutils import nodes

#: How much of a description a result page shows: about 160 characters of English; a Chinese character is
#: twice as wide, so fewer of them fit the same line.
DESCRIPTION_CHARS = {"en": 160, "zh": 100}
#: For pages that have no prose of their own.
FIXED_DESCRIPTIONS = {
    "en": {"genindex": "Index of the terms and names in {title}.", "search": "Search {title}.",
           "py-modindex": "The Python modules documented in {title}.", "404": "Page not found in {title}.",
           "index": "{title}: an open, executable book on the attention mechanisms of the Transformer."},
    "zh": {"genindex": "《{title}》的术语与名称索引。", "search": "搜索《{title}》。",
           "py-modindex": "《{title}》中文档化的 Python 模块。", "404": "《{title}》中没有这个页面。",
           "index": "《{title}》：一本关于 Transformer 注意力机制的开放、可运行的书。"},
}
#: A first paragraph shorter than this says too little on its own ("Works cited in the chapters."):
#: the page's title goes in front of it.
SHORT_DESCRIPTION = 60
_SKIP = (nodes.Admonition, nodes.topic, nodes.sidebar, nodes.table, nodes.footnote, nodes.citation,
         nodes.field_list, nodes.literal_block, nodes.caption, nodes.legend, nodes.rubric)


def _lang(app) -> str:
    return "zh" if str(app.config.language or "en").startswith("zh") else "en"


def _hreflang(app) -> str:
    return str(app.config.language or "en").replace("_", "-")


def _plain(node) -> str:
    """A paragraph's text as a reader sees it: inline maths as its TeX without backslashes and braces."""
    parts = []
    for n in node.findall(nodes.Text):
        if isinstance(n.parent, nodes.math):
            parts.append(re.sub(r"\\([A-Za-z]+)", r"\1", n.astext()).replace("{", "").replace("}", ""))
        else:
            parts.append(n.astext())
    return re.sub(r"\s+", " ", "".join(parts)).strip()


def first_paragraph(doctree) -> str:
    for p in doctree.findall(nodes.paragraph):
        parent, skip = p.parent, False
        while parent is not None:
            if isinstance(parent, _SKIP) or "cell_output" in parent.get("classes", []):
                skip = True
                break
            parent = parent.parent
        text = "" if skip else _plain(p)
        if text:
            return text
    return ""


def shorten(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters: after the last whole sentence that fits if it fills at
    least half the limit, else at the last word boundary with an ellipsis (Chinese: at the last clause)."""
    text = re.sub(r"\s+", " ", text).strip()
    if len(text) <= limit:
        return text
    head = text[:limit]
    ends = [m.end() for m in re.finditer(r"[.!?](?=\s)|[。！？]", head + " ")]
    if ends and ends[-1] >= limit // 2:
        return head[: ends[-1]].strip()
    room = head[: limit - 1]
    cut = max(room.rfind(" "), room.rfind("，"), room.rfind("、"), room.rfind("；"))
    if cut < limit // 2:
        cut = limit - 1
    return room[:cut].rstrip(" ,;:，、；") + "…"


def page_description(app, pagename: str, context, doctree) -> str:
    lang = _lang(app)
    title = app.config.html_title or app.config.project
    meta = app.env.metadata.get(pagename, {}) if pagename in app.env.all_docs else {}
    text = str(meta.get("description") or "").strip()
    if not text and doctree is not None:
        text = first_paragraph(doctree)
        page_title = unescape(re.sub(r"<[^>]+>", "", context.get("title", "")))
        if text and len(text) < SHORT_DESCRIPTION and page_title:
            text = f"{page_title}: {text}" if lang == "en" else f"{page_title}：{text}"
    if not text:
        fixed = FIXED_DESCRIPTIONS[lang]
        text = fixed.get(pagename, fixed["index"]).format(title=title)
    return shorten(text, DESCRIPTION_CHARS[lang])


# --- 2. the published URLs ------------------------------------------------------------------------

def site_url(app) -> str:
    """The published URL of this edition's root, e.g. https://attn-book.github.io/attn-book/zh/."""
    repo = (app.config.html_theme_options or {}).get("repository_url", "")
    m = re.fullmatch(r"https://github\.com/([^/]+)/([^/]+?)/?", repo or "")
    if not m:
        raise ValueError(f"attn_seo: the published URL follows from repository.url in _config.yml, a GitHub "
                         f"repository URL (https://github.com/<owner>/<repo>); found {repo!r}")
    owner, name = m.groups()
    prefix = getattr(app.config, "notfound_urls_prefix", None) or f"/{name}/"
    if not prefix.startswith(f"/{name}/"):
        raise ValueError(f"attn_seo: notfound_urls_prefix {prefix!r} is not under /{name}/, where GitHub Pages "
                         f"serves {repo}")
    return f"https://{owner.lower()}.github.io{prefix}"


def alternates(app, pagename: str) -> dict[str, str]:
    """``{hreflang: absolute URL}`` of a page: its own edition's, the other edition's (attn_other_edition),
    and x-default (the edition at the site's root, the English one)."""
    base = site_url(app)
    own = urljoin(base, app.builder.get_target_uri(pagename))
    found = {_hreflang(app): own}
    other = app.config.attn_other_edition
    if other:
        found[other["hreflang"]] = urljoin(base, other["root"] + app.builder.get_target_uri(pagename))
        found["x-default"] = found[other["hreflang"]] if other["root"].startswith("../") else own
    return found


def add_head_tags(app, pagename, templatename, context, doctree) -> None:  # noqa: ARG001 (html-page-context handler)
    if app.builder.format != "html":
        return
    tags = [f'<meta name="description" content="{escape(page_description(app, pagename, context, doctree))}">']
    if pagename not in ("404", "search", "genindex", "py-modindex") and "body" in context:
        links = alternates(app, pagename)
        tags.append(f'<link rel="canonical" href="{escape(links[_hreflang(app)])}">')
        tags += [f'<link rel="alternate" hreflang="{escape(k)}" href="{escape(v)}">' for k, v in links.items()]
    context["metatags"] = context.get("metatags", "") + "\n" + "\n".join(tags)


def describe_index(app, exception) -> None:
    """index.html is written at build-finished (attn_book.write_index): its description goes in there."""
    if exception is not None or app.builder.format != "html":
        return
    page = pathlib.Path(app.outdir) / "index.html"
    if not page.exists():
        return
    text = page.read_text(encoding="utf-8")
    if 'name="description"' not in text and "</head>" in text:
        lang, title = _lang(app), app.config.html_title or app.config.project
        tag = f'<meta name="description" content="{escape(FIXED_DESCRIPTIONS[lang]["index"].format(title=title))}">\n'
        page.write_text(text.replace("</head>", tag + "</head>", 1), encoding="utf-8")


# --- 3. sitemaps ------------------------------------------------------------------------------------

SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
XHTML_NS = "http://www.w3.org/1999/xhtml"


def sitemap_name(hreflang: str) -> str:
    return f"sitemap-{hreflang}.xml"


def sitemap_pages(app) -> list[str]:
    """The edition's pages with a source of their own, as written (not the 404 page, nor redirects)."""
    out = pathlib.Path(app.outdir)
    return sorted(d for d in app.env.found_docs
                  if d != "404" and (out / app.builder.get_target_uri(d)).is_file())


def write_sitemaps(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    out, base, own = pathlib.Path(app.outdir), site_url(app), _hreflang(app)
    rows = []
    for docname in sitemap_pages(app):
        links = alternates(app, docname)
        rows.append(f"  <url>\n    <loc>{escape(links[own])}</loc>\n" + "".join(
            f'    <xhtml:link rel="alternate" hreflang="{escape(k)}" href="{escape(v)}"/>\n' for k, v in links.items())
            + "  </url>\n")
    (out / sitemap_name(own)).write_text(
        f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{SITEMAP_NS}" xmlns:xhtml="{XHTML_NS}">\n'
        + "".join(rows) + "</urlset>\n", encoding="utf-8")
    other = app.config.attn_other_edition
    if other and other["root"].startswith("../"):
        return  # the edition at the site's root writes the index
    maps = [urljoin(base, sitemap_name(own))]
    if other:
        maps.append(urljoin(base, other["root"] + sitemap_name(other["hreflang"])))
    (out / "sitemap.xml").write_text(
        f'<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="{SITEMAP_NS}">\n'
        + "".join(f"  <sitemap><loc>{escape(u)}</loc></sitemap>\n" for u in maps) + "</sitemapindex>\n",
        encoding="utf-8")


# --- 4. figures -------------------------------------------------------------------------------------

#: The widths, as fractions of a figure's display width, at which a 2x figure is also written: 1x (a
#: desktop at one device pixel per CSS pixel) and 1.5x; plus twice its readable width on a phone.
FIGURE_SIZES = (1.0, 1.5)
_IMG_TAG = re.compile(r"<img\b[^>]*>")
_ATTR = r'(?<![\w-]){}="([^"]*)"'
_PX = re.compile(r"(?:^|;)\s*width:\s*([\d.]+)px")
# The screen width below which figures keep their readable width: the style sheet's own media query.
_READABLE_BELOW = re.compile(r"@media \(max-width: ([\d.]+)px\) \{\s*\.bd-article img\[data-min-width\]")


def _attr(tag: str, name: str) -> str | None:
    m = re.search(_ATTR.format(re.escape(name)), tag)
    return unescape(m.group(1)) if m else None


# The PNG text chunks that say an image is drawn at twice its display size, named once for the extensions that
# read them (here and attn_book); their writers, attn.book.viz.png_2x and scripts/assets.py, name them in their
# own constants, which tests/test_seo.py holds to these.
TEXT_PX_KEY = "attn:min-text-px"  # a figure's smallest text in CSS px
PIXEL_RATIO_KEY = "attn:pixel-ratio"


def image_size(path: pathlib.Path) -> tuple[float, float, bool] | None:
    """``(width, height, drawn at 2x)`` of an image file in its own pixels (an SVG: its viewBox). A PNG is
    drawn at 2x when it says so: a figure's ``TEXT_PX_KEY`` chunk (attn.book.viz.png_2x), or
    ``PIXEL_RATIO_KEY`` 2 (scripts/assets.py's module-index toggles)."""
    if path.suffix.lower() == ".svg":
        head = path.read_text(encoding="utf-8", errors="replace")[:4000]
        box = re.search(r'viewBox="\s*[\d.\-]+[\s,]+[\d.\-]+[\s,]+([\d.]+)[\s,]+([\d.]+)', head)
        return (float(box.group(1)), float(box.group(2)), False) if box else None
    from PIL import Image

    try:
        with Image.open(path) as img:
            text = getattr(img, "text", {})
            return img.size[0], img.size[1], TEXT_PX_KEY in text or text.get(PIXEL_RATIO_KEY) == "2"
    except OSError:
        return None


def figure_variant(src: pathlib.Path, width: int) -> pathlib.Path | None:
    """``src`` resized to ``width`` pixels, written beside it once (None when it would not be smaller)."""
    from PIL import Image

    dest = src.with_name(f"{src.stem}-{width}w{src.suffix}")
    if dest.exists() and dest.stat().st_mtime >= src.stat().st_mtime:
        return dest
    with Image.open(src) as img:
        small = img.resize((width, round(img.size[1] * width / img.size[0])), Image.LANCZOS)
        small.save(dest, optimize=True)
    if dest.stat().st_size >= src.stat().st_size:
        dest.unlink()
        return None
    return dest


def _set(tag: str, name: str, value: str) -> str:
    """``tag`` with attribute ``name`` set to ``value`` (added before the tag's end if missing)."""
    pattern = re.compile(_ATTR.format(re.escape(name)))
    if pattern.search(tag):
        return pattern.sub(lambda _: f'{name}="{escape(value)}"', tag, count=1)
    end = len(tag) - (2 if tag.endswith("/>") else 1)
    return f'{tag[:end].rstrip()} {name}="{escape(value)}"' + (" />" if tag.endswith("/>") else ">")


def size_images(html: str, page: pathlib.Path, readable_below: float, cache: dict) -> str:
    article = html.find("<article")
    first = [True]

    def one(m):
        tag, src = m.group(0), _attr(m.group(0), "src")
        if not src or re.match(r"[a-z]+:|/", src):
            return tag
        path = (page.parent / src.split("#")[0].split("?")[0]).resolve()
        if path not in cache:
            cache[path] = image_size(path) if path.is_file() else None
        if cache[path] is None:
            return tag
        fw, fh, twice = cache[path]
        style = _attr(tag, "style") or ""
        shown = _PX.search(style)
        width = float(shown.group(1)) if shown else fw / 2 if twice else fw
        height = round(width * fh / fw)
        tag = _set(_set(tag, "width", str(round(width))), "height", str(height))
        if not shown and article >= 0 and m.start() < article:
            # the theme's icons outside the article are sized by its style sheet in one dimension
            # (height: 1em): the other follows from the attributes' ratio instead of the width attribute
            tag = _set(tag, "style", (style.rstrip("; ") + "; width: auto").lstrip("; "))
        tag = _set(tag, "decoding", "async")
        in_article = article >= 0 and m.start() > article
        eager = in_article and first[0] and len(_text(html[article:m.start()])) < FIRST_SCREEN_CHARS
        first[0] = first[0] and not in_article
        if not eager:  # else: may be the largest thing on the first screen, fetched at once
            tag = _set(tag, "loading", "lazy")
        if twice and shown and path.suffix.lower() == ".png":
            tag = _add_srcset(tag, src, path, round(width), int(fw), _attr(tag, "data-min-width"), readable_below)
        return tag

    return _IMG_TAG.sub(one, html)


# About the text of a phone's first screen (412 x 823 CSS px: ~30 lines of ~45 Latin letters, fewer but
# wider Chinese characters): an image after more than this much text is below it.
FIRST_SCREEN_CHARS = 600


def _text(html: str) -> str:
    """The text an HTML fragment shows (scripts, styles and tags dropped, white space collapsed)."""
    html = re.sub(r"<(script|style)\b.*?</\1>", "", html, flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html))


def _add_srcset(tag, src, path, width, file_width, min_width, readable_below) -> str:
    wanted = {round(width * f) for f in FIGURE_SIZES}
    if min_width:
        wanted.add(2 * int(min_width))
    entries = []
    for w in sorted(wanted):
        if w <= 0.9 * file_width and w >= 160:
            variant = figure_variant(path, w)
            if variant is not None:
                entries.append(f"{src[: src.rfind('/') + 1]}{variant.name} {w}w")
    if not entries:
        return tag
    entries.append(f"{src} {file_width}w")
    shown = f"min({width}px, 100vw)"
    sizes = (f"(max-width: {readable_below}px) max({int(min_width)}px, {shown}), {width}px" if min_width
             else f"{shown}")
    return _set(_set(tag, "srcset", ", ".join(entries)), "sizes", sizes)


def size_figures(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    css = pathlib.Path(app.confdir).resolve()
    sheet = next((p / "attn.css" for p in [css / "_css", css.parent / "_css"] if (p / "attn.css").is_file()), None)
    found = _READABLE_BELOW.search(sheet.read_text(encoding="utf-8")) if sheet else None
    if found is None:
        raise RuntimeError("attn_seo: _css/attn.css has no '@media (max-width: ...px) { .bd-article img[data-min-width]'"
                           " rule, from which the figures' sizes for phones are written")
    out, cache = pathlib.Path(app.outdir), {}
    for page in out.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        if "<img" in text:
            new = size_images(text, page, float(found.group(1)), cache)
            if new != text:
                page.write_text(new, encoding="utf-8")


def setup(app):
    app.connect("html-page-context", add_head_tags)
    app.connect("build-finished", describe_index, priority=700)
    app.connect("build-finished", write_sitemaps, priority=700)
    app.connect("build-finished", size_figures, priority=700)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
