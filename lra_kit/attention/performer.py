"""Performer attention: FAVOR+ (Choromanski et al. 2021, "Rethinking Attention with Performers").

Softmax attention's kernel is an expectation over a Gaussian ω (their Lemma 1, positive random features):

    exp(xᵀy) = E_{ω ~ N(0, I_d)} [ exp(ωᵀx − ‖x‖²/2) · exp(ωᵀy − ‖y‖²/2) ],

so with m draws stacked in W (m × d), φ(x) = exp(Wx − ‖x‖²/2)/√m gives φ(x)ᵀφ(y), an unbiased
estimate of exp(xᵀy) that is positive for every draw. With x = q/d^{1/4} and y = k/d^{1/4} it
estimates exp(qᵀk/√d), softmax attention's kernel (Katharopoulos et al. eq. 2). The rows of W are
drawn orthogonal in blocks of d and rescaled to the norms of Gaussian vectors (Choromanski et al.
§2.4, orthogonal random features): each row is still N(0, I_d), so the estimate stays unbiased,
with a smaller variance.

Performer attention is then linear attention (Katharopoulos et al. eqs. 5, 9) with this φ: the
same causal product with its constant-memory gradient, and the same RNN step (eqs. 16–20).

Numerical stabilisers. exp(ωᵀx − ‖x‖²/2) overflows in float32 for ordinary inputs, so both sides
are rescaled, in a way that cancels exactly and never looks at a later token. Write
a_i = ‖ω_i‖²/2 − c with one constant c (``FavorPlus.key_offset``):

    keys:     exp(ω_iᵀy − ‖y‖²/2 − a_i)/√m = exp(c − ‖y − ω_i‖²/2)/√m  ≤ e^c/√m   (no overflow, no data involved)
    queries:  exp(e_i − max_j e_j)/√m  with  e_i = ω_iᵀx − ‖x‖²/2 + a_i          (largest feature 1/√m)

The a_i move between the two sides of φ(x)ᵀφ(y) = Σ_i φ_i(x)φ_i(y) and cancel term by term; what is
left, exp(−max_j e_j(x)), depends on the query only and cancels between the numerator and the
denominator of eq. 5/9, which are both linear in φ(q_i). The keys' features depend on that key and
on W only, so the causal form and the step form see the same features at every position.
"""
from __future__ import annotations

import math

import torch

from lra_kit.attention.causal.op import DEFAULT_CHUNK_SIZE
from lra_kit.attention.checks import check_qkv, check_step
from lra_kit.attention.feature_maps import FeatureMap
from lra_kit.attention.linear import LinearState, linear_attention, linear_attention_step
from lra_kit.attention.modules import MultiheadAttention
from lra_kit.attention.precision import compute_dtype

# c is at most this: the keys' features are at most e^60/√m, and even 10^12 of them sum to less
# than float32's largest number (e^88.7). Below the cap, c = d/2 centres the typical key exponent
# c − (‖ω‖² + ‖y‖²)/2 + ωᵀy near −‖y‖²/2, far above float32's smallest normal number (e^−87).
MAX_KEY_OFFSET = 60.0


def default_n_features(dim: int) -> int:
    """m = ⌈d ln d⌉ random features, at least d (Choromanski et al.: m = Θ(d log d) suffices)."""
    return max(dim, math.ceil(dim * math.log(dim)))


