"""Ready-made models."""

from .grid_crf import grid_crf, grid_edges, image_features
from .multilabel_crf import multilabel_crf
from .rbm import rbm
from .vbm import vbm

__all__ = ["grid_crf", "grid_edges", "image_features", "multilabel_crf", "rbm", "vbm"]
