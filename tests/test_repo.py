"""One source of truth: the copies of pins, URLs and conventions agree with their source."""

import ast
import json
import pathlib
import posixpath
import re
import tomllib

import nbformat
import pytest
import yaml
from packaging.requirements import Requirement

import attn
from scripts import notebooks


@pytest.fixture(scope="module")
def lock(root) -> dict[str, str]:
    pins = {}
    for line in (root / "requirements.txt").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            req = Requirement(line)
            (spec,) = req.specifier
            assert spec.operator == "==", f"requirements.txt must pin exactly: {line}"
            pins[req.name.lower().replace("_", "-")] = spec.version
    return pins


def _pyproject(root):
    return tomllib.loads((root / "pyproject.toml").read_text())


def test_torch_is_pinned_exactly_to_the_cpu_wheel_version(lock):
    assert lock["torch"] == "2.13.0"


def test_every_pyproject_dependency_is_locked_within_its_range(root, lock):
    project = _pyproject(root)["project"]
    reqs = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        reqs += extra
    for r in map(Requirement, reqs):
        name = r.name.lower().replace("_", "-")
        assert name in lock, f"{name} (pyproject.toml) is not pinned in requirements.txt"
        assert r.specifier.contains(lock[name], prereleases=True), (
            f"requirements.txt pins {name}=={lock[name]}, outside pyproject.toml's {r.specifier}"
        )


def test_environment_yml_installs_the_lock_and_the_package_with_the_same_python(root):
    env = yaml.safe_load((root / "environment.yml").read_text())
    deps = env["dependencies"]
    pythons = [d for d in deps if isinstance(d, str) and d.startswith("python")]
    assert pythons == ["python=3.11"]
    assert _pyproject(root)["project"]["requires-python"] == ">=3.11"
    pip = next(d["pip"] for d in deps if isinstance(d, dict))
    assert pip == ["-r requirements.txt", "-e ."], "environment.yml must take its pins from requirements.txt only"
    assert not any(isinstance(d, str) and re.match(r"(torch|pytorch|numpy)\b", d) for d in deps)


def test_chapters_in_toc_are_exactly_the_notebooks_in_book(root):
    in_toc = {p.resolve() for p in notebooks.chapters()}
    on_disk = {p.resolve() for p in (root / "book").glob("*.ipynb")}
    assert in_toc == on_disk
    assert in_toc, "no chapter found"


def test_every_chapter_starts_with_the_generated_colab_cell():
    url, branch = notebooks.repository()
    expected = notebooks.setup_cell_source()
    assert f'REPO = "{url}"' in expected and f"@{branch}" in expected
    for path in notebooks.chapters():
        nb = nbformat.read(path, as_version=4)
        first = next(c for c in nb.cells if c.cell_type == "code")
        assert first.source == expected, f"{path.name}: first code cell differs; run `make execute`"
        # on the site the cell is removed (it only runs in Colab); the reader editions keep it
        assert first.metadata.get("tags") == notebooks.SETUP_TAGS, f"{path.name}: {first.metadata.get('tags')}"


def test_repository_url_is_the_same_everywhere(root):
    url, _ = notebooks.repository()
    cfg = notebooks.book_config()
    assert cfg["launch_buttons"]["colab_url"] == "https://colab.research.google.com"
    assert url in (root / "README.md").read_text()
    assert _pyproject(root)["project"]["urls"]["Homepage"] == url
    others = set(re.findall(r"https://github\.com/[\w.-]+/[\w.-]+", (root / "README.md").read_text()))
    assert others <= {url}, f"README names another repository URL: {others - {url}}"


def test_shape_legend_in_intro_matches_the_package(root):
    text = (root / "book/intro.md").read_text()
    rows = dict(re.findall(r"^\| `(\w)` \| (.+?) \|$", text, flags=re.M))
    assert rows == attn.SHAPE_LEGEND
    for letter, meaning in attn.SHAPE_LEGEND.items():
        assert f"``{letter}``: {meaning}" in attn.__doc__


