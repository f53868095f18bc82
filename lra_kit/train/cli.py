"""``lra-kit train | eval | generate``: the training layer's sub-commands (wired by lra_kit/cli.py).

Every value a user gives is checked before any work: a bad config value or option is a
``ConfigError``, an unwritable ``--out``/``--record-dir`` an ``OutputPathError`` — raised before the
data is loaded, so a long run never fails at its end for a path that was wrong from the start.
"""
from __future__ import annotations

import argparse
import gc
import json
import math
import os

TRAIN_EXAMPLES = """examples:
  lra-kit train --task listops --attention momentum --scale smoke
  lra-kit train --task copy --attention linear --scale book --out runs/copy-linear
  lra-kit train --task copy --attention momentum --connection adaptive --scale paper --device cuda --record copy-task
  lra-kit train --task text --attention luna --set model.layers=4 --set optim.lr=3e-4
  lra-kit train --task image --attention linear --preset lra-cpu --record lra
  torchrun --nproc_per_node 2 -m lra_kit train --task listops --attention linear --scale smoke

Running the same command again on an existing run directory resumes it from its checkpoint.
"""


def _train(args) -> int:
    from lra_kit.atomic import check_writable
    from lra_kit.errors import ConfigError
    from lra_kit.scales import get_scale
    from lra_kit.train.configs import CHOSEN_BY_FLAGS, apply_overrides, get_config, load_config_file, merge_dict
    from lra_kit.train.trainer import Trainer, default_run_dir, record_path

    file_values = load_config_file(args.config) if args.config else {}
    task = args.task or file_values.get("task")
    attention = args.attention or file_values.get("attention")
    if task is None or attention is None:
        raise ConfigError("--task and --attention are required (or a --config file that names them)")
    preset = args.preset or file_values.get("preset")
    scale = args.scale or file_values.get("scale")
    scale = scale if preset is not None else get_scale(scale)  # a preset fixes the scale of its data
    connection = args.connection or file_values.get("connection", "residual")
    cfg = get_config(task, attention, scale, connection, preset)
    merge_dict(cfg, {k: v for k, v in file_values.items() if k not in CHOSEN_BY_FLAGS})
    if args.n_hashes is not None:
        if attention != "lsh":
            raise ConfigError(f"--n-hashes is LSH attention's rounds of hashing (--attention lsh), not {attention}'s")
        cfg.model.attention_options["n_hashes"] = args.n_hashes
    apply_overrides(cfg, args.set)
    out = args.out or default_run_dir(cfg)
    check_writable(out, directory=True)  # before the data is loaded, not after the run
    if args.record:
        check_writable(record_path(args.record_dir, args.record, cfg))
    trainer = Trainer(cfg, out, device=args.device, record=args.record, record_dir=args.record_dir,
                      progress=not args.no_progress)
    try:
        trainer.run()
    finally:
        from lra_kit.train.distributed import cleanup

        info = trainer.dist
        # The DDP wrapper holds the process group. Left to the interpreter's exit (a reference cycle keeps the
        # trainer alive until then), the group's gloo threads are torn down during finalization, which aborted
        # a rank now and then ("terminate called without an active exception", SIGABRT, in a full `make test`).
        # So the trainer goes first, and the group is destroyed while the interpreter is whole.
        del trainer
        gc.collect()
        cleanup(info)
    return 0


def _check_generate_args(args) -> None:
    from lra_kit.errors import ConfigError

    for name, low in (("n", 1), ("prompt", 1), ("show", 0)):
        if getattr(args, name) < low:
            raise ConfigError(f"--{name} must be >= {low}, got {getattr(args, name)}")
    if not (math.isfinite(args.temperature) and args.temperature >= 0):
        raise ConfigError(f"--temperature must be a finite number >= 0 (0: greedy), got {args.temperature}")


def _eval(args) -> int:
    from lra_kit.train.runs import load_run

    trainer, which = load_run(args.run_dir, args.device)
    metrics = trainer.evaluate(args.split)
    print(json.dumps({"run_dir": args.run_dir, "checkpoint": which, "split": args.split,
                      "scale": trainer.cfg.scale, **metrics}, indent=2))
    return 0


def _generate(args) -> int:
    import torch

    from lra_kit.atomic import check_writable
    from lra_kit.data.registry import LM_TASKS
    from lra_kit.errors import ConfigError
    from lra_kit.train.runs import load_run
    from lra_kit.train.samples import save_image_grid

    _check_generate_args(args)
    if args.pictures:
        check_writable(args.pictures, directory=True)  # before the run is loaded
    path = args.out or os.path.join(args.run_dir, "samples.png")
    trainer, which = load_run(args.run_dir, args.device)
    cfg, model = trainer.cfg, trainer.model
    if trainer.kind != "lm":
        raise ConfigError(f"generate needs a language-model task ({', '.join(LM_TASKS)}), not {cfg.task!r}")
    test = trainer.datasets["test"]
    gen = torch.Generator(device="cpu").manual_seed(args.seed)
    items = [test[i] for i in range(min(args.n, len(test)))]
    if cfg.task == "copy":  # prompt "0 w 0", generate |w| tokens, compare with w
        if args.pictures:
            raise ConfigError(f"--pictures draws images: it needs an image task, not {cfg.task!r}")
        correct = total = 0
        for ids in items:
            n = (len(ids) - 2) // 2
            prompt = ids[: n + 2][None].to(trainer.device)
            out = model.generate(prompt, n, greedy=True)[0, n + 2:].cpu()
            correct += int((out == ids[n + 2:]).sum())
            total += n
            if args.show > 0:
                args.show -= 1
                print(f"w={ids[1:n + 1].tolist()}\n  -> {out.tolist()}")
        print(json.dumps({"run_dir": args.run_dir, "checkpoint": which, "scale": cfg.scale, "samples": len(items),
                          "copy_accuracy": correct / max(total, 1)}, indent=2))
        return 0
    if args.pictures:
        return _record_pictures(args, trainer, which)
    length = test.max_length
    if args.prompt >= length:
        raise ConfigError(f"--prompt must be below the image length {length}, got {args.prompt}")
    check_writable(path)
    prompt = torch.stack([ids[: args.prompt] for ids in items]).to(trainer.device)
    out = model.generate(prompt, length - args.prompt, temperature=args.temperature, generator=gen).cpu()
    save_image_grid(out, path, channels=3 if cfg.task == "cifar10" else 1)
    print(f"[lra-kit] wrote {len(items)} samples ({cfg.task}, scale={cfg.scale}, "
          f"prompt={args.prompt} pixels) to {path}")
    return 0


