"""Chapters outside the site: the reader editions, and chapters that need only what `attn` installs."""

import json
import re
import subprocess
import sys

import nbformat
import pytest

import notebooks  # scripts/notebooks.py
import reader  # scripts/reader.py

BUILD_IMPORT = re.compile(r"^\s*(from|import)\s+(myst_nb|sphinx|jupyter_book|sphinxcontrib|nbval)\b", re.M)


def _ctx(root, values=None):
    return reader.Context(values or {}, reader.Citations(root / "references.bib"), root / "book",
                          {p.stem for p in notebooks.chapters()}, notebooks.repository()[0])


@pytest.fixture(scope="module")
def editions(root):
    url = notebooks.repository()[0]
    chapters = {p.stem for p in notebooks.chapters()}
    citations = reader.Citations(root / "references.bib")
    return {p: reader.reader_edition(p, citations=citations, chapters=chapters, repo_url=url)
            for p in notebooks.chapters()}


def test_every_chapter_has_an_up_to_date_committed_reader_edition(root, editions):
    committed = sorted((root / "reader").rglob("*.ipynb"))
    assert committed == sorted(reader.reader_path(p) for p in editions), "run `make execute` (or notebooks.py reader)"
    for path, nb in editions.items():
        assert reader.reader_path(path).read_text() == nbformat.writes(nb) + "\n", (
            f"reader/{path.relative_to(root)} is stale: run `python scripts/notebooks.py reader`")


def test_no_notebook_a_reader_opens_contains_myst_that_jupyter_cannot_render(root):
    for path in sorted((root / "reader").rglob("*.ipynb")):
        nb = json.loads(path.read_text())
        for cell in nb["cells"]:
            if cell["cell_type"] == "markdown":
                text = "".join(cell["source"])
                found = reader.MYST_LEFTOVER.search(text)
                assert not found, f"{path.name}: {found.group()!r} shows as raw text in Jupyter"
                assert not re.search(r"^:::", text, re.M), f"{path.name}: a colon fence shows as raw text"


def test_reader_edition_shows_every_glued_number_of_the_site(root, editions):
    source = root / "book/self_attention.ipynb"
    values = reader.glued_values(nbformat.read(source, as_version=4))
    assert len(values) >= 5
    text = "\n".join(c.source for c in editions[source].cells if c.cell_type == "markdown")
    for name, value in values.items():
        if f"`{name}`" in "\n".join(c.source for c in nbformat.read(source, as_version=4).cells
                                    if c.cell_type == "markdown"):
            assert value in text, name
    assert "{glue" not in text


def test_reader_edition_inlines_the_package_source_a_literalinclude_shows(root, editions):
    text = "\n".join(c.source for c in editions[root / "book/self_attention.ipynb"].cells if c.cell_type == "markdown")
    src = (root / "src/attn/functional.py").read_text()
    assert "def explicit_attention(" in text and "def explicit_attention(" in src
    assert "```python" in text


def test_reader_edition_keeps_code_and_outputs_but_drops_glue_records(root, editions):
    source = nbformat.read(root / "book/self_attention.ipynb", as_version=4)
    edition = editions[root / "book/self_attention.ipynb"]
    src_code = [c for c in source.cells if c.cell_type == "code"]
    ed_code = [c for c in edition.cells if c.cell_type == "code"]
    assert [c.source for c in src_code] == [c.source for c in ed_code]
    for cell in ed_code:
        for out in cell.outputs:
            assert not any(k.startswith(reader.GLUE_MIME) for k in out.get("data", {}))
    images = sum("image/png" in o.get("data", {}) for c in ed_code for o in c.outputs)
    assert images >= 1


@pytest.mark.parametrize("myst, expected", [
    ("takes {glue:text}`x` of it", "takes 0.25 of it"),
    ("takes {glue:text}`x:.1%` of it", "takes 25.0% of it"),
    ("as in {cite}`vaswani2017attention`", "as in (Vaswani et al., 2017)"),
    ("{cite:t}`vaswani2017attention` showed", "Vaswani et al. (2017) showed"),
    ("see {doc}`causal_attention`", "see [Causal attention](causal_attention.ipynb)"),
    ("see {doc}`the masks <causal_attention>`", "see [the masks](causal_attention.ipynb)"),
    (":::{note}\nSome *text*.\n:::", "> **Note**\n>\n> Some *text*."),
    (":::{dropdown} Solution\nIt is $x$.\n:::", "<details>\n<summary>Solution</summary>\n\nIt is $x$.\n\n</details>"),
])
def test_myst_becomes_plain_jupyter_markdown(root, myst, expected):
    assert reader.convert_markdown(myst, _ctx(root, {"x": "0.25"})) == expected


@pytest.mark.parametrize("myst, message", [
    ("{glue:text}`missing`", "no stored value"),
    ("{cite}`no_such_key`", "not in references.bib"),
    ("{ref}`somewhere`", "role {ref}"),
    ("```{figure} x.png\n```", "directive {figure}"),
    (":::{note}\nnever closed", "unclosed"),
])
def test_unsupported_or_broken_myst_is_an_error_not_raw_text(root, myst, message):
    with pytest.raises(reader.ReaderError, match=re.escape(message)):
        reader.convert_markdown(myst, _ctx(root))


def test_no_chapter_imports_a_book_build_package(root):
    for path in notebooks.chapters():
        nb = json.loads(path.read_text())
        code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
        assert not BUILD_IMPORT.search(code), f"{path.name} imports a book-build package; Colab lacks it"


def test_glue_works_without_myst_nb(root):
    """attn.notebook.glue in a process where myst_nb cannot be imported: no error, value returned."""
    code = (
        "import sys; sys.modules['myst_nb'] = None\n"
        "import importlib.util as u; u.find_spec = (lambda f: (lambda n, *a: None if n == 'myst_nb' else f(n, *a)))(u.find_spec)\n"
        "from attn.notebook import glue\n"
        "assert glue('x', 0.5) == 0.5\n"
        "print('glued')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "glued"


def test_require_names_the_missing_package_and_the_install_command():
    from attn.notebook import require

    require("torch")  # present: nothing happens
    with pytest.raises(ModuleNotFoundError, match=r"needs the package 'no_such_pkg_xyz'.*pip install no-such-pkg") as e:
        require("no_such_pkg_xyz", pip="no-such-pkg")
    assert e.value.name == "no_such_pkg_xyz"


def test_glue_rejects_a_name_the_prose_cannot_refer_to():
    from attn.notebook import glue

    with pytest.raises(ValueError, match="glue name"):
        glue("two words", 1)



def test_require_of_a_submodule_whose_package_is_missing_names_the_install_command():
    """``find_spec("pkg.sub")`` raises when ``pkg`` is missing; require still says what to install."""
    from attn.notebook import require

    with pytest.raises(ModuleNotFoundError, match=r"needs the package 'no_such_pkg_xyz.sub'.*pip install no-such-pkg"):
        require("no_such_pkg_xyz.sub", pip="no-such-pkg")
