"""The data sets (numpyro_ugm/datasets/).

* The PF paper's VBM problem has the documented shapes, dtypes and parameters, is
  reproducible for a key, and its cases are draws of its model (the pair statistics of
  many cases match the exact expectations).
* statnet's networks ship inside the package with their license; the core imports
  without the network extra.
* The large sets: a download from a local HTTP server (real code, real HTTP) checked by
  its pinned hash, a corrupted one refused, the public formats converted; a local folder
  (``NUMPYRO_UGM_DATA``) read and its files checked.
"""

import functools
import http.server
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import jax
import numpy as np
import pytest

import numpyro_ugm as ugm
from helpers.network import STATNET
from numpyro_ugm import datasets
from numpyro_ugm.datasets import files, formats, vbm_problem
from numpyro_ugm.evaluate import exact


def test_vbm_problem_shapes_reproducibility_and_distribution():
    params, train, test = vbm_problem(jax.random.PRNGKey(0), 5, 3000, 7, scale=0.8)
    assert set(params) == {"W"} and params["W"].shape == (5, 5)
    W = np.asarray(params["W"])
    np.testing.assert_array_equal(np.tril(W), 0.0)  # couplings i < j only, no fields
    assert np.all(np.triu(W, 1)[np.triu_indices(5, 1)] != 0.0)
    assert set(train) == set(test) == {"x"}
    assert train["x"].shape == (3000, 5) and test["x"].shape == (7, 5)
    assert train["x"].dtype == test["x"].dtype == np.int8
    assert set(np.unique(train["x"])) == {-1, 1}
    again = vbm_problem(jax.random.PRNGKey(0), 5, 3000, 7, scale=0.8)
    np.testing.assert_array_equal(again[1]["x"], train["x"])
    np.testing.assert_array_equal(again[0]["W"], W)
    other = vbm_problem(jax.random.PRNGKey(1), 5, 3000, 7, scale=0.8)
    assert not np.array_equal(other[1]["x"], train["x"])
    # the cases follow the model: E[x_i x_j] within 4 standard errors of the exact one
    m = ugm.UGM(ugm.models.vbm, 5, fields=False)
    pairs = exact.expectation(m, params, lambda s: s["x"][:, None] * s["x"][None, :])
    x = train["x"].astype(np.float64)
    empirical = x.T @ x / len(x)
    i, j = np.triu_indices(5, 1)
    assert np.all(np.abs(empirical[i, j] - np.asarray(pairs)[i, j]) < 4 / np.sqrt(len(x)))
    assert np.max(np.abs(np.asarray(pairs)[i, j])) > 0.2  # not blind: spins correlated


# --- statnet's networks: package data -----------------------------------------------------


def test_the_statnet_networks_ship_inside_the_package_with_their_license():
    folder = STATNET
    table = (folder / "README.md").read_text()
    assert "GPL-3" in table and "GNU GENERAL PUBLIC LICENSE" in (folder / "LICENSE").read_text()
    for name, nodes, edges, directed in [("flomarriage", 16, 20, False),
                                         ("faux.mesa.high", 205, 203, False),
                                         ("faux.magnolia.high", 1461, 974, False),
                                         ("faux.dixon.high", 248, 1197, True)]:
        path = folder / f"{name.replace('.', '_')}.npz"
        assert f"`{path.name}` | `{files.sha256_of(path)}`" in table  # the README's hash
        graph = datasets.network(name)
        assert (graph.number_of_nodes(), graph.number_of_edges()) == (nodes, edges)
        assert graph.is_directed() == directed


def test_a_network_without_networkx_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "networkx", None)
    with pytest.raises(ImportError, match=r"numpyro_ugm\[network\]"):
        datasets.network("flomarriage")


def test_the_core_imports_without_numba_networkx_or_matplotlib():
    code = ("import sys, numpyro_ugm as ugm; "
            "print(sorted(m for m in ('numba', 'networkx', 'matplotlib', 'pooch', 'flax') "
            "if m in sys.modules)); ugm.network.fit_ergm; print('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).parents[1]).stdout.split("\n")
    assert out[0] == "[]" and out[1] == "True"  # the network part brings numba on use


# --- the large sets: a local folder, or a download checked by its hash ---------------------


@pytest.fixture
def http_folder(tmp_path):
    """``(folder, url_of(name))``: a local HTTP server (real sockets, real HTTP) serving
    ``folder``."""
    folder = tmp_path / "served"
    folder.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=folder)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield folder, lambda name: f"http://127.0.0.1:{server.server_port}/{name}"
    server.shutdown()


def _small_mnist(path):
    rng = np.random.default_rng(0)
    np.savez(path, x_train=rng.integers(0, 256, (5, 28, 28), dtype=np.uint8),
             y_train=np.arange(5, dtype=np.uint8), x_test=np.zeros((2, 28, 28), np.uint8),
             y_test=np.ones(2, np.uint8))


