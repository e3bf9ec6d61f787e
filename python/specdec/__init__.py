"""specdec: the reference implementation of speculative decoding, from Python.

The compiled extension ``specdec._core`` holds models, drafters, forwards, decoding, recording and
validation (docs/python.md); the pure-Python modules beside it (e.g. ``specdec.trace_writer``)
import without it.
"""

try:
    from ._core import (  # noqa: F401
        Cache,
        Drafter,
        Error,
        Generation,
        Model,
        Tokenizer,
        __version__,
        backends,
        draft_free,
        generate,
        generate_batch,
        load_drafter,
        load_model,
        record,
        set_num_threads,
        validate,
    )
except ImportError as _error:  # the extension was not built (no pybind11) or not found
    _core_import_error = _error

    class Error(RuntimeError):
        """specdec's error type (the compiled extension is missing, so nothing raises it)."""

    def __getattr__(name):
        if name in ("load_model", "load_drafter", "generate", "generate_batch", "record", "validate", "backends",
                    "set_num_threads", "draft_free", "Model", "Drafter", "Cache", "Tokenizer", "Generation"):
            raise ImportError(
                f"specdec.{name} needs the compiled extension specdec._core, which could not be "
                f"imported ({_core_import_error}); build it with pybind11 installed (docs/python.md)")
        raise AttributeError(f"module 'specdec' has no attribute '{name}'")
