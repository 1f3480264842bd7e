"""What only the applications chapter (``book/applications.ipynb``) computes and measures."""

__all__: list[str] = []
