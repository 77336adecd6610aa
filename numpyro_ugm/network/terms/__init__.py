"""ERGM terms: the formula, what a term is, structural and covariate statistics, their
change statistics from dyad views, and their compiled form."""
