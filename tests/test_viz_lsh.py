"""The baselines chapter's LSH slider: its Python numbers (:mod:`lra_kit.viz.lsh`) against the loop oracle, its
JavaScript (``lra_kit/viz/js/lsh.js``) against those numbers under Node, and the widget's HTML.

The JavaScript comparison is ``tests/js/lsh.test.mjs`` (every rounds × buckets setting of the slider, the full
48 × 48 matrix); this file runs it the way a user runs ``node --test tests/js`` (the ``node_tests`` fixture). The
built page is checked by ``tests/browser/test_baselines_page.py``.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from lra_kit.attention.naive import naive_lsh_attention
from lra_kit.viz import lsh

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def example():
    return lsh.lsh_example()


@pytest.mark.parametrize(("rounds", "n_buckets"), [(1, 2), (1, 8), (4, 8), (8, 32)])
def test_weights_are_the_loop_oracles_on_the_identity(example, rounds, n_buckets):
    """W applied to V = I is the matrix itself: the fast code's W equals the loop oracle run on V = I."""
    qk, rotations = example["qk"], example["rotations"]
    W = lsh.lsh_weights(qk, rotations, rounds=rounds, n_buckets=n_buckets, chunk_size=6)
    eye = torch.eye(qk.shape[0], dtype=torch.float64)[None, None]
    oracle = naive_lsh_attention(qk[None, None], eye, rotations=rotations[:rounds, :, : n_buckets // 2],
                                 chunk_size=6)[0, 0]
    torch.testing.assert_close(W, oracle, rtol=0, atol=1e-12)
    torch.testing.assert_close(W.sum(-1), torch.ones(qk.shape[0], dtype=torch.float64))


def test_readouts_move_with_the_rounds(example):
    """More rounds: more keys seen, more of softmax's weight on them, W closer to A (this example's numbers)."""
    qk, rotations = example["qk"], example["rotations"]
    one, eight = (lsh.lsh_readouts(qk, rotations, rounds=r, n_buckets=8, chunk_size=6) for r in (1, 8))
    assert eight["keys_seen"] > 2 * one["keys_seen"] and eight["mass_seen"] > one["mass_seen"] + 0.2
    assert eight["total_variation"] < one["total_variation"] - 0.2
    # every key sits in a window of at most 2 chunks: one round sees at most 2 × 6 − 1 keys
    assert one["keys_seen"] <= 11


def test_setting_errors_name_the_allowed_values(example):
    qk, rotations = example["qk"], example["rotations"]
    with pytest.raises(ValueError, match=r"rounds must be an int in \[1, 8\]"):
        lsh.lsh_weights(qk, rotations, rounds=9, n_buckets=8, chunk_size=6)
    with pytest.raises(ValueError, match=r"n_buckets must be an even int in \[2, 32\]"):
        lsh.lsh_weights(qk, rotations, rounds=1, n_buckets=7, chunk_size=6)
    with pytest.raises(ValueError, match="order must be a permutation"):
        lsh.lsh_data(qk, rotations, chunk_size=6, order=[0] * qk.shape[0])


def test_widget_inlines_the_shipped_script_and_embeds_the_example(example):
    page = lsh.lsh_widget_html(example["qk"], example["rotations"], chunk_size=6, order=example["order"])
    source = (ROOT / "lra_kit" / "viz" / "js" / "lsh.js").read_text(encoding="utf-8")
    assert lsh.lsh_script() == source and source in page
    assert re.search(r'LraKitLSH\.mount\(document\.getElementById\("lrakit-lsh-', page)
    assert page.count("<script") == 2  # the JSON data and the script; nothing fetched
    data = json.loads(re.search(r'class="lrakit-data">(.*?)</script>', page).group(1))
    qk, rotations = lsh.embedded(data)
    assert torch.allclose(qk, example["qk"], atol=1e-11) and torch.allclose(rotations, example["rotations"], atol=1e-11)
    assert data["chunk_size"] == 6 and sorted(data["order"]) == list(range(qk.shape[0]))
    assert len(page) < 60_000


def test_the_package_ships_the_script():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"lra_kit.viz" = ["js/*.js"]' in text


def test_lsh_javascript_equals_the_python_numbers(node_tests):
    """``node --test tests/js/lsh.test.mjs`` (with every other tests/js file): its three comparisons ran and passed."""
    results = node_tests.results()
    for name in ("the LSH widget's softmax matrix equals shared_qk_softmax_weights",
                 "the LSH widget's matrix equals lsh_attention's for every rounds × buckets setting",
                 "the LSH widget's read-outs equal lsh_readouts"):
        assert results.get(name) == "ok", (name, results.get(name), node_tests.tail())
