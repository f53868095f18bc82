"""Reformer's LSH attention: against reformer-pytorch (code nobody here wrote), the loop oracle, softmax, causality.

The cross-check runs reformer-pytorch 1.4.4's ``LSHAttention`` (MIT licence; the ``[test]`` extra) with our
rotations injected through its one call to ``torch.randn``. Its layout is trax's cyclic one, so our
``look_back="cyclic"`` is compared with it; the default layout (``"round"``) is compared with the loop oracle.
"""
from __future__ import annotations

import math
from unittest import mock

import pytest
import torch

from attention_helpers import assert_close, rand_qkv, right_padding_mask
from lra_kit.attention import LSHAttention, build_attention, lsh_attention, lsh_buckets, random_rotations
from lra_kit.attention.naive import naive_lsh_attention, naive_softmax_attention

reformer = pytest.importorskip("reformer_pytorch.reformer_pytorch", reason="reformer-pytorch is in the [test] extra")


def reference_lsh(qk, v, rotations, chunk_size, *, causal, input_mask=None):
    """reformer-pytorch's LSHAttention on (batch·heads, N, D), its random rotations replaced by ours."""
    B, H, N, D = qk.shape
    R, half = rotations.shape[0], rotations.shape[-1]
    ref = reformer.LSHAttention(bucket_size=chunk_size, n_hashes=R, causal=causal)
    assert N // chunk_size == 2 * half, "reformer-pytorch derives its bucket count from N / bucket_size"

    def injected(shape, dtype=None, device=None):
        assert tuple(shape) == (1, D, R, half)
        return rotations.permute(1, 0, 2)[None].to(dtype)

    mask = None if input_mask is None else (~input_mask).repeat_interleave(H, dim=0)
    with mock.patch.object(torch, "randn", injected):
        out, _, _ = ref(qk.reshape(B * H, N, D), v.reshape(B * H, N, -1), input_mask=mask)
    return out.reshape(B, H, N, -1)


def hashed_last(rotations, D, dtype=torch.float64):
    """A vector whose bucket is the last one (b − 1) in every round: padding then sorts last in reformer-pytorch
    too, where it is hashed like any position (our code gives padding its own bucket, after every real one)."""
    R, _, half = rotations.shape
    A = rotations.permute(1, 0, 2).reshape(D, R * half).T  # (R·half, D): x ↦ xR for every round at once
    target = torch.zeros(R, half, dtype=dtype)
    target[:, -1] = -10.0  # [xR; −xR]'s largest entry is then −(xR)_last: the bucket half + half − 1 = b − 1
    return torch.linalg.lstsq(A, target.reshape(-1, 1)).solution[:, 0]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("n_hashes", [1, 3])
