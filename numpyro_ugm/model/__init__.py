"""The model layer: tracing a numpyro model (:class:`UGM`: its sites, parameters and
factors, its structure), the :class:`~numpyro_ugm.model.target.Target` the algorithms read,
and the seam between them (:func:`~numpyro_ugm.model.problem.build_problem`)."""

from .ugm import UGM, as_ugm

__all__ = ["UGM", "as_ugm"]
