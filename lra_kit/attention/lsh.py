"""Reformer's LSH attention (Kitaev et al. 2020, §2), the baseline "lsh-X" of Katharopoulos et al. (§4, X = rounds).

Softmax attention is dominated by each query's largest scores. Reformer finds them without forming QKᵀ:

1. **Shared query/key.** One projection gives ``qk``; the keys are the unit-normalised queries,
   k_j = q_j/‖q_j‖ (Kitaev et al. §2, "Shared-QK Transformer"). Then q_i and k_j are close in angle
   exactly when they would score high, and both can be hashed alike.
2. **Angular LSH.** A random rotation R (D × b/2) hashes x to h(x) = argmax([xR ; −xR]), one of b buckets
   (Andoni et al. 2015, as in Kitaev et al. eq. 4 and Fig. 1). Vectors at a small angle share a bucket with high
   probability, vectors at a large angle rarely.
3. **Sort and chunk.** Positions are sorted by (bucket, position) and cut into chunks of ``chunk_size``; each
   chunk attends to itself and to the chunk before it (a bucket may straddle a chunk boundary).
4. **No attention to oneself** unless nothing else is visible: with shared QK, qᵢ·kᵢ would dominate
   every row (Kitaev et al. §2, "Causal masking for shared-QK attention").
5. **Rounds.** ``n_hashes`` independent rotations each give an attention over their own key set Pᵢ⁽ʳ⁾
   with its log-sum-exp zᵢ⁽ʳ⁾; the rounds are combined with weights softmax_r(zᵢ⁽ʳ⁾), which is softmax
   attention over the union of the rounds' key sets, a key counted once per round that finds it.

Layout and the chunk before the first one: every round is sorted and chunked separately (positions padded
to a whole number of chunks). ``look_back="round"`` (the default) gives the first chunk of each round no
chunk before it. ``look_back="cyclic"`` is the layout of trax's ``look_adjacent`` (the published code, which
the other reimplementations follow: reformer-pytorch 1.4.4 ``LSHAttention``, Hugging Face's
``LSHSelfAttention``): the rounds' chunks stand in one cyclic row, so the first chunk of a round also sees
the last chunk of the round before (of the last round, for round 0). That window crosses rounds and the end
of the sequence for no reason of the method, and makes padding visible; it is here for the cross-check
against that code. fast-transformers' ``ReformerAttention`` (the Katharopoulos et al. library) differs in
two more ways: it averages the rounds (weight 1/rounds, not their log-sum-exp) and has no self-mask unless
``masked=True``; ``docs/reference-implementations.md`` lists the differences.

Padding: padded keys are never attended to, and padded positions are hashed to an extra bucket that sorts
after every real one, so the chunks of the real positions are exactly those of the unpadded sequence:
padding is invisible (with ``look_back="round"``). Padded queries get a zero output.

Causality: with ``causal=True`` a query never attends to a later position. The sort is global, though: a
later token's bucket can move a chunk boundary and change *which* earlier keys share a query's window, so
an earlier output can change when a later token changes (it never has a gradient with respect to it). The
book measures how often (chapter "The baselines the papers measured against").

Cost: O(N log N) for the sort, O(N · chunk_size) for the attention, per round. There is no recurrent form
(Katharopoulos et al. appendix C.1: sorting and chunking must be redone for each new input), so generation
re-runs the model on the prefix.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from lra_kit.attention.checks import check_key_padding_mask
from lra_kit.attention.heads import merge_heads, split_heads
from lra_kit.attention.modules import AttentionOutput, MultiheadAttention

# Attention to oneself: finite, so that a query with no other visible key (the first position of a causal
# sequence) still attends to itself, and far enough below any real score that exp() of it underflows to 0
# next to one. -5e4 fits in float16 (largest 65,504) as in reformer-pytorch's TOKEN_SELF_ATTN_VALUE.
SELF_SCORE = -5e4
LOOK_BACKS = ("round", "cyclic")


def random_rotations(n_hashes: int, dim: int, n_buckets: int, *, generator: torch.Generator | None = None,
                     dtype: torch.dtype = torch.float32, device=None) -> torch.Tensor:
    """R, (n_hashes, dim, n_buckets/2), i.i.d. N(0, 1): one random rotation per round (Kitaev et al. §2)."""
    check_lsh_options(n_hashes=n_hashes, n_buckets=n_buckets)
    if not isinstance(dim, int) or dim < 1:
        raise ValueError(f"dim must be a positive int, got {dim!r}")
    r = torch.randn(n_hashes, dim, n_buckets // 2, generator=generator, dtype=torch.float64)
    return r.to(dtype=dtype, device=device)


def lsh_buckets(x: torch.Tensor, rotations: torch.Tensor) -> torch.Tensor:
    """h(x) = argmax([xR ; −xR]) for each round: (batch, heads, N, D) → (batch, heads, n_hashes, N) in [0, b).

    Computed in at least float32: a half-precision product would round near-ties differently and hash a
    float16 model's positions apart from its float32 twin's."""
    dtype = torch.promote_types(x.dtype, torch.float32)
    rotated = torch.einsum("bhnd,rdk->bhrnk", x.to(dtype), rotations.to(dtype))
    return torch.cat([rotated, -rotated], dim=-1).argmax(dim=-1)


def check_lsh_options(*, n_hashes: int | None = None, n_buckets: int | None = None, chunk_size: int | None = None,
                      look_back: str | None = None) -> None:
    """Clear errors for LSH's options (``docs/design.md`` §7)."""
    if n_hashes is not None and (not isinstance(n_hashes, int) or isinstance(n_hashes, bool) or n_hashes < 1):
        raise ValueError(f"n_hashes must be a positive int (the rounds of hashing: 1, 4, 8 in the papers), "
                         f"got {n_hashes!r}")
    if n_buckets is not None and (not isinstance(n_buckets, int) or isinstance(n_buckets, bool)
                                  or n_buckets < 2 or n_buckets % 2):
        raise ValueError(f"n_buckets must be an even int >= 2 (h(x) = argmax([xR; -xR]) has 2 x R's columns), "
                         f"got {n_buckets!r}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or isinstance(chunk_size, bool)
                                   or chunk_size < 1):
        raise ValueError(f"chunk_size must be a positive int, got {chunk_size!r}")
    if look_back is not None and look_back not in LOOK_BACKS:
        raise ValueError(f"look_back must be one of {LOOK_BACKS}, got {look_back!r}")