def test_stored_notebooks_were_executed_in_order_and_leak_nothing():
    for path in notebooks.chapters():
        nb = json.loads(path.read_text())
        code = [c for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).strip()]
        counts = [c["execution_count"] for c in code]
        assert None not in counts and counts == list(range(1, len(counts) + 1)), f"{path.name}: re-execute"
        outputs = json.dumps([c.get("outputs", []) for c in code])
        assert not re.search(r"/(tmp|root|home|work)/[\w.-]+/", outputs), f"{path.name}: machine path in output"
        assert not re.search(r"https?://(cdn\.|unpkg|cdnjs)", outputs), f"{path.name}: CDN URL in output"
        assert "0x7f" not in outputs, f"{path.name}: a memory address in an output"


# --- Stored outputs that every machine reproduces (README: "Writing a chapter") ------------------
# A cell excused from nbval's comparison is a cell whose numbers come from training; the count may
# grow only with new training cells (raise it in the same commit that adds one, and say so).
# +4: positional_encodings' exercises 2 to 5 train their models to show their answers.
# +1: why_attention's exercise 3 trains the dot-product RNN to show its answer.
# +5: cross_attention's exercises 1 to 3 (trained date model) and causal_attention's exercise 1
# (an off-by-one model trained) show their answers; the causal LM's sample is described by glue.
# +1: build_it_yourself overfits one batch (its sanity check 2); its shipped model's cell compares.
# +2: self_attention's exercise 6 and multi_head_attention's exercise 4 train to show their answers;
# +2: model_variants' solutions 1 and 2 read the trained checkpoints and the trained ViT;
# +1: why_attention's exercise 1 shows times measured on the machine that runs it (asserts the depth).
# +1: transformer_architecture's exercise 3 trains the post-LN model once per remedy.
# +3: model_variants' BART section reads its trained checkpoint (loss, reconstruction, accuracy on the
# hidden characters); +2: cross_attention's soft-against-hard alignment on the trained dates model;
# +2: self_attention's tied V = K against separate projections, trained from three seeds.
IGNORED_CELLS_AT_MOST = 70  # +2: build_it_yourself trains a GPT and samples from it; +5: the glue of
# trained results moved out of their cells into hidden ones (cross-attention 3, why 1, build 1): no
# new training (the AVX2 and no-SIMD runs of make test-cpus differ in their last digits); -2: the
# multi-head head sweep reads stored results (scripts/head_sweep.py), so its table and glue compare
# Digits another CPU does not reproduce: a raw float repr, or a rounding-level magnitude shown by its
# own digits (show the bound it is checked against instead: attn.book.notebook.below).
UNSTABLE_NUMBER = re.compile(r"(?<![\d.])\d\.\d{7,}|(?<!< )(?<!&lt; )(?<!below )(?<![\d.])\d(?:\.\d+)?e-(?:0?[6-9]|1\d)\b")


def _compared_code_cells(path):
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    return code, [c for c in code if not {"nbval-ignore-output", "nbval-skip"} & set(c["metadata"].get("tags", []))]


def _text_outputs(cell) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if out["output_type"] == "stream":
            parts.append("".join(out["text"]))
        for kind, value in out.get("data", {}).items():
            if "text" in kind:
                parts.append("".join(value) if isinstance(value, list) else str(value))
    return "\n".join(parts)


def test_unstable_number_pattern_catches_raw_floats_and_rounding_level_digits():
    for bad in ("0.6559879779815674", "4.8e-07", "'1e-07'", "7e-09", "6e-16", "by 2e-07 (relative)"):
        assert UNSTABLE_NUMBER.search(bad), bad
    for good in ("0.656", "< 1e-05", "&lt; 1e-05", "below 1e-06", "1.2e+03", "0.0625", "2^-8", "< 1e-12", "x8e-27"):
        assert not UNSTABLE_NUMBER.search(good), good


