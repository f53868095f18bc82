"""``lra-kit data ...``: ``stats``, ``fetch``, ``ensure`` (what the book needs), ``generate {listops,pathfinder}``.

Registered by ``lra_kit/cli.py`` through ``add_parser(subparsers)``; each sub-command
sets ``func(args) -> int``.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lra_kit.scales import SCALES


def _stats(args) -> int:
    from lra_kit.data.store.errors import DataError
    from lra_kit.data.stats import format_stats, task_stats

    options = {}
    if args.task == "pathfinder":
        options["difficulty"] = args.difficulty
    try:
        stats = task_stats(args.task, scale=args.scale, **options)
    except DataError as err:
        print(f"{args.task}: not available\n{err}", file=sys.stderr)
        return 1
    print(format_stats(stats))
    if args.task == "pathfinder":
        from lra_kit.data import load
        from lra_kit.data.tasks.pathfinder import sample_grid
        from lra_kit.data.store.paths import cache_dir

        dataset = load("pathfinder", "train", scale=args.scale, difficulty=args.difficulty)
        n = min(24, len(dataset))
        images = dataset.sequences.values[: n * 1024].reshape(n, 32, 32)
        grid = Path(args.grid) if args.grid else cache_dir() / f"pathfinder_samples_{args.difficulty}.png"
        source = stats["metadata"].get("source")
        sample_grid(images, dataset.labels()[:n], grid,
                    title=f"Pathfinder-32 {args.difficulty} ({source}), first {n} train images")
        print(f"sample grid: {grid}")
    return 0


def _fetch(args) -> int:
    from lra_kit.data.store.fetch import fetch

    for path in fetch(args.name, verify=args.verify):
        print(path)
    return 0


def _ensure(args) -> int:
    from lra_kit.data.store.ensure import ensure
    from lra_kit.data.store.paths import DATA_ENV

    for status in ensure(args.names, timeout=args.timeout, allow_fetch=False if args.offline else None):
        if status.state == "missing":
            print(f"[lra-kit] {status.name}: not available ({status.detail}); the cells that need it show a notice "
                  f"instead. Fetch it later with `lra-kit data fetch {status.name}`, or set {DATA_ENV}.")
        else:
            print(f"[lra-kit] {status.name}: {status.state}")
    return 0


def _generate(args) -> int:
    out = Path(args.out)
    if args.what == "listops":
        from lra_kit.data.tasks.listops import scale_config, write_generated

        cfg = scale_config(args.scale, seed=args.seed)
        info = write_generated(cfg, out, workers=args.workers)
        print(f"wrote {out}/basic_{{train,val,test}}.tsv {info['sizes']} in {info['seconds']:.1f} s "
              f"(seed {cfg.seed}, lengths {cfg.min_length} < L < {cfg.max_length})")
    else:
        from lra_kit.data.tasks.pathfinder import generate_layout

        info = generate_layout(out, difficulty=args.difficulty, n=args.n, scale=args.scale, seed=args.seed,
                               workers=args.workers)
        print(f"wrote {info['n']:,} images to {info['folder']} in {info['total_s']:.1f} s "
              f"(generation {info['generate_s']:.1f} s)")
    return 0


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``data`` and its sub-commands on the top-level ``lra-kit`` parser."""
    from lra_kit.data.generators.pathfinder import DIFFICULTIES
    from lra_kit.data.registry import TASKS, task_names
    from lra_kit.data.store.sources import fetch_names

    data = subparsers.add_parser("data", help="datasets: statistics, downloads, generators")
    commands = data.add_subparsers(dest="data_command", metavar="SUBCOMMAND")
    data.set_defaults(func=lambda args: data.print_help() or 0)

    stats = commands.add_parser("stats", help="split sizes, length percentiles, label balance")
    stats.add_argument("task", choices=TASKS)
    stats.add_argument("--scale", choices=SCALES, default=None, help="default: $LRA_KIT_SCALE or smoke")
    stats.add_argument("--difficulty", choices=tuple(DIFFICULTIES), default="hard", help="pathfinder only")
    stats.add_argument("--grid", default=None, help="pathfinder only: where to save the sample grid PNG")
    stats.set_defaults(func=_stats)

    fetch = commands.add_parser("fetch", help="download an official archive (sha256-checked, resumable)")
    fetch.add_argument("name", choices=fetch_names())
    fetch.add_argument("--verify", action="store_true",
                       help="recompute the sha256 of files already present (finds a file altered without a change "
                            "of size or time); a mismatch is downloaded again")
    fetch.set_defaults(func=_fetch)

    ensure = commands.add_parser(
        "ensure", help="fetch what is missing of NAMES if a source answers; never fails for a missing dataset",
        description="What `make book` and `make test` run first: each dataset present (official files or an "
                    "offline copy, checksum-verified) is kept; a missing one is fetched when a source answers "
                    "within --timeout seconds and fetching is on (LRA_KIT_FETCH=0 turns it off); otherwise it "
                    "is reported and the pages that need it show a notice. Exit status 0 either way.")
    ensure.add_argument("names", nargs="+", choices=fetch_names(), metavar="NAME",
                        help=f"one or more of {', '.join(fetch_names())}")
    ensure.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for a source (default 10)")
    ensure.add_argument("--offline", action="store_true", help="never download (same as LRA_KIT_FETCH=0)")
    ensure.set_defaults(func=_ensure)

    generate = commands.add_parser("generate", help="write a generated set in the official LRA layout")
    generate.add_argument("what", choices=task_names(lra_layout=True))
    generate.add_argument("--out", required=True, help="output folder")
    generate.add_argument("--scale", choices=SCALES, default=None, help="default: $LRA_KIT_SCALE or smoke")
    generate.add_argument("--seed", type=int, default=0)
    generate.add_argument("--workers", type=int, default=None, help="processes (default: all cores)")
    generate.add_argument("--difficulty", choices=tuple(DIFFICULTIES), default="hard", help="pathfinder only")
    generate.add_argument("--n", type=int, default=None, help="pathfinder only: number of images (default by scale)")
    generate.set_defaults(func=_generate)
    return data
