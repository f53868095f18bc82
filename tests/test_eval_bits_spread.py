"""The evaluation records the per-image spread of bits/dim, so that a bits/dim claim can be judged against the
test set's noise (lra_kit.claims.bits_noise): each image's mean NLL, summed and squared over the images."""
from __future__ import annotations

import math
import statistics

import pytest
import torch

from lra_kit.models import per_image_bits
from lra_kit.models.causal_lm import CausalLM
from lra_kit.models.config import ModelConfig
from lra_kit.train.trainer import TaskLoss


def test_per_image_bits_is_the_sample_deviation_in_bits():
    nats = [0.7, 0.9, 1.4, 0.65]
    got = per_image_bits(sum(nats), sum(x * x for x in nats), len(nats))
    assert got["images"] == 4
    assert got["bits_per_dim_image_std"] == pytest.approx(statistics.stdev(nats) / math.log(2))
    assert per_image_bits(0.7, 0.49, 1) == {"bits_per_dim_image_std": None, "images": 1}


def test_task_loss_sums_each_images_mean_nll():
    torch.manual_seed(0)
    cfg = ModelConfig(attention="linear", layers=1, d_model=16, n_heads=2, d_ff=32, dropout=0.0,
                      attention_dropout=0.0, output="softmax")
    model = CausalLM(cfg, vocab_size=256, max_length=16).eval()
    images = torch.randint(0, 256, (5, 16))
    with torch.no_grad():
        out = TaskLoss(model, "lm")({"input_ids": images})
        log_p = model(images)[:, :-1]
    per_image = -log_p.gather(-1, images[:, 1:, None])[..., 0].mean(-1)  # each image's 15 predicted pixels
    assert int(out["seqs"]) == 5
    assert float(out["seq_sum"]) == pytest.approx(float(per_image.sum()), rel=1e-5)
    assert float(out["seq_sq"]) == pytest.approx(float((per_image ** 2).sum()), rel=1e-5)
    assert float(out["loss_sum"]) == pytest.approx(15 * float(per_image.sum()), rel=1e-5)
