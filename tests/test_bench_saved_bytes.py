"""lra_kit.bench.measure.saved_for_backward_bytes: what autograd keeps for the backward pass, counted exactly."""
import pytest
import torch

from lra_kit.attention.causal.op import causal_product
from lra_kit.attention.causal.chunked import SEGMENT_CHUNKS, segments
from lra_kit.attention.causal.chunking import DEFAULT_CHUNK_SIZE
from lra_kit.bench.measure import saved_for_backward_bytes


def test_explicit_softmax_keeps_its_map_and_the_inputs():
    H, N, D = 2, 48, 8
    q, k, v = torch.randn(3, 1, H, N, D).unbind(0)
    explicit = lambda q, k, v: torch.softmax(q @ k.transpose(-1, -2) / D**0.5, -1) @ v  # noqa: E731
    # q, k (its transpose is a view: counted once), v, and the N × N map that softmax and A @ V both keep
    assert saved_for_backward_bytes(explicit, q, k, v) == 3 * H * N * D * 4 + H * N * N * 4


def test_a_function_that_saves_nothing_counts_zero():
    x = torch.randn(5, 3)
    assert saved_for_backward_bytes(lambda t: t + 1.0, x) == 0


def test_segment_start_states_on_the_ctx_are_counted():
    """The states a custom Function keeps on ctx.memo are invisible to the hooks and must still count."""
    H, D, C = 1, 4, DEFAULT_CHUNK_SIZE
    N = 4 * SEGMENT_CHUNKS * C  # long enough for several segments
    q, k = torch.rand(2, 1, H, N, D).unbind(0)
    v = torch.randn(1, H, N, D)
    starts = len(segments(N, C)) - 1
    assert starts > 0
    assert saved_for_backward_bytes(causal_product, q, k, v) == 3 * H * N * D * 4 + starts * H * D * D * 4


@pytest.mark.parametrize("inputs", [(), (torch.arange(3),), ("x",)])
def test_bad_inputs_name_the_argument(inputs):
    with pytest.raises(ValueError, match="inputs"):
        saved_for_backward_bytes(lambda *a: a[0], *inputs)


def test_an_output_without_graph_is_an_error():
    with pytest.raises(ValueError, match="fn must return"):
        saved_for_backward_bytes(lambda t: t.detach(), torch.randn(3))
