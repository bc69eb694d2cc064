"""Fashion-MNIST from the IDX files of Debian's dataset-fashion-mnist package (gzip or not); no
download. Images come back as float32 tensors of shape (N, 1, 28, 28) scaled to [0, 1]."""

from __future__ import annotations

import gzip
import os
import struct

import numpy as np

DEFAULT_DATA_DIR = "/usr/share/datasets/fashion-mnist"
TRAIN_IMAGES = 60000
TEST_IMAGES = 10000
CLASSES = 10
_FILES = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
          "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}


class DataError(Exception):
    """A data file that is missing or not what it should be; the message names it."""


def _open(directory: str, stem: str):
    for name, opener in ((stem + ".gz", gzip.open), (stem, open)):
        path = os.path.join(directory, name)
        if os.path.exists(path):
            return path, opener(path, "rb")
    raise DataError(f"data directory {directory}: no {stem}[.gz] (install the Debian package "
                    "dataset-fashion-mnist: make deps)")


def _read_idx(directory: str, stem: str, dims: int, limit: int) -> np.ndarray:
    path, stream = _open(directory, stem)
    with stream:
        try:
            header = stream.read(4 + 4 * dims)
            magic, *shape = struct.unpack(f">I{dims}I", header)
        except (OSError, EOFError, struct.error) as e:
            raise DataError(f"{path}: cannot read its IDX header: {e}") from None
        if magic != 0x0800 + dims:
            raise DataError(f"{path}: not an IDX file of unsigned bytes with {dims} dimension(s)")
        count = min(shape[0], limit)
        item = int(np.prod(shape[1:])) if dims > 1 else 1
        data = stream.read(count * item)
        if len(data) != count * item:
            raise DataError(f"{path}: truncated ({len(data)} of {count * item} bytes)")
    return np.frombuffer(data, dtype=np.uint8).reshape((count, *shape[1:]))


def load(directory: str, split: str, limit: int):
    """The first `limit` images and labels of `split` ("train" or "test") as numpy arrays."""
    images_stem, labels_stem = _FILES[split]
    images = _read_idx(directory, images_stem, 3, limit)
    labels = _read_idx(directory, labels_stem, 1, limit)
    if len(images) != len(labels):
        raise DataError(f"{directory}: {len(images)} {split} images but {len(labels)} labels")
    return images, labels


def to_tensor(images: np.ndarray):
    import torch

    return torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)
