"""Copy the front-end files the static site serves itself into _assets/ (Sphinx's html_static_path).

Nothing here is committed: MathJax is installed at its pinned version by `npm ci`
(package-lock.json); the widget runtime is the book's own source. With these files the built
site loads no script, font or style from another host.

- _assets/mathjax/          MathJax 3: the one build the pages use (tex-chtml.js) and what it loads
                            on demand (TeX extensions, CHTML fonts, menu and accessibility
                            components), not the whole distribution
- _assets/widgets/runtime.js the book's own widget runtime (src/attn/widgets/static_runtime.js, ~6 kB):
                            it renders each explorer from the widget state saved in the page by
                            importing the explorer's own ES module. myst-nb loads it only on pages
                            that contain widgets. (JupyterLab and Colab use anywidget's runtime.)
- _assets/root/favicon.ico  the site's icon (drawn here: a small attention pattern), copied to the
                            site root so /favicon.ico exists
"""

from __future__ import annotations

import pathlib
import shutil

ROOT = pathlib.Path(__file__).resolve().parents[1]
NODE = ROOT / "node_modules"
OUT = ROOT / "_assets"

# Loaded by tex-chtml.js only when a page needs them: TeX packages it autoloads (\\boldsymbol ...),
# the CHTML fonts, and the components behind MathJax's right-click menu (speech/explorer).
MATHJAX_ON_DEMAND = ["input/tex/extensions", "output/chtml", "ui", "a11y", "sre"]


# The static site's widget runtime: a page with explorers loads only this, not the generic widget
# bundle (@jupyter-widgets/html-manager's embed-amd.js with require.js: 3.6 MB, 0.9 MB gzip, plus 155 kB
# of icon fonts) that hosted the same three explorers before.
WIDGET_RUNTIME = ROOT / "src" / "attn" / "widgets" / "static_runtime.js"


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
    (OUT / "widgets").mkdir()
    shutil.copy2(WIDGET_RUNTIME, OUT / "widgets" / "runtime.js")
    favicon(OUT / "root" / "favicon.ico")
    size = sum(p.stat().st_size for p in OUT.rglob("*") if p.is_file())
    print(f"_assets/: {size / 1e6:.1f} MB of site-served front-end files")


if __name__ == "__main__":
    main()
