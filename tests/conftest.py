import pathlib
import sys

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture(scope="session")
def root() -> pathlib.Path:
    return ROOT


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> pathlib.Path:
    """Build the book once per test session, warnings as errors, into a temporary folder."""
    import subprocess
    import time

    if not (ROOT / "_assets" / ".installed").exists():
        pytest.fail("_assets/ is missing: run `make setup` (or `make test`) to fetch the site's front-end files")
    out = tmp_path_factory.mktemp("site")
    jb = pathlib.Path(sys.executable).parent / "jupyter-book"
    start = time.perf_counter()
    proc = subprocess.run(
        [str(jb), "build", str(ROOT), "--all", "-W", "-n", "--keep-going", "--path-output", str(out)],
        capture_output=True, text=True, timeout=600,
    )
    elapsed = time.perf_counter() - start
    log = proc.stdout + proc.stderr
    if proc.returncode != 0:
        pytest.fail(f"jupyter-book build failed (exit {proc.returncode}) after {elapsed:.0f} s:\n{log[-6000:]}")
    html = out / "_build" / "html"
    (html / ".build-log.txt").write_text(log)
    return html
