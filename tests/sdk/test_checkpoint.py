"""Checkpoints: written atomically, read back exactly, and a damaged one is an error naming the
file, never a silent restart."""

import os

import pytest
import torch

from depl.checkpoint import (FILE_NAME, checkpoint_path, read_checkpoint, read_checkpoint_header,
                             write_checkpoint)
from depl.errors import CheckpointError


def state():
    g = torch.Generator().manual_seed(3)
    return {"model": {"w": torch.randn(4, 3, generator=g), "b": torch.zeros(4)}, "step": 12}


def test_round_trip(tmp_path):
    path = str(tmp_path / FILE_NAME)
    write_checkpoint(path, "half", 7, state())
    header, loaded = read_checkpoint(path)
    assert (header.model, header.epoch) == ("half", 7)
    assert torch.equal(loaded["model"]["w"], state()["model"]["w"]) and loaded["step"] == 12
    assert read_checkpoint_header(path).epoch == 7
    assert os.listdir(tmp_path) == [FILE_NAME]  # no temporary file left behind


def test_a_new_checkpoint_replaces_the_old_one_whole(tmp_path):
    path = str(tmp_path / FILE_NAME)
    write_checkpoint(path, "half", 1, state())
    write_checkpoint(path, "full", 2, {"model": {}})
    header, loaded = read_checkpoint(path)
    assert (header.model, header.epoch, loaded) == ("full", 2, {"model": {}})


def test_directory_or_file():
    assert checkpoint_path("/nonexistent/dir") == "/nonexistent/dir/" + FILE_NAME


@pytest.mark.parametrize("damage,message", [
    (lambda b: b[:10], "shorter than its"),
    (lambda b: b"XXXXXXXX" + b[8:], "does not start with DEPLPTCK"),
    (lambda b: b[:-5], "payload bytes, the file holds"),
    (lambda b: b + b"junk", "payload bytes, the file holds"),
    (lambda b: b[:-1] + bytes([b[-1] ^ 1]), "does not match the SHA-256"),
    (lambda b: b[:17] + b"!" + b[18:], "header is not the expected JSON"),
])
def test_a_damaged_checkpoint_is_an_error_naming_the_file(tmp_path, damage, message):
    path = str(tmp_path / FILE_NAME)
    write_checkpoint(path, "half", 3, state())
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(damage(data))
    with pytest.raises(CheckpointError) as e:
        read_checkpoint(path)
    assert path in str(e.value) and message in str(e.value)


def test_an_unwritable_directory_is_an_error_naming_the_file(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(CheckpointError, match="cannot write it"):
        write_checkpoint(str(blocker / FILE_NAME), "half", 1, state())
