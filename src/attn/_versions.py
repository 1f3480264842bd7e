"""The oldest versions of attn's dependencies that are tested, checked once at `import attn`.

``MINIMUM`` is the source of the lower bounds in pyproject.toml (a test keeps the two equal), and each
bound is a version a test run uses: the lock (requirements.txt) pins exactly these, and
``make test-newest`` runs the chapters with the newest releases. An environment with an older
version, or without the package, stops at ``import attn`` with one message that names the
package, the version found and the command that fixes it (not with an error deep inside torch).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re

#: distribution name -> oldest tested version (the lock's pin)
MINIMUM: dict[str, str] = {
    "torch": "2.13.0",
    "numpy": "2.4.6",
    "matplotlib": "3.11.2",
    "ipywidgets": "8.1.9",
    "anywidget": "0.11.0",
    "tqdm": "4.70.1",
}

#: distribution name -> import name, where they differ
MODULE: dict[str, str] = {}


def release(version: str) -> tuple[int, ...]:
    """The numeric release of a version string: '2.13.0+cpu' -> (2, 13, 0), '2.14.0rc1' -> (2, 14, 0)."""
    m = re.match(r"\d+(?:\.\d+)*", version.strip())
    if not m:
        raise ValueError(f"not a version: {version!r}")
    return tuple(int(p) for p in m.group().split("."))


def _installed(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        if importlib.util.find_spec(MODULE.get(name, name)) is not None:
            return ""  # importable without package metadata (a source build): nothing to compare
        return None


def problems(found: dict[str, str | None] | None = None) -> list[str]:
    """One line per dependency that is missing or older than ``MINIMUM``. ``found`` maps a
    distribution name to its installed version (None: not installed); default: this environment."""
    lines = []
    for name, least in MINIMUM.items():
        have = found[name] if found is not None and name in found else _installed(name)
        if have is None:
            lines.append(f"{name} is not installed (attn needs {name}>={least})")
        elif have and release(have) < release(least):
            lines.append(f"{name} {have} is installed, older than the {name}>={least} attn needs")
    return lines


def check(found: dict[str, str | None] | None = None) -> None:
    """Raise one ImportError naming every missing or too old dependency, with the command to fix it."""
    bad = problems(found)
    if not bad:
        return
    names = [line.split()[0] for line in bad]
    spec = " ".join(f"'{n}>={MINIMUM[n]}'" for n in names)
    raise ImportError(
        "attn cannot start: " + "; ".join(bad) + ". "
        f"Fix it with:  pip install --upgrade {spec}   (in a notebook: %pip install --upgrade {spec}, "
        "then restart the kernel).",
        name=names[0],
    )


# Run on import: `attn/__init__.py` imports this module before anything that imports torch or numpy.
check()
