"""Copy the front-end files the static site serves itself into _assets/ (Sphinx's html_static_path).

Nothing here is committed: MathJax is installed at its pinned version by `npm ci`
(package-lock.json); the widget runtime is the book's own source. With these files the built
site loads no script, font or style from another host.

- _assets/mathjax/woff-v2/  MathJax 3's CHTML fonts, and nothing else of MathJax: the maths are typeset
                            when the site is built (_ext/attn_maths.py), and the pages' inline
                            stylesheet draws the glyphs from these fonts (no MathJax script is served)
- _assets/widgets/runtime.js the book's own widget runtime (src/attn/book/widgets/static_runtime.js, ~6 kB):
                            it renders each explorer from the widget state saved in the page by
                            importing the explorer's own ES module. myst-nb loads it only on pages
                            that contain widgets. (JupyterLab and Colab use anywidget's runtime.)
- _assets/vendor/fontawesome/webfonts/*.woff2
                            the theme's Font Awesome fonts cut down to the icons the site can show
                            (icon_codepoints: ~60 of ~2000 glyphs); they replace the theme's copies
                            (html_static_path is copied after the theme's files). 274 kB -> ~15 kB
                            on every page.
- _assets/root/favicon.ico  the site's icon (drawn here: a small attention pattern), copied to the
                            site root so /favicon.ico exists
"""

from __future__ import annotations

import pathlib
import re
import shutil

ROOT = pathlib.Path(__file__).resolve().parents[1]
NODE = ROOT / "node_modules"
OUT = ROOT / "_assets"

# MathJax's CHTML fonts (the folder is named woff-v2; the files are .woff), the one part of MathJax the
# pages still load: _ext/attn_maths.py points the formulas' stylesheet at _static/mathjax/woff-v2/.
MATHJAX_FONTS = "mathjax/es5/output/chtml/fonts/woff-v2"


# The static site's widget runtime: a page with explorers loads only this, not the generic widget
# bundle (@jupyter-widgets/html-manager's embed-amd.js with require.js: 3.6 MB, 0.9 MB gzip, plus 155 kB
# of icon fonts) that hosted the same three explorers before.
WIDGET_RUNTIME = ROOT / "src" / "attn" / "book" / "widgets" / "static_runtime.js"


# ----- Font Awesome, cut down to the icons in use
#
# pydata-sphinx-theme ships Font Awesome 6's whole fonts (fa-solid-900.woff2 156 kB, fa-brands-400.woff2
# 118 kB), and every page loads the two for a dozen header icons. The glyphs kept are those the site can
# ask for: every icon class (`fa-bars`) named in the theme's and the book's templates, scripts, styles and
# configuration, mapped to its code point by the theme's icon table (`.fa-bars:before{content:"\f0c9"}`),
# and every code point a style rule draws directly (`content:"\f05a"`, e.g. admonition titles).
# tests/test_site.py checks that every icon class in the built pages has its glyph in the fonts served.
FA_FONTS = ["fa-solid-900.woff2", "fa-regular-400.woff2", "fa-brands-400.woff2"]
ICON_SOURCES = ["pydata_sphinx_theme", "sphinx_book_theme", "sphinx_togglebutton", "sphinx_design", "myst_nb",
                "sphinx_copybutton"]
# Names the theme puts together in code (sphinx-book-theme's repository button: f"fa-{provider}").
MADE_ICON_NAMES = {"fa-github", "fa-gitlab", "fa-bitbucket"}
ICON_CLASS = re.compile(r"\bfa-[a-z0-9]+(?:-[a-z0-9]+)*")
ICON_TABLE = re.compile(r'((?:\.fa-[a-z0-9-]+:(?:before|after),?)+)\{content:"\\([0-9a-f]{4})"\}')
ICON_CONTENT = re.compile(r'content:\s*"\\([ef][0-9a-f]{3})"')


def theme_static() -> pathlib.Path:
    import pydata_sphinx_theme

    return pathlib.Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme" / "static"


def icon_table(css: str) -> dict[str, int]:
    """``{"fa-bars": 0xF0C9, ...}`` from the theme's style sheet."""
    table = {}
    for selectors, code in ICON_TABLE.findall(css):
        for name in re.findall(r"\.(fa-[a-z0-9-]+):", selectors):
            table[name] = int(code, 16)
    return table


