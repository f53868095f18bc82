"""``lra-kit export-web`` and the web runtime (``_static/web/runtime.mjs``) against lra_kit's own model.

The export is checked in Python (round trip, provenance, refusals); then the same models, and the
models shipped with the book (``_static/web/models``), are run by the JavaScript runtime under
``node --test tests/js/runtime.test.mjs``, which compares its log-probabilities with those of the
recurrent step that :meth:`lra_kit.models.CausalLM.generate` runs, in float64 on the exported float32 weights
(max |Δ| ≤ 1e-4), and its greedy pixels with ``generate(greedy=True)``'s. Without ``node`` that part is
skipped with the reason.
"""
from __future__ import annotations

import base64
import copy
import json
import math
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

from lra_kit.cli import main as cli_main
from lra_kit.data.formats.pixels import PAD_ID
from lra_kit.models import build_model
from lra_kit.train.configs import get_config
from lra_kit.web import UnsupportedModelError, export_run, load_web_model
from lra_kit.web.export import SUPPORTED_ATTENTIONS

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "_static" / "web" / "models"
JS_TEST = ROOT / "tests" / "js" / "runtime.test.mjs"
ATTENTIONS = SUPPORTED_ATTENTIONS
TOLERANCE = 1e-4


def _config(attention: str):
    cfg = get_config("mnist", attention, "smoke")
    cfg.model.layers = 2  # two layers: the state of each, and what one hands the next, are exercised
    return cfg


def _write_run(run_dir: Path, cfg, seed: int) -> torch.nn.Module:
    """A run directory as ``lra-kit train`` leaves it (config.json, best.pt, results.json), random weights."""
    torch.manual_seed(seed)
    model = build_model(cfg.model, kind="lm", vocab_size=256, max_length=784, pad_id=PAD_ID).eval()
    run_dir.mkdir(parents=True)
    (run_dir / "config.json").write_text(json.dumps(cfg.to_dict()))
    torch.save({"model": model.state_dict(), "step": 7}, run_dir / "best.pt")
    (run_dir / "results.json").write_text(json.dumps({
        "metrics": {"test": {"bits_per_dim": 7.5 + seed}}, "steps": 7, "seed": 0, "git_commit": "abc123",
        "device": "cpu", "date": "2026-01-01T00:00:00+00:00"}))
    return model


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """{attention: (model, manifest path)} for a random 2-layer smoke-size MNIST model of each attention."""
    root = tmp_path_factory.mktemp("export_web")
    out = {}
    for seed, attention in enumerate(ATTENTIONS):
        model = _write_run(root / f"run-{attention}", _config(attention), seed)
        manifest = export_run(str(root / f"run-{attention}"), str(root / "out"))
        out[attention] = (model, root / "out" / f"{manifest['name']}.json")
    # the other branches the runtime has: pre-LN, learned positions, GELU, a LayerNorm on the embeddings, no final LN
    cfg = _config("momentum")
    for key, value in {"norm": "pre", "position": "learned", "activation": "gelu", "embed_norm": True,
                       "final_norm": False}.items():
        setattr(cfg.model, key, value)
    model = _write_run(root / "run-variant", cfg, 3)
    manifest = export_run(str(root / "run-variant"), str(root / "out"), name="momentum-pre-ln-learned-gelu")
    out["momentum-variant"] = (model, root / "out" / f"{manifest['name']}.json")
    return out


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_export_round_trip(exported, attention):
    model, path = exported[attention]
    back = load_web_model(str(path))
    assert back.cfg == model.cfg
    for name, tensor in model.state_dict().items():
        assert torch.equal(back.state_dict()[name], tensor.float()), name
    manifest = json.loads(path.read_text())
    assert manifest["model"]["attention"] == attention
    prov = manifest["provenance"]
    assert (prov["steps"], prov["seed"], prov["trained_at_commit"]) == (7, 0, "abc123")
    assert prov["test_bits_per_dim"] == 7.5 + ATTENTIONS.index(attention)
    assert "/" not in prov["run"], "provenance must not hold a path of the machine"
    # the classic-script copy holds the same bytes as the binary
    script = path.with_suffix(".mjs").read_text()
    encoded = re.search(r'weights: "([A-Za-z0-9+/=]+)"', script).group(1)
    assert base64.b64decode(encoded) == path.with_suffix(".bin").read_bytes()
    for suffix in (".json", ".bin", ".mjs"):
        assert path.with_suffix(suffix).stat().st_size < 2_000_000


def test_export_detects_a_corrupt_binary(exported, tmp_path):
    _, path = exported["linear"]
    for suffix in (".json", ".bin"):
        shutil.copy(path.with_suffix(suffix), tmp_path / ("m" + suffix))
    manifest = json.loads((tmp_path / "m.json").read_text())
    manifest["weights"]["file"] = "m.bin"
    (tmp_path / "m.json").write_text(json.dumps(manifest))
    data = bytearray((tmp_path / "m.bin").read_bytes())
    data[100] ^= 1
    (tmp_path / "m.bin").write_bytes(bytes(data))
    with pytest.raises(ValueError, match="does not match the manifest"):
        load_web_model(str(tmp_path / "m.json"))