def gaussian_orthogonal_projection(
    n_features: int, dim: int, *, orthogonal: bool = True, generator: torch.Generator | None = None
) -> torch.Tensor:
    """W (n_features × dim), float64 on the CPU, whose rows are each distributed N(0, I_dim).

    ``orthogonal=True``: blocks of ``dim`` exactly orthogonal rows (Choromanski et al. §2.4), each
    block the Q of a Gaussian matrix's QR with the signs fixed so that Q is Haar-distributed
    (its rows uniform on the sphere), each row then scaled by the norm of an independent
    Gaussian vector (a χ_dim length): direction and length together make the row N(0, I).
    """
    _check_positive_int("n_features", n_features)
    _check_positive_int("dim", dim)
    if not orthogonal:
        return torch.randn(n_features, dim, generator=generator, dtype=torch.float64)
    blocks = []
    for _ in range(-(-n_features // dim)):
        q, r = torch.linalg.qr(torch.randn(dim, dim, generator=generator, dtype=torch.float64))
        blocks.append((q * torch.sign(torch.diagonal(r))).T)  # rows of a Haar orthogonal matrix
    lengths = torch.randn(n_features, dim, generator=generator, dtype=torch.float64).norm(dim=1, keepdim=True)
    return torch.cat(blocks)[:n_features] * lengths


def positive_random_features(x: torch.Tensor, projection: torch.Tensor) -> torch.Tensor:
    """φ(x) = exp(Wx − ‖x‖²/2)/√m, Choromanski et al. Lemma 1, unstabilised: φ(x)ᵀφ(y) estimates exp(xᵀy).

    The readable form, for the oracle and the unbiasedness check (float64); attention uses
    :class:`FavorPlus`, whose stabilised features give the same attention.
    """
    m = projection.shape[0]
    return torch.exp(x @ projection.T - (x * x).sum(-1, keepdim=True) / 2) / math.sqrt(m)


class FavorPlus(FeatureMap):
    """FAVOR+ features of softmax's kernel exp(qᵀk/√d): positive orthogonal random features.

    ``projection`` (m × d) is a buffer: saved in ``state_dict``, moved by ``.to()``, and changed
    only by :meth:`redraw` — never inside a forward pass. Queries and keys are stabilised
    differently (module docstring), so a FAVOR+ map has no single ``forward``: call
    :meth:`queries` and :meth:`keys`.
    """

    def __init__(
        self, dim: int, n_features: int | None = None, *, orthogonal: bool = True,
        generator: torch.Generator | None = None,
    ):
        super().__init__()
        _check_positive_int("dim", dim)
        n_features = default_n_features(dim) if n_features is None else n_features
        _check_positive_int("n_features", n_features)
        if not isinstance(orthogonal, bool):
            raise TypeError(f"orthogonal must be a bool, got {type(orthogonal).__name__}")
        self.dim, self.n_features, self.orthogonal = dim, n_features, orthogonal
        self.key_offset = min(dim / 2, MAX_KEY_OFFSET)  # c of the module docstring
        projection = gaussian_orthogonal_projection(n_features, dim, orthogonal=orthogonal, generator=generator)
        self.register_buffer("projection", projection.to(torch.get_default_dtype()))

    def output_dim(self, dim: int) -> int:
        return self.n_features

    @torch.no_grad()
    def redraw(self, generator: torch.Generator | None = None) -> None:
        """Draw a new projection W in place (same device and dtype). Call it between batches, if at all."""
        new = gaussian_orthogonal_projection(self.n_features, self.dim, orthogonal=self.orthogonal, generator=generator)
        self.projection.copy_(new)

    def _scaled(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """x/d^{1/4}, its products Wx with the rows of W, and ‖ω_i‖²/2."""
        if not isinstance(x, torch.Tensor) or not x.is_floating_point():
            got = x.dtype if isinstance(x, torch.Tensor) else type(x).__name__
            raise TypeError(f"x must be a floating tensor, got {got}")
        if x.shape[-1] != self.dim:
            raise ValueError(f"x must have last dim {self.dim} (the head dim of this FavorPlus), got {tuple(x.shape)}")
        w = self.projection.to(x.dtype)
        x = x * self.dim ** -0.25
        return x, x @ w.T, (w * w).sum(-1) / 2

    def queries(self, x: torch.Tensor) -> torch.Tensor:
        """exp(e_i − max_j e_j)/√m with e_i = ω_iᵀx + ‖ω_i‖²/2 (the row constants −‖x‖²/2 − c cancel in the max)."""
        _, wx, half_w2 = self._scaled(x)
        e = wx + half_w2
        return torch.exp(e - e.amax(-1, keepdim=True)) / math.sqrt(self.n_features)

    def keys(self, x: torch.Tensor) -> torch.Tensor:
        """exp(c − ‖y − ω_i‖²/2)/√m, expanded as exp(ω_iᵀy − ‖y‖²/2 − ‖ω_i‖²/2 + c)/√m."""
        y, wy, half_w2 = self._scaled(x)
        e = wy - (y * y).sum(-1, keepdim=True) / 2 - half_w2 + self.key_offset
        return torch.exp(e) / math.sqrt(self.n_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise TypeError("FavorPlus maps queries and keys differently: call .queries(x) or .keys(x)")

    def extra_repr(self) -> str:
        return f"dim={self.dim}, n_features={self.n_features}, orthogonal={self.orthogonal}"


def _eps(eps: float | None, dtype: torch.dtype) -> float:
    # The features are positive, so the denominator only needs a guard against 0/0 (fully padded
    # rows); a fixed 1e-6 would swamp denominators that are legitimately tiny (keys far from every ω).
    return torch.finfo(dtype).tiny if eps is None else eps


def _check_favor(feature_map, dim: int) -> None:
    if not isinstance(feature_map, FavorPlus):
        raise TypeError(f"feature_map must be a FavorPlus module, got {type(feature_map).__name__}")
    if feature_map.dim != dim:
        raise ValueError(f"feature_map has dim {feature_map.dim}, but q and k have head dim {dim}")


def performer_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    feature_map: FavorPlus,
    causal: bool = False,
    key_padding_mask: torch.Tensor | None = None,
    eps: float | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    initial_state: LinearState | None = None,
    output_final_state: bool = False,
) -> tuple[torch.Tensor, LinearState | None]:
    """Performer attention: Katharopoulos et al. eq. 5 (eq. 9 when causal) with φ = FAVOR+.

    An estimate of softmax attention softmax(QKᵀ/√d)V whose kernel matrix is φ(Q)φ(K)ᵀ with
    Choromanski et al.'s positive random features. Shapes as :func:`~lra_kit.attention.linear_attention`;
    half-precision inputs are computed in float32. ``eps=None`` guards the denominator with the
    dtype's smallest normal number. Returns ``(out, state)`` and takes ``initial_state`` /
    ``output_final_state`` as :func:`~lra_kit.attention.linear_attention` does (the state is a ``LinearState`` of
    the features; None unless asked for).
    """
    check_qkv(q, k, v)
    _check_favor(feature_map, q.shape[-1])
    dtype = compute_dtype(q.dtype)  # the features span many orders of magnitude: half precision flushes them
    out, state = linear_attention(
        q.to(dtype), k.to(dtype), v.to(dtype), causal=causal, feature_map=feature_map,
        key_padding_mask=key_padding_mask, eps=_eps(eps, dtype), chunk_size=chunk_size,
        initial_state=initial_state, output_final_state=output_final_state,
    )
    return out.to(q.dtype), state


def performer_attention_step(
    q_t: torch.Tensor,
    k_t: torch.Tensor,
    v_t: torch.Tensor,
    state: LinearState | None = None,
    *,
    feature_map: FavorPlus,
    eps: float | None = None,
) -> tuple[torch.Tensor, LinearState]:
    """One step of causal Performer attention: the RNN form of eqs. 16–20 with the same FAVOR+ features."""
    check_step(q_t, k_t, v_t)
    _check_favor(feature_map, q_t.shape[-1])
    dtype = compute_dtype(q_t.dtype)
    out, state = linear_attention_step(
        q_t.to(dtype), k_t.to(dtype), v_t.to(dtype), state, feature_map=feature_map, eps=_eps(eps, dtype)
    )
    return out.to(q_t.dtype), state


class PerformerAttention(MultiheadAttention):
    """Multi-head Performer attention; one FAVOR+ projection per module, shared by its heads.

    ``redraw()`` draws a new projection (Choromanski et al. redraw it periodically during training);
    nothing redraws it implicitly, so a forward pass, a generation and an evaluation all see one φ.
    """

    def __init__(
        self, d_model, n_heads, *, causal=False, head_dim=None, n_features: int | None = None,
        orthogonal: bool = True, eps: float | None = None,
    ):
        super().__init__(d_model, n_heads, causal=causal, head_dim=head_dim)
        self.feature_map = FavorPlus(self.head_dim, n_features, orthogonal=orthogonal)
        self.eps = eps

    def redraw(self, generator: torch.Generator | None = None) -> None:
        self.feature_map.redraw(generator)

    def attend(self, q, k, v, key_padding_mask):
        return performer_attention(
            q, k, v, feature_map=self.feature_map, causal=self.causal, key_padding_mask=key_padding_mask, eps=self.eps
        )[0]

    def attend_with_state(self, q, k, v, key_padding_mask, state):
        return performer_attention(q, k, v, feature_map=self.feature_map, causal=True,
                                   key_padding_mask=key_padding_mask, eps=self.eps, initial_state=state,
                                   output_final_state=True)

    def attend_step(self, q_t, k_t, v_t, state):
        return performer_attention_step(q_t, k_t, v_t, state, feature_map=self.feature_map, eps=self.eps)


def _check_positive_int(name: str, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
