"""The failures a worker reports, each with the exit code the worker contract gives it.

A ``ConfigError`` is a bad setting (exit 2, the message names the variable or flag); every other
``WorkerError`` is a runtime failure (exit 1, the message names the file, rank or endpoint),
except ``ProgressUnreachable`` (exit 75, which the controller does not count as a failure).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_BAD_CONFIG = 2
EXIT_PROGRESS_UNREACHABLE = 75  # EX_TEMPFAIL


class WorkerError(Exception):
    """A failure the worker explains in one message and exits for."""

    exit_code = EXIT_FAILURE


class ConfigError(WorkerError):
    """A missing or malformed contract variable or command-line flag (exit 2)."""

    exit_code = EXIT_BAD_CONFIG


class CheckpointError(WorkerError):
    """A checkpoint that cannot be read or written; the message names the file (exit 1)."""


class ProgressRejected(WorkerError):
    """The progress endpoint answered a final 4xx (wrong token, job deleted, ...) (exit 1)."""


class ProgressUnreachable(WorkerError):
    """The progress endpoint did not take a report within DEPL_PROGRESS_RETRY_SECONDS (exit 75):
    the checkpoint holds the epoch, and the controller restarts the phase from it."""

    exit_code = EXIT_PROGRESS_UNREACHABLE


class PeerLost(WorkerError):
    """Another rank died or stopped answering; the message names its rank (exit 1)."""

    def __init__(self, message: str, rank: int | None = None) -> None:
        super().__init__(message)
        self.rank = rank


class UsageError(WorkerError):
    """The training function used the context against its rules (exit 1)."""
