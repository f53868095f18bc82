"""What the JavaScript tests (tests/js) compare against: lra_kit's own numbers, written to a JSON reference.

Each test file under tests/js runs this script itself, so ``node --test tests/js`` alone writes its
references and runs every test (nothing is skipped for want of a reference)::

    python tests/js_references.py runtime DIR   # DIR/reference.json and the exported models under DIR
    python tests/js_references.py sliders DIR   # DIR/reference.json
    python tests/js_references.py web_stats DIR # DIR/reference.json
    python tests/js_references.py lsh DIR       # DIR/reference.json

``runtime``: random 2-layer smoke-size MNIST models of every attention the web runtime runs, exported with
``lra-kit export-web``, plus the models the book ships (``_static/web/models``); for each, the
log-probabilities of the recurrent step that :meth:`lra_kit.models.CausalLM.generate` runs (Katharopoulos et
al. eqs. 16-20; Nguyen et al. eq. 12 for momentum) after every pixel of a synthetic digit, and its 783 greedy
pixels. ``sliders``: what :mod:`lra_kit.viz.momentum` computes for a grid of slider positions of chapters 4
and 5. ``lsh``: :mod:`lra_kit.viz.lsh`'s LSH weight matrices and read-outs for every setting of the baselines
chapter's slider. ``web_stats``: :mod:`lra_kit.web.page`'s block times and ratios on the series of
tests/test_web_page.py.
tests/test_export_web.py and tests/test_viz_js.py import the same functions.
"""
from __future__ import annotations

import copy
import json
import math
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "_static" / "web" / "models"
TOLERANCE = 1e-4  # max |Δ log P| between the runtime and lra_kit
SENTENCE = "the model reads the sentence and then reads the sentence again"


# ---- runtime: the exported models ------------------------------------------------------------------------------

def web_config(attention: str):
    from lra_kit.train.configs import get_config

    cfg = get_config("mnist", attention, "smoke")
    cfg.model.layers = 2  # two layers: the state of each, and what one hands the next, are exercised
    return cfg


def write_run(run_dir: Path, cfg, seed: int) -> torch.nn.Module:
    """A run directory as ``lra-kit train`` leaves it (config.json, best.pt, results.json), random weights."""
    from lra_kit.data.formats.pixels import PAD_ID
    from lra_kit.models import build_model

    torch.manual_seed(seed)
    model = build_model(cfg.model, kind="lm", vocab_size=256, max_length=784, pad_id=PAD_ID).eval()
    run_dir.mkdir(parents=True)
    (run_dir / "config.json").write_text(json.dumps(cfg.to_dict()))
    torch.save({"model": model.state_dict(), "step": 7}, run_dir / "best.pt")
    (run_dir / "results.json").write_text(json.dumps({
        "metrics": {"test": {"bits_per_dim": 7.5 + seed}}, "steps": 7, "seed": 0, "git_commit": "abc123",
        "device": "cpu", "date": "2026-01-01T00:00:00+00:00"}))
    return model


def export_models(root: Path) -> dict:
    """{name: (model, manifest path)}: a random model of each attention the runtime runs, exported under ``root``,
    and one with the other branches the runtime has (pre-LN, learned positions, GELU, LayerNorm on the
    embeddings, no final LayerNorm)."""
    from lra_kit.web import export_run
    from lra_kit.web.export import SUPPORTED_ATTENTIONS

    out = {}
    for seed, attention in enumerate(SUPPORTED_ATTENTIONS):
        model = write_run(root / f"run-{attention}", web_config(attention), seed)
        manifest = export_run(str(root / f"run-{attention}"), str(root / "out"))
        out[attention] = (model, root / "out" / f"{manifest['name']}.json")
    cfg = web_config("momentum")
    for key, value in {"norm": "pre", "position": "learned", "activation": "gelu", "embed_norm": True,
                       "final_norm": False}.items():
        setattr(cfg.model, key, value)
    model = write_run(root / "run-variant", cfg, 3)
    manifest = export_run(str(root / "run-variant"), str(root / "out"), name="momentum-pre-ln-learned-gelu")
    out["momentum-variant"] = (model, root / "out" / f"{manifest['name']}.json")
    return out