def test_compared_outputs_show_no_digits_another_machine_would_change():
    found = []
    for path in notebooks.chapters():
        for cell in _compared_code_cells(path)[1]:
            text = _text_outputs(cell)
            if "below(" in "".join(cell["source"]):  # a glued bound, checked by attn.book.notebook.below
                text = re.sub(r"'1e-\d\d'", "", text)
            for m in UNSTABLE_NUMBER.finditer(text):
                found.append(f"{path.name} cell {cell['id']}: {m.group(0)!r}")
    assert not found, "show these at the precision every machine reproduces (README, Writing a chapter):\n" + "\n".join(found)


def test_only_training_cells_are_excused_from_comparison_and_each_is_checked():
    ignored, unchecked = [], []
    for path in notebooks.chapters():
        code, compared = _compared_code_cells(path)
        for i, cell in enumerate(code):
            tags = set(cell["metadata"].get("tags", []))
            assert "nbval-skip" not in tags, f"{path.name} cell {cell['id']}: nbval-skip; run it (a guard keeps it offline)"
            if "nbval-ignore-output" in tags:
                ignored.append(cell["id"])
                nearby = "".join(cell["source"]) + "\n" + ("".join(code[i + 1]["source"]) if i + 1 < len(code) else "")
                if not re.search(r"^\s*assert\b", nearby, re.M):
                    unchecked.append(f"{path.name} cell {cell['id']}")
    assert len(ignored) <= IGNORED_CELLS_AT_MOST, f"{len(ignored)} cells excused from comparison; only training cells may be"
    assert not unchecked, f"excused cells without an assert on their result (in the cell or the next): {unchecked}"


# --- Links between chapters -------------------------------------------------------------------
# A chapter is named in prose only through a {doc} role whose target is in _toc.yml, so that a
# mention of a chapter that does not exist (yet) fails here instead of dangling on the site.

DOC_ROLE = re.compile(r"\{doc\}`(?:[^`<]*<)?([^`>]+)>?`")
# Words that may stand before "chapter" without naming one: "this chapter", "the next chapter".
NOT_A_NAME = {"this", "that", "next", "previous", "last", "following", "same", "first", "whole",
              "present", "later", "earlier", "each", "every", "other", "one", "a", "an"}


def _toc_files(root) -> set[str]:
    files: set[str] = set()

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                files.add(str(node["file"]))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(yaml.safe_load((root / "_toc.yml").read_text()))
    return files


def _markdown_of_the_book(root) -> list[tuple[str, str]]:
    """(where, text) for every markdown cell of book/*.ipynb and every book/*.md and book/api/*.md
    (where: the file's path under book/)."""
    out = []
    for path in sorted([*(root / "book").glob("*"), *(root / "book" / "api").glob("*.md")]):
        if path.suffix == ".md":
            out.append((path.relative_to(root / "book").as_posix(), path.read_text()))
        elif path.suffix == ".ipynb":
            nb = json.loads(path.read_text())
            out += [(f"{path.name}, cell {i}", "".join(c["source"])) for i, c in enumerate(nb["cells"])
                    if c["cell_type"] == "markdown"]
    return out


def chapter_mentions_without_a_link(text: str) -> list[str]:
    """Phrases that name a chapter ("the chapter on X", "the X chapter", "chapter 3") outside a {doc} role."""
    bare = DOC_ROLE.sub("LINK", text)
    found = [m.group(0) for m in re.finditer(r"\bchapters?\s+on\b[^.,;:)]*", bare, flags=re.I)]
    found += [m.group(0) for m in re.finditer(r"\bchapter\s+\d+\b", bare, flags=re.I)]
    for m in re.finditer(r"\bthe\s+((?:[\w-]+\s+){0,2}?)([\w-]+)\s+chapters?\b", bare, flags=re.I):
        if m.group(2).lower() not in NOT_A_NAME and m.group(2) != "LINK":
            found.append(m.group(0))
    return found


