"""Chapters outside the site: the reader editions, and chapters that need only what `attn` installs."""

import json
import re
import subprocess
import sys

import nbformat
import pytest

from scripts import notebooks
from scripts import reader

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
    exercises = [reader.exercise_path(p) for p in editions if reader.has_exercises(nbformat.read(p, as_version=4))]
    assert committed == sorted([*(reader.reader_path(p) for p in editions), *exercises]), (
        "run `make execute` (or notebooks.py reader)")
    for path, nb in editions.items():
        assert reader.reader_path(path).read_text() == nbformat.writes(nb) + "\n", (
            f"reader/{path.relative_to(root)} is stale: run `python -m scripts.notebooks reader`")


def test_no_notebook_a_reader_opens_contains_myst_that_jupyter_cannot_render(root):
    paths = sorted((root / "reader").rglob("*.ipynb")) + sorted((root / "zh" / "reader").rglob("*.ipynb"))
    exercises = sum(reader.has_exercises(nbformat.read(p, as_version=4)) for p in notebooks.chapters())
    assert len(paths) == 2 * (len(notebooks.chapters()) + exercises), "the English and the Chinese reader editions"
    for path in paths:
        nb = json.loads(path.read_text())
        for cell in nb["cells"]:
            if cell["cell_type"] == "markdown":
                text = "".join(cell["source"])
                found = reader.myst_leftover(text)
                assert not found, f"{path.name}: {found!r} shows as raw text in Jupyter"
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


def test_reader_edition_folds_the_code_the_site_hides(root, editions):
    source = nbformat.read(root / "book/self_attention.ipynb", as_version=4)
    edition = editions[root / "book/self_attention.ipynb"]
    src_code = [c for c in source.cells if c.cell_type == "code"]
    ed_code = [c for c in edition.cells if c.cell_type == "code"]
    hidden = [bool(reader.HIDDEN_TAGS & set(c.metadata.get("tags", []))) for c in src_code]
    assert any(hidden) and not all(hidden)
    for was_hidden, cell in zip(hidden, ed_code, strict=True):
        folded = cell.metadata.get("jupyter", {}).get("source_hidden", False)
        assert folded == was_hidden and (cell.metadata.get("cellView") == "form") == was_hidden


@pytest.mark.parametrize("myst, expected", [
    ("takes {glue:text}`x` of it", "takes 0.25 of it"),
    ("takes {glue:text}`x:.1%` of it", "takes 25.0% of it"),
    ("as in {cite}`vaswani2017attention`", "as in (Vaswani et al., 2017)"),
    ("{cite:t}`vaswani2017attention` showed", "Vaswani et al. (2017) showed"),
    ("see {doc}`causal_attention`", "see [Causal attention](causal_attention.ipynb)"),
    ("see {doc}`the masks <causal_attention>`", "see [the masks](causal_attention.ipynb)"),
    (":::{note}\nSome *text*.\n:::", "> **Note**\n>\n> Some *text*."),
    (":::{dropdown} Solution\nIt is $x$.\n:::", "<details>\n<summary>Solution</summary>\n\nIt is $x$.\n\n</details>"),
    ("(x-deeper)=\n## Going deeper\n\nText.", "## Going deeper\n\nText."),  # a label: nothing to show
])
def test_myst_becomes_plain_jupyter_markdown(root, myst, expected):
    assert reader.convert_markdown(myst, _ctx(root, {"x": "0.25"})) == expected


@pytest.mark.parametrize("markdown", [
    "write ``{cite}`vaswani2017attention` `` for a citation",  # a code span that mentions a role
    "```markdown\nas {cite:t}`vaswani2017attention` showed, {glue:text}`x` of it\n```",  # a code block
    "````markdown\n:::{note}\nSome *text*.\n:::\n````",  # a directive shown as code
    "    {doc}`causal_attention` in an indented code block",
    "a literal \\{cite}`vaswani2017attention`, escaped",
])
def test_code_that_mentions_myst_stays_as_it_is(root, markdown):
    """The parser knows a code span or block from prose: MyST quoted in code is not converted, nor flagged."""
    assert reader.convert_markdown(markdown, _ctx(root, {"x": "0.25"})) == markdown
    assert reader.myst_leftover(markdown) is None


