"""Old names of the book's material, kept working for one release with a ``DeprecationWarning``.

In ``attn`` 0.2 the library and the book's material came apart: the chapters' helpers, data,
training loop, stored results, plots, diagrams, exercises, bug zoo and widgets moved from
``attn.<name>`` to ``attn.book.<name>`` (see :mod:`attn.book`), and a few measurements and
helpers left the library modules they had been added to. An old path still imports, and warns
where the caller wrote it, until ``attn`` :data:`REMOVED_IN`:

- a module that moved whole (:data:`MODULES`): ``import attn.viz``, ``from attn.widgets import
  MaskExplorer`` and ``attn.viz`` give the module at its new place (its submodules too);
- a name that moved (:data:`NAMES`): ``attn.teaching.worked_example``, ``from attn.measure
  import layer_times`` give the object from its new module. ``attn.teaching`` and
  ``attn.efficient.dispatch`` were split, so they exist only as such forwarding modules.

This is the one place that names the book from inside the library, and only as text: nothing here
is imported unless an old name is asked for (``tests/test_layers.py``).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import pathlib
import sys
import types
import warnings

__all__ = ["MODULES", "NAMES", "REMOVED_IN", "attribute", "install"]

#: The release in which the old names stop working.
REMOVED_IN = "0.3"

#: Modules that moved whole: old name -> new name (their submodules move with them).
MODULES: dict[str, str] = {
    "attn.bugs": "attn.book.bugs",
    "attn.data": "attn.book.data",
    "attn.diagram": "attn.book.diagram",
    "attn.exercises": "attn.book.exercises",
    "attn.notebook": "attn.book.notebook",
    "attn.pretraining": "attn.book.pretraining",
    "attn.source_listing": "attn.book.source_listing",
    "attn.train": "attn.book.train",
    "attn.viz": "attn.book.viz",
    "attn.widgets": "attn.book.widgets",
    "attn.efficient.results": "attn.book.results",
}


def _names(new: str, names: str) -> dict[str, str]:
    return dict.fromkeys(names.split(), new)


#: Names that moved: old module -> {name: the module it lives in now}.
NAMES: dict[str, dict[str, str]] = {
    "attn.teaching": {
        **_names("attn.book.examples", "worked_example matrices"),
        **_names("attn.book.self_attention", "softmax_jacobian_norm softmax_saturation"),
        **_names("attn.book.multi_head_attention", "single_head mha_params mha_flops heads_removed answer_positions "
                                                   "kv_sum_answer_positions weight_on kv_accuracy kv_model head_sweep_run"),
        **_names("attn.book.cross_attention", "DATE_FIELDS DATE_DIGITS alignment_scores date_field_mass "
                                              "year_digit_breakdown"),
        **_names("attn.book.causal_attention", "next_token_windows lm_evaluate token_dependency causal_alignment "
                                               "fully_masked_outcomes"),
        **_names("attn.book.positional_encodings", "offset_matrix diagonal_spread own_buckets correct_per_position"),
        **_names("attn.book.transformer_architecture", "deep_encoder layer_grad_norms torch_pair max_diff_from_torch "
                                                       "shape_trace"),
        **_names("attn.book.why_attention", "AdditiveAttention BahdanauSeq2Seq date_training_batch seq2seq_date_loss "
                                            "long_range_values long_range_rows"),
        **_names("attn.book.efficient_attention", "meta_flops"),
        **_names("attn.book.train", "smooth token_loss"),
    },
    "attn.measure": {
        **_names("attn.book.why_attention", "layer_times autograd_depth gradient_by_distance layers_to_reach"),
        **_names("attn.book.cross_attention", "decoder_step_flops"),
    },
    "attn.generation": _names("attn.book.causal_attention", "greedy_with_step_mask stepwise_logits"),
    "attn.efficient": {**_names("attn.book.results", "measured"), **_names("attn.book.data", "delayed_copy"),
                       **_names("attn.book.efficient_attention", "sdpa_cases"), **_names("attn.measure", "sdpa_path")},
    "attn.efficient.dispatch": {**_names("attn.book.efficient_attention", "sdpa_cases"),
                                **_names("attn.measure", "sdpa_path")},
    "attn.efficient.recurrence": _names("attn.book.data", "delayed_copy"),
    "attn.variants": _names("attn.book.model_variants", "comparison_markdown"),
}

#: Old modules that exist only as forwarding modules (their code was split up).
_SPLIT = ("attn.teaching", "attn.efficient.dispatch")
_PACKAGE = str(pathlib.Path(__file__).resolve().parent)


def _stacklevel() -> int:
    """The ``stacklevel`` that points a warning at the first frame outside the import machinery and
    outside ``attn`` itself: the line that used the old name. (``warnings.warn`` does not count the
    frames of ``importlib._bootstrap``, so neither does this.)"""
    frame, level = sys._getframe(2), 2  # stacklevel 1 is _warn, 2 its caller (attribute or the finder)
    while frame is not None:
        name = frame.f_code.co_filename
        internal = "importlib" in name and "_bootstrap" in name
        if not (internal or name.startswith(_PACKAGE) or "importlib" in pathlib.PurePath(name).parts):
            return level
        frame, level = frame.f_back, level + (not internal)
    return level


def _warn(old: str, new: str) -> None:
    warnings.warn(f"{old} has moved to {new} (the library and the book's material are apart since attn 0.2); "
                  f"the old name stops working in attn {REMOVED_IN}", DeprecationWarning, stacklevel=_stacklevel())


def _new_module(old: str) -> str | None:
    """The new name of a module that moved whole, or of a submodule of one."""
    for prefix, new in MODULES.items():
        if old == prefix or old.startswith(prefix + "."):
            return new + old[len(prefix):]
    return None


def attribute(module: str, name: str):
    """``module.name`` for a name that moved out of ``module``, with the warning; the
    ``__getattr__`` of every module that lost a name calls this. Raises ``AttributeError`` for
    any other name, as a module does."""
    new = NAMES.get(module, {}).get(name)
    if new is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    _warn(f"{module}.{name}", f"{new}.{name}")
    return getattr(importlib.import_module(new), name)


class _OldNames(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old module names, and only those: a moved module is given at its new place, a
    split one as a module whose attributes are forwarded by :func:`attribute`."""

    def find_spec(self, fullname, path=None, target=None):  # noqa: ARG002  (the finder protocol)
        if fullname in _SPLIT or _new_module(fullname) is not None:
            return importlib.machinery.ModuleSpec(fullname, self)
        return None

    def create_module(self, spec):
        new = _new_module(spec.name)
        if new is None:  # split: a forwarding module
            module = types.ModuleType(spec.name, f"Old name of code now in attn.book and attn.measure: see {__name__}.")
            module.__getattr__ = lambda name: attribute(spec.name, name)
            return module
        _warn(spec.name, new)
        module = importlib.import_module(new)
        self._specs = {**getattr(self, "_specs", {}), spec.name: module.__spec__}
        return module

    def exec_module(self, module):
        # The import machinery gave the moved module the old name's spec: give it back its own.
        own = getattr(self, "_specs", {}).get(module.__spec__.name)
        if own is not None:
            module.__spec__ = own


_FINDER = _OldNames()


def install() -> None:
    """Put the finder of old names first on ``sys.meta_path`` (once): before the path finder, which
    would otherwise load a moved package's submodules a second time under their old names."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
