"""The least traffic of a generated pixel (lra_kit.bench.generation_bound): what each part of the model adds."""
from __future__ import annotations

import pytest

from lra_kit.bench.generation import LEAN, TINY, build_generator
from lra_kit.bench.generation_bound import bound_ms_per_pixel, least_step_bytes, weight_bytes

CACHE, LINEAR, MOMENTUM = LEAN  # the order of the method table: the cache, then the two RNNs
B, LAYERS, H, D, D_MODEL = 3, 2, 2, 16, 32
SHAPE = dict(TINY, layers=LAYERS)


def _model(method):
    model = build_generator("mnist", method, overrides=SHAPE)
    assert (model.cfg.layers, model.cfg.n_heads, model.cfg.d_model) == (LAYERS, H, D_MODEL)
    return model


def test_the_order_of_the_lean_methods():
    assert "cache" in CACHE and "momentum" not in LINEAR and "momentum" in MOMENTUM


def test_weights_are_every_parameter_but_the_tables_and_two_rows_an_image():
    model = _model(LINEAR)
    layers = sum(p.numel() for p in model.encoder.parameters())
    head = sum(p.numel() for p in model.head.parameters())
    assert weight_bytes(model, B) == 4 * (layers + head) + 4 * 2 * B * D_MODEL


def test_each_state_read_and_written_once():
    """Linear: s and z (D² + D a head); momentum also m (another D²); both float32, read and written."""
    linear, momentum = _model(LINEAR), _model(MOMENTUM)
    w = weight_bytes(linear, B)
    assert least_step_bytes(linear, B, 5) - w == LAYERS * 2 * B * H * (D * D + D) * 4
    assert least_step_bytes(momentum, B, 5) - least_step_bytes(linear, B, 5) == LAYERS * 2 * B * H * D * D * 4
    assert least_step_bytes(linear, B, 0) == least_step_bytes(linear, B, 700)  # an RNN: the same every step


def test_the_cache_reads_every_position_so_far():
    cache = _model(CACHE)
    step = least_step_bytes(cache, B, 1) - least_step_bytes(cache, B, 0)
    assert step == LAYERS * 2 * B * H * D * 4  # one more key and value a layer
    assert least_step_bytes(cache, B, 0) == weight_bytes(cache, B) + LAYERS * 2 * 2 * B * H * D * 4


def test_the_bound_is_the_mean_step_over_the_bandwidth():
    cache = _model(CACHE)
    mean = sum(least_step_bytes(cache, B, t) for t in range(10)) / 10
    assert bound_ms_per_pixel(cache, B, 10, 1e9) == pytest.approx(mean / 1e9 * 1e3)
    with pytest.raises(ValueError, match="bytes_per_s"):
        bound_ms_per_pixel(cache, B, 10, None)
    with pytest.raises(ValueError, match="position"):
        least_step_bytes(cache, B, -1)