@pytest.mark.parametrize("myst, expected", [
    ("| share | {glue:text}`x` |\n|---|---|\n| {glue:text}`x` | {cite}`vaswani2017attention` |",
     "| share | 0.25 |\n|---|---|\n| 0.25 | (Vaswani et al., 2017) |"),
    ("> as {cite:t}`vaswani2017attention`\n> showed, `{x}` stays", "> as Vaswani et al. (2017)\n> showed, `{x}` stays"),
    ("1. takes {glue:text}`x`\n   of it, see {doc}`masks<causal_attention>`",
     "1. takes 0.25\n   of it, see [masks](causal_attention.ipynb)"),
    ("``{glue:text}`x` `` is {glue:text}`x`", "``{glue:text}`x` `` is 0.25"),
])
def test_roles_are_replaced_where_the_parser_finds_them(root, myst, expected):
    assert reader.convert_markdown(myst, _ctx(root, {"x": "0.25"})) == expected


def test_a_directive_reads_its_first_line_as_sphinx_does(root):
    """{note} takes no title: text after it on the first line is the note's first line (as on the site);
    {admonition} takes one."""
    ctx = _ctx(root, {"x": "0.25"})
    assert reader.convert_markdown(":::{note} Mind the mask.\nIt is {glue:text}`x`.\n:::", ctx) == (
        "> **Note**\n>\n> Mind the mask.\n> It is 0.25.")
    assert reader.convert_markdown(":::{admonition} Mind the mask\nIt is $x$.\n:::", ctx) == (
        "> **Mind the mask**\n>\n> It is $x$.")


@pytest.mark.parametrize("text, found", [
    ("as {cite}`a` said", "{cite}`a`"),
    (":::{note}\nx\n:::", ":::{note}"),
    ("(sec-masks)=\n# Masks", "(sec-masks)="),
    ("costs {{ n }} steps", "{{ n }}"),
    ("costs `{cite}` and ``{{ n }}``", None),
])
def test_leftover_myst_is_found_by_the_parser(text, found):
    assert reader.myst_leftover(text) == found


@pytest.mark.parametrize("myst, message", [
    ("{glue:text}`missing`", "no stored value"),
    ("{cite}`no_such_key`", "not in references.bib"),
    ("{ref}`somewhere`", "role {ref}"),
    ("```{figure} x.png\n```", "directive {figure}"),
    (":::{note}\nnever closed", "unclosed"),
    (":::{dropdown} Solution\n:colour: red\nIt is $x$.\n:::", "directive {dropdown}"),
    ("```{literalinclude} ../src/attn/masks.py\n:pyobject: no_such_function\n```", "no_such_function"),
    ("- item\n\n  :::{note}\n  x\n  :::", "inside a list"),
])
def test_unsupported_or_broken_myst_is_an_error_not_raw_text(root, myst, message):
    with pytest.raises(reader.ReaderError, match=re.escape(message)):
        reader.convert_markdown(myst, _ctx(root))


def test_no_chapter_imports_a_book_build_package():
    for path in notebooks.chapters():
        nb = json.loads(path.read_text())
        code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
        assert not BUILD_IMPORT.search(code), f"{path.name} imports a book-build package; Colab lacks it"


def test_glue_works_without_myst_nb():
    """attn.book.notebook.glue in a process where myst_nb cannot be imported: no error, nothing returned."""
    code = (
        "import sys; sys.modules['myst_nb'] = None\n"
        "import importlib.util as u; u.find_spec = (lambda f: (lambda n, *a: None if n == 'myst_nb' else f(n, *a)))(u.find_spec)\n"
        "from attn.book.notebook import glue\n"
        "assert glue('x', 0.5) is None  # a cell ending with glue shows nothing more\n"
        "print('glued')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "glued"


GLUE_OUTPUTS = (
    "import json, sys\n"
    "from IPython.core.interactiveshell import InteractiveShell\n"
    "from IPython.utils.capture import capture_output\n"
    "InteractiveShell.instance()\n"
    "from attn.book.notebook import glue\n"
    "with capture_output() as c:\n"
    "    glue('ratio', 0.5); glue('bound', '1e-05'); glue('count', 12, display=True); glue('pair', (1, 2.5))\n"
    "print(json.dumps([[o.data, o.metadata] for o in c.outputs]))\n"
)
HIDE_MYST_NB = (
    "import sys; sys.modules['myst_nb'] = None\n"
    "import importlib.util as u; u.find_spec = (lambda f: (lambda n, *a: None if n == 'myst_nb' else f(n, *a)))(u.find_spec)\n"
)


def test_glue_without_myst_nb_writes_myst_nbs_records_only_when_the_test_run_asks():
    """make test compares the fresh environment's glue outputs (no myst-nb there) with the stored
    ones, which myst-nb wrote: under ATTN_GLUE_RECORDS=1 they are the same outputs; unset (Colab),
    glue shows only what display=True asks for."""
    import os

    def outputs(code, **env):
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env={**os.environ, **env})
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.strip().splitlines()[-1])

    by_myst_nb = outputs(GLUE_OUTPUTS)
    assert len(by_myst_nb) == 4 and by_myst_nb[0][1]["scrapbook"] == {"name": "ratio", "mime_prefix": "application/papermill.record/"}
    assert outputs(HIDE_MYST_NB + GLUE_OUTPUTS, ATTN_GLUE_RECORDS="1") == by_myst_nb
    assert outputs(HIDE_MYST_NB + GLUE_OUTPUTS, ATTN_GLUE_RECORDS="") == [[{"text/plain": "12"}, {}]]