def icon_codepoints() -> set[int]:
    """The Font Awesome code points the site can show (see the comment above FA_FONTS)."""
    import importlib

    css = (theme_static() / "styles" / "pydata-sphinx-theme.css").read_text()
    table = icon_table(css)
    files = [ROOT / "_config.yml", *ROOT.glob("_templates/**/*"), *ROOT.glob("_css/**/*"), *ROOT.glob("_ext/**/*")]
    for name in ICON_SOURCES:
        pkg = pathlib.Path(importlib.import_module(name).__file__).parent
        files += [f for f in pkg.rglob("*") if f.suffix in {".html", ".js", ".css", ".py"} and "fontawesome" not in f.name]
    names, direct = set(MADE_ICON_NAMES), set()
    for f in files:
        if not f.is_file():
            continue
        text = ICON_TABLE.sub("", f.read_text(errors="ignore"))  # the table itself names every icon
        names.update(ICON_CLASS.findall(text))
        direct.update(int(c, 16) for c in ICON_CONTENT.findall(text))
    return {table[n] for n in names if n in table} | direct


def subset_icon_fonts(out: pathlib.Path) -> None:
    """Each of FA_FONTS cut down to icon_codepoints(), as .woff2 and as the .ttf fallback the theme names."""
    from fontTools import subset

    codes = icon_codepoints()
    out.mkdir(parents=True, exist_ok=True)
    for name in FA_FONTS:
        for suffix, flavor in ((".woff2", "woff2"), (".ttf", None)):
            options = subset.Options()
            options.flavor = flavor
            font = subset.load_font(str(theme_static() / "vendor" / "fontawesome" / "webfonts" / name), options)
            subsetter = subset.Subsetter(options)
            subsetter.populate(unicodes=codes)
            subsetter.subset(font)
            subset.save_font(font, str(out / pathlib.Path(name).with_suffix(suffix)), options)


# Sphinx's module-index toggles (basic theme, minus.png and plus.png, 11 x 11 px) at twice their pixels, the
# look unchanged (each pixel doubled): on a phone's 1.75-3x screen the 11-px images are blurred, and
# Lighthouse's best practices fail py-modindex for them (image-size-responsive). The same names, since
# doctools.js swaps the two by name; html_static_path puts them over the theme's. The PNG text chunk
# PIXEL_RATIO_KEY tells _ext/attn_seo.py to give the <img> half the file's size.
PIXEL_RATIO_KEY = "attn:pixel-ratio"
TOGGLES = ("minus.png", "plus.png")


def toggle_icons(out: pathlib.Path) -> None:
    from PIL import Image, PngImagePlugin
    import sphinx

    for name in TOGGLES:
        with Image.open(pathlib.Path(sphinx.__file__).parent / "themes" / "basic" / "static" / name) as img:
            big = img.resize((img.size[0] * 2, img.size[1] * 2), Image.NEAREST)
        info = PngImagePlugin.PngInfo()
        info.add_text(PIXEL_RATIO_KEY, "2")
        big.save(out / name, pnginfo=info, optimize=True)


def favicon(path: pathlib.Path) -> None:
    """A 4x4 causal attention pattern in the book's blues, as a multi-size .ico."""
    from PIL import Image, ImageDraw

    size, n = 64, 4
    img = Image.new("RGBA", (size, size), (0, 0, 0, 0))
    draw = ImageDraw.Draw(img)
    cell = size // n
    for q in range(n):
        for k in range(n):
            if k <= q:  # causal: a query sees itself and the past
                shade = 0.35 + 0.65 * (k + 1) / (q + 1)
                colour = (int(31 * shade), int(119 * shade), int(180 + 60 * (1 - shade)), 255)
            else:
                colour = (222, 226, 230, 255)
            draw.rounded_rectangle([k * cell + 2, q * cell + 2, (k + 1) * cell - 3, (q + 1) * cell - 3], 4, fill=colour)
    path.parent.mkdir(parents=True, exist_ok=True)
    img.save(path, sizes=[(16, 16), (32, 32), (48, 48), (64, 64)])


def main() -> None:
    if not NODE.is_dir():
        raise SystemExit("node_modules/ is missing: run `npm ci` first (make does this)")
    if OUT.exists():
        shutil.rmtree(OUT)
    shutil.copytree(NODE / MATHJAX_FONTS, OUT / "mathjax" / "woff-v2")
    (OUT / "widgets").mkdir()
    shutil.copy2(WIDGET_RUNTIME, OUT / "widgets" / "runtime.js")
    subset_icon_fonts(OUT / "vendor" / "fontawesome" / "webfonts")
    favicon(OUT / "root" / "favicon.ico")
    toggle_icons(OUT)
    size = sum(p.stat().st_size for p in OUT.rglob("*") if p.is_file())
    print(f"_assets/: {size / 1e6:.1f} MB of site-served front-end files")


if __name__ == "__main__":
    main()
