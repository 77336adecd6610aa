"""Ready-made models."""

from .grid_crf import grid_crf, grid_edges, image_features
from .rbm import rbm
from .vbm import vbm

__all__ = ["grid_crf", "grid_edges", "image_features", "rbm", "vbm"]