UNSUPPORTED = {
    "luna": ("model.attention", "luna", "attention 'luna' has no web runtime"),
    "performer": ("model.attention", "performer", "attention 'performer' has no web runtime"),
    "mixture": ("model.output", "logistic_mixture", "model.output 'logistic_mixture' has no web runtime"),
    "momentum-connection": ("model.connection", "momentum", "model.connection 'momentum' has no web runtime"),
    "compat": ("model.attention_options", {"compat": "nystromformer"}, "compat='nystromformer' has no web runtime"),
    "copy-task": ("task", "copy", "task 'copy' has no web runtime"),
}


@pytest.mark.parametrize("case", sorted(UNSUPPORTED))
def test_export_refuses_what_the_runtime_cannot_run(tmp_path, capsys, case):
    key, value, message = UNSUPPORTED[case]
    values = _config("linear").to_dict()
    if key.startswith("model."):
        values["model"][key.split(".", 1)[1]] = value
        if key == "model.attention":
            values["attention"] = value
    else:
        values[key] = value
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps(values))
    assert cli_main(["export-web", str(run), str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("lra-kit export-web: error: ") and message in err[0], err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    with pytest.raises(UnsupportedModelError):
        export_run(str(run), str(tmp_path / "out"))


def test_export_needs_a_run_directory(tmp_path, capsys):
    assert cli_main(["export-web", str(tmp_path), str(tmp_path / "out")]) == 1
    assert "not a run directory (no config.json)" in capsys.readouterr().err


# ---- the JavaScript runtime against lra_kit ---------------------------------------------------------------------

def _ring_digit() -> list[int]:
    """A synthetic 28×28 '0' (a ring), raster order: a prefix that does not need the MNIST files."""
    pixels = []
    for r in range(28):
        for c in range(28):
            d = math.hypot(r - 13.5, (c - 13.5) * 1.4)
            pixels.append(int(max(0.0, 255 * (1 - abs(d - 8.0) / 3.0))))
    return pixels


@torch.no_grad()
def _recurrent_log_probs(model, prefix: list[int]) -> list[list[float]]:
    """log P(next pixel) after each position, by the path ``CausalLM.generate`` takes: prefill the first
    pixel, then ``encoder.step`` one pixel at a time."""
    ids = torch.tensor([prefix])
    h, states = model.encoder.prefill(model.embed(ids[:, :1]))
    rows = [model.log_probs(h[:, -1])[0]]
    for t in range(1, len(prefix)):
        h, states = model.encoder.step(model.embed(ids[:, t:t + 1], offset=t)[:, 0], states)
        rows.append(model.log_probs(h)[0])
    return [r.tolist() for r in rows]


def _reference_entries(name: str, model, manifest: Path, prefix: list[int]) -> list[dict]:
    # The reference is lra_kit's own model run in float64 on the exported (float32) weights: the runtime keeps
    # float32 weights and states and sums in doubles, so it is compared with the exact result of those weights.
    # PyTorch's float32 run is itself an approximation of it: 1.9e-4 off in log P after 784 steps of the
    # shipped step-3,000 linear model, more than the tolerance.
    model = copy.deepcopy(model).double()
    attention = model.cfg.attention
    with torch.no_grad():
        greedy = model.generate(torch.tensor([[prefix[0]]]), 783, greedy=True)[0].tolist()
    main = {"name": name, "manifest": str(manifest), "method": "kv-cache" if attention == "softmax" else "recurrent",
            "prefix": prefix, "positions": list(range(784)), "log_probs": _recurrent_log_probs(model, prefix),
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


def _shipped_manifests() -> list[Path]:
    return sorted(p for p in SHIPPED.glob("mnist-*.json") if "digits" not in p.name) if SHIPPED.is_dir() else []


def test_javascript_runtime_equals_lra_kit(exported, tmp_path):
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the JavaScript runtime is not checked (Node 20: apt-get install nodejs)")
    prefix = _ring_digit()
    entries = []
    for attention, (model, path) in exported.items():
        entries += _reference_entries(f"smoke-{attention}", model, path, prefix)
    for path in _shipped_manifests():  # the models the book ships, read back exactly as the page gets them
        entries += _reference_entries(path.stem, load_web_model(str(path)), path, prefix)
    reference = tmp_path / "reference.json"
    reference.write_text(json.dumps({"tolerance": TOLERANCE, "models": entries}))
    env = dict(os.environ, LRA_WEB_REFERENCE=str(reference))
    proc = subprocess.run([node, "--test", str(JS_TEST)], capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    passed = int(re.search(r"^# pass (\d+)", proc.stdout, re.M).group(1))
    skipped = int(re.search(r"^# skipped (\d+)", proc.stdout, re.M).group(1))
    assert skipped == 0 and passed >= 2 * len(entries), proc.stdout[-3000:]


def test_export_of_an_unfinished_run_says_so(tmp_path):
    cfg = _config("linear")
    _write_run(tmp_path / "run", cfg, 0)
    (tmp_path / "run" / "results.json").unlink()
    torch.save({"model": torch.load(tmp_path / "run" / "best.pt")["model"], "step": 3000,
                "metrics": {"bits_per_dim": 1.25}}, tmp_path / "run" / "best.pt")
    prov = export_run(str(tmp_path / "run"), str(tmp_path / "out"))["provenance"]
    assert (prov["finished"], prov["checkpoint_step"], prov["dev_bits_per_dim"]) == (False, 3000, 1.25)
    assert prov["test_bits_per_dim"] is None and prov["planned_steps"] == cfg.train.steps
