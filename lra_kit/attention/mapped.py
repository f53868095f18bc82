"""φ applied to queries and keys with padding masked out, and the chain rule back through φ.

Shared by every linear-attention form: the causal op recomputes φ in its backward pass (so any feature map
works and φ(Q), φ(K) are never saved), the non-causal forms use :func:`mapped_keys_values` directly.
"""
from __future__ import annotations

import torch


def mapped_keys_values(k, v, feature_map, key_padding_mask, dtype=None):
    """φ(K) and V (in ``dtype``) with padded positions zeroed, so padding adds nothing to any sum."""
    phi_k = feature_map.keys(k).to(dtype or k.dtype)
    v = v.to(phi_k.dtype)
    if key_padding_mask is not None:
        keep = (~key_padding_mask)[:, None, :, None].to(phi_k.dtype)
        phi_k, v = phi_k * keep, v * keep
    return phi_k, v


def masked(fq, fk, v, keep, dtype):
    """fq, fk·keep, v·keep in ``dtype``; ``keep`` is (B, 1, N, 1), 1 for real keys, or None."""
    fq, fk, v = fq.to(dtype), fk.to(dtype), v.to(dtype)
    if keep is not None:
        fk, v = fk * keep, v * keep
    return fq, fk, v


def phi_forward(phi, q, k, needs=(False, False)):
    """(φ(q), φ(k), q, k) with φ joined to fresh leaves q, k where ``needs`` asks for their gradient (for
    :func:`phi_backward`); ``phi=None`` is the identity (the bare causal product takes q, k already mapped)."""
    if phi is None:
        return q, k, q, k
    with torch.enable_grad():  # backward runs with grad mode off; φ must join its inputs' graph there
        qs, ks = (t.detach().requires_grad_(need) for t, need in ((q, needs[0]), (k, needs[1])))
        return phi.queries(qs), phi.keys(ks), qs, ks


def phi_backward(phi, phi_q, phi_k, qs, ks, dfq, dfk):
    """Chain rule through φ, recomputed for this segment: (dq, dk) = (φ'(q)·∇φ(q), φ'(k)·∇φ(k)), None where not
    asked for (the arguments come from :func:`phi_forward`); ``phi=None``: the gradients themselves."""
    if phi is None:
        return [dfq, dfk]
    outputs, grads, inputs, slots = [], [], [], []
    result = [None, None]
    for slot, (phi_x, d_phi, x) in enumerate(((phi_q, dfq, qs), (phi_k, dfk, ks))):
        if d_phi is None:
            continue
        if phi_x.requires_grad:
            outputs.append(phi_x)
            grads.append(d_phi.to(phi_x.dtype))
            inputs.append(x)
            slots.append(slot)
        else:  # φ does not depend on its input (a constant map)
            result[slot] = torch.zeros_like(x)
    if outputs:
        # The vector-Jacobian product as the gradient of the scalar Σ φ(x)·∇φ (∇φ a constant): the same numbers as
        # torch.autograd.grad(outputs, inputs, grads), but without tensor grad_outputs, for which PyTorch 2.x
        # imports torch.fx's symbolic shapes (sympy: ~48 MB resident) on the first call of a process.
        with torch.enable_grad():  # backward runs with grad mode off; this product must join φ's graph
            total = sum((out * g).sum() for out, g in zip(outputs, grads, strict=True))
        for slot, x, g in zip(slots, inputs, torch.autograd.grad(total, inputs, allow_unused=True), strict=True):
            result[slot] = torch.zeros_like(x) if g is None else g
    return result
