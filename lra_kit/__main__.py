import sys

from lra_kit.cli import main

sys.exit(main())
