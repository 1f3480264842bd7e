"""Chapter notebooks: the Colab set-up cell (generated from _config.yml) and re-execution.

    python -m scripts.notebooks execute [book/x.ipynb ...]   # all chapters in _toc.yml by default
    python -m scripts.notebooks setup-cells                  # only rewrite the first cells
    python -m scripts.notebooks reader                       # only rewrite the reader editions
    python -m scripts.notebooks figures                      # only write captions and alt text

`execute` also rewrites the reader editions of the chapters it ran (reader/book/*.ipynb, see
scripts/reader.py): the notebooks that Colab, Binder and the site's download button open.
Captions and alt text of the figures live in book/figures/<chapter>.yml, keyed by cell id;
`execute`, `figures` and `reader` write them into the cells' metadata (mystnb.figure.caption,
mystnb.image.alt), which the site renders as <figcaption> and <img alt>.

Execution is deterministic (chapters seed everything), runs in book/ with this environment's
kernel, keeps widget state (so widgets render in the static site) and normalises widget model ids
to a content hash so re-running an unchanged notebook does not produce a diff.
"""

from __future__ import annotations

import hashlib
import json
import pathlib
import sys
import time

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
SETUP_TAG = "colab-setup"
# The set-up cell runs in Colab; on the static site it would only stand between the reader and the
# chapter, so the site drops it (remove-cell); the reader editions keep it.
SETUP_TAGS = [SETUP_TAG, "remove-cell"]


def book_config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text())


def repository() -> tuple[str, str]:
    repo = book_config()["repository"]
    return repo["url"].rstrip("/"), repo.get("branch", "main")


def toc_files() -> list[str]:
    """Every page _toc.yml lists (its root, then each file), in order, as written there ("book/intro")."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    files: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            files.extend(node[k] for k in ("root", "file") if k in node)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(toc)
    return files


def chapters() -> list[pathlib.Path]:
    """Every notebook listed in _toc.yml, in order."""
    return [ROOT / f"{f}.ipynb" for f in toc_files() if (ROOT / f"{f}.ipynb").exists()]


def setup_cell_source() -> str:
    """The first code cell of every chapter. It changes nothing outside Colab."""
    url, branch = repository()
    return (
        "# In Google Colab, install the book's `attn` package; elsewhere this cell does nothing.\n"
        "import sys\n"
        "\n"
        'if "google.colab" in sys.modules:\n'
        "    import subprocess\n"
        "\n"
        "    from google.colab import output\n"
        "\n"
        f'    REPO = "{url}"\n'
        '    pip = [sys.executable, "-m", "pip", "install", "-q"]\n'
        f'    subprocess.run([*pip, f"attn @ git+{{REPO}}@{branch}"], check=True)\n'
        "    output.enable_custom_widget_manager()  # for the book's widgets"
    )


def write_setup_cell(nb) -> bool:
    """Make the first code cell the generated set-up cell; return True if it changed."""
    import nbformat

    src = setup_cell_source()
    code = [c for c in nb.cells if c.cell_type == "code"]
    if code and SETUP_TAG in code[0].metadata.get("tags", []):
        if code[0].source == src and code[0].metadata["tags"] == SETUP_TAGS:
            return False
        code[0].source = src
        code[0].metadata["tags"] = list(SETUP_TAGS)
        return True
    cell = nbformat.v4.new_code_cell(src, metadata={"tags": list(SETUP_TAGS)})
    first_code = nb.cells.index(code[0]) if code else len(nb.cells)
    nb.cells.insert(first_code, cell)
    return True


# One file per chapter: book/figures/<chapter>.yml maps the id of each cell that draws a figure to
# {"caption": ..., "alt": ...}. `figures` (and `execute`, `reader`) write them into the cells'
# metadata: the site shows the caption under the figure and the alt text to screen readers; the
# reader editions put the caption under the figure. A test fails on a figure without both.
FIGURES = ROOT / "book" / "figures"


def figure_texts() -> dict[str, dict[str, dict[str, str]]]:
    """book/figures/*.yml: chapter -> cell id -> {"caption": ..., "alt": ...}."""
    return {p.stem: yaml.safe_load(p.read_text(encoding="utf-8")) or {} for p in sorted(FIGURES.glob("*.yml"))}


def figure_cells(nb) -> list:
    """The code cells that draw a figure (an image output)."""
    return [c for c in nb.cells if c.cell_type == "code"
            and any("image/png" in o.get("data", {}) or "image/svg+xml" in o.get("data", {}) for o in c.get("outputs", []))]


def write_figure_texts(nb, name: str) -> bool:
    """Put each figure's caption and alt text from book/figures/<chapter>.yml into its cell's metadata."""
    texts = figure_texts().get(name, {})
    changed = False
    for cell in nb.cells:
        entry = texts.get(cell.get("id"))
        mystnb = cell.metadata.get("mystnb", {})
        want = dict(mystnb)
        if entry:
            want["figure"] = {"caption": entry["caption"].strip()}
            want["image"] = {"alt": entry["alt"].strip()}
        else:
            want.pop("figure", None)
            want.pop("image", None)
        if want != mystnb:
            if want:
                cell.metadata["mystnb"] = want
            else:
                cell.metadata.pop("mystnb", None)
            changed = True
    return changed


def _stable_widget_ids(nb, name: str):
    """Replace the kernel's random widget model ids by ids derived from the notebook's name and
    the order in which the models were created, so re-execution does not churn the file."""
    import nbformat

    state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    text = json.dumps(nb)
    for i, old in enumerate(list(state)):
        text = text.replace(old, hashlib.sha1(f"{name}:{i}".encode()).hexdigest()[:32])
    return nbformat.from_dict(json.loads(text))


def execute(paths: list[pathlib.Path]) -> None:
    import os

    import nbformat
    from nbclient import NotebookClient

    os.environ["ATTN_QUIET"] = "1"  # no progress bars in stored outputs
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        write_setup_cell(nb)
        write_figure_texts(nb, path.stem)
        start = time.perf_counter()
        client = NotebookClient(
            nb,
            timeout=300,
            kernel_name="python3",
            resources={"metadata": {"path": str(path.parent)}},
            store_widget_state=True,
            record_timing=False,
            # Expected errors (cells tagged raises-exception) are stored as "ValueError: message",
            # without the frames' file paths; set here, so no chapter needs %xmode.
            extra_arguments=["--InteractiveShell.xmode=Minimal"],
        )
        client.execute()
        nb = _stable_widget_ids(nb, path.stem)
        nbformat.write(nb, path)
        print(f"executed {path.relative_to(ROOT)} in {time.perf_counter() - start:.1f} s")


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"execute", "setup-cells", "reader", "figures"}:
        print(__doc__)
        return 2
    paths = [ROOT / p if not pathlib.Path(p).is_absolute() else pathlib.Path(p) for p in argv[1:]] or chapters()
    if argv[0] in {"setup-cells", "figures"}:
        import nbformat

        write = write_setup_cell if argv[0] == "setup-cells" else (lambda nb, p: write_figure_texts(nb, p.stem))
        for path in paths:
            nb = nbformat.read(path, as_version=4)
            if (write(nb) if argv[0] == "setup-cells" else write(nb, path)):
                nbformat.write(nb, path)
        return 0
    if argv[0] == "execute":
        execute(paths)
    else:  # reader: the captions first, so the editions carry them
        import nbformat

        for path in paths:
            nb = nbformat.read(path, as_version=4)
            if write_figure_texts(nb, path.stem):
                nbformat.write(nb, path)
    from scripts import reader

    for path in reader.write_all(paths, repository()[0], {p.stem for p in chapters()}):
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
