"""ERGM terms: the formula and what a term is (``term``), the table of every built-in
term (``structural.TABLE``: one row each, its statistic, its JAX change statistic and
its compiled operation), structural and covariate statistics, their change statistics
from dyad views, and their compiled form (``compiled``) on neighbour lists (``lists``)."""
