"""Copy the front-end files the static site serves itself into _assets/ (Sphinx's html_static_path).

Nothing here is committed: the sources are installed at pinned versions by `npm ci`
(package-lock.json) and pip (anywidget, requirements.txt). With these files the built site
loads no script, font or style from another host.

- _assets/mathjax/          MathJax 3 (es5 build) for the equations
- _assets/widgets/          require.js, @jupyter-widgets/html-manager's embed-amd.js and its fonts,
                            anywidget's AMD module, and config.js which points requirejs at them.
                            myst-nb adds these only to pages that contain widgets.
"""

from __future__ import annotations

import pathlib
import shutil
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
NODE = ROOT / "node_modules"
OUT = ROOT / "_assets"

# requirejs configuration, resolved against this script's own URL so the site works from any
# base path (a sub-folder on a web host, a local file server).
CONFIG_JS = """\
(function () {
  var base = document.currentScript.src.replace(/[^/]*$/, "");
  window.require.config({
    paths: {
      "@jupyter-widgets/html-manager/dist": base.replace(/\\/$/, ""),
      anywidget: base + "anywidget/index"
    }
  });
})();
"""


def anywidget_amd() -> pathlib.Path:
    candidates = [
        pathlib.Path(sys.prefix) / "share/jupyter/nbextensions/anywidget/index.js",
        *pathlib.Path(sys.prefix).glob("lib/python3*/site-packages/anywidget/nbextension/index.js"),
    ]
    for c in candidates:
        if c.is_file():
            return c
    raise SystemExit("anywidget's AMD module was not found: is anywidget installed in this environment?")


def main() -> None:
    if not NODE.is_dir():
        raise SystemExit("node_modules/ is missing: run `npm ci` first (make does this)")
    if OUT.exists():
        shutil.rmtree(OUT)
    shutil.copytree(NODE / "mathjax/es5", OUT / "mathjax", ignore=shutil.ignore_patterns("*.map"))
    widgets = OUT / "widgets"
    shutil.copytree(
        NODE / "@jupyter-widgets/html-manager/dist",
        widgets,
        ignore=shutil.ignore_patterns("*.map", "embed.js", "embed.js.*", "libembed-amd.js", "*.d.ts"),
    )
    shutil.copy2(NODE / "requirejs/require.js", widgets / "require.js")
    (widgets / "anywidget").mkdir()
    shutil.copy2(anywidget_amd(), widgets / "anywidget/index.js")
    (widgets / "config.js").write_text(CONFIG_JS)
    size = sum(p.stat().st_size for p in OUT.rglob("*") if p.is_file())
    print(f"_assets/: {size / 1e6:.1f} MB of site-served front-end files")


if __name__ == "__main__":
    main()
