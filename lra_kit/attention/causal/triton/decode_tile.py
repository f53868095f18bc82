"""The launch of the fused decode kernel (:mod:`lra_kit.attention.causal.triton.decode_kernels`) for a head width:
used by its host, :class:`lra_kit.attention.decode.FusedStep`, and by the compile guard
(:mod:`lra_kit.attention.causal.triton.compile_check`), which compiles every tile this can give."""
from __future__ import annotations

from typing import NamedTuple

MAX_WIDTH = 256  # the widest head that runs fused: the compile guard compiles every tile up to it
FUSED_TILE = 4096  # state elements one program holds at most (D rows × a block of columns): a whole head up to D 64


class FusedTile(NamedTuple):
    """The fused kernel's launch for heads of width D (:func:`fused_tile`)."""

    rows: int  # BD
    cols: int  # BV
    blocks: int  # column blocks: programs per (batch·head)
    warps: int


def fused_tile(D: int) -> FusedTile:
    """The fused kernel's tile for heads of width ``D``: rows BD (the next power of two, at least 8), columns BV (all
    of them up to 64 × 64, then fewer, at least 16), how many column blocks cover the D value columns, and the warps:
    4, or 8 for a tile over 2048 elements (with 4, momentum's 64 × 64 tile spills registers on sm_90: the compile
    guard, :mod:`lra_kit.attention.causal.triton.compile_check`)."""
    BD = max(8, 1 << (D - 1).bit_length())
    BV = min(BD, max(16, FUSED_TILE // BD))
    return FusedTile(BD, BV, -(-D // BV), 8 if BD * BV > 2048 else 4)


__all__ = ["FUSED_TILE", "MAX_WIDTH", "FusedTile", "fused_tile"]
