"""lra_kit: linear, momentum and Luna attention, the Long Range Arena, and the book that derives them."""
from lra_kit.scales import SCALES, get_scale

__version__ = "0.1.0"
__all__ = ["SCALES", "get_scale", "__version__"]