def test_require_names_the_missing_package_and_the_install_command():
    from attn.book.notebook import require

    require("torch")  # present: nothing happens
    with pytest.raises(ModuleNotFoundError, match=r"needs the package 'no_such_pkg_xyz'.*pip install no-such-pkg") as e:
        require("no_such_pkg_xyz", pip="no-such-pkg")
    assert e.value.name == "no_such_pkg_xyz"


def test_glue_rejects_a_name_the_prose_cannot_refer_to():
    from attn.book.notebook import glue

    with pytest.raises(ValueError, match="glue name"):
        glue("two words", 1)



def test_below_shows_the_bound_a_rounding_level_value_stays_under():
    from attn.book.notebook import below

    assert below(4.8e-07, 1e-6) == "1e-06"
    assert below(0.0, 1e-5) == "1e-05"
    for bad in (1e-6, 2e-6, float("nan")):
        with pytest.raises(AssertionError, match="expected a value below 1e-06"):
            below(bad, 1e-6)


def test_require_of_a_submodule_whose_package_is_missing_names_the_install_command():
    """``find_spec("pkg.sub")`` raises when ``pkg`` is missing; require still says what to install."""
    from attn.book.notebook import require

    with pytest.raises(ModuleNotFoundError, match=r"needs the package 'no_such_pkg_xyz.sub'.*pip install no-such-pkg"):
        require("no_such_pkg_xyz.sub", pip="no-such-pkg")


def _exercise_chapter(tmp_path, root):
    cells = [nbformat.v4.new_markdown_cell("# Build it\n\nWrite `double`."),
             nbformat.v4.new_code_cell("def double(x):\n    raise NotImplementedError('step 1: double')"),
             nbformat.v4.new_code_cell("def double(x):\n    return 2 * x", metadata={"tags": ["solution", "hide-input"]}),
             nbformat.v4.new_code_cell("double(2)", outputs=[nbformat.v4.new_output(
                 "execute_result", {"text/plain": "4"}, execution_count=3)], execution_count=3)]
    path = root / "build" / "reader-test" / f"{tmp_path.name}.ipynb"  # under the root, outside book/
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    return path


def test_an_exercise_chapter_gets_an_edition_without_answers_or_outputs(root, tmp_path):
    path = _exercise_chapter(tmp_path, root)
    try:
        kw = dict(citations=reader.Citations(root / "references.bib"), chapters=set(), repo_url="https://github.com/o/r")
        full = reader.reader_edition(path, **kw)
        exercise = reader.reader_edition(path, exercise=True, **kw)
    finally:
        path.unlink()
    sources = [c.source for c in exercise.cells if c.cell_type == "code"]
    assert sources == ["def double(x):\n    raise NotImplementedError('step 1: double')", "double(2)"]
    assert all(c.outputs == [] and c.execution_count is None for c in exercise.cells if c.cell_type == "code")
    edition = f"https://colab.research.google.com/github/o/r/blob/main/reader/build/exercises/{path.name}"
    assert reader.exercise_path(path) == root / "reader" / "build" / "exercises" / path.name
    assert edition in full.cells[0].source  # the reader edition links its exercise edition in Colab
    assert f"/blob/main/reader/build/reader-test/{path.name}" in exercise.cells[0].source  # and back
    answer = next(c for c in full.cells if "solution" in c.metadata.get("tags", []))
    assert answer.metadata["jupyter"]["source_hidden"] is True  # folded in the reader edition


def test_a_chapter_without_answer_cells_has_no_exercise_edition(root):
    path = root / "book" / "self_attention.ipynb"
    with pytest.raises(reader.ReaderError, match="has no answer cells"):
        reader.reader_edition(path, citations=reader.Citations(root / "references.bib"), chapters=set(),
                              repo_url="https://github.com/o/r", exercise=True)
