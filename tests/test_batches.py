"""Training batches grouped by length (lra_kit.train.batches): every example once an epoch, batches of
similar length, the order a function of (seed, epoch) only, and old run configs read with their defaults."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from lra_kit.errors import ConfigError
from lra_kit.train.batches import EpochBatches, item_lengths, length_bucketed
from lra_kit.train.configs import get_config, validate, with_defaults


def listops_like_lengths(n: int, seed: int = 0) -> np.ndarray:
    """Lengths spread like LRA ListOps (500-2,000 tokens, most near 1,000)."""
    rng = np.random.default_rng(seed)
    return np.clip(rng.lognormal(np.log(1000), 0.35, n), 500, 2000).astype(int)


def epoch(n=1000, batch=16, bucket=10, seed=3, ep=0, lengths=None):
    lengths = listops_like_lengths(n) if lengths is None else lengths
    sampler = EpochBatches(n, seed=seed, epoch=ep, global_batch=batch, micro=batch, rank=0, world=1,
                           lengths=lengths, bucket=bucket)
    return list(sampler), lengths


def test_each_example_is_seen_once_an_epoch():
    batches, _ = epoch(n=1003)  # 62 full batches and 11 examples left over
    seen = [i for b in batches for i in b]
    assert len(batches) == 1003 // 16 and all(len(b) == 16 for b in batches)
    assert len(seen) == len(set(seen)) == 62 * 16 and set(seen) <= set(range(1003))


def test_one_pool_gives_batches_whose_lengths_do_not_overlap():
    """With a single pool the batches are consecutive runs of the length-sorted epoch."""
    batches, lengths = epoch(n=800, bucket=50)
    spans = sorted((lengths[b].min(), lengths[b].max()) for b in batches)
    assert all(hi <= next_lo for (_, hi), (next_lo, _) in zip(spans, spans[1:], strict=False))


def test_grouping_cuts_the_padding():
    """Padded tokens per epoch (each batch padded to its longest): grouped against random batches."""
    padded = {}
    for bucket in (0, 50):
        batches, lengths = epoch(n=3200, bucket=bucket)
        padded[bucket] = sum(len(b) * lengths[b].max() for b in batches)
    true = epoch(n=3200)[1][: 3200].sum()
    assert padded[50] < 1.1 * true < padded[0]  # random batches of 16 pad ListOps by about 70 %


def test_the_batch_order_follows_no_length_schedule():
    """Batches are shuffled after grouping: with one pool (the whole epoch sorted by length), the first half of
    the epoch is still not the short half."""
    batches, lengths = epoch(n=3200, bucket=200)
    means = np.array([lengths[b].mean() for b in batches])
    half = len(means) // 2
    assert abs(means[:half].mean() - means[half:].mean()) < 0.1 * means.mean()
    assert not np.all(np.diff(means) >= 0)


def test_the_order_is_a_function_of_seed_and_epoch():
    assert epoch(seed=3, ep=1)[0] == epoch(seed=3, ep=1)[0]
    assert epoch(seed=3, ep=1)[0] != epoch(seed=3, ep=2)[0] != epoch(seed=4, ep=2)[0]


def test_a_resumed_epoch_reads_the_batches_it_had_left():
    lengths = listops_like_lengths(400)
    kw = dict(seed=1, epoch=0, global_batch=8, micro=4, rank=0, world=1, lengths=lengths, bucket=5)
    whole = list(EpochBatches(400, **kw))
    assert list(EpochBatches(400, start=20, **kw)) == whole[40:]  # 2 micro-batches an update


def test_ranks_split_each_grouped_batch():
    lengths = listops_like_lengths(400)
    kw = dict(seed=1, epoch=0, global_batch=8, micro=4, world=2, lengths=lengths, bucket=5)
    whole = list(EpochBatches(400, rank=0, **{**kw, "world": 1, "micro": 8}))
    r0, r1 = (list(EpochBatches(400, rank=r, **kw)) for r in (0, 1))
    assert [a + b for a, b in zip(r0, r1, strict=True)] == whole


def test_pair_lengths_count_the_longer_sequence():
    class Pairs:
        def lengths(self):
            return np.array([[3, 9], [7, 2]])

    assert item_lengths(Pairs()).tolist() == [9, 7]


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="bucket=4 needs one length per example"):
        EpochBatches(10, seed=0, epoch=0, global_batch=2, micro=2, rank=0, world=1, bucket=4)
    with pytest.raises(ValueError, match="pool and batch must be >= 1"):
        length_bucketed([0, 1], np.array([1, 2]), batch=1, pool=0, generator=torch.Generator())
    cfg = get_config("listops", "linear", "smoke")
    cfg.data.bucket = -1
    with pytest.raises(ConfigError, match="data.bucket"):
        validate(cfg)


def test_a_config_saved_before_a_field_existed_gets_its_default():
    saved = get_config("text", "softmax", preset="lra-cpu-2h").to_dict()
    del saved["data"]["bucket"]  # as the Text records of lra-cpu-2h were written
    assert with_defaults(saved) == get_config("text", "softmax", preset="lra-cpu-2h").to_dict()
    listops = get_config("listops", "softmax", preset="lra-cpu-2h").to_dict()
    del listops["data"]["bucket"]
    assert with_defaults(listops)["data"]["bucket"] == 0 != get_config(
        "listops", "softmax", preset="lra-cpu-2h").data.bucket  # a missing field is the old default, not the preset's
