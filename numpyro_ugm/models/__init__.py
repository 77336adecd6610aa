"""Ready-made models."""

from .ergm import (DegeneracyWarning, change_statistics, check_degeneracy, edges_to_adjacency,
                   edges_to_graph, ergm, ergm_statistics, graph_to_edges, mple)
from .grid_crf import grid_crf, grid_edges, image_features
from .multilabel_crf import multilabel_crf
from .rbm import rbm
from .vbm import vbm

__all__ = ["grid_crf", "grid_edges", "image_features", "multilabel_crf", "rbm", "vbm",
           "ergm", "ergm_statistics", "change_statistics", "graph_to_edges",
           "edges_to_adjacency", "edges_to_graph", "mple", "check_degeneracy",
           "DegeneracyWarning"]