def _record_pictures(args, trainer, which: str) -> int:
    """``--pictures DIR``: samples and completions (Katharopoulos et al. Fig. 3) with the run's provenance."""
    from lra_kit.errors import ConfigError
    from lra_kit.train.samples import record_pictures

    try:
        record = record_pictures(trainer, which, args.pictures, n=args.n, seed=args.seed, temperature=args.temperature)
    except ValueError as err:  # sample_pictures' checks: square single-channel images, enough test images
        raise ConfigError(f"--pictures: {err}") from None
    print(f"[lra-kit] wrote {', '.join(record['files'].values())} and {record['experiment']}-pictures.json "
          f"(samples and completions of {record['experiment']}, {which}) to {args.pictures}")
    return 0


def add_parser(subparsers) -> None:
    from lra_kit.attention import ATTENTIONS
    from lra_kit.data.registry import TASKS
    from lra_kit.models.config import CONNECTIONS
    from lra_kit.scales import SCALES
    from lra_kit.train.paper_configs import PRESETS

    fmt = argparse.RawDescriptionHelpFormatter
    p = subparsers.add_parser("train", help="train a model on a task (resumes an existing run directory)",
                              description="Train one task × attention × scale; the config is printed and saved "
                                          "in the run directory with the checkpoints, the JSONL log and results.json.",
                              epilog=TRAIN_EXAMPLES, formatter_class=fmt)
    p.add_argument("--task", choices=TASKS)
    p.add_argument("--attention", choices=sorted(ATTENTIONS))
    p.add_argument("--scale", choices=SCALES, help="smoke | book | cpu | paper (default: $LRA_KIT_SCALE or smoke)")
    p.add_argument("--preset", choices=sorted(PRESETS),
                   help="a named reduced scale (PRESETS of train/paper_configs.py), e.g. lra-cpu: LRA on a CPU "
                        "in minutes")
    p.add_argument("--n-hashes", type=int, metavar="N",
                   help="LSH attention's rounds of hashing (the papers' lsh-1, lsh-4, lsh-8; default 1)")
    p.add_argument("--connection", choices=CONNECTIONS,
                   help="residual (default), momentum (eq. 15) or adaptive (eq. 18) connection, β̃/γ̃ from Table 1")
    p.add_argument("--out", metavar="RUN_DIR", help="run directory (default runs/<task>-<attention>-<scale>)")
    p.add_argument("--config", metavar="FILE", help="a JSON config (full, e.g. a run's config.json, or partial)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. --set model.layers=4 (repeatable)")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N (default auto)")
    p.add_argument("--record", metavar="NAME", help="also write results to results/NAME/<run name>.json (full runs)")
    p.add_argument("--record-dir", default="results", help="where --record writes (default results/)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_train)

    p = subparsers.add_parser("eval", help="evaluate a run's best checkpoint",
                              epilog="example:\n  lra-kit eval runs/listops-momentum-smoke --split test",
                              formatter_class=fmt)
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.add_argument("--split", default="test", choices=("train", "val", "test"))
    p.add_argument("--device", default="auto")
    p.set_defaults(func=_eval)

    p = subparsers.add_parser("generate", help="sample from a trained causal LM (PNG grid for image tasks)",
                              epilog="examples:\n  lra-kit generate runs/mnist-linear-book --n 16\n"
                                     "  lra-kit generate runs/mnist-linear-cpu --pictures results/mnist\n"
                                     "  lra-kit generate runs/copy-momentum-book --show 3", formatter_class=fmt)
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.add_argument("--n", type=int, default=16, help="number of samples")
    p.add_argument("--prompt", type=int, default=1, help="image tasks: pixels of test images given as the prompt")
    p.add_argument("--temperature", type=float, default=1.0, help="sampling temperature; 0: greedy (the argmax)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--show", type=int, default=3, help="copy task: print this many examples")
    p.add_argument("--out", help="PNG path (default RUN_DIR/samples.png)")
    p.add_argument("--pictures", metavar="DIR",
                   help="single-channel image tasks: write n samples and 8 completions of occluded test images "
                        "(Katharopoulos et al. Fig. 3) with the finished run's provenance into DIR, as results/mnist/ "
                        "holds them, instead of the grid of --out")
    p.add_argument("--device", default="auto")
    p.set_defaults(func=_generate)