def ring_digit() -> list[int]:
    """A synthetic 28×28 '0' (a ring), raster order: a prefix that does not need the MNIST files."""
    pixels = []
    for r in range(28):
        for c in range(28):
            d = math.hypot(r - 13.5, (c - 13.5) * 1.4)
            pixels.append(int(max(0.0, 255 * (1 - abs(d - 8.0) / 3.0))))
    return pixels


@torch.no_grad()
def recurrent_log_probs(model, prefix: list[int]) -> list[list[float]]:
    """log P(next pixel) after each position, by the path ``CausalLM.generate`` takes: prefill the first
    pixel, then ``encoder.step`` one pixel at a time."""
    ids = torch.tensor([prefix])
    h, states = model.encoder.prefill(model.embed(ids[:, :1]))
    rows = [model.log_probs(h[:, -1])[0]]
    for t in range(1, len(prefix)):
        h, states = model.encoder.step(model.embed(ids[:, t:t + 1], offset=t)[:, 0], states)
        rows.append(model.log_probs(h)[0])
    return [r.tolist() for r in rows]


def reference_entries(name: str, model, manifest: Path, prefix: list[int]) -> list[dict]:
    # The reference is lra_kit's own model run in float64 on the exported (float32) weights: the runtime keeps
    # float32 weights and states and sums in doubles, so it is compared with the exact result of those weights.
    # PyTorch's float32 run is itself an approximation of it: 1.9e-4 off in log P after 784 steps of the
    # shipped step-3,000 linear model, more than the tolerance.
    model = copy.deepcopy(model).double()
    attention = model.cfg.attention
    with torch.no_grad():
        greedy = model.generate(torch.tensor([[prefix[0]]]), 783, greedy=True)[0].tolist()
    main = {"name": name, "manifest": str(manifest), "method": "kv-cache" if attention == "softmax" else "recurrent",
            "prefix": prefix, "positions": list(range(784)), "log_probs": recurrent_log_probs(model, prefix),
            "greedy": greedy, "greedy_prompt": 1}
    entries = [main]
    if attention == "softmax":  # the papers' baseline: the parallel model re-run on the whole prefix
        positions = [0, 1, 2, 63, 391, 783]
        with torch.no_grad():
            full = model(torch.tensor([prefix]))[0]
            short = model.generate(torch.tensor([prefix[:392]]), 8, greedy=True, recurrent=False)[0].tolist()
        entries.append({"name": name, "manifest": str(manifest), "method": "recompute", "prefix": prefix,
                        "positions": positions, "log_probs": [full[p].tolist() for p in positions],
                        "greedy": short, "greedy_prompt": 392})
    return entries


def shipped_manifests() -> list[Path]:
    return sorted(p for p in SHIPPED.glob("mnist-*.json") if "digits" not in p.name) if SHIPPED.is_dir() else []


def runtime_reference(exported: dict) -> dict:
    """The runtime's reference for the ``exported`` models (:func:`export_models`) and the shipped ones."""
    from lra_kit.web import load_web_model

    prefix = ring_digit()
    entries = []
    for attention, (model, path) in exported.items():
        entries += reference_entries(f"smoke-{attention}", model, path, prefix)
    for path in shipped_manifests():  # the models the book ships, read back exactly as the page gets them
        entries += reference_entries(path.stem, load_web_model(str(path)), path, prefix)
    return {"tolerance": TOLERANCE, "models": entries}


# ---- sliders: chapters 4 and 5 ----------------------------------------------------------------------------------

def half_integer_betas(high: float = 0.999) -> list[float]:
    """Every β < high at which the window 1/(1 − β) is a half-integer k + ½: β = (2k − 1)/(2k + 1)."""
    return [(2 * k - 1) / (2 * k + 1) for k in range(1, 2000) if (2 * k - 1) / (2 * k + 1) < high]


