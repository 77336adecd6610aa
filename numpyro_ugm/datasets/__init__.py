"""Data sets: statnet's networks (shipped inside the package), MNIST, binarized MNIST and
the scene data (downloaded on first use into a user cache, or read from the folder named
by ``NUMPYRO_UGM_DATA``; every file checked against a pinned sha256), and synthetic
problems drawn from a model.

Sources and licenses: MNIST and binarized MNIST CC BY-SA 3.0 (LeCun, Cortes & Burges;
Larochelle & Murray 2011), the scene data MULAN's research benchmark (Boutell et al.
2004, no license stated), statnet's networks GPL-3 (R's ergm package). The Kumar-Hebert
images (Corel) and the CoNLL-2002 Spanish NER sentences (Tjong Kim Sang 2002, EFE news
wire) are research-use only and never downloaded: they are read from ``NUMPYRO_UGM_DATA``
alone.
"""

import numpy as np

from .conll import conll2002
from .files import load, path_of
from .networks import NETWORKS, network
from .synthetic import vbm_problem

__all__ = ["NETWORKS", "binarized_mnist", "binary_mnist", "conll2002", "kumar_hebert",
           "mnist", "network", "path_of", "scene", "vbm_problem"]


def binarized_mnist(split: str = "train") -> np.ndarray:
    """Larochelle & Murray's fixed binarization of MNIST: uint8 {0,1}, (N, 784).

    Parameters
    ----------
    split : {"train", "valid", "test"}
    """
    return load("binarized_mnist.npz")[f"x_{split}"]


def mnist(split: str = "train") -> tuple[np.ndarray, np.ndarray]:
    """MNIST grey levels: (images uint8 (N, 28, 28), labels uint8 (N,))."""
    data = load("mnist.npz")
    return data[f"x_{split}"], data[f"y_{split}"]

def binary_mnist(source: str = "stochastic", train_size: int | None = None,
                 seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Binary MNIST images as in the RBM papers: (train, test), int8 {0, 1}, (N, 784).

    Parameters
    ----------
    source : {"stochastic", "binarized_mnist"}
        ``"stochastic"``: each pixel of ``mnist.npz`` set to 1 with probability
        intensity / 255, once, with ``seed`` (Salakhutdinov & Murray's binarization);
        ``"binarized_mnist"``: Larochelle & Murray's fixed binarization (50,000
        training images).
    train_size : int, optional
        Keep a random subset of this many training images (in their original order),
        e.g. 50,000 to set 10,000 aside for validation.
    seed : int
        numpy seed of the binarization and of the subset (a loader's fixed preprocessing
        seed, not a jax key).
    """
    rng = np.random.default_rng(seed)
    if source == "stochastic":
        x_train, _ = mnist("train")
        x_test, _ = mnist("test")
        train = (rng.random(x_train.shape) < x_train / 255.0).reshape(len(x_train), -1)
        test = (rng.random(x_test.shape) < x_test / 255.0).reshape(len(x_test), -1)
    elif source == "binarized_mnist":
        train, test = binarized_mnist("train"), binarized_mnist("test")
    else:
        raise ValueError(f"binary_mnist: source must be 'stochastic' or "
                         f"'binarized_mnist', got {source!r}")
    if train_size and train_size < len(train):
        train = train[np.sort(rng.permutation(len(train))[:train_size])]
    return train.astype(np.int8), test.astype(np.int8)


def scene(split: str = "train") -> tuple[np.ndarray, np.ndarray]:
    """The scene multi-label data (Boutell et al. 2004, MULAN split): features float32
    (N, 294) in [0, 1] and labels int8 (N, 6) in {0, 1} (Beach, Sunset, FallFoliage,
    Field, Mountain, Urban)."""
    data = load("scene.npz")
    return data[f"x_{split}"], data[f"y_{split}"]


def kumar_hebert(split: str = "train") -> tuple[np.ndarray, np.ndarray]:
    """Kumar & Hebert's man-made structure images (research use only: read from
    ``NUMPYRO_UGM_DATA``, never downloaded): greyscale uint8 (N, 256, 384) and block labels uint8
    (N, 16, 24), 1 = man-made structure (16×16-pixel blocks)."""
    data = load("kumar_hebert_manmade.npz")
    return data[f"x_{split}"], data[f"y_{split}"]
