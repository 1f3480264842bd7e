"""Copy the front-end files the static site serves itself into _assets/ (Sphinx's html_static_path).

Nothing here is committed: the sources are installed at pinned versions by `npm ci`
(package-lock.json) and pip (anywidget, requirements.txt). With these files the built site
loads no script, font or style from another host.

- _assets/mathjax/          MathJax 3: the one build the pages use (tex-chtml.js) and what it loads
                            on demand (TeX extensions, CHTML fonts, menu and accessibility
                            components), not the whole distribution
- _assets/widgets/          require.js, @jupyter-widgets/html-manager's embed-amd.js and its fonts,
                            anywidget's AMD module, and config.js which points requirejs at them.
                            myst-nb adds these only to pages that contain widgets.
- _assets/root/favicon.ico  the site's icon (drawn here: a small attention pattern), copied to the
                            site root so /favicon.ico exists
"""

from __future__ import annotations

import pathlib
import re
import shutil
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
NODE = ROOT / "node_modules"
OUT = ROOT / "_assets"

# requirejs configuration, resolved against this script's own URL so the site works from any
# base path (a sub-folder on a web host, a local file server). The widget bundles inside
# embed-amd.js (base, controls, their 7.x twins, html-manager) take the folder of their module's URL as the place of
# their font files: mapping them here points that at this folder, where the fonts are, instead of
# a path relative to the page (a 404 for every icon font).
CONFIG_JS = """\
(function () {
  var base = document.currentScript.src.replace(/[^/]*$/, "");
  window.require.config({
    paths: {
      "@jupyter-widgets/html-manager/dist": base.replace(/\\/$/, ""),
      "@jupyter-widgets/html-manager": base + "html-manager",
      "@jupyter-widgets/base": base + "base",
      "@jupyter-widgets/base7": base + "base7",
      "@jupyter-widgets/controls": base + "controls",
      "@jupyter-widgets/controls7": base + "controls7",
      anywidget: base + "anywidget/index"
    }
  });
})();
"""


# Loaded by tex-chtml.js only when a page needs them: TeX packages it autoloads (\\boldsymbol ...),
# the CHTML fonts, and the components behind MathJax's right-click menu (speech/explorer).
MATHJAX_ON_DEMAND = ["input/tex/extensions", "output/chtml", "ui", "a11y", "sre"]


# embed-amd.js checks each page's saved widget state against the widget-state JSON schema with Ajv, whose
# default strict mode logs a console warning ("use allowUnionTypes to allow union type keyword") on every
# page with widgets, because the schema gives a buffer path's items two types (string or number), which
# JSON Schema allows. Each of the bundle's two validators (html-manager 8 and its 7.x twin) is created
# with Ajv's option that accepts such types; the check itself is unchanged.
AJV_VALIDATOR = re.compile(r"(\.v2\.view,[\w$]+=new\()([\w$]+\(\))\)")


def allow_union_types(js: str) -> str:
    """Create embed-amd.js's widget-state validators with ``allowUnionTypes`` (see AJV_VALIDATOR)."""
    patched, n = AJV_VALIDATOR.subn(r"\1\2)({allowUnionTypes:!0})", js)
    if n != 2:
        raise SystemExit(f"embed-amd.js: expected 2 widget-state validators to configure, found {n} "
                         "(a new @jupyter-widgets/html-manager? update scripts/assets.py AJV_VALIDATOR)")
    return patched


def anywidget_amd() -> pathlib.Path:
    candidates = [
        pathlib.Path(sys.prefix) / "share/jupyter/nbextensions/anywidget/index.js",
        *pathlib.Path(sys.prefix).glob("lib/python3*/site-packages/anywidget/nbextension/index.js"),
    ]
    for c in candidates:
        if c.is_file():
            return c
    raise SystemExit("anywidget's AMD module was not found: is anywidget installed in this environment?")


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
    mathjax = NODE / "mathjax/es5"
    (OUT / "mathjax").mkdir(parents=True)
    shutil.copy2(mathjax / "tex-chtml.js", OUT / "mathjax/tex-chtml.js")
    for part in MATHJAX_ON_DEMAND:
        shutil.copytree(mathjax / part, OUT / "mathjax" / part, ignore=shutil.ignore_patterns("*.map"))
    widgets = OUT / "widgets"
    shutil.copytree(
        NODE / "@jupyter-widgets/html-manager/dist",
        widgets,
        # The icon fonts' old formats (.eot, .svg, .ttf) are fallbacks no browser that runs the widget
        # runtime asks for (it takes .woff2): 2.5 MB the site need not carry.
        ignore=shutil.ignore_patterns("*.map", "embed.js", "embed.js.*", "libembed-amd.js", "*.d.ts",
                                      "*.eot", "*.svg", "*.ttf"),
    )
    embed = widgets / "embed-amd.js"
    embed.write_text(allow_union_types(embed.read_text(encoding="utf-8")), encoding="utf-8")
    shutil.copy2(NODE / "requirejs/require.js", widgets / "require.js")
    (widgets / "anywidget").mkdir()
    shutil.copy2(anywidget_amd(), widgets / "anywidget/index.js")
    (widgets / "config.js").write_text(CONFIG_JS)
    favicon(OUT / "root" / "favicon.ico")
    size = sum(p.stat().st_size for p in OUT.rglob("*") if p.is_file())
    print(f"_assets/: {size / 1e6:.1f} MB of site-served front-end files")


if __name__ == "__main__":
    main()
