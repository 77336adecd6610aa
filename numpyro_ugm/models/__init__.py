"""Ready-made models."""

from .rbm import rbm
from .vbm import vbm

__all__ = ["rbm", "vbm"]
