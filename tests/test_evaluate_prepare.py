"""What evaluation's entry points check and prepare (evaluate/prepare.py): a fit's
tolerance."""

import pytest
from helpers import spins3

import numpyro_ugm as ugm
from numpyro_ugm.evaluate import exact


def test_fits_check_their_tolerance():
    """A NaN tolerance would never stop a fit (the gradient norm is never <= NaN): both
    fits reject it, and a negative one, naming themselves."""
    m, params, _, data = spins3()
    for fit, owner in ((exact.fit, "fit"), (ugm.fit_pseudo_likelihood,
                                            "fit_pseudo_likelihood")):
        for tol in (float("nan"), -1.0, "small"):
            with pytest.raises(ValueError, match=f"^{owner}: tol must be a number >= 0"):
                fit(m, data, params=params, num_steps=3, tol=tol)