def test_chapter_mention_check_catches_unlinked_names_and_allows_links():
    assert chapter_mentions_without_a_link("see the chapter on efficient attention.") == [
        "chapter on efficient attention"]
    assert chapter_mentions_without_a_link("as in the\nself-attention chapter") == ["the\nself-attention chapter"]
    assert chapter_mentions_without_a_link("as in the self-attention chapter") == ["the self-attention chapter"]
    assert chapter_mentions_without_a_link("as in chapter 3") == ["chapter 3"]
    ok = ("This chapter and the next chapter; a later chapter; the previous chapter; "
          "{doc}`the chapter on positional encodings <positional_encodings>`; the {doc}`causal_attention` chapter")
    assert chapter_mentions_without_a_link(ok) == []


def test_chapters_are_named_only_through_doc_links(root):
    bad = [(where, found) for where, text in _markdown_of_the_book(root)
           if (found := chapter_mentions_without_a_link(text))]
    assert not bad, ("name a chapter with a {doc} link to a file in _toc.yml, or say 'a later chapter' "
                     f"while it does not exist: {bad}")


def test_every_doc_link_points_to_a_file_in_the_toc(root):
    toc = _toc_files(root)
    for where, text in _markdown_of_the_book(root):
        for target in DOC_ROLE.findall(text):
            resolved = target.strip()
            folder = posixpath.dirname(where.split(",")[0])  # a page under book/api/ links ../<chapter>
            resolved = resolved.lstrip("/") if resolved.startswith("/") else posixpath.normpath(
                posixpath.join("book", folder, resolved))
            assert resolved in toc, f"{where}: {{doc}}`{target}` is not in _toc.yml"


# --- Reader pages carry no test noise -----------------------------------------------------------

RECEIPT = re.compile(r"""print\([^\n]*(?::\s*True["']\s*\)|,\s*True\s*\))""")


def test_receipt_pattern_catches_hand_written_true():
    assert RECEIPT.search('print("formula == module: True")')
    assert RECEIPT.search('print("prefix equal for every model:", True)')
    assert not RECEIPT.search('print("all zero:", bool((y == 0).all()))')


def test_chapters_use_no_xmode_and_print_no_hand_written_true():
    for path in notebooks.chapters():
        nb = json.loads(path.read_text())
        for i, cell in enumerate(nb["cells"]):
            if cell["cell_type"] != "code":
                continue
            src = "".join(cell["source"])
            assert "%xmode" not in src, f"{path.name}, cell {i}: %xmode (tag the cell raises-exception instead)"
            assert not RECEIPT.search(src), f"{path.name}, cell {i}: a hand-written True receipt; assert silently"
            text = json.dumps(cell.get("outputs", []))
            assert "Exception reporting mode" not in text, f"{path.name}, cell {i}: re-execute without %xmode"


def test_code_and_content_licences_are_stated_in_licence_readme_pyproject_and_site_footer(root):
    assert (root / "LICENSE").read_text().startswith("MIT License")
    assert _pyproject(root)["project"]["license"] == {"text": "MIT"}
    readme = (root / "README.md").read_text()
    assert "MIT" in readme and "CC BY 4.0" in readme
    footer = notebooks.book_config()["html"]["extra_footer"]
    assert "CC BY 4.0" in footer and "https://creativecommons.org/licenses/by/4.0/" in footer


# --- argument checks live in attn._checks ----------------------------------------------------------

def _attn_modules(root):
    for path in sorted((root / "src" / "attn").rglob("*.py")):
        yield path.relative_to(root / "src").with_suffix("").as_posix().replace("/", "."), ast.parse(path.read_text())


def _private_imports(module: str, tree: ast.Module) -> list[str]:
    """``from attn.x import _name`` (or ``from attn import _x``) in ``module``, other than the package's own
    infrastructure: ``_checks`` (argument checks) and ``_moved`` (the old names of moved code)."""
    package = module.rsplit(".", 1)[0] if not module.endswith("__init__") else module.removesuffix(".__init__")
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "attn":
            for alias in node.names:
                if not alias.name.startswith("_") or alias.name in ("_checks", "_moved") or node.module.endswith("._checks"):
                    continue
                if module.endswith("__init__") and node.module == package:
                    continue  # a package's __init__ may load its own private modules
                found.append(f"{module}: from {node.module} import {alias.name}")
    return found


