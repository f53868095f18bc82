"""Readable oracles, written straight from the papers' formulas (flash-linear-attention's ``naive.py`` pattern).

Nothing here is fast: explicit N×N matrices and explicit loops over time. The tests compare
every fast path in :mod:`lra_kit.attention` against these in float64, and the book's check
cells write the same formulas out next to their derivations.
"""
from __future__ import annotations

import math

import torch

from lra_kit.attention.feature_maps import get_feature_map
from lra_kit.attention.heads import merge_heads, split_heads
from lra_kit.attention.performer import positive_random_features


def _key_mask(key_padding_mask: torch.Tensor | None, like: torch.Tensor) -> torch.Tensor:
    """(B, 1, 1, N) float: 1 for real keys, 0 for padding."""
    if key_padding_mask is None:
        return torch.ones(like.shape[0], 1, 1, like.shape[2], dtype=like.dtype, device=like.device)
    return (~key_padding_mask)[:, None, None, :].to(like.dtype)


def naive_softmax_attention(q, k, v, *, causal=False, key_padding_mask=None):
    """Eq. 2 (and eq. 8 when causal) with an explicit N×N matrix; rows with no visible key give 0."""
    allowed = _key_mask(key_padding_mask, k).expand(q.shape[0], q.shape[1], q.shape[2], k.shape[2]).clone()
    if causal:
        allowed = allowed * torch.ones(q.shape[2], k.shape[2], dtype=q.dtype, device=q.device).tril()
    # subtract the row max of the allowed entries to keep exp in range, then mask
    logits = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    logits = logits.masked_fill(allowed == 0, -math.inf)
    row_max = logits.amax(-1, keepdim=True).clamp(min=-1e300)
    weights = torch.exp(logits - row_max) * allowed
    total = weights.sum(-1, keepdim=True)
    weights = torch.where(total > 0, weights / total.clamp(min=1e-300), torch.zeros_like(weights))
    return weights @ v


def naive_linear_attention(q, k, v, *, causal=False, feature_map="elu", key_padding_mask=None, eps=1e-6):
    """Eq. 4 (eq. 9 when causal): the kernel matrix A_ij = φ(Q_i)ᵀφ(K_j), explicitly, then (A V) / (A 1 + ε)."""
    phi = get_feature_map(feature_map)
    A = (phi.queries(q) @ phi.keys(k).transpose(-1, -2)) * _key_mask(key_padding_mask, k)
    if causal:
        A = A.tril()
    return (A @ v) / (A.sum(-1, keepdim=True) + eps)


def naive_linear_recurrent(q, k, v, *, feature_map="elu", eps=1e-6, initial_state=None, output_final_state=False):
    """Eqs. 16–20 as a Python loop over time: s_i = s_{i−1} + φ(k_i)v_iᵀ, z_i = z_{i−1} + φ(k_i).

    ``initial_state`` = (s_0, z_0) (zeros by default). Returns ``(out, state)``: state = (s_N, z_N) with
    ``output_final_state``, else None.
    """
    phi = get_feature_map(feature_map)
    B, H, N, D = q.shape
    if initial_state is None:
        s, z = q.new_zeros(B, H, D, v.shape[-1]), q.new_zeros(B, H, D)
    else:
        s, z = initial_state
    outs = []
    for i in range(N):
        fq, fk = phi.queries(q[:, :, i]), phi.keys(k[:, :, i])
        s = s + torch.einsum("bhd,bhm->bhdm", fk, v[:, :, i])
        z = z + fk
        num = torch.einsum("bhd,bhdm->bhm", fq, s)
        den = torch.einsum("bhd,bhd->bh", fq, z)[..., None] + eps
        outs.append(num / den)
    out = torch.stack(outs, dim=2)
    return out, ((s, z) if output_final_state else None)