def test_a_download_is_checked_by_its_hash_converted_once_and_read(http_folder, tmp_path,
                                                                   monkeypatch):
    served, url_of = http_folder
    shared = files.local_folder()
    if shared is not None and (shared / "mnist.npz").exists():  # a file of the data folder
        shutil.copyfile(shared / "mnist.npz", served / "mnist.npz")
    else:
        _small_mnist(served / "mnist.npz")
    sha = files.sha256_of(served / "mnist.npz")
    source = files.Source((files.Remote(url_of("mnist.npz"), sha, "mnist_download.npz"),),
                          formats.copy_npz, "test")
    monkeypatch.setitem(files.SOURCES, "mnist.npz", source)
    monkeypatch.delenv("NUMPYRO_UGM_DATA", raising=False)
    monkeypatch.setenv("NUMPYRO_UGM_CACHE", str(tmp_path / "cache"))
    images, labels = datasets.mnist("train")
    with np.load(served / "mnist.npz") as served_file:
        want = {k: served_file[k] for k in served_file.files}
    np.testing.assert_array_equal(images, want["x_train"])
    np.testing.assert_array_equal(labels, want["y_train"])
    (served / "mnist.npz").unlink()  # downloaded and converted once: the cache answers now
    np.testing.assert_array_equal(datasets.mnist("test")[1], want["y_test"])


def test_a_corrupted_download_is_refused_and_nothing_is_kept(http_folder, tmp_path):
    served, url_of = http_folder
    _small_mnist(served / "good.npz")
    sha = files.sha256_of(served / "good.npz")
    data = bytearray((served / "good.npz").read_bytes())
    data[100] ^= 0xFF
    (served / "bad.npz").write_bytes(bytes(data))
    source = files.Source((files.Remote(url_of("bad.npz"), sha, "bad.npz"),),
                          formats.copy_npz, "test")
    with pytest.raises(ValueError, match="hash"):
        files.fetch(source, "mnist.npz", tmp_path / "cache")
    assert not (tmp_path / "cache" / "mnist.npz").exists()
    assert not (tmp_path / "cache" / "bad.npz").exists()


def test_the_public_formats_convert_to_the_loaders_arrays(http_folder, tmp_path):
    served, url_of = http_folder
    rng = np.random.default_rng(1)
    splits = {s: rng.integers(0, 2, (n, 784)) for s, n in
              (("train", 4), ("valid", 2), ("test", 3))}
    for s, x in splits.items():
        np.savetxt(served / f"b_{s}.amat", x, fmt="%d")
    x_tr, y_tr = rng.random((3, 294)).round(6), rng.integers(0, 2, (3, 6))
    header = "@relation MultiLabelData\n" + "".join(
        f"@attribute Att{k} numeric\n" for k in range(294)) + "@data\n"
    rows = "\n".join(",".join([f"{v:.6f}" for v in a] + [str(b) for b in c])
                     for a, c in zip(x_tr, y_tr))
    (served / "train.arff").write_text(header + rows + "\n")
    (served / "test.arff").write_text(rows)  # MULAN's data rows without a header
    cache = tmp_path / "cache"

    def remote(name):
        return files.Remote(url_of(name), files.sha256_of(served / name), name)

    amat = files.fetch(files.Source(tuple(remote(f"b_{s}.amat") for s in splits),
                                    formats.amat_to_npz, ""), "binarized_mnist.npz", cache)
    with np.load(amat) as data:
        for s, x in splits.items():
            np.testing.assert_array_equal(data[f"x_{s}"], x)
            assert data[f"x_{s}"].dtype == np.uint8
    arff = files.fetch(files.Source((remote("train.arff"), remote("test.arff")),
                                    formats.arff_to_npz, ""), "scene.npz", cache)
    with np.load(arff) as data:
        for split in ("train", "test"):
            np.testing.assert_allclose(data[f"x_{split}"], x_tr, atol=1e-7)
            np.testing.assert_array_equal(data[f"y_{split}"], y_tr)
        assert list(data["label_names"]) == list(formats.SCENE_LABELS)


def test_a_local_folder_is_read_and_its_files_checked(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMPYRO_UGM_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="NUMPYRO_UGM_DATA"):
        datasets.scene()
    _small_mnist(tmp_path / "mnist.npz")  # not the pinned file
    with pytest.raises(OSError, match="sha256"):
        datasets.mnist()
    monkeypatch.delenv("NUMPYRO_UGM_DATA")
    with pytest.raises(FileNotFoundError, match="license"):
        datasets.kumar_hebert()


def test_the_data_folder_beside_the_repository_holds_the_pinned_files():
    folder = files.local_folder()
    if folder is None or not (folder / "mnist.npz").exists():
        pytest.skip("no data folder (NUMPYRO_UGM_DATA) here: the download path is tested "
                    "against a local server above")
    images, labels = datasets.mnist("test")
    assert images.shape == (10000, 28, 28) and images.dtype == np.uint8
    assert np.bincount(labels).tolist()[:3] == [980, 1135, 1032]
    x, y = datasets.scene("train")
    assert x.shape == (1211, 294) and y.shape == (1211, 6)
