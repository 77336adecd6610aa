"""The structure of a model, found from the model itself: which variables interact,
the blocks of conditionally independent variables that Gibbs updates together, whether
the potential is multilinear (conditionals from one gradient, closed-form sum-out), and
one structure valid for every example of a CRF.

* :mod:`~numpyro_ugm.structure.graph`: the :class:`Structure` type, the greedy colouring
  of a graph into blocks, and :func:`from_colors` (a colouring a factor declares);
* :mod:`~numpyro_ugm.structure.discovery`: :func:`analyze`, the interaction graph and
  multilinearity of a log-potential, probed at random states and parameters;
* :mod:`~numpyro_ugm.structure.covering`: :func:`cover`, a structure whose blocks hold
  for every example of a conditional model (its graph may depend on the inputs);
* exact inference on the graph: :mod:`~numpyro_ugm.structure.tables` (the potential's
  unary and pairwise tables), :mod:`~numpyro_ugm.structure.elimination` (the elimination
  order and its table sizes) and :mod:`~numpyro_ugm.structure.contraction` (log Z,
  marginals, MAP and exact draws on the tables).

This package knows nothing of :class:`~numpyro_ugm.model.UGM`: it works on a
log-potential function ``(params, state) -> scalar`` (``(params, state, inputs)`` for
:func:`cover`), the domains of the state sites and a sampler of random parameters. The
dependency runs one way: the model imports this package and hands it its pieces.
"""

from .covering import cover
from .discovery import analyze, check_multilinear
from .graph import Structure, from_colors, greedy_coloring

__all__ = ["Structure", "analyze", "check_multilinear", "cover", "from_colors",
           "greedy_coloring"]
