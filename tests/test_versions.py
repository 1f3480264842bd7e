"""Honest ranges: attn's lower bounds are the versions tests run, and an older or missing dependency
stops `import attn` with one message naming the package, the version found and the fix."""

import os
import subprocess
import sys
import tomllib

import pytest
from packaging.requirements import Requirement

from attn import _versions


def _floors(root) -> dict[str, str]:
    deps = tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]
    floors = {}
    for r in map(Requirement, deps):
        lower = [s.version for s in r.specifier if s.operator == ">="]
        assert len(lower) == 1, f"{r}: pyproject.toml must give one lower bound (>=)"
        floors[r.name] = lower[0]
    return floors


def test_lower_bounds_in_pyproject_are_the_checked_minimums_and_the_locked_versions(root):
    floors = _floors(root)
    assert floors == _versions.MINIMUM
    lock = dict(line.split("==") for line in (root / "requirements.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    for name, least in floors.items():
        assert lock[name] == least, f"{name}: floor {least} is not the tested (locked) version {lock[name]}"


def test_this_environment_passes_the_check():
    assert _versions.problems() == []


@pytest.mark.parametrize("version, ok", [("2.13.0", True), ("2.13.0+cpu", True), ("2.14.1", True),
                                         ("2.12.9", False), ("2.4.0", False), ("1.13.1+cu117", False)])
def test_a_torch_below_the_floor_is_refused_and_local_labels_are_ignored(version, ok):
    assert (_versions.problems({"torch": version}) == []) is ok


def test_a_torch_below_the_floor_stops_with_one_message_naming_package_version_and_fix():
    with pytest.raises(ImportError) as err:
        _versions.check({"torch": "2.4.0"})
    msg = str(err.value)
    assert "torch 2.4.0 is installed" in msg and "torch>=2.13.0" in msg
    assert "pip install --upgrade 'torch>=2.13.0'" in msg
    assert "numpy" not in msg  # only what is wrong
    assert err.value.name == "torch"


def test_a_missing_numpy_and_an_old_tqdm_are_named_together():
    with pytest.raises(ImportError) as err:
        _versions.check({"numpy": None, "tqdm": "4.0.0"})
    msg = str(err.value)
    assert "numpy is not installed" in msg and "tqdm 4.0.0 is installed" in msg
    assert "pip install --upgrade 'numpy>=2.4.6' 'tqdm>=4.70.1'" in msg


def test_import_attn_with_an_old_torch_installed_stops_before_importing_torch(tmp_path, root):
    # A torch distribution record older than the floor, first on sys.path: what `import attn` sees
    # in an environment with torch 2.4.0 installed.
    info = tmp_path / "torch-2.4.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.4.0\n")
    code = "import sys\ntry:\n    import attn\nexcept ImportError as e:\n    print('torch' in sys.modules); print(e); raise SystemExit(3)\n"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(root / "src")])}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    imported_torch, message = proc.stdout.split("\n", 1)
    assert imported_torch == "False"
    assert message.startswith("attn cannot start: torch 2.4.0 is installed, older than the torch>=2.13.0 attn needs.")
    assert "pip install --upgrade 'torch>=2.13.0'" in message
