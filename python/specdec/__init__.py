"""specdec: the reference implementation of speculative decoding, from Python.

The compiled extension ``specdec._core`` holds models, drafters, forwards, decoding, recording and
validation (docs/python.md); the pure-Python modules beside it (e.g. ``specdec.trace_writer``)
import without it.
"""

try:
    from ._core import (  # noqa: F401
        AcceptanceContext,
        Cache,
        Drafter,
        Error,
        Generation,
        Model,
        Tokenizer,
        __version__,
        backends,
        calibrate,
        draft_free,
        evaluate,
        generate,
        generate_batch,
        load_drafter,
        load_model,
        plan_capacity,
        recommend_policy,
        record,
        set_num_threads,
        simulate,
        simulate_policy,
        simulate_sweep,
        validate,
    )
    import difflib as _difflib
    import functools as _functools
    import re as _re

    def _checked_keywords(fn):
        """`fn` refusing an unknown keyword argument by name, with the closest accepted one, in place of
        pybind11's list of the signature's argument types."""
        first = (fn.__doc__ or "").split("\n", 1)[0]  # "generate(model: Model, prompt: object, *, k: int = 4, ...)"
        known = set(_re.findall(r"[(,]\s*(\w+):", first[first.find("("):first.rfind(")") + 1]))

        @_functools.wraps(fn)
        def call(*args, **kwargs):
            for name in kwargs:
                if known and name not in known:
                    close = _difflib.get_close_matches(name, sorted(known), n=1)
                    hint = f"; did you mean '{close[0]}'?" if close else ""
                    raise TypeError(f"{fn.__name__}() got an unexpected keyword argument '{name}'{hint} "
                                    f"(it takes {', '.join(sorted(known))})")
            return fn(*args, **kwargs)
        return call

    (load_model, load_drafter, generate, generate_batch, record, validate, draft_free, simulate, plan_capacity,
     simulate_sweep, simulate_policy, recommend_policy, calibrate, evaluate) = (
        _checked_keywords(f)
        for f in (load_model, load_drafter, generate, generate_batch, record, validate, draft_free, simulate, plan_capacity,
                  simulate_sweep, simulate_policy, recommend_policy, calibrate, evaluate))
except ImportError as _error:  # the extension was not built (no pybind11) or not found
    _core_import_error = _error

    class Error(RuntimeError):
        """specdec's error type (the compiled extension is missing, so nothing raises it)."""

    def __getattr__(name):
        if name in ("load_model", "load_drafter", "generate", "generate_batch", "record", "validate", "backends",
                    "set_num_threads", "draft_free", "simulate", "plan_capacity", "simulate_sweep", "simulate_policy",
                    "recommend_policy", "calibrate", "evaluate", "Model", "Drafter", "Cache", "Tokenizer", "Generation",
                    "AcceptanceContext"):
            raise ImportError(
                f"specdec.{name} needs the compiled extension specdec._core, which could not be "
                f"imported ({_core_import_error}); build it with pybind11 installed (docs/python.md)")
        raise AttributeError(f"module 'specdec' has no attribute '{name}'")