def _validation_helpers(module: str, tree: ast.Module) -> list[str]:
    """Functions that are a copy of a ``_checks`` helper: one by name (``_positive_int``,
    ``_shape``/``_fmt``), or one whose body is a single integer test that raises."""
    names = {n.name for n in ast.parse((pathlib.Path(attn.__file__).parent / "_checks.py").read_text()).body
             if isinstance(n, ast.FunctionDef)}
    copies = {"positive", "nonneg", "non_negative", "offset", "shape"} | names
    found = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        if node.name.lstrip("_") in copies:
            found.append(f"{module}.{node.name}")
            continue
        body = [n for n in node.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
        if (body and isinstance(body[0], ast.If) and isinstance(body[0].body[0], ast.Raise)
                and "isinstance" in ast.unparse(body[0].test) and "int" in ast.unparse(body[0].test)
                and re.search(r"[<>]=? *[01]\b", ast.unparse(body[0].test))):
            found.append(f"{module}.{node.name}")
    return found


def _raises_value_or_type_error(body: list[ast.stmt]) -> bool:
    return any(isinstance(n, ast.Raise) and n.exc is not None
               and getattr(n.exc.func if isinstance(n.exc, ast.Call) else n.exc, "id", None) in ("ValueError", "TypeError")
               for n in body)


def _is_number_literal(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def _checks_a_parameter(test: ast.expr, parameters: set[str]) -> bool:
    """``test`` compares a parameter with a number (``n < 1``, ``0 <= p < 1``) or asks whether a
    value is an ``int``, ``float`` or ``bool`` (``isinstance(x, int)``)."""
    for n in ast.walk(test):
        if isinstance(n, ast.Compare):
            sides = [n.left, *n.comparators]
            if any(map(_is_number_literal, sides)) and any(isinstance(x, ast.Name) and x.id in parameters for x in sides):
                return True
        if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "isinstance" and len(n.args) == 2:
            kinds = n.args[1].elts if isinstance(n.args[1], ast.Tuple) else [n.args[1]]
            if any(getattr(k, "id", None) in ("int", "float", "bool") for k in kinds):
                return True
    return False


def _from_arange(node: ast.expr, names: set[str]) -> bool:
    return any((isinstance(n, ast.Call) and getattr(n.func, "attr", getattr(n.func, "id", None)) == "arange")
               or (isinstance(n, ast.Name) and n.id in names) for n in ast.walk(node))


def _arange_names(function: ast.AST) -> set[str]:
    """Names assigned (in ``function``) from ``torch.arange``, directly or through other such names."""
    names: set[str] = set()
    assigns = [n for n in _own_nodes(function) if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None]
    while True:
        found = {t.id for a in assigns if _from_arange(a.value, names)
                 for target in (a.targets if isinstance(a, ast.Assign) else [a.target])
                 for t in (target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target])
                 if isinstance(t, ast.Name)}
        if found <= names:
            return names
        names |= found


def _own_nodes(function: ast.AST):
    """The nodes of ``function``'s own body, not those of a function or class defined inside it."""
    for child in ast.iter_child_nodes(function):
        yield child
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            yield from _own_nodes(child)


def _functions(node: ast.AST, prefix: str = ""):
    """Every function and method under ``node`` with its qualified name (``ViT.__init__``)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if not isinstance(child, ast.ClassDef):
                yield prefix + child.name, child
            yield from _functions(child, f"{prefix}{child.name}.")
        else:
            yield from _functions(child, prefix)


def _inline_checks(module: str, tree: ast.Module) -> list[str]:
    """What ``attn._checks`` and ``attn.masks.distances`` are the one home of, written inline in a
    function: ``module.function: rule: code`` for each (a) inline argument check: an ``if`` that
    compares a parameter with a number or tests ``isinstance(..., int | float | bool)`` and raises
    ValueError/TypeError; (b) a ``%`` divisibility test that raises; (c) a distance grid: a subtraction
    whose two sides both come from ``torch.arange`` (outside :mod:`attn.masks`)."""
    found = []
    for name, function in _functions(tree):
        a = function.args
        parameters = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] if x is not None}
        where = f"{module}.{name}"
        for n in _own_nodes(function):
            if isinstance(n, ast.If) and _raises_value_or_type_error(n.body):
                if any(isinstance(m, ast.BinOp) and isinstance(m.op, ast.Mod) for m in ast.walk(n.test)):
                    found.append(f"{where}: divisibility: {ast.unparse(n.test)}")
                elif _checks_a_parameter(n.test, parameters):
                    found.append(f"{where}: inline check: {ast.unparse(n.test)}")
        if module != "attn.masks":
            names = _arange_names(function)
            found += [f"{where}: distance grid: {ast.unparse(n)}" for n in _own_nodes(function)
                      if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Sub)
                      and _from_arange(n.left, names) and _from_arange(n.right, names)]
    return found


#: Checks still written inline, each with why (``module.function: rule``). A test fails when one is gone.
INLINE_EXCEPTIONS: dict[str, str] = {}


def test_private_import_check_catches_a_sibling_private_and_allows_checks():
    tree = ast.parse("from attn import _checks\nfrom attn.efficient.tiled import _positive_int, tiled_attention\n"
                     "from attn._checks import fmt\nfrom attn.functional import _validate\n")
    assert _private_imports("attn.efficient.sparse", tree) == [
        "attn.efficient.sparse: from attn.efficient.tiled import _positive_int",
        "attn.efficient.sparse: from attn.functional import _validate"]


def test_validation_helper_check_catches_copies_by_name_and_by_body():
    tree = ast.parse(
        "def _positive_int(name, value):\n    pass\n"
        "def _shape(t):\n    return str(t)\n"
        "def _count(name, value):\n    '''doc'''\n"
        "    if isinstance(value, bool) or not isinstance(value, int) or value < 1:\n        raise ValueError(name)\n"
        "def _check_len(name, n):\n    if not isinstance(n, int) or not 1 <= n <= 32:\n        raise ValueError(name)\n"
        "def window(x):\n    return x\n")
    assert _validation_helpers("m", tree) == ["m._positive_int", "m._shape", "m._count"]


def test_no_module_imports_a_private_name_of_a_sibling_other_than_checks(root):
    found = [hit for module, tree in _attn_modules(root) for hit in _private_imports(module, tree)]
    assert found == [], "import a public name, or move the helper to attn._checks"


def test_argument_checks_are_defined_once_in_checks(root):
    found = [hit for module, tree in _attn_modules(root) if module != "attn._checks"
             for hit in _validation_helpers(module, tree)]
    assert found == [], "use attn._checks (positive_int, non_negative_int, fmt, qkv, ...) instead of a copy"


def test_inline_check_guard_catches_each_pattern_and_not_its_lookalikes():
    tree = ast.parse(
        "def capacity(capacity=None):\n"
        "    if capacity is not None and capacity < 1:\n        raise ValueError(capacity)\n"
        "def dropout(p):\n    if not 0.0 <= p < 1.0:\n        raise ValueError(p)\n"
        "def kind(x):\n    y = x\n    if isinstance(y, bool) or not isinstance(y, int):\n        raise TypeError(y)\n"
        "def heads(d_model, num_heads):\n    if d_model % num_heads:\n        raise ValueError(d_model)\n"
        "def grid(L, S):\n    i = torch.arange(L).unsqueeze(1)\n    j = torch.arange(S)[None]\n    k = j\n"
        "    return i - k\n"
        "def inline_grid(L):\n    return torch.arange(L)[:, None] - torch.arange(L)\n"
        # lookalikes: a shape test, a local compared with a number, a check that returns, a tensor type
        # test, a parity that flips instead of raising, one side from arange, arange into a slice
        "def shape(x, n):\n    if x.dim() != 4 or x.shape[0] < 1:\n        raise ValueError(x)\n"
        "    m = len(x)\n    if m < 1:\n        raise ValueError(m)\n    if n < 1:\n        return 0\n"
        "    if not isinstance(x, torch.Tensor):\n        raise TypeError(x)\n"
        "def parity(x, step):\n    if step % 2:\n        x = x.flip(0)\n    return x\n"
        "def shifted(L, pos):\n    p = torch.arange(L)\n    pos[:, 1:] = torch.arange(L - 1)\n"
        "    return p - 1, pos - L, torch.arange(L) - pos\n")
    assert [hit.split(": ")[:2] for hit in _inline_checks("m", tree)] == [
        ["m.capacity", "inline check"], ["m.dropout", "inline check"], ["m.kind", "inline check"],
        ["m.heads", "divisibility"], ["m.grid", "distance grid"], ["m.inline_grid", "distance grid"]]
    assert _inline_checks("attn.masks", ast.parse("def distances(L):\n    return torch.arange(L) - torch.arange(L)\n")) == []


def test_no_argument_check_or_distance_grid_is_written_inline(root):
    """Every argument check calls :mod:`attn._checks` (a bool is not a number there), every heads
    rule ``_checks.heads``, every ``i - j`` grid :func:`attn.masks.distances`: a copy written inline
    drifts (three of them took ``True`` for a count), so the pattern itself is refused."""
    hits = [hit for module, tree in _attn_modules(root) if module != "attn._checks"
            for hit in _inline_checks(module, tree)]
    rules = {": ".join(hit.split(": ", 2)[:2]) for hit in hits}  # "module.function: rule"
    unexplained = [hit for hit in hits if ": ".join(hit.split(": ", 2)[:2]) not in INLINE_EXCEPTIONS]
    assert unexplained == [], "call attn._checks (integer, number, divisible, heads, ...) or attn.masks.distances"
    stale = sorted(set(INLINE_EXCEPTIONS) - rules)
    assert stale == [], "these exceptions are fixed: remove them from INLINE_EXCEPTIONS"


def test_the_causal_flag_is_called_is_causal_everywhere_in_attn(root):
    """One name for one flag: no parameter, keyword or attribute of the package is called ``causal``
    (``masks.causal`` is the mask builder, a function, and stays)."""
    found = []
    for module, tree in _attn_modules(root):
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                a = node.args
                found += [f"{module}: parameter causal" for arg in a.posonlyargs + a.args + a.kwonlyargs
                          if arg.arg == "causal"]
            elif isinstance(node, ast.keyword) and node.arg == "causal":
                found.append(f"{module}:{node.value.lineno}: keyword causal=")
            elif isinstance(node, ast.Attribute) and node.attr == "causal" and isinstance(node.ctx, ast.Store):
                found.append(f"{module}:{node.lineno}: attribute .causal")
    assert found == [], "call it is_causal, as attn.scaled_dot_product_attention does"


def test_applications_table_names_chapters_by_their_titles():
    """The applications chapter's table of fields names each chapter by its title (a copy of the
    chapter's first heading, checked here), not by its file name."""
    nb = nbformat.read(notebooks.ROOT / "book" / "applications.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and c.source.startswith("FIELDS = ["))
    tree = ast.parse(cell.source)
    fields = ast.literal_eval(next(n.value for n in tree.body if isinstance(n, ast.Assign)))
    titles = {}
    for path in notebooks.chapters():
        first = nbformat.read(path, as_version=4).cells[0].source
        titles[path.stem] = next(line[2:] for line in first.splitlines() if line.startswith("# "))
    used = [row[3] for row in fields]
    assert used and set(used) <= set(titles.values()), set(used) - set(titles.values())
