"""Chapter notebooks: the Colab set-up cell (generated from _config.yml) and re-execution.

    python scripts/notebooks.py execute [book/x.ipynb ...]   # all chapters in _toc.yml by default
    python scripts/notebooks.py setup-cells                  # only rewrite the first cells

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


def book_config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text())


def repository() -> tuple[str, str]:
    repo = book_config()["repository"]
    return repo["url"].rstrip("/"), repo.get("branch", "main")


def chapters() -> list[pathlib.Path]:
    """Every notebook listed in _toc.yml, in order."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                files.append(node["file"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(toc)
    return [ROOT / f"{f}.ipynb" for f in files if (ROOT / f"{f}.ipynb").exists()]


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
        if code[0].source == src:
            return False
        code[0].source = src
        return True
    cell = nbformat.v4.new_code_cell(src, metadata={"tags": [SETUP_TAG, "remove-output"]})
    first_code = nb.cells.index(code[0]) if code else len(nb.cells)
    nb.cells.insert(first_code, cell)
    return True


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
    if not argv or argv[0] not in {"execute", "setup-cells"}:
        print(__doc__)
        return 2
    paths = [ROOT / p if not pathlib.Path(p).is_absolute() else pathlib.Path(p) for p in argv[1:]] or chapters()
    if argv[0] == "setup-cells":
        import nbformat

        for path in paths:
            nb = nbformat.read(path, as_version=4)
            if write_setup_cell(nb):
                nbformat.write(nb, path)
        return 0
    execute(paths)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
