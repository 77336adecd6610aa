"""Fixtures of the terms' tests: ``attributes``, the node attributes of the six-node
networks of the covariate, naming and formula tests (numbers ``x``, labels ``Sex`` and
``Race``, integers ``Grade``)."""

import numpy as np
import pytest

ATTRIBUTES = {
    "x": np.array([0.5, -1.25, 2.0, 0.0, 3.5, -0.75]),
    "Sex": np.array(["F", "M", "M", "F", "M", "F"]),
    "Grade": np.array([9, 7, 8, 7, 9, 9]),
    "Race": np.array(["White", "Black", "Hisp", "White", "Hisp", "Black"]),
}


@pytest.fixture(scope="session")
def attributes():
    """The node attributes of six nodes (a copy per use)."""
    return {k: v.copy() for k, v in ATTRIBUTES.items()}