def lsh_attention(
    qk: torch.Tensor,
    v: torch.Tensor,
    *,
    rotations: torch.Tensor,
    chunk_size: int = 32,
    causal: bool = False,
    key_padding_mask: torch.Tensor | None = None,
    look_back: str = "round",
    dropout_p: float = 0.0,
) -> torch.Tensor:
    """Shared-QK LSH attention (Kitaev et al. §2; ``n_hashes`` rounds combined by log-sum-exp).

    ``qk`` (batch, heads, N, D) is both the queries and, unit-normalised, the keys; ``v`` (batch, heads, N, Dv).
    ``rotations`` (n_hashes, D, n_buckets/2) from :func:`random_rotations` fix the hash of every round.
    ``key_padding_mask`` is bool (batch, N), True marks padding. See the module docstring for the chunk
    window, ``look_back`` and what causality means here. Returns (batch, heads, N, Dv).
    """
    _check_inputs(qk, v, rotations)
    check_key_padding_mask(key_padding_mask, qk)
    check_lsh_options(chunk_size=chunk_size, look_back=look_back)
    if not (isinstance(dropout_p, (int, float)) and 0.0 <= dropout_p < 1.0):
        raise ValueError(f"dropout_p must be in [0, 1), got {dropout_p!r}")
    B, H, N, D = qk.shape
    R, n_buckets = rotations.shape[0], 2 * rotations.shape[-1]
    n_chunks = -(-N // chunk_size)
    slots = n_chunks * chunk_size  # each round padded to whole chunks with "filler" slots (position N)

    # 1. hash, and sort each round by (bucket, position); padding hashes to bucket n_buckets, after every real one
    buckets = lsh_buckets(qk.detach(), rotations)
    if key_padding_mask is not None:
        buckets = buckets.masked_fill(key_padding_mask[:, None, None, :], n_buckets)
    position = torch.arange(N, device=qk.device)
    order = (buckets * N + position).argsort(dim=-1)  # (B, H, R, N): the position in each sorted slot
    order = F.pad(order, (0, slots - N), value=N)  # filler slots point at an extra all-zero row N

    # 2. gather each round's sorted queries, unit keys and values in one pass: (B, H, R·C, chunk, ·). The keys
    # are normalised before the gather, on N rows rather than R·N.
    Dv = v.shape[-1]
    rows = F.pad(torch.cat([qk, F.normalize(qk, dim=-1), v], dim=-1), (0, 0, 0, 1))  # row N: the filler slots
    index = order.reshape(B, H, R * slots, 1).expand(-1, -1, -1, rows.shape[-1])
    chunks = rows.gather(2, index).reshape(B, H, R * n_chunks, chunk_size, -1)
    q_c, k_c, v_c = chunks.split([D, D, Dv], dim=-1)
    pos_c = order.reshape(B, H, R * n_chunks, chunk_size)
    pad = torch.zeros(B, N + 1, dtype=torch.bool, device=qk.device)
    pad[:, N] = True
    if key_padding_mask is not None:
        pad[:, :N] = key_padding_mask
    key_ok = ~pad.gather(1, order.reshape(B, -1)).reshape(B, H, R * n_chunks, chunk_size)

    # 3. each chunk sees itself and the chunk before (the cyclic row of trax's look_adjacent, cut per round)
    def with_previous(x):
        return torch.cat([x, x.roll(1, dims=2)], dim=3)

    k_w, v_w, pos_w = with_previous(k_c), with_previous(v_c), with_previous(pos_c)
    ok_w = with_previous(key_ok)
    if look_back == "round":
        first = (torch.arange(R * n_chunks, device=qk.device) % n_chunks == 0)[:, None]
        ok_w = ok_w & ~torch.cat([torch.zeros_like(first.expand(-1, chunk_size)),
                                  first.expand(-1, chunk_size)], dim=1)
    # which score each query keeps, and what replaces the others: -5e4 for oneself, the dtype's lowest otherwise
    work = torch.promote_types(qk.dtype, torch.float32)
    is_self = pos_w[..., None, :] == pos_c[..., :, None]
    keep = ok_w[..., None, :] & ~is_self
    if causal:
        keep = keep & (pos_w[..., None, :] <= pos_c[..., :, None])
    fill = torch.where(is_self, SELF_SCORE, -math.inf).to(work)

    # 4. scores, softmax within the window and each query's log-sum-exp z, in at least float32
    drop = None
    if dropout_p > 0:
        drop = F.dropout(torch.ones_like(fill), p=dropout_p)  # 0 or 1/(1 - p) per weight
    out, z = WindowSoftmax.apply(q_c.to(work) * D ** -0.5, k_w.to(work), v_w.to(work), keep, fill, drop)
    out = out.to(v.dtype)

    # 5. unsort (the first N slots of each round hold the N positions) and combine rounds by softmax_r(z)
    undo = order[..., :N].argsort(dim=-1)
    out = out.reshape(B, H, R, slots, -1)[..., :N, :].gather(3, undo[..., None].expand(-1, -1, -1, -1, out.shape[-1]))
    z = z.reshape(B, H, R, slots)[..., :N].gather(3, undo)
    out = (torch.softmax(z, dim=2)[..., None].to(out.dtype) * out).sum(dim=2)
    if key_padding_mask is not None:
        out = out.masked_fill(key_padding_mask[:, None, :, None], 0.0)
    return out


def _check_inputs(qk, v, rotations) -> None:
    for name, t in (("qk", qk), ("v", v), ("rotations", rotations)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if not t.is_floating_point():
            raise TypeError(f"{name} must be a floating tensor, got dtype {t.dtype}")
    if qk.dim() != 4 or v.dim() != 4:
        raise ValueError(f"qk and v must have shape (batch, heads, length, dim), got {tuple(qk.shape)} and "
                         f"{tuple(v.shape)}")
    if qk.shape[:3] != v.shape[:3]:
        raise ValueError(f"qk and v must agree in (batch, heads, length), got {tuple(qk.shape[:3])} and "
                         f"{tuple(v.shape[:3])}")
    if qk.shape[2] < 1:
        raise ValueError("sequences must have length >= 1")
    if qk.dtype != v.dtype:
        raise TypeError(f"qk and v must share a dtype, got {qk.dtype} and {v.dtype}")
    if rotations.dim() != 3 or rotations.shape[1] != qk.shape[-1]:
        raise ValueError(f"rotations must have shape (n_hashes, {qk.shape[-1]}, n_buckets/2), got "
                         f"{tuple(rotations.shape)}")


class WindowSoftmax(torch.autograd.Function):
    """Softmax attention of each chunk's queries over its window, with each query's log-sum-exp z.

    (q, k, v, keep, fill[, drop]) → (o, z): s = q kᵀ where ``keep``, else ``fill``; w = softmax(s);
    o = (w ⊙ drop) v; z = log Σⱼ exp sⱼ. The same as ``torch.softmax`` and ``torch.logsumexp`` under autograd
    (the test suite checks both ways), in one exponential pass over the scores instead of three: on a CPU the
    exponentials were most of an LSH training step. The row's largest score is subtracted, so a row that sees
    only itself (score -5e4, where float16's spacing is 32 and float32's 0.004) gets the weight exactly 1.

    Backward, with ∂w = (∂o vᵀ) ⊙ drop: ∂s = w ⊙ (∂w − Σⱼ wⱼ ∂wⱼ + ∂z) where ``keep``, 0 where the score was
    replaced (∂z/∂s = w, and Σⱼ wⱼ ∂wⱼ = ∂o · o without dropout).
    """

    @staticmethod
    def forward(ctx, q, k, v, keep, fill, drop):
        s = torch.where(keep, q @ k.transpose(-1, -2), fill)
        top = s.amax(dim=-1, keepdim=True)
        w = s.sub_(top).exp_()
        total = w.sum(dim=-1, keepdim=True)
        w.div_(total)
        o = (w if drop is None else w * drop) @ v
        ctx.save_for_backward(q, k, v, keep, w, o, drop)
        return o, (top + total.log()).squeeze(-1)

    @staticmethod
    def backward(ctx, grad_o, grad_z):
        q, k, v, keep, w, o, drop = ctx.saved_tensors
        grad_w = grad_o @ v.transpose(-1, -2)
        if drop is None:
            grad_v = w.transpose(-1, -2) @ grad_o
            row = (grad_o * o).sum(dim=-1, keepdim=True)
        else:
            grad_v = (w * drop).transpose(-1, -2) @ grad_o
            grad_w.mul_(drop)
            row = (grad_w * w).sum(dim=-1, keepdim=True)
        grad_s = grad_w.sub_(row - grad_z[..., None]).mul_(w).masked_fill_(~keep, 0.0)
        return grad_s @ k, grad_s.transpose(-1, -2) @ q, grad_v, None, None, None


class LSHAttention(MultiheadAttention):
    """Multi-head LSH attention (Reformer, Kitaev et al. 2020 §2): shared QK, ``n_hashes`` rounds.

    The model has one projection for queries and keys (``W_q``; there is no ``W_k``) and ``W_v``, ``W_o``.
    Rotations: in training mode every forward pass draws fresh ones from torch's generator (as Reformer
    does, so the model learns not to rely on one hash); in eval mode the ``rotations`` buffer is used, drawn
    at construction, saved in ``state_dict`` and redrawn only by :meth:`redraw`. Options as in the papers:
    ``n_buckets`` 64 and chunks of about 32 (Katharopoulos et al. §4: lsh-1/4/8 with 64 buckets; chunks of 29
    for MNIST and 37 for CIFAR-10). No recurrent form: ``step`` and ``output_final_state`` are errors, and
    :meth:`lra_kit.models.CausalLM.generate` re-runs the model on the prefix.
    """

    def __init__(self, d_model, n_heads, *, causal=False, head_dim=None, n_hashes: int = 1, n_buckets: int = 64,
                 chunk_size: int = 32, dropout: float = 0.0, look_back: str = "round"):
        super().__init__(d_model, n_heads, causal=causal, head_dim=head_dim)
        check_lsh_options(n_hashes=n_hashes, n_buckets=n_buckets, chunk_size=chunk_size, look_back=look_back)
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        del self.W_k  # shared QK: the keys are the normalised queries
        self.n_hashes, self.n_buckets, self.chunk_size = n_hashes, n_buckets, chunk_size
        self.dropout, self.look_back = dropout, look_back
        self.register_buffer("rotations", random_rotations(n_hashes, self.head_dim, n_buckets))

    def redraw(self, generator: torch.Generator | None = None) -> None:
        """New fixed rotations for eval mode (training draws its own at every call)."""
        fresh = random_rotations(self.n_hashes, self.head_dim, self.n_buckets, generator=generator)
        self.rotations.copy_(fresh)

    def forward(self, x, p=None, key_padding_mask=None, *, initial_state=None, output_final_state=False):
        """x (batch, length, d_model) → ``AttentionOutput(out, p, None)`` (``p`` passed through)."""
        if x.dim() != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"x must have shape (batch, length, {self.d_model}), got {tuple(x.shape)}")
        if initial_state is not None or output_final_state:
            raise ValueError("LSH attention has no recurrent form, so no initial_state/output_final_state (its "
                             "sort and chunks are redone for every input; Katharopoulos et al. appendix C.1)")
        qk, v = split_heads(self.W_q(x), self.n_heads), split_heads(self.W_v(x), self.n_heads)
        rotations = self.rotations
        if self.training:
            rotations = torch.randn(rotations.shape, dtype=rotations.dtype, device=rotations.device)
        out = lsh_attention(qk, v, rotations=rotations, chunk_size=self.chunk_size, causal=self.causal,
                            key_padding_mask=key_padding_mask, look_back=self.look_back,
                            dropout_p=self.dropout if self.training else 0.0)
        return AttentionOutput(self.W_o(merge_heads(out)), p, None)

    def step(self, x_t, p=None, state=None):
        raise RuntimeError("LSH attention has no recurrent step (Katharopoulos et al. appendix C.1): generate by "
                           "re-running the model on the prefix (CausalLM.generate does so for it)")

    def extra_repr(self) -> str:
        return (f"n_hashes={self.n_hashes}, n_buckets={self.n_buckets}, chunk_size={self.chunk_size}, "
                f"causal={self.causal}, look_back={self.look_back!r}")
