"""flash-linear-attention's rows of the attention benchmark as fla's users call them (issue 50, item 1): φ = F.elu + 1
in the inputs' type, normalize=True; the kernel alone (normalize=False) labelled as its own row; the float32-φ row
that the H200 record of 2026-11-28 ran, labelled too. fla's chunk kernel needs CUDA, so it is replaced here by a
recorder of what it is handed; every record names what each fla row ran."""
import warnings

import pytest
import torch
import torch.nn.functional as F

try:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import fla.ops.linear_attn as fla_linear_attn
except Exception as err:  # noqa: BLE001 — not installed, or its __init__ cannot import here
    pytest.skip(f"fla-core is not importable: {err!r}", allow_module_level=True)

from lra_kit.bench import attention as bench


@pytest.fixture
def handed(monkeypatch):
    calls = []

    def chunk_linear_attn(q, k, v, *, normalize, output_final_state):
        calls.append(dict(q=q, k=k, normalize=normalize))
        return v.clone(), None

    monkeypatch.setattr(fla_linear_attn, "chunk_linear_attn", chunk_linear_attn)
    return calls


def _inputs():
    gen = torch.Generator().manual_seed(0)
    return [torch.randn(2, 16, 3, 8, generator=gen).bfloat16() for _ in range(3)]


@pytest.mark.parametrize("method, normalize", [("fla_chunk_linear", True), ("fla_chunk_linear_bare", False)])
def test_the_fair_rows_map_phi_in_the_inputs_type(handed, method, normalize):
    q, k, v = _inputs()
    bench._attention_fn(method, 0.6, "auto")(q, k, v)
    (call,) = handed
    assert call["normalize"] is normalize
    for raw, mapped in ((q, call["q"]), (k, call["k"])):
        assert mapped.dtype == torch.bfloat16  # not float32: 2 bytes an element alive, not 9
        assert torch.equal(mapped, F.elu(raw) + 1)


def test_the_float32_phi_row_is_labelled_and_is_what_it_says(handed):
    q, k, v = _inputs()
    bench._attention_fn("fla_chunk_linear_phi_f32", 0.6, "auto")(q, k, v)
    from lra_kit.attention import elu_plus_one

    assert torch.equal(handed[0]["q"], elu_plus_one(q)) and handed[0]["normalize"] is True
    assert "fla_chunk_linear_phi_f32" not in bench.GPU_METHODS  # not in the default table


def test_every_fla_row_has_a_definition_that_the_record_carries():
    assert set(bench.FLA_METHODS) == set(bench.FLA_DEFINITIONS)
    assert "normalize=False" in bench.FLA_DEFINITIONS["fla_chunk_linear_bare"]
    assert "F.elu(q) + 1" in bench.FLA_DEFINITIONS["fla_chunk_linear"]
    table = bench._table([], [], [], (1024,), device=torch.device("cpu"), batch=1, heads=1, dim=8, dtype="bfloat16",
                         beta=0.6, luna_length=16, repeats=3, methods=bench.GPU_METHODS, sdpa_backend="flash",
                         bandwidth={})
    written = table["config"]["definitions"]
    assert list(written) == list(bench.GPU_METHODS)
    assert all(written[m] == bench.FLA_DEFINITIONS[m] for m in bench.GPU_METHODS if m in bench.FLA_DEFINITIONS)
    assert "pipelined" in bench.TIMING["cuda"] and "latency_s" in bench.TIMING["cuda"]
