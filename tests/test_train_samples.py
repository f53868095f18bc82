"""Samples and completions of occluded images (Katharopoulos et al. Fig. 3): shapes, the kept prefix, files."""
from __future__ import annotations

import json

import pytest
import torch

from lra_kit.models.causal_lm import CausalLM
from lra_kit.models.config import ModelConfig
from lra_kit.train.samples import sample_pictures, save_pictures


class _Images(list):
    max_length = 16  # 4 × 4 images


def _model() -> CausalLM:
    torch.manual_seed(0)
    cfg = ModelConfig(attention="linear", layers=1, d_model=16, n_heads=2, d_ff=32, dropout=0.0,
                      attention_dropout=0.0, output="softmax")
    return CausalLM(cfg, vocab_size=256, max_length=16)


def test_completions_keep_the_given_rows_and_save(tmp_path):
    g = torch.Generator().manual_seed(1)
    test = _Images(torch.randint(0, 256, (16,), generator=g) for _ in range(3))
    pics = sample_pictures(_model(), test, n=4, n_completions=3, keep_rows=2)
    assert pics["samples"].shape == (4, 16) and pics["completions"].shape == (9, 16)
    occluded, completed, originals = pics["completions"].split(3)
    assert torch.equal(originals, torch.stack(list(test)))
    assert torch.equal(completed[:, :8], originals[:, :8])  # the top two rows are the prompt
    assert (occluded[:, 8:] == 128).all() and torch.equal(occluded[:, :8], originals[:, :8])
    record = save_pictures(pics, str(tmp_path), "m", {"scale": "smoke"})
    assert (tmp_path / record["files"]["samples"]).exists() and (tmp_path / record["files"]["completions"]).exists()
    assert json.loads((tmp_path / "m-pictures.json").read_text())["scale"] == "smoke"


@pytest.mark.parametrize("kwargs", [dict(keep_rows=0), dict(keep_rows=4), dict(n=0), dict(n_completions=5)])
def test_bad_arguments(kwargs):
    test = _Images(torch.zeros(16, dtype=torch.long) for _ in range(3))
    with pytest.raises(ValueError):
        sample_pictures(_model(), test, **kwargs)
