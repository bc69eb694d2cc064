"""SIGTERM: the pod is being deleted (its node reclaimed or drained, the pod evicted, or the
controller stopping a round), and the worker has the pod's grace period to stop cleanly.

The worker contract (docs/worker-contract.md, section 7) asks a worker told to stop to finish or
abandon its step, agree with the other ranks on where they all stop, write a checkpoint there and
exit 143. The SDK checkpoints at the end of an epoch (``ctx.save``), so a rank that receives
SIGTERM finishes the epoch it is in: at that epoch's ``ctx.report`` every rank learns that some
rank was told to stop, the report is still posted (its checkpoint is saved first), every rank
stops after that epoch, and the worker exits 143. A grace period that ends before the epoch does
loses that epoch's work and no more: the checkpoint of the epoch before is left.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Any

EXIT_TERMINATED = 143  # 128 + SIGTERM, what a shell reports for a process SIGTERM ended


class TerminationRequest:
    """Whether this process was sent SIGTERM since ``install()``; the handler only records it."""

    def __init__(self) -> None:
        self._requested = False
        self._previous: Any = None
        self._installed = False

    def install(self) -> bool:
        """Handles SIGTERM from now on; False (and nothing done) off the main thread, where
        Python cannot install signal handlers."""
        if threading.current_thread() is not threading.main_thread():
            return False
        self._previous = signal.signal(signal.SIGTERM, self._handle)
        self._installed = True
        return True

    def restore(self) -> None:
        """Puts back the handler that was there before ``install()``."""
        if self._installed:
            signal.signal(signal.SIGTERM, self._previous)
            self._installed = False

    @property
    def requested(self) -> bool:
        return self._requested

    def request(self) -> None:
        """Records a request to stop, as SIGTERM does."""
        self._requested = True

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self._requested = True