def naive_momentum_weight_matrix(n, beta, gamma, *, dtype=torch.float64, device=None):
    """W_ij = γ(1 − β^{i−j+1})/(1 − β) for j ≤ i, else 0 (the reweighting of eq. 13)."""
    i = torch.arange(n, dtype=dtype, device=device)[:, None]
    j = torch.arange(n, dtype=dtype, device=device)[None, :]
    w = gamma * (1 - beta ** (i - j + 1)) / (1 - beta)
    return torch.where(j <= i, w, torch.zeros((), dtype=dtype, device=device))


def naive_momentum_attention(
    q, k, v, *, beta, gamma=1.0, causal=False, feature_map="elu", key_padding_mask=None, eps=1e-6, compat=None
):
    """Eq. 13 (causal) / eq. 14 (non-causal) with explicit N×N matrices.

    Numerator: (A ⊙ W) V with the momentum weights W; denominator: A 1 + ε, unweighted.
    Non-causal: W_ij = γ(1 − β^{N−j+1})/(1 − β) with N the true length and j the rank of key j
    among real keys. ``compat="authors_batched"``: W_ij = γ(1 − β^{L−j+1})/(1 − β), L the padded length.
    """
    phi = get_feature_map(feature_map)
    B, _, N, _ = k.shape
    A = (phi.queries(q) @ phi.keys(k).transpose(-1, -2)) * _key_mask(key_padding_mask, k)
    if causal and compat is None:
        W = naive_momentum_weight_matrix(N, beta, gamma, dtype=q.dtype, device=q.device)
        A = A.tril()
        return ((A * W) @ v) / (A.sum(-1, keepdim=True) + eps)
    if compat == "authors_batched" or key_padding_mask is None:
        lengths = torch.full((B,), N, dtype=q.dtype, device=q.device)
        ranks = torch.arange(1, N + 1, dtype=q.dtype, device=q.device).expand(B, N)
    else:
        real = (~key_padding_mask).to(q.dtype)
        lengths = real.sum(1)
        ranks = torch.cumsum(real, 1)
    w = gamma * (1 - beta ** (lengths[:, None] - ranks + 1)) / (1 - beta)  # (B, N), per key
    if causal:
        A = A.tril()
    return ((A * w[:, None, None, :]) @ v) / (A.sum(-1, keepdim=True) + eps)


def naive_momentum_recurrent(q, k, v, *, beta, gamma=1.0, feature_map="elu", eps=1e-6, initial_state=None,
                             output_final_state=False):
    """Eq. 12 as a Python loop: m_i = βm_{i−1} − φ(k_i)v_iᵀ, s_i = s_{i−1} − γm_i, z_i = z_{i−1} + φ(k_i).

    ``initial_state`` = (s_0, m_0, z_0) (zeros by default). Returns ``(out, state)``: state = (s_N, m_N, z_N)
    with ``output_final_state``, else None.
    """
    phi = get_feature_map(feature_map)
    B, H, N, D = q.shape
    if initial_state is None:
        s = q.new_zeros(B, H, D, v.shape[-1])
        m, z = torch.zeros_like(s), q.new_zeros(B, H, D)
    else:
        s, m, z = initial_state
    outs = []
    for i in range(N):
        fq, fk = phi.queries(q[:, :, i]), phi.keys(k[:, :, i])
        m = beta * m - torch.einsum("bhd,bhm->bhdm", fk, v[:, :, i])
        s = s - gamma * m
        z = z + fk
        num = torch.einsum("bhd,bhdm->bhm", fq, s)
        den = torch.einsum("bhd,bhd->bh", fq, z)[..., None] + eps
        outs.append(num / den)
    out = torch.stack(outs, dim=2)
    return out, ((s, m, z) if output_final_state else None)