def sliders_reference() -> dict:
    """Every β of the page's slider and every β < 0.999 whose window 1/(1 − β) is a half-integer (Nguyen et al.
    eq. 10's weights), several γ and queries; chapter 5's connection read-outs on a grid of β̃, γ̃."""
    from lra_kit.viz import momentum, widgets

    slider = [round(0.01 * i, 2) for i in range(100)]  # the page's β slider: 0 … 0.99 in steps of 0.01
    betas = slider + half_integer_betas()
    tokens, phi = momentum.sentence_match_features(SENTENCE)
    scores = momentum.causal_scores(phi, phi)
    n = len(tokens)
    rows = widgets.reweighting_data(tokens, scores)["scores"]  # the rows as the page embeds them (rounded)
    embedded = torch.zeros(n, n, dtype=torch.float64)
    for i, row in enumerate(rows):
        embedded[i, : i + 1] = torch.tensor(row, dtype=torch.float64)
    cases = [{"beta": b, "gamma": g, "query": q,
              "expected": momentum.reweighting_readouts(embedded, beta=b, gamma=g, query=q)}
             for b in slider[::7] + [0.6, 0.92, 0.99] + half_integer_betas()[:6]
             for g in (0.25, 1.0, 1.25) for q in (0, 1, 2, 7, 20, n - 1)]
    lam = torch.linspace(0.02, 1.0, 6, dtype=torch.float64)
    e0 = torch.linspace(1.0, -0.5, 6, dtype=torch.float64)
    data = {"eigenvalues": lam.tolist(), "e0": e0.tolist(), "steps": 60, "delta": 1e-3}
    connection = [{"beta": b, "gamma": g,
                   "expected": momentum.connection_readouts(lam, e0, beta=b, gamma=g, steps=60, delta=1e-3)}
                  for b in (0.0, 0.3, 0.8, 0.95) for g in (0.05, 0.4, 0.99)]
    labels = [[b, q, momentum.window_label(b, q)] for b in betas for q in (0, 1, 2, 5, 9, 30, n - 1)]
    return {"rtol": 1e-9, "window": [[b, momentum.recent_window(b)] for b in betas], "labels": labels,
            "reweighting": {"tokens": tokens, "scores": rows, "cases": cases},
            "connection": {"data": data, "cases": connection}}


# ---- lsh: the baselines chapter's slider ------------------------------------------------------------------------

LSH_CHUNK = 6  # the chapter's chunk size for its 48-position example


def lsh_reference() -> dict:
    """The example the page embeds (as embedded: rounded), and for every rounds × buckets setting of the slider the
    matrix lsh_attention applies to the values and the read-outs; softmax's matrix once."""
    from lra_kit.viz import lsh

    example = lsh.lsh_example()
    data = lsh.lsh_data(example["qk"], example["rotations"], chunk_size=LSH_CHUNK, order=example["order"])
    qk, rotations = lsh.embedded(data)
    cases = [{"rounds": r, "buckets": b,
              "W": lsh.lsh_weights(qk, rotations, rounds=r, n_buckets=b, chunk_size=LSH_CHUNK).tolist(),
              "expected": lsh.lsh_readouts(qk, rotations, rounds=r, n_buckets=b, chunk_size=LSH_CHUNK)}
             for r in range(1, rotations.shape[0] + 1) for b in (2, 4, 8, 16, 2 * rotations.shape[2])]
    return {"atol": 1e-12, "data": data, "A": lsh.shared_qk_softmax_weights(qk).tolist(), "cases": cases}


def web_stats_reference() -> dict:
    from test_web_page import stats_reference  # the series that file judges lra_kit.web.page on

    return stats_reference()


KINDS = {"runtime": lambda folder: runtime_reference(export_models(folder)),
         "sliders": lambda folder: sliders_reference(), "web_stats": lambda folder: web_stats_reference(),
         "lsh": lambda folder: lsh_reference()}


def write(kind: str, folder: Path) -> Path:
    """Write the ``kind`` reference (a key of ``KINDS``) as ``folder/reference.json``."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    folder.mkdir(parents=True, exist_ok=True)
    reference = KINDS[kind](folder)
    path = folder / "reference.json"
    path.write_text(json.dumps(reference))
    return path


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(f"usage: python tests/js_references.py {'|'.join(KINDS)} DIR")
    sys.path.insert(0, str(ROOT))  # lra_kit from this checkout, whatever the working directory
    torch.set_num_threads(1)  # small models: a second thread only waits (see the Makefile's NOTEBOOK_THREADS)
    write(sys.argv[1], Path(sys.argv[2]))
