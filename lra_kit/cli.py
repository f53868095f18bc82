"""The ``lra-kit`` command line.

Each layer of the package contributes its own sub-commands through a module with
``add_parser(subparsers)``; this file only wires them together, so that ``data`` knows
nothing of ``train`` (docs/design.md §1 Layout).

Errors: a :class:`lra_kit.errors.LraKitError` (something the user can fix) prints one line,
``lra-kit COMMAND: error: ...``, and exits with status 1; ``LRA_KIT_DEBUG=1`` shows its traceback.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

from lra_kit.errors import LraKitError
from lra_kit.threads import use_threads

# name of the sub-command group -> module that defines add_parser(subparsers)
_COMMAND_MODULES = (
    "lra_kit.bench.cli",
    "lra_kit.data.cli",
    "lra_kit.reports",
    "lra_kit.train.cli",
    "lra_kit.web.export",
)

EPILOG = """examples:
  lra-kit train --task listops --attention momentum --scale smoke     # a 20-second CPU run
  lra-kit train --task copy --attention linear --scale book --out runs/copy-linear
  lra-kit train --task copy --attention linear --scale book --out runs/copy-linear   # again: resumes
  lra-kit eval runs/copy-linear
  lra-kit generate runs/copy-linear
  lra-kit data stats pathfinder --grid pathfinder.png
  lra-kit data generate listops --out data/listops-1000
  lra-kit bench attention --lengths 1024 2048 4096 --json /tmp/attention.json   # not into results/: the records
  LRA_KIT_THREADS=2 lra-kit train --task copy --attention linear --scale book   # two PyTorch threads (default 1)
  lra-kit report --check                      # is the README's table of reproductions up to date?
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lra-kit",
        description="Linear, momentum and Luna attention on the Long Range Arena.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--threads", type=int, default=None, metavar="N",
                        help="PyTorch intra-op threads (default: $LRA_KIT_THREADS, else $OMP_NUM_THREADS, else 1: "
                        "the small models here run fastest on one, and two runs of one thread beat one run of two; "
                        "docs/running.md)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name != name:  # a real import error inside the module
                raise
            continue
        module.add_parser(subparsers)
    return parser


# Errors a user can fix (a bad option or config value, missing data, an unwritable path, a corrupt
# checkpoint, a busy run directory, no network): one message, not a traceback. Anything else (out of
# memory, a shape mismatch) is a bug and keeps its traceback.
USER_ERRORS = (LraKitError, ConnectionError)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 0
    try:
        use_threads(args.threads)
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        resume = " (run the same command again to resume from the last checkpoint)" if args.command == "train" else ""
        print(f"lra-kit {args.command}: interrupted{resume}", file=sys.stderr)
        return 130
    except USER_ERRORS as err:
        if os.environ.get("LRA_KIT_DEBUG"):
            raise
        print(f"lra-kit {args.command}: error: {err}\n(set LRA_KIT_DEBUG=1 for the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