@pytest.mark.parametrize("padded", [False, True])
def test_cyclic_layout_equals_reformer_pytorch(causal, n_hashes, padded):
    B, H, N, D, chunk = 2, 2, 32, 8, 4
    qk, _, v = rand_qkv(B, H, N, D, seed=n_hashes)
    rotations = random_rotations(n_hashes, D, N // chunk, generator=torch.Generator().manual_seed(1),
                                 dtype=torch.float64)
    mask = None
    if padded:
        mask = right_padding_mask([N, N - 9], N)
        qk = qk.clone()
        qk[1, :, N - 9:] = hashed_last(rotations, D)  # padding sorts last in both codes
        assert (lsh_buckets(qk, rotations)[1, :, :, N - 9:] == N // chunk - 1).all()
    qk.requires_grad_(True)
    v.requires_grad_(True)
    ours = lsh_attention(qk, v, rotations=rotations, chunk_size=chunk, causal=causal, key_padding_mask=mask,
                         look_back="cyclic")
    theirs = reference_lsh(qk, v, rotations, chunk, causal=causal, input_mask=mask)
    real = 1.0 if mask is None else (~mask)[:, None, :, None].double()
    assert_close(ours * real, theirs * real, rtol=1e-9, atol=1e-11)
    g = torch.randn_like(ours) * real
    assert_close(torch.autograd.grad(ours, (qk, v), g), torch.autograd.grad(theirs, (qk, v), g), rtol=1e-8,
                 atol=1e-10)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("n_hashes,n_buckets,chunk", [(1, 8, 4), (4, 4, 5), (2, 16, 3)])
def test_equals_loop_oracle_with_padding(causal, n_hashes, n_buckets, chunk):
    B, H, N, D = 3, 2, 19, 6
    qk, _, v = rand_qkv(B, H, N, D, seed=chunk)
    rotations = random_rotations(n_hashes, D, n_buckets, generator=torch.Generator().manual_seed(2),
                                 dtype=torch.float64)
    mask = right_padding_mask([N, 11, 1], N)
    ours = lsh_attention(qk, v, rotations=rotations, chunk_size=chunk, causal=causal, key_padding_mask=mask)
    oracle = naive_lsh_attention(qk, v, rotations=rotations, chunk_size=chunk, causal=causal, key_padding_mask=mask)
    assert_close(ours, oracle)
    # padding is invisible: the padded row's real positions are those of its unpadded prefix
    short = lsh_attention(qk[1:2, :, :11], v[1:2, :, :11], rotations=rotations, chunk_size=chunk, causal=causal)
    assert_close(ours[1:2, :, :11], short)
    assert (ours[1, :, 11:] == 0).all() and (ours[2, :, 1:] == 0).all()


def test_gradcheck():
    qk, _, v = rand_qkv(1, 1, 9, 3, seed=3, requires_grad=True)
    rotations = random_rotations(2, 3, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    mask = right_padding_mask([7], 9)
    for causal in (False, True):
        assert torch.autograd.gradcheck(
            lambda a, b, c=causal: lsh_attention(a, b, rotations=rotations, chunk_size=2, causal=c,
                                                 key_padding_mask=mask), (qk, v))


@pytest.mark.parametrize("causal", [False, True])
def test_one_chunk_is_shared_qk_softmax_without_self(causal):
    """With one chunk every position sees every other, whatever the buckets: shared-QK softmax, self masked."""
    B, H, N, D = 2, 2, 13, 4
    qk, _, v = rand_qkv(B, H, N, D, seed=5)
    mask = right_padding_mask([N, 8], N)
    rotations = random_rotations(3, D, 8, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    ours = lsh_attention(qk, v, rotations=rotations, chunk_size=N, causal=causal, key_padding_mask=mask)
    keys = torch.nn.functional.normalize(qk, dim=-1)
    # the self-mask as a score: subtract a huge multiple of e_i from key i, seen by query i only
    scores = qk @ keys.transpose(-1, -2) / D ** 0.5
    allowed = (~mask)[:, None, None, :].expand(B, H, N, N)
    if causal:
        allowed = allowed & torch.ones(N, N, dtype=torch.bool).tril()
    eye = torch.eye(N, dtype=torch.bool)
    scores = scores.masked_fill(~allowed, float("-inf")).masked_fill(eye, -5e4)
    expected = torch.softmax(scores, dim=-1) @ v
    expected = expected.masked_fill(mask[:, None, :, None], 0.0)
    assert_close(ours, expected)
    # and without the self-mask nothing would change but the diagonal's weight: it is not plain softmax
    plain = naive_softmax_attention(qk, keys, v, causal=causal, key_padding_mask=mask)
    assert (ours - plain).abs().max() > 1e-3


def test_causal_no_gradient_from_later_tokens_and_how_often_outputs_move():
    """Causal LSH attends only to earlier positions: an earlier output has no gradient with respect to any later
    token. The sort is global, though, so a later token can still move a chunk boundary and change which earlier
    keys share an earlier query's window: count how often changing the last token moves an earlier output."""
    B, H, N, D, chunk = 1, 4, 64, 8, 8
    rotations = random_rotations(2, D, 8, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    qk, _, v = rand_qkv(B, H, N, D, seed=7, requires_grad=True)
    out = lsh_attention(qk, v, rotations=rotations, chunk_size=chunk, causal=True)
    t = 40
    g_qk, g_v = torch.autograd.grad(out[:, :, :t].sum(), (qk, v))
    assert g_qk[:, :, t:].abs().max() == 0 and g_v[:, :, t:].abs().max() == 0
    assert g_qk[:, :, :t].abs().max() > 0
    moved = 0
    for trial in range(20):
        changed = qk.detach().clone()
        changed[:, :, -1] = torch.randn(H, D, generator=torch.Generator().manual_seed(trial), dtype=torch.float64)
        again = lsh_attention(changed, v.detach(), rotations=rotations, chunk_size=chunk, causal=True)
        moved += int(((again - out.detach())[:, :, :-1].abs() > 1e-12).any())
    assert moved > 0  # causal in what it attends to, not in which past keys it gets to see


def test_buckets_are_the_argmax_of_the_rotation():
    x = torch.tensor([[[[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]]]], dtype=torch.float64)
    rotations = torch.eye(2, dtype=torch.float64)[None]  # b = 4 buckets: +x, +y, −x, −y
    assert lsh_buckets(x, rotations).tolist() == [[[[0, 1, 2]]]]


def test_module_rotations_fresh_in_training_fixed_in_eval():
    torch.manual_seed(0)
    attn = build_attention("lsh", 16, 2, n_hashes=2, n_buckets=8, chunk_size=4, causal=True).double()
    assert not hasattr(attn, "W_k")  # shared QK
    x = torch.randn(2, 24, 16, dtype=torch.float64)
    y1, y2 = attn(x).out, attn(x).out
    assert (y1 - y2).abs().max() > 1e-6  # training: a new hash each call
    attn.eval()
    assert torch.equal(attn(x).out, attn(x).out)
    saved = {k: t.clone() for k, t in attn.state_dict().items()}
    fixed = attn(x).out
    attn.redraw(torch.Generator().manual_seed(5))
    assert not torch.equal(attn(x).out, fixed)
    attn.load_state_dict(saved)
    assert torch.equal(attn(x).out, fixed)


def test_module_errors():
    attn = build_attention("lsh", 16, 2, causal=True)
    with pytest.raises(RuntimeError, match="no recurrent step"):
        attn.step(torch.randn(1, 16))
    with pytest.raises(ValueError, match="no recurrent form"):
        attn(torch.randn(1, 3, 16), output_final_state=True)
    for bad in ({"n_hashes": 0}, {"n_buckets": 7}, {"chunk_size": 0}, {"look_back": "wrap"}, {"dropout": 1.0}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            build_attention("lsh", 16, 2, **bad)
    qk, _, v = rand_qkv(1, 1, 5, 4)
    with pytest.raises(ValueError, match="rotations"):
        lsh_attention(qk, v, rotations=torch.randn(1, 3, 2, dtype=torch.float64))
    with pytest.raises(TypeError, match="dtype"):
        lsh_attention(qk, v.float(), rotations=torch.randn(1, 4, 2, dtype=torch.float64))


def test_half_precision_is_finite():
    qk, _, v = rand_qkv(2, 2, 40, 8, dtype=torch.float32)
    rotations = random_rotations(2, 8, 8, generator=torch.Generator().manual_seed(0))
    mask = right_padding_mask([40, 3], 40)
    for dtype in (torch.float16, torch.bfloat16):
        out = lsh_attention(qk.to(dtype), v.to(dtype), rotations=rotations, chunk_size=8, causal=True,
                            key_padding_mask=mask)
        ref = lsh_attention(qk, v, rotations=rotations, chunk_size=8, causal=True, key_padding_mask=mask)
        assert torch.isfinite(out).all()
        assert (out.float() - ref).abs().max() < 0.05


def test_generation_reruns_the_prefix():
    """LSH has no recurrent form: generate() re-runs the model on the prefix, so the tokens equal greedy decoding
    by full forward passes (eval rotations are fixed, so each pass hashes alike)."""
    from lra_kit.models import ModelConfig, build_model

    torch.manual_seed(0)
    cfg = ModelConfig(attention="lsh", attention_options={"n_hashes": 2, "n_buckets": 4, "chunk_size": 4},
                      layers=2, d_model=16, n_heads=2, d_ff=32)
    model = build_model(cfg, kind="lm", vocab_size=7, max_length=20).eval()
    prompt = torch.tensor([[1, 2, 3]])
    tokens = model.generate(prompt, 8, greedy=True)
    by_hand = prompt
    with torch.no_grad():
        for _ in range(8):
            by_hand = torch.cat([by_hand, model(by_hand)[:, -1].argmax(-1, keepdim=True)], dim=1)
    assert torch.equal(tokens, by_hand)
    assert isinstance(model.encoder.layers[0].attn, LSHAttention)


def test_runs_are_named_lsh_x_and_take_the_papers_options():
    """A run of LSH with X rounds is named lsh-X (Katharopoulos et al.'s name); the configs carry the papers' options:
    chunks of 29 on MNIST, 2 rounds and chunks of 64 on LRA (the Nyströmformer code's reformer-2 with Hugging Face's
    defaults), buckets from the length there."""
    from lra_kit.train.configs import get_config
    from lra_kit.train.paper_configs import hf_lsh_buckets

    assert get_config("copy", "lsh", "smoke").name == "copy-lsh-1-smoke"
    assert get_config("mnist", "lsh", "paper").model.attention_options["chunk_size"] == 29
    lra = get_config("listops", "lsh", preset="lra-cpu-2h")
    assert lra.name == "listops-lsh-2-lra-cpu-2h"
    assert lra.model.attention_options == {"n_hashes": 2, "n_buckets": 32, "chunk_size": 64}
    assert [hf_lsh_buckets(n) for n in (1024, 2000, 4000, 4096)] == [32, 32, 64, 128]


@pytest.mark.parametrize("dropout", [False, True])
def test_window_softmax_equals_autograd_softmax_and_logsumexp(dropout):
    """The hand-written backward (one exponential pass) against torch.softmax and torch.logsumexp under
    autograd, with rows that see only themselves, rows that see nothing but the fill, and a gradient on z."""
    from lra_kit.attention.lsh import WindowSoftmax

    g = torch.Generator().manual_seed(7)
    q, k, v = (torch.randn(3, 5, n, 4, generator=g, dtype=torch.float64, requires_grad=True) for n in (4, 6, 6))
    keep = torch.rand(3, 5, 4, 6, generator=g) < 0.6
    keep[0, 0, 1] = False  # a row that keeps no score: its fill decides
    fill = torch.full((3, 5, 4, 6), -math.inf, dtype=torch.float64)
    fill[..., 2, 2] = -5e4  # a self score
    fill[0, 0, 1, 3] = -5e4
    drop = (torch.rand(3, 5, 4, 6, generator=g) > 0.3).double() / 0.7 if dropout else None

    def reference(q, k, v):
        s = torch.where(keep, q @ k.transpose(-1, -2), fill)
        w = torch.softmax(s, dim=-1)
        return (w if drop is None else w * drop) @ v, torch.logsumexp(s, dim=-1)

    ours, ref = WindowSoftmax.apply(q, k, v, keep, fill, drop), reference(q, k, v)
    go, gz = torch.randn_like(ref[0]), torch.randn_like(ref[1])
    for a, b in zip(ours, ref, strict=True):
        assert_close(a, b, rtol=1e-12, atol=1e-12)
    grads = torch.autograd.grad((ours[0] * go).sum() + (ours[1] * gz).sum(), (q, k, v))
    expected = torch.autograd.grad((ref[0] * go).sum() + (ref[1] * gz).sum(), (q, k, v))
    for a, b in zip(grads, expected, strict=True):
        assert_close(a, b, rtol=1e-10, atol=1e-12)
