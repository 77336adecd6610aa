"""Where the large data sets come from: a local folder when one is given, else a download
into a user cache, each file checked against a pinned sha256.

* ``NUMPYRO_UGM_DATA``: a folder holding the converted ``.npz`` files (``mnist.npz``,
  ``binarized_mnist.npz``, ``scene.npz``, ``kumar_hebert_manmade.npz``) and the
  CoNLL-2002 text files (``conll2002/esp.train``, ...), each checked against
  :data:`LOCAL_SHA256`. The repository's CI and tests point it at the data folder
  that sits beside the repository.
* Otherwise each set is fetched on first use from its public source (pooch, pinned
  sha256 of every downloaded file), converted once to the same arrays and kept in
  ``NUMPYRO_UGM_CACHE`` (default: the user cache folder of ``numpyro_ugm``).
"""

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..runtime.optional import require
from . import formats


@dataclass(frozen=True)
class Remote:
    """One downloaded file: its URL, its pinned sha256 and the name it is cached under."""

    url: str
    sha256: str
    name: str


@dataclass(frozen=True)
class Source:
    """A data set's public source: the files to download and the function that turns
    them into the ``.npz`` arrays the loaders read (``convert(paths, out_path)``)."""

    files: tuple
    convert: object
    citation: str


_LAROCHELLE = "http://www.cs.toronto.edu/~larocheh/public/datasets/binarized_mnist/"
_BOOMER = "https://media.githubusercontent.com/media/mrapp-ke/Boomer-Datasets/"

#: sha256 of the converted files read from a local folder (``NUMPYRO_UGM_DATA``)
LOCAL_SHA256 = {
    "mnist.npz": "06af5dfe73b70e3bc1c36439982b18a8d76803db9b544f6fdf838a37fbb01b64",
    "scene.npz": "30a78c9211795ac605d5b4a6268ee54546121adc6cec73f3e17fa61d35ec19f8",
    "binarized_mnist.npz": "43b850ec2677ae386c774b5d94744860a5b279e1161f446d3967c446de9cad41",
    "kumar_hebert_manmade.npz":
        "4cbd44cbbb2dd790b85e38f7b895ad6da6e34a433cc146845e7a41a7a209862f",
    "conll2002/esp.train": "a20d95cab7d88a19a86f8c1ad6329325c99fbd9529ed978cbd7e31d4b01b4008",
    "conll2002/esp.testa": "85c17793b77881c53d19017d9d0f1e6fb98b7ddcab54a5f24b05ed1793103c87",
    "conll2002/esp.testb": "1f8f7a392c6d4979a5592a5794eed43d7869b46da6851bbcde99714149f1d016",
}

#: the public sources of the sets that may be downloaded (the Kumar-Hebert images and
#: CoNLL-2002 are research-use only and are read from a local folder, never downloaded)
SOURCES = {
    "mnist.npz": Source(
        (Remote("https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz",
                "731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1",
                "keras_mnist.npz"),),
        formats.copy_npz, "LeCun, Cortes & Burges; CC BY-SA 3.0"),
    "binarized_mnist.npz": Source(
        tuple(Remote(f"{_LAROCHELLE}binarized_mnist_{split}.amat", sha, f"binarized_mnist_{split}.amat")
              for split, sha in (
                  ("train", "ad693b29f94c14277b095f5238ddefbbdaaae0939789dd2f4f0205278cee3e4d"),
                  ("valid", "1de3d397c40fe8eeb33dafd4099a1f665ec01e96d9be234aaeeac8a34930e2e2"),
                  ("test", "e6687bfea3f820c174f33b7865140b2a2dd2930ef786f35d45795fc193b5ab2c"))),
        formats.amat_to_npz, "Larochelle & Murray 2011; CC BY-SA 3.0 (derived from MNIST)"),
    "scene.npz": Source(
        (Remote(f"{_BOOMER}7e587cb68234bf7628aef6ed0a5c2df8a4eb519e/scene_training.arff",
                "b53ba93bdf412de922e3960389bcee24744fa3e872ce610511fc1d750888b64d",
                "scene-train.arff"),
         Remote(f"{_BOOMER}e9738dbfd6631fb2e3a1c51807b598c04eb38133/scene-test.arff",
                "ea38d20296b3ff7e220f477a3b802a9bcb2d768881fe6ee163efbc97ea527a42",
                "scene-test.arff")),
        formats.arff_to_npz, "Boutell et al. 2004, MULAN's split; no license stated"),
}


def sha256_of(path) -> str:
    """The sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def local_folder() -> Path | None:
    """The folder named by ``NUMPYRO_UGM_DATA``, or None."""
    folder = os.environ.get("NUMPYRO_UGM_DATA")
    return Path(folder) if folder else None


def cache_folder() -> Path:
    """Where downloads and their conversions are kept (``NUMPYRO_UGM_CACHE`` or the user
    cache folder of ``numpyro_ugm``)."""
    folder = os.environ.get("NUMPYRO_UGM_CACHE")
    if folder:
        return Path(folder)
    return Path(require("pooch", "data", "the download cache").os_cache("numpyro_ugm"))


_CHECKED = set()


def checked(path: Path, sha256: str) -> Path:
    """``path``, once its sha256 is the pinned one (checked once per process)."""
    if (path, sha256) not in _CHECKED:
        found = sha256_of(path)
        if found != sha256:
            raise OSError(f"{path} has sha256 {found}, expected {sha256}: the file is "
                          "damaged or another version; delete it (or fetch it again)")
        _CHECKED.add((path, sha256))
    return path


def fetch(source: Source, name: str, cache: Path) -> Path:
    """Download ``source``'s files into ``cache`` (pooch: each file checked against its
    pinned sha256, a damaged or partial download refused) and convert them once to
    ``cache / name``."""
    out = cache / name
    if out.exists():
        return out
    pooch = require("pooch", "data", f"downloading {name} (or a folder named by "
                    "NUMPYRO_UGM_DATA that holds it)")
    paths = [pooch.retrieve(r.url, known_hash=f"sha256:{r.sha256}", fname=r.name,
                            path=cache, progressbar=False) for r in source.files]
    partial = out.with_suffix(".partial.npz")
    source.convert([Path(p) for p in paths], partial)
    partial.replace(out)
    return out


def path_of(name: str) -> Path:
    """The checked local path of the data file ``name`` (``"mnist.npz"``, ...): from
    ``NUMPYRO_UGM_DATA`` when it is set, else from the cache (downloaded on first use)."""
    folder = local_folder()
    if folder is not None:
        path = folder / name
        if not path.exists():
            how = ("unset the variable to download it, or copy the file there"
                   if name in SOURCES else "copy the file there (numpyro_ugm never "
                   "downloads it: its license does not allow it)")
            raise FileNotFoundError(f"{name} is not in NUMPYRO_UGM_DATA={folder}; {how}")
        return checked(path, LOCAL_SHA256[name])
    if name not in SOURCES:
        raise FileNotFoundError(f"{name} is not downloaded by numpyro_ugm (its license does "
                                "not allow it): set NUMPYRO_UGM_DATA to a folder that holds it")
    return fetch(SOURCES[name], name, cache_folder())


def load(name: str):
    """The arrays of the data file ``name`` (``np.load``, no pickle)."""
    return np.load(path_of(name), allow_pickle=False)
