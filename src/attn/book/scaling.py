"""Scaling, measured small: language models of several sizes trained on several data budgets, and a
power law fitted to their validation losses (``scripts/scaling.py`` trains them; ``book/applications.ipynb``
reads the stored results)."""

__all__: list[str] = []
