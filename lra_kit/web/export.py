"""``lra-kit export-web RUN_DIR OUT_DIR``: a trained pixel model as weights + manifest for the web runtime.

Writes, for a run directory of ``lra-kit train`` (its ``config.json``, ``best.pt`` and, when the
run finished, ``results.json``):

``NAME.json``  the manifest: format, the model's config, each tensor's name/shape/offset in the
               binary, its sha256, and the run's provenance (experiment, preset, scale, steps,
               seed, test bits/dim, the commit that trained it and the one that exported it);
``NAME.bin``   every weight as little-endian float32, in the order of the manifest; the
               fixed sinusoid table of the position encoding is included (``embed.table``), so
               the runtime adds exactly the numbers PyTorch adds;
``NAME.mjs``   the same two as one classic script (``LRA_WEB_MODELS[NAME] = {manifest, weights}``,
               the weights in base64), which a page opened from disk (``file://``) can load:
               browsers refuse ``fetch`` and ES-module imports there. (Named ``.mjs`` because Jupyter
               Book 1.x adds every ``*.js`` under ``_static`` to the head of every page; these scripts
               belong to one page.)

The runtime (``_static/web/runtime.mjs``) runs what :class:`lra_kit.models.CausalLM` computes for
the models it knows: linear attention (its RNN, Katharopoulos et al. eqs. 16–20, φ = elu + 1,
eq. 7), momentum attention (the heavy-ball RNN, Nguyen et al. eq. 12), softmax attention (eq. 2,
with a key/value cache or re-run on the whole prefix); residual connections, pre- or post-LN, any
position kind, an output softmax over the 256 pixel values. Anything else is refused with one line
(:func:`check_exportable`). :func:`load_web_model` reads an export back into a ``CausalLM``: the
tests run ``lra_kit``'s own ``generate()`` on exactly the numbers the browser gets.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
from dataclasses import asdict

import numpy as np
import torch

from lra_kit.errors import LraKitError

FORMAT = "lra-kit-web/1"
SUPPORTED_TASKS = {"mnist": {"vocab_size": 256, "length": 784, "image": [28, 28]}}
# The attentions the runtime implements, the options of each it implements, and the values it implements
# them for (None: any number).
_OPTIONS = {"linear": {"feature_map": ("elu",), "eps": None, "compat": (None,)},
            "momentum": {"feature_map": ("elu",), "eps": None, "compat": (None,), "beta": None, "gamma": None},
            "softmax": {"dropout": None}}
SUPPORTED_ATTENTIONS = tuple(sorted(_OPTIONS))
MAX_FILE_BYTES = 2_000_000


class UnsupportedModelError(LraKitError, ValueError):
    """A model the web runtime cannot run (the message says what, in one line)."""


def check_exportable(cfg) -> None:
    """Raise :class:`UnsupportedModelError` unless ``cfg`` (an ``ExperimentConfig``) is a model the runtime runs."""
    m = cfg.model
    if cfg.task not in SUPPORTED_TASKS:
        raise UnsupportedModelError(f"task {cfg.task!r} has no web runtime; supported: {', '.join(SUPPORTED_TASKS)}")
    if m.attention not in SUPPORTED_ATTENTIONS:
        raise UnsupportedModelError(f"attention {m.attention!r} has no web runtime; supported: "
                                    f"{', '.join(SUPPORTED_ATTENTIONS)}")
    if m.output != "softmax":
        raise UnsupportedModelError(f"model.output {m.output!r} has no web runtime; supported: 'softmax' "
                                    "(over the 256 pixel values)")
    if m.connection != "residual":
        raise UnsupportedModelError(f"model.connection {m.connection!r} has no web runtime; supported: 'residual'")
    allowed = _OPTIONS[m.attention]
    for key, value in m.attention_options.items():
        if key not in allowed:
            raise UnsupportedModelError(f"attention option {key}={value!r} of {m.attention!r} has no web runtime; "
                                        f"supported options: {', '.join(allowed)}")
        if allowed[key] is not None and value not in allowed[key]:
            raise UnsupportedModelError(f"attention option {key}={value!r} has no web runtime; supported: "
                                        f"{', '.join(map(repr, allowed[key]))}")


def _run_provenance(run_dir: str, cfg, checkpoint: str, ckpt: dict) -> dict:
    """Where the weights come from. A finished run has ``results.json`` (steps, test bits/dim, commit); a run
    still training has only its checkpoint: its step and dev metric are given, and ``finished`` is False."""
    from lra_kit.results import git_commit

    dev = ckpt.get("metrics") or {}
    info = {"run": os.path.basename(os.path.normpath(run_dir)), "experiment": cfg.name, "checkpoint": checkpoint,
            "preset": getattr(cfg, "preset", None), "scale": cfg.scale, "seed": cfg.train.seed,
            "planned_steps": cfg.train.steps, "finished": False, "checkpoint_step": ckpt.get("step"),
            "dev_bits_per_dim": dev.get("bits_per_dim"),
            "steps": None, "test_bits_per_dim": None, "trained_at_commit": None, "trained_on": None, "date": None,
            "exported_at_commit": git_commit()}
    path = os.path.join(run_dir, "results.json")
    if os.path.isfile(path):
        info["finished"] = True
        with open(path) as f:
            res = json.load(f)
        info.update(steps=res.get("steps"), seed=res.get("seed", info["seed"]), date=res.get("date"),
                    trained_at_commit=res.get("git_commit"), trained_on=res.get("device"),
                    test_bits_per_dim=res.get("metrics", {}).get("test", {}).get("bits_per_dim"))
    return info


def _tensors(model) -> list[tuple[str, torch.Tensor]]:
    named = [(name, t.detach().float().cpu().contiguous()) for name, t in model.state_dict().items()]
    if model.embed.position in ("sinusoidal", "sinusoidal_concat"):
        named.append(("embed.table", model.embed.table.float().cpu().contiguous()))
    return named


def export_model(model, out_dir: str, name: str, *, task: str = "mnist", provenance: dict | None = None) -> dict:
    """Write ``NAME.json``, ``NAME.bin`` and ``NAME.mjs`` for a :class:`~lra_kit.models.CausalLM`; returns the
    manifest."""
    from lra_kit.atomic import atomic_write

    if not name or any(c in name for c in "/\\\"'") or name.startswith("."):
        raise ValueError(f"name must be a plain file name, got {name!r}")
    cfg = model.cfg
    blobs, tensors, offset = [], [], 0
    for tname, t in _tensors(model):
        data = t.numpy().astype("<f4").tobytes()
        tensors.append({"name": tname, "shape": list(t.shape), "offset": offset})
        blobs.append(data)
        offset += len(data)
    weights = b"".join(blobs)
    manifest = {
        "format": FORMAT, "name": name, "task": task, **SUPPORTED_TASKS[task],
        "model": {**asdict(cfg), "head_dim": model.encoder.layers[0].attn.head_dim, "layer_norm_eps": 1e-5,
                  "max_length": model.max_length},
        "weights": {"file": f"{name}.bin", "dtype": "float32", "byteorder": "little", "bytes": len(weights),
                    "sha256": hashlib.sha256(weights).hexdigest(), "tensors": tensors},
        "provenance": provenance or {},
    }
    os.makedirs(out_dir, exist_ok=True)
    text = json.dumps(manifest, indent=1)
    script = (f"// lra-kit web model {name!r}: written by `lra-kit export-web`; the manifest {name}.json and the "
              f"float32 weights {name}.bin as one classic script.\n"
              "(globalThis.LRA_WEB_MODELS = globalThis.LRA_WEB_MODELS || {})"
              f"[{json.dumps(name)}] = {{manifest: {json.dumps(manifest)},\n"
              f"weights: \"{base64.b64encode(weights).decode('ascii')}\"}};\n")
    files = ((".bin", weights, "wb"), (".json", text + "\n", "w"), (".mjs", script, "w"))
    for suffix, content, _mode in files:
        if len(content) > MAX_FILE_BYTES:
            raise UnsupportedModelError(f"{name}{suffix} would be {len(content):,} bytes, over the "
                                        f"{MAX_FILE_BYTES:,} a page ships; export a smaller model")
    for suffix, content, mode in files:
        with atomic_write(os.path.join(out_dir, name + suffix), mode) as f:
            f.write(content)
    return manifest


def export_run(run_dir: str, out_dir: str, name: str | None = None) -> dict:
    """Export the best (else the latest) checkpoint of a ``lra-kit train`` run directory; returns the manifest."""
    from lra_kit.models import build_model
    from lra_kit.train.checkpoint import load_checkpoint
    from lra_kit.train.runs import checkpoint_name, run_config

    cfg = run_config(run_dir)
    check_exportable(cfg)  # before reading weights: an unsupported model fails in one line
    which = checkpoint_name(run_dir)
    spec = SUPPORTED_TASKS[cfg.task]
    from lra_kit.data.formats.pixels import PAD_ID

    model = build_model(cfg.model, kind="lm", vocab_size=spec["vocab_size"], max_length=spec["length"], pad_id=PAD_ID)
    ckpt = load_checkpoint(os.path.join(run_dir, which))
    model.load_state_dict(ckpt["model"])
    model.eval()
    name = name or f"{cfg.task}-{cfg.model.attention}"
    return export_model(model, out_dir, name, task=cfg.task, provenance=_run_provenance(run_dir, cfg, which, ckpt))


def read_weights(manifest_path: str) -> tuple[dict, dict[str, torch.Tensor]]:
    """The manifest and its tensors (checked against the manifest's size and sha256)."""
    with open(manifest_path) as f:
        manifest = json.load(f)
    if manifest.get("format") != FORMAT:
        raise ValueError(f"{manifest_path}: format {manifest.get('format')!r}, this lra_kit reads {FORMAT!r}")
    with open(os.path.join(os.path.dirname(manifest_path), manifest["weights"]["file"]), "rb") as f:
        data = f.read()
    if len(data) != manifest["weights"]["bytes"] or hashlib.sha256(data).hexdigest() != manifest["weights"]["sha256"]:
        raise ValueError(f"{manifest_path}: the weights file does not match the manifest (size or sha256)")
    tensors = {}
    for t in manifest["weights"]["tensors"]:
        count = int(np.prod(t["shape"])) if t["shape"] else 1
        array = np.frombuffer(data, dtype="<f4", count=count, offset=t["offset"]).reshape(t["shape"])
        tensors[t["name"]] = torch.from_numpy(array.copy())
    return manifest, tensors


def load_web_model(manifest_path: str):
    """An exported model back as a :class:`~lra_kit.models.CausalLM` (eval mode, float32, strict load)."""
    from lra_kit.data.formats.pixels import PAD_ID
    from lra_kit.models import CausalLM, ModelConfig

    manifest, tensors = read_weights(manifest_path)
    fields = {k: v for k, v in manifest["model"].items() if k in ModelConfig.__dataclass_fields__}
    model = CausalLM(ModelConfig(**fields), vocab_size=manifest["vocab_size"], max_length=manifest["length"],
                     pad_id=PAD_ID)
    table = tensors.pop("embed.table", None)
    model.load_state_dict(tensors, strict=True)
    if table is not None and not torch.equal(table, model.embed.table):
        raise ValueError(f"{manifest_path}: embed.table differs from the sinusoids this lra_kit computes")
    return model.eval()


def export_test_digits(out_dir: str, name: str = "mnist-test-digits") -> dict:
    """The first MNIST test image of each class 0–9 (never trained on), for the page's *complete*:
    ``NAME.json`` and ``NAME.mjs`` (``LRA_WEB_DIGITS = {...}``), 784 raster-order 8-bit pixels each."""
    from lra_kit.atomic import atomic_write
    from lra_kit.data.formats.mnist import mnist_arrays

    images, labels, _info = mnist_arrays("test")
    labels = np.asarray(labels)
    index = [int(np.flatnonzero(labels == c)[0]) for c in range(10)]
    digits = {"source": "MNIST test set (the first image of each class)", "shape": [28, 28],
              "index": index, "labels": list(range(10)),
              "pixels": [np.asarray(images[i]).reshape(-1).astype(int).tolist() for i in index]}
    os.makedirs(out_dir, exist_ok=True)
    with atomic_write(os.path.join(out_dir, name + ".json"), "w") as f:
        json.dump(digits, f)
    with atomic_write(os.path.join(out_dir, name + ".mjs"), "w") as f:
        f.write(f"// {digits['source']}, written by `lra-kit export-web --test-digits`.\n"
                f"globalThis.LRA_WEB_DIGITS = {json.dumps(digits)};\n")
    return digits


# ---- command line ---------------------------------------------------------------------------------------------

def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "export-web", help="a trained MNIST pixel model as float32 weights + JSON manifest for the web runtime",
        description=__doc__.split("\n\n")[0] + "\n\n" + __doc__.split("\n\n", 1)[1].split("\n\nThe runtime")[0],
        formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run directory of `lra-kit train` (config.json, best.pt)")
    p.add_argument("out_dir", metavar="OUT_DIR", help="where NAME.json, NAME.bin and NAME.mjs are written")
    p.add_argument("--name", default=None, help="file name stem (default TASK-ATTENTION, e.g. mnist-linear)")
    p.add_argument("--test-digits", action="store_true",
                   help="also write mnist-test-digits.{json,mjs}: one MNIST test image per class (needs the data)")
    p.set_defaults(func=_main)


def _main(args) -> int:
    from lra_kit.atomic import check_writable

    check_writable(args.out_dir, directory=True)
    manifest = export_run(args.run_dir, args.out_dir, args.name)
    prov = manifest["provenance"]
    if prov["finished"]:
        trained = f"steps={prov['steps']}, test bits/dim={prov['test_bits_per_dim']:.3f}"
    else:
        dev = prov["dev_bits_per_dim"]
        trained = (f"run not finished: checkpoint of step {prov['checkpoint_step']} of {prov['planned_steps']}, "
                   f"dev bits/dim={'n/a' if dev is None else f'{dev:.3f}'}")
    print(f"[lra-kit] exported {manifest['name']} ({manifest['model']['attention']}, "
          f"{manifest['weights']['bytes']:,} bytes of weights, {trained}) to {args.out_dir}")
    if args.test_digits:
        export_test_digits(args.out_dir)
        print(f"[lra-kit] wrote mnist-test-digits.json/.mjs to {args.out_dir}")
    return 0
