"""The ``python -m lra_kit.bench.<name>`` entry point that every benchmark shares with its ``lra-kit bench`` command."""
from __future__ import annotations

import argparse
from collections.abc import Callable

from lra_kit.errors import LraKitError


def module_main(prog: str, doc: str | None, add_arguments: Callable[[argparse.ArgumentParser], None],
                main_from_args: Callable[[argparse.Namespace], int], argv=None) -> int:
    """Parse ``argv`` like the ``lra-kit bench`` sub-command and run it; a user error is one line, not a traceback."""
    parser = argparse.ArgumentParser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    try:
        return main_from_args(parser.parse_args(argv))
    except LraKitError as err:
        raise SystemExit(f"error: {err}") from None
