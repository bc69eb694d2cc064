"""The SDK's checkpoint file (docs/worker-contract.md section 4): written by rank 0 to a temporary
file that is renamed over the old one, so a reader or a crash never sees half a checkpoint; read
back with every byte checked, so a damaged file is an error naming it, never a silent restart.

Layout (version 1): the 8 bytes ``DEPLPTCK``, a little-endian uint32 version, a uint32 header
length, a JSON header ``{"model": "half", "epoch": 7, "payloadBytes": N, "sha256": "..."}``, then
the payload: the training function's state as ``torch.save`` writes it.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import struct
from dataclasses import dataclass
from typing import Any

from .errors import CheckpointError

MAGIC = b"DEPLPTCK"
VERSION = 1
FILE_NAME = "checkpoint.pt"
_PREFIX = struct.Struct("<8sII")
_MAX_HEADER = 1 << 16


@dataclass(frozen=True)
class CheckpointHeader:
    model: str
    epoch: int
    payload_bytes: int
    sha256: str


def checkpoint_path(location: str) -> str:
    """The checkpoint file of a directory, or `location` itself when it is a file."""
    return location if os.path.isfile(location) else os.path.join(location, FILE_NAME)


def _serialise(state: Any) -> bytes:
    import torch

    buffer = io.BytesIO()
    torch.save(state, buffer)
    return buffer.getvalue()


def write_checkpoint(path: str, model: str, epoch: int, state: Any) -> int:
    """Writes atomically (temp file in the same directory, fsync, rename); returns its size."""
    payload = _serialise(state)
    header = json.dumps({"model": model, "epoch": epoch, "payloadBytes": len(payload),
                         "sha256": hashlib.sha256(payload).hexdigest()},
                        separators=(",", ":")).encode()
    directory = os.path.dirname(os.path.abspath(path))
    temporary = f"{path}.tmp-{os.getpid()}"
    try:
        os.makedirs(directory, exist_ok=True)
        with open(temporary, "wb") as out:
            out.write(_PREFIX.pack(MAGIC, VERSION, len(header)))
            out.write(header)
            out.write(payload)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
        descriptor = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(descriptor)  # the rename itself survives a crash
        finally:
            os.close(descriptor)
    except OSError as e:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise CheckpointError(f"checkpoint {path}: cannot write it: {e.strerror or e}") from None
    return _PREFIX.size + len(header) + len(payload)


def _read_header(path: str, data: bytes) -> tuple[CheckpointHeader, int]:
    def damaged(what: str) -> CheckpointError:
        return CheckpointError(f"checkpoint {path} is damaged: {what} (remove it to start over, "
                               "or restore a good copy)")

    if len(data) < _PREFIX.size:
        raise damaged(f"{len(data)} bytes, shorter than its {_PREFIX.size}-byte prefix")
    magic, version, header_length = _PREFIX.unpack_from(data)
    if magic != MAGIC:
        raise damaged(f"it does not start with {MAGIC.decode()} (not a depl SDK checkpoint)")
    if version != VERSION:
        raise CheckpointError(f"checkpoint {path}: version {version}, this SDK reads version {VERSION}")
    if header_length > _MAX_HEADER or _PREFIX.size + header_length > len(data):
        raise damaged(f"a header of {header_length} bytes does not fit in the file")
    try:
        fields = json.loads(data[_PREFIX.size:_PREFIX.size + header_length])
        header = CheckpointHeader(str(fields["model"]), int(fields["epoch"]),
                                  int(fields["payloadBytes"]), str(fields["sha256"]))
    except (ValueError, KeyError, TypeError) as e:
        raise damaged(f"its header is not the expected JSON ({type(e).__name__}: {e})") from None
    if header.epoch < 0:
        raise damaged(f"epoch {header.epoch} in its header")
    start = _PREFIX.size + header_length
    if len(data) - start != header.payload_bytes:
        raise damaged(f"the header announces {header.payload_bytes} payload bytes, the file "
                      f"holds {len(data) - start}")
    return header, start


def _read_bytes(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise CheckpointError(f"checkpoint {path}: cannot read it: {e.strerror or e}") from None


def read_checkpoint_header(path: str) -> CheckpointHeader:
    """The header of a checkpoint after checking the whole file (sizes and digest)."""
    data = _read_bytes(path)
    header, start = _read_header(path, data)
    _check_digest(path, header, data[start:])
    return header


def _check_digest(path: str, header: CheckpointHeader, payload: bytes) -> None:
    if hashlib.sha256(payload).hexdigest() != header.sha256:
        raise CheckpointError(f"checkpoint {path} is damaged: its payload does not match the "
                              "SHA-256 in its header (remove it to start over, or restore a good copy)")


def read_checkpoint(path: str) -> tuple[CheckpointHeader, Any]:
    """The header and the state, every byte checked; tensors are loaded onto the CPU."""
    import torch

    data = _read_bytes(path)
    header, start = _read_header(path, data)
    payload = data[start:]
    _check_digest(path, header, payload)
    try:
        # A full unpickler: torch 1.13's weights-only one refuses the floats of an optimiser's
        # state, and torch 2.6 and later use that one unless told not to. The checkpoint
        # directory is the job's own, trusted as its image is.
        state = torch.load(io.BytesIO(payload), map_location="cpu", weights_only=False)
    except Exception as e:  # torch raises several types for a payload it cannot unpickle
        raise CheckpointError(f"checkpoint {path}: its state cannot be loaded: {type(e).__name__}: "
                              f"{e}") from None
    return header, state
