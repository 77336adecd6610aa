"""numpyro_ugm: learning undirected graphical models with numpyro."""

from . import kernels
from .domains import Binary, Categorical, Spin
from .model import UGM

__version__ = "0.1.0"
__all__ = ["Binary", "Categorical", "Spin", "UGM", "kernels"]
