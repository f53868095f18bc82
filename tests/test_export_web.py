"""``lra-kit export-web`` and the web runtime (``_static/web/runtime.mjs``) against lra_kit's own model.

The export is checked in Python (round trip, provenance, refusals); then the same models, and the
models shipped with the book (``_static/web/models``), are run by the JavaScript runtime under
``node --test tests/js/runtime.test.mjs``. That file has tests/js_references.py write its reference (the
log-probabilities of the recurrent step that :meth:`lra_kit.models.CausalLM.generate` runs, in float64 on the
exported float32 weights, and the pixels of ``generate(greedy=True)``) and compares: max |Δ log P| ≤ 1e-4, the
same greedy pixels. Without ``node`` that part is skipped with the reason.
"""
from __future__ import annotations

import base64
import json
import re
import shutil
from pathlib import Path

import pytest
import torch

from js_references import export_models, shipped_manifests, web_config, write_run

from lra_kit.cli import main as cli_main
from lra_kit.web import UnsupportedModelError, export_run, load_web_model
from lra_kit.web.export import SUPPORTED_ATTENTIONS

ROOT = Path(__file__).resolve().parents[1]
ATTENTIONS = SUPPORTED_ATTENTIONS


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """{attention: (model, manifest path)} for a random 2-layer smoke-size MNIST model of each attention."""
    return export_models(tmp_path_factory.mktemp("export_web"))


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
    values = web_config("linear").to_dict()
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

def test_javascript_runtime_equals_lra_kit(node_tests):
    """``node --test tests/js/runtime.test.mjs``, run as a user runs it (the ``node_tests`` fixture): every model
    of the reference passed both comparisons, and the runtime's other tests passed."""
    results = node_tests.results()
    ours = {name: status for name, status in results.items() if name.startswith(("smoke-", "mnist-"))}
    models = [*ATTENTIONS, "momentum-variant"] + [p.stem for p in shipped_manifests()]
    for model in models:
        methods = ["kv-cache", "recompute"] if model.endswith("softmax") else ["recurrent"]
        for method in methods:
            name = f"{model if model.startswith('mnist-') else 'smoke-' + model} ({method})"
            found = {k: v for k, v in ours.items() if k.startswith(name + ":")}
            assert len(found) == 2 and set(found.values()) == {"ok"}, (name, found, node_tests.tail())
    for name in ("the reference names at least one model of each exported attention",
                 "seeded sampling repeats, and a different seed or temperature changes the image",
                 "the state of the RNN does not grow; the cache does",
                 "bad arguments are refused with the argument named"):
        assert results.get(name) == "ok", (name, results.get(name), node_tests.tail())


def test_export_of_an_unfinished_run_says_so(tmp_path):
    cfg = web_config("linear")
    write_run(tmp_path / "run", cfg, 0)
    (tmp_path / "run" / "results.json").unlink()
    torch.save({"model": torch.load(tmp_path / "run" / "best.pt")["model"], "step": 3000,
                "metrics": {"bits_per_dim": 1.25}}, tmp_path / "run" / "best.pt")
    prov = export_run(str(tmp_path / "run"), str(tmp_path / "out"))["provenance"]
    assert (prov["finished"], prov["checkpoint_step"], prov["dev_bits_per_dim"]) == (False, 3000, 1.25)
    assert prov["test_bits_per_dim"] is None and prov["planned_steps"] == cfg.train.steps
