"""statnet's networks, shipped inside the package (``statnet/``: four ``.npz`` files from
R's ergm package, GPL-3; their source and license in ``statnet/README.md``)."""

from importlib import resources

import numpy as np

from ..runtime.optional import require

#: the networks shipped in ``statnet/`` (R's ergm package's data sets)
NETWORKS = ("flomarriage", "faux.mesa.high", "faux.magnolia.high", "faux.dixon.high")


def network(name: str):
    """One of statnet's networks as a networkx ``Graph`` (or ``DiGraph``), nodes 0..n−1
    with their attributes (``name`` the original label).

    Parameters
    ----------
    name : str
        ``"flomarriage"`` (Padgett's Florentine marriages, 16 families, wealth),
        ``"faux.mesa.high"`` (205 students; Grade, Race, Sex), ``"faux.magnolia.high"``
        (1,461 students; Grade, Race, Sex) or ``"faux.dixon.high"`` (248 students,
        directed; grade, race, sex). Underscores may replace the dots.
    """
    nx = require("networkx", "network", "datasets.network")
    key = name.replace("_", ".")
    if key not in NETWORKS:
        raise ValueError(f"unknown network {name!r}; shipped: {list(NETWORKS)}")
    path = resources.files(__package__) / "statnet" / f"{key.replace('.', '_')}.npz"
    with path.open("rb") as f, np.load(f, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    graph = nx.DiGraph() if bool(arrays["directed"]) else nx.Graph()
    columns = {k[len("attr_"):]: v for k, v in arrays.items() if k.startswith("attr_")}
    graph.add_nodes_from((v, {k: values[v].item() for k, values in columns.items()})
                         for v in range(int(arrays["num_nodes"])))
    graph.add_edges_from(map(tuple, arrays["edges"].tolist()))
    return graph
