"""One source of truth: the copies of pins, URLs and conventions agree with their source."""

import json
import re
import tomllib

import nbformat
import pytest
import yaml
from packaging.requirements import Requirement

import attn
import notebooks  # scripts/notebooks.py


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


def test_every_chapter_starts_with_the_generated_colab_cell(root):
    url, branch = notebooks.repository()
    expected = notebooks.setup_cell_source()
    assert f'REPO = "{url}"' in expected and f"@{branch}" in expected
    for path in notebooks.chapters():
        nb = nbformat.read(path, as_version=4)
        first = next(c for c in nb.cells if c.cell_type == "code")
        assert first.source == expected, f"{path.name}: first code cell differs; run `make execute`"
        assert notebooks.SETUP_TAG in first.metadata.get("tags", [])


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


def test_stored_notebooks_were_executed_in_order_and_leak_nothing(root):
    for path in notebooks.chapters():
        nb = json.loads(path.read_text())
        code = [c for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).strip()]
        counts = [c["execution_count"] for c in code]
        assert None not in counts and counts == list(range(1, len(counts) + 1)), f"{path.name}: re-execute"
        outputs = json.dumps([c.get("outputs", []) for c in code])
        assert not re.search(r"/(tmp|root|home|work)/[\w.-]+/", outputs), f"{path.name}: machine path in output"
        assert not re.search(r"https?://(cdn\.|unpkg|cdnjs)", outputs), f"{path.name}: CDN URL in output"
        assert "0x7f" not in outputs, f"{path.name}: a memory address in an output"
