"""A trained pixel model in the reader's browser.

:mod:`lra_kit.web.export` writes a trained causal LM as float32 weights plus a JSON manifest
(``lra-kit export-web RUN_DIR OUT_DIR``) and reads it back into a :class:`~lra_kit.models.CausalLM`;
the JavaScript runtime that runs it, ``_static/web/runtime.mjs``, computes the same model step by
step — the RNN of Katharopoulos et al. eqs. 16–20 for linear attention, Nguyen et al. eq. 12 for
momentum attention, a key/value cache or a re-run of the whole prefix for softmax attention.
:mod:`lra_kit.web.measure` times it in headless Chromium.
"""
from lra_kit.web.export import (
    SUPPORTED_ATTENTIONS,
    UnsupportedModelError,
    check_exportable,
    export_model,
    export_run,
    export_test_digits,
    load_web_model,
)

__all__ = ["SUPPORTED_ATTENTIONS", "UnsupportedModelError", "check_exportable", "export_model", "export_run",
           "export_test_digits", "load_web_model"]
