"""The book's tools, a package run from the repository root: ``python -m scripts.<name>`` (``make``
does), imported by the tests as ``from scripts import notebooks``. Not part of ``attn``."""
