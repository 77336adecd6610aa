"""Synthetic problems and loaders for the data sets shipped beside the repository.

The shipped ``.npz`` files live in ``../shared/data`` relative to the repository root
(override with the ``NUMPYRO_UGM_DATA`` environment variable). Nothing here touches the
network, and the package works without them (the synthetic generators need nothing).
"""

import os
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np


def data_dir() -> Path:
    """Folder of the shipped data sets (``NUMPYRO_UGM_DATA`` or ``../shared/data``)."""
    env = os.environ.get("NUMPYRO_UGM_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "shared" / "data"


def _load(name):
    path = data_dir() / name
    if not path.exists():
        raise FileNotFoundError(f"{name} not found in {data_dir()}; set NUMPYRO_UGM_DATA "
                                "to the folder that holds the shipped data sets")
    return np.load(path, allow_pickle=False)


def binarized_mnist(split: str = "train") -> np.ndarray:
    """Larochelle & Murray's fixed binarization of MNIST: uint8 {0,1}, (N, 784).

    Parameters
    ----------
    split : {"train", "valid", "test"}
    """
    return _load("binarized_mnist.npz")[f"x_{split}"]


def mnist(split: str = "train") -> tuple[np.ndarray, np.ndarray]:
    """MNIST grey levels: (images uint8 (N, 28, 28), labels uint8 (N,))."""
    data = _load("mnist.npz")
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


def vbm_problem(rng_key: jax.Array, num_units: int = 15, num_train: int = 500,
                num_test: int = 100, *, scale: float = 1.0) -> tuple[dict, dict, dict]:
    """The PF paper's VBM study (Asuncion et al. 2010, sec. 4.1): couplings
    θ_ij ~ N(0, scale²) for i < j, spins in {-1, +1}, no fields, and training and test
    cases drawn exactly (by enumeration).

    Returns
    -------
    params : dict
        True parameters of ``ugm.models.vbm(num_units, fields=False)``.
    train, test : dict
        ``{"x": int8 array (num_cases, num_units)}``.
    """
    from .evaluate import exact
    from .model.ugm import UGM
    from .models import vbm

    key_w, key_data = jax.random.split(rng_key)
    W = jnp.triu(scale * jax.random.normal(key_w, (num_units, num_units)), 1)
    params = {"W": W}
    m = UGM(vbm, num_units, fields=False)
    draws = exact.sample(m, params, key_data, num_train + num_test)
    x = np.asarray(draws["x"])
    return params, {"x": x[:num_train]}, {"x": x[num_train:]}


def scene(split: str = "train") -> tuple[np.ndarray, np.ndarray]:
    """The scene multi-label data (Boutell et al. 2004, MULAN split): features float32
    (N, 294) in [0, 1] and labels int8 (N, 6) in {0, 1} (Beach, Sunset, FallFoliage,
    Field, Mountain, Urban)."""
    data = _load("scene.npz")
    return data[f"x_{split}"], data[f"y_{split}"]


def kumar_hebert(split: str = "train") -> tuple[np.ndarray, np.ndarray]:
    """Kumar & Hebert's man-made structure images (research use only; read from the
    shipped folder, never copied): greyscale uint8 (N, 256, 384) and block labels uint8
    (N, 16, 24), 1 = man-made structure (16×16-pixel blocks)."""
    data = _load("kumar_hebert_manmade.npz")
    return data[f"x_{split}"], data[f"y_{split}"]


#: the networks shipped in ``networks/`` (statnet's data sets; see its README)
NETWORKS = ("flomarriage", "faux.mesa.high", "faux.magnolia.high", "faux.dixon.high")


def network(name: str):
    """One of statnet's networks shipped in ``networks/`` as a networkx ``Graph`` (or
    ``DiGraph``), nodes 0..n−1 with their attributes (``name`` the original label).

    Parameters
    ----------
    name : str
        ``"flomarriage"`` (Padgett's Florentine marriages, 16 families, wealth),
        ``"faux.mesa.high"`` (205 students; Grade, Race, Sex), ``"faux.magnolia.high"``
        (1,461 students; Grade, Race, Sex) or ``"faux.dixon.high"`` (248 students,
        directed; grade, race, sex). Underscores may replace the dots.
    """
    import networkx as nx

    key = name.replace("_", ".")
    if key not in NETWORKS:
        raise ValueError(f"unknown network {name!r}; shipped: {list(NETWORKS)}")
    data = _load(f"networks/{key.replace('.', '_')}.npz")
    graph = nx.DiGraph() if bool(data["directed"]) else nx.Graph()
    n = int(data["num_nodes"])
    columns = {k[len("attr_"):]: data[k] for k in data.files if k.startswith("attr_")}
    graph.add_nodes_from((v, {k: values[v].item() for k, values in columns.items()})
                         for v in range(n))
    graph.add_edges_from(map(tuple, data["edges"].tolist()))
    return graph
