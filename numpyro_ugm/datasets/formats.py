"""Conversions of the data sets' public formats into the ``.npz`` arrays the loaders
read: Keras's MNIST archive (copied), Larochelle's ``.amat`` text files of binarized MNIST
and MULAN's ``.arff`` files of the scene data."""

import shutil

import numpy as np

#: the scene data's six labels, in MULAN's column order
SCENE_LABELS = ("Beach", "Sunset", "FallFoliage", "Field", "Mountain", "Urban")


def copy_npz(paths, out):
    """Keras's ``mnist.npz`` already holds ``x_train``, ``y_train``, ``x_test``,
    ``y_test`` (uint8): copied as it is."""
    (path,) = paths
    shutil.copyfile(path, out)


def amat_to_npz(paths, out):
    """Larochelle's ``binarized_mnist_{train,valid,test}.amat`` (one image per line, 784
    space-separated 0/1) to ``x_train``, ``x_valid``, ``x_test`` uint8 (N, 784)."""
    arrays = {}
    for path, split in zip(paths, ("train", "valid", "test")):
        x = np.loadtxt(path, dtype=np.uint8, ndmin=2)
        if x.shape[1] != 784 or x.max(initial=0) > 1:
            raise ValueError(f"{path} is not a binarized MNIST file (shape {x.shape})")
        arrays[f"x_{split}"] = x
    np.savez_compressed(out, **arrays)


def read_arff_rows(path, num_features, num_labels):
    """The data rows of a dense ARFF file: features float32 (N, num_features) and labels
    int8 (N, num_labels), the labels the last columns."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    start = next((i + 1 for i, line in enumerate(lines)
                  if line.strip().lower() == "@data"), 0)
    rows = [line for line in lines[start:] if line.strip() and not line.startswith("%")]
    table = np.array([row.split(",") for row in rows], dtype=np.float64)
    if table.ndim != 2 or table.shape[1] != num_features + num_labels:
        raise ValueError(f"{path}: expected {num_features + num_labels} columns")
    return (table[:, :num_features].astype(np.float32),
            table[:, num_features:].astype(np.int8))


def arff_to_npz(paths, out):
    """MULAN's ``scene-train.arff`` and ``scene-test.arff`` (294 features, 6 labels) to
    ``x_train``, ``y_train``, ``x_test``, ``y_test`` and ``label_names``."""
    train, test = (read_arff_rows(p, 294, len(SCENE_LABELS)) for p in paths)
    np.savez_compressed(out, x_train=train[0], y_train=train[1], x_test=test[0],
                        y_test=test[1], label_names=np.array(SCENE_LABELS))
