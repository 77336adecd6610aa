"""Checks of user settings shared by every layer (domains, kernels, estimators, the
learner, evaluation, adapters), so that a setting is never silently rounded.

* :func:`check_count` accepts an integer (Python ``int``, a numpy integer, a 0-d integer
  array) and nothing else: ``2.5`` is an error, and so is ``2.0`` (a count given as a
  float is a sign of arithmetic gone wrong upstream, and one rule is easier to trust than
  "integral floats are fine").
"""

import operator
from typing import Any

import numpy as np


def check_count(owner: str, name: str, value: Any, minimum: int = 1) -> int:
    """``value`` as a Python ``int``, after checking it is an integer >= ``minimum``.

    Parameters
    ----------
    owner : str
        Who takes the setting (``"PCD"``, ``"MLE.run"``, ...), named in the error.
    name : str
        The setting's name, named in the error.
    value : Any
    minimum : int

    Raises
    ------
    ValueError
        If ``value`` is not an integer (a float, a bool, a string, ...) or is below
        ``minimum``.
    """
    number = None
    if not isinstance(value, (bool, np.bool_)):
        try:
            number = operator.index(value)
        except TypeError:
            pass
    if number is None:
        raise ValueError(f"{owner}: {name} must be an integer >= {minimum}, got {value!r} "
                         f"of type {type(value).__name__} (counts are never rounded)")
    if number < minimum:
        raise ValueError(f"{owner}: {name} must be an integer >= {minimum}, got {number}")
    return number