def naive_cumulative_state_causal_product(q, k, v):
    """Σ_{j≤i} (q_i·k_j) v_j through the states S_i = cumsum(k_j v_jᵀ) — all N of them.

    This is the "naive implementation of eq. 12" of Katharopoulos §3.3.1: autograd keeps the
    (N × D × M) tensor of states for backward. Used as the memory baseline.
    """
    states = torch.cumsum(k[..., :, None] * v[..., None, :], dim=2)  # (B, H, N, D, M)
    return torch.einsum("bhnd,bhndm->bhnm", q, states)


def naive_cumulative_state_linear_attention(q, k, v, *, feature_map="elu", eps=1e-6):
    """Causal linear attention (eq. 9) whose numerator goes through all N states S_i
    (:func:`naive_cumulative_state_causal_product`; autograd keeps them): the memory baseline of the book and of
    the attention benchmark."""
    phi = get_feature_map(feature_map)
    phi_q, phi_k = phi.queries(q), phi.keys(k)
    numerator = naive_cumulative_state_causal_product(phi_q, phi_k, v)
    return numerator / ((phi_q * torch.cumsum(phi_k, dim=2)).sum(-1, keepdim=True) + eps)


def naive_causal_mean_product(x, y, z, counts=None):
    """Luna eq. 7 as a loop: F_t = (1/t) X_t Σ_{j≤t} Y_jᵀ Z_j, t counted from 1 or given per position
    by ``counts`` (batch, n) (a count of 0 divides by 1)."""
    B, H, N, _ = x.shape
    state = x.new_zeros(B, H, y.shape[-1], z.shape[-1])
    outs = []
    for t in range(N):
        state = state + y[:, :, t, :, None] * z[:, :, t, None, :]
        divisor = t + 1 if counts is None else counts[:, t].to(x.dtype).clamp_min(1.0)[:, None, None]
        outs.append(torch.einsum("bhd,bhdm->bhm", x[:, :, t], state) / divisor)
    return torch.stack(outs, dim=2)


