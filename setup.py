"""The measurements the chapters show live in ``benchmarks/measured/``, where the benchmarks and
``scripts/long_range.py`` write them, outside ``src/``. A chapter opened in Colab has only the
installed package, so the build copies them into it, as ``attn/book/measured/`` (setuptools'
package-data cannot name files outside the package's folder). Everything else is in pyproject.toml.
An editable install and ``PYTHONPATH=src`` read them from ``benchmarks/measured/`` itself
(``attn.book.results``)."""

import pathlib
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

MEASURED = pathlib.Path(__file__).resolve().parent / "benchmarks" / "measured"


class BuildWithMeasurements(build_py):
    def run(self):
        super().run()
        if self.editable_mode:  # the package is read in place, see attn.book.results
            return
        target = pathlib.Path(self.build_lib) / "attn" / "book" / "measured"
        target.mkdir(parents=True, exist_ok=True)
        for path in sorted([*MEASURED.glob("*.csv"), *MEASURED.glob("*.json")]):
            shutil.copy2(path, target / path.name)


setup(cmdclass={"build_py": BuildWithMeasurements})