def naive_luna_attention(module, x, p, key_padding_mask=None):
    """Luna pack (eq. 3) and unpack (eq. 4) with explicit softmax matrices, using ``module``'s weights.

    Causal modules follow §3.3 step by step: A_pack = ω(...), A_unpack = softmax(f(Q, K, A_pack)),
    Y = f(A_unpack, A_pack, V), each f computed by the loop of eq. 7.
    """
    from lra_kit.attention.luna import pack_activation

    p = p.expand(x.shape[0], -1, -1)
    H, Hp = module.n_heads, module.n_pack_heads
    if module.causal:
        scale = (module.d_model // H) ** -0.5
        pq = split_heads(module.pq_proj(p), H) * scale
        a_pack = pack_activation(split_heads(module.pc_proj(x), H) @ pq.transpose(-1, -2), module.pack_activation)
        q = split_heads(module.q_proj(x), H) * scale
        if module.tie_kv:
            k = v = split_heads(module.c_proj(x), H)
        else:
            k, v = split_heads(module.k_proj(x), H), split_heads(module.v_proj(x), H)
        counts = None
        if key_padding_mask is not None:  # padding is neither summed nor counted in t
            real = ~key_padding_mask
            a_pack = a_pack * real[:, None, :, None].to(x.dtype)
            counts = torch.cumsum(real.long(), dim=1)
        a_unpack = torch.softmax(naive_causal_mean_product(q, k, a_pack, counts), dim=-1)
        return module.out_proj(merge_heads(naive_causal_mean_product(a_unpack, a_pack, v, counts))), None

    pq = split_heads(module.pq_proj(p), Hp)
    if module.tie_kv:
        pk = pv = split_heads(module.pc_proj(x), Hp)
    else:
        pk, pv = split_heads(module.pk_proj(x), Hp), split_heads(module.pv_proj(x), Hp)
    packed = merge_heads(naive_softmax_attention(pq, pk, pv, key_padding_mask=key_padding_mask))
    q = split_heads(module.q_proj(x), H)
    if module.tie_kv:
        k = v = split_heads(module.c_proj(packed), H)
    else:
        k, v = split_heads(module.k_proj(packed), H), split_heads(module.v_proj(packed), H)
    return module.out_proj(merge_heads(naive_softmax_attention(q, k, v))), packed


def naive_performer_attention(q, k, v, projection, *, causal=False, key_padding_mask=None):
    """Performer attention as its explicit kernel matrix: A_ij = φ(q_i/d^{1/4})ᵀφ(k_j/d^{1/4}) with the
    unstabilised positive random features of Choromanski et al. Lemma 1, then (A V) / (A 1)."""
    scale = q.shape[-1] ** -0.25
    w = projection.to(q.dtype)
    A = positive_random_features(q * scale, w) @ positive_random_features(k * scale, w).transpose(-1, -2)
    A = A * _key_mask(key_padding_mask, k)
    if causal:
        A = A.tril()
    total = A.sum(-1, keepdim=True)
    return torch.where(total > 0, (A @ v) / total.clamp(min=1e-300), torch.zeros_like(A @ v))


def naive_lsh_attention(qk, v, *, rotations, chunk_size, causal=False, key_padding_mask=None):
    """Reformer's LSH attention (Kitaev et al. §2) with loops: each round hashes, sorts the real positions by
    (bucket, position) and cuts them into chunks; a query's keys are the positions of its chunk and the chunk
    before (within the round), later ones removed when causal, itself only at a score of -5e4; the rounds'
    outputs are combined with weights softmax over rounds of each round's log-sum-exp. Padded queries give 0."""
    B, H, N, D = qk.shape
    out = torch.zeros(B, H, N, v.shape[-1], dtype=v.dtype)
    for b in range(B):
        real = [i for i in range(N) if key_padding_mask is None or not bool(key_padding_mask[b, i])]
        for h in range(H):
            x = qk[b, h]
            keys = x / x.norm(dim=-1, keepdim=True).clamp_min(1e-12)
            round_outputs, round_lse = [], []
            for rotation in rotations.to(x.dtype):
                rotated = x @ rotation
                bucket = torch.cat([rotated, -rotated], dim=-1).argmax(dim=-1).tolist()
                ranked = sorted(real, key=lambda i: (bucket[i], i))
                chunk = {i: rank // chunk_size for rank, i in enumerate(ranked)}
                o_r, z_r = torch.zeros(N, v.shape[-1], dtype=v.dtype), torch.zeros(N, dtype=v.dtype)
                for i in real:
                    visible = [j for j in real if chunk[j] in (chunk[i], chunk[i] - 1) and (not causal or j <= i)]
                    scores = torch.stack([x[i] @ keys[j] / math.sqrt(D) if j != i else torch.tensor(-5e4, dtype=x.dtype)
                                          for j in visible])
                    z_r[i] = torch.logsumexp(scores, 0)
                    o_r[i] = torch.exp(scores - z_r[i]) @ v[b, h, visible]
                round_outputs.append(o_r)
                round_lse.append(z_r)
            weights = torch.softmax(torch.stack(round_lse), dim=0)
            for i in real:
                out[b, h, i] = sum(w[i] * o[i] for w, o in zip(weights, round_outputs, strict=True))
    return out


def naive_linformer_attention(q, k, v, *, E, F=None, key_padding_mask=None):
    """Wang et al. eq. 7 written out: each head's keys and values projected along the length by E (k × N) and F
    (F = E when None), padded rows zeroed first, then softmax(Q (EK)ᵀ/√d)(FV)."""
    F = E if F is None else F
    keep = _key_mask(key_padding_mask, k)[:, :, 0, :, None]  # (B, 1, N, 1)
    N = k.shape[2]
    Ek = E[..., :N] @ (k * keep)
    Fv = F[..., :N] @ (v * keep)
    scores = q @ Ek.transpose(-1, -2) / math.sqrt(q.shape[-1])
    return torch.softmax(scores, dim=-1) @ Fv
