"""The progress protocol (docs/worker-contract.md section 3), rank 0's side.

``post_report`` is one HTTP attempt. ``ProgressReporter`` sends reports in order from a background
thread and retries each with exponential backoff (honouring ``Retry-After`` on 429 and 503) until
that report's deadline: an unreachable or restarting controller never stops training, and a
report still undelivered at its deadline is dropped with a warning (the next one catches up).
4xx answers are final: the reporter stops and the worker fails with the controller's message.
"""

from __future__ import annotations

import enum
import http.client
import json
import logging
import threading
import time
import urllib.parse
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

from .errors import ConfigError, ProgressRejected

log = logging.getLogger("depl")

ATTEMPT_TIMEOUT_SECONDS = 10.0
FIRST_BACKOFF_SECONDS = 0.2
MAX_BACKOFF_SECONDS = 10.0
MAX_RETRY_AFTER_SECONDS = 60.0
MAX_ANSWER_BYTES = 1 << 20


class Action(enum.Enum):
    CONTINUE = "continue"
    CHECKPOINT_AND_EXIT = "checkpointAndExit"


class TransientError(Exception):
    """A failure worth retrying: connection, timeout, 5xx or 429 (with its Retry-After)."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class Endpoint:
    scheme: str
    host: str
    port: int
    target: str

    @staticmethod
    def parse(url: str) -> "Endpoint":
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"DEPL_PROGRESS_URL: want http://host[:port]/path, got '{url}'")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            raise ConfigError(f"DEPL_PROGRESS_URL '{url}': the port is not a number in 1..65535") from None
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        return Endpoint(parts.scheme, parts.hostname, port, target)


def parse_retry_after(value: str | None) -> float | None:
    """Whole seconds from a Retry-After header; None for anything else (an HTTP date, junk)."""
    if value is None:
        return None
    value = value.strip(" \t")
    if not value or not value.isdigit() or not value.isascii():
        return None
    return float(int(value))


def report_body(phase: int, rank: int, epoch: int, loss: float) -> bytes:
    return json.dumps({"phase": phase, "rank": rank, "epoch": epoch, "loss": loss},
                      separators=(",", ":")).encode()


def parse_answer(body: bytes) -> Action:
    """The action of a 200 answer; anything else is final (the endpoint is not the contract's)."""
    try:
        doc = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ProgressRejected(f"the progress answer is not JSON: {e}") from None
    action = doc.get("action") if isinstance(doc, dict) else None
    if not isinstance(action, str):
        raise ProgressRejected('the progress answer has no string field "action"')
    try:
        return Action(action)
    except ValueError:
        raise ProgressRejected(
            f"the progress answer's action '{action}' is not continue or checkpointAndExit") from None


def post_report(endpoint: Endpoint, token: str, body: bytes,
                timeout: float = ATTEMPT_TIMEOUT_SECONDS) -> Action:
    """One POST. Raises TransientError (retry) or ProgressRejected (final)."""
    connection_type = (http.client.HTTPSConnection if endpoint.scheme == "https"
                       else http.client.HTTPConnection)
    connection = connection_type(endpoint.host, endpoint.port, timeout=timeout)
    try:
        connection.request("POST", endpoint.target, body=body, headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "User-Agent": "depl-python-sdk",
            "Connection": "close",
        })
        response = connection.getresponse()
        status = response.status
        retry_after = response.getheader("Retry-After")
        answer = response.read(MAX_ANSWER_BYTES)
    except (OSError, http.client.HTTPException) as e:
        raise TransientError(f"{endpoint.host}:{endpoint.port}: {type(e).__name__}: {e}") from None
    finally:
        connection.close()
    text = answer[:200].decode("utf-8", "replace")
    if status >= 500 or status == 429:
        wait = parse_retry_after(retry_after) if status in (429, 503) else None
        raise TransientError(f"the endpoint answered HTTP {status}: {text}", wait)
    if status >= 300:
        hint = ""
        if status in (401, 403):
            hint = " (is DEPL_PROGRESS_TOKEN the job's token?)"
        elif status == 404:
            hint = " (does the job still exist? is DEPL_PROGRESS_URL right?)"
        raise ProgressRejected(f"the progress endpoint rejected the report: HTTP {status}{hint}: {text}")
    return parse_answer(answer)


@dataclass
class PendingReport:
    """One report on its way; ``answered`` is set once it is answered, dropped or abandoned."""

    epoch: int
    body: bytes
    deadline: float
    answered: threading.Event = field(default_factory=threading.Event)
    action: Action | None = None


class ProgressReporter:
    """Delivers reports in order from one background thread, each until its own deadline."""

    def __init__(self, url: str, token: str, phase: int, *, deadline: float,
                 first_backoff: float = FIRST_BACKOFF_SECONDS,
                 max_backoff: float = MAX_BACKOFF_SECONDS,
                 attempt_timeout: float = ATTEMPT_TIMEOUT_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._endpoint = Endpoint.parse(url)
        self._token = token
        self._phase = phase
        self._deadline = deadline
        self._first_backoff = first_backoff
        self._max_backoff = max_backoff
        self._attempt_timeout = attempt_timeout
        self._clock = clock
        self._queue: deque[PendingReport] = deque()
        self._changed = threading.Condition()
        self._closing = False
        self._rejected: ProgressRejected | None = None
        self._stop_answered = False  # some answer said checkpointAndExit
        self._thread = threading.Thread(target=self._deliver, name="depl-progress", daemon=True)
        self._thread.start()

    @property
    def stop_answered(self) -> bool:
        """Whether the controller has answered checkpointAndExit to any report so far."""
        with self._changed:
            return self._stop_answered

    def backlog(self) -> int:
        """Reports not yet answered, dropped or abandoned."""
        with self._changed:
            return len(self._queue)

    def post(self, epoch: int, loss: float) -> PendingReport:
        """Queues the report of `epoch` (the worker's rank 0 only)."""
        self.raise_if_rejected()
        report = PendingReport(epoch, report_body(self._phase, 0, epoch, loss),
                               self._clock() + self._deadline)
        with self._changed:
            self._queue.append(report)
            self._changed.notify_all()
        return report

    def wait(self, report: PendingReport, timeout: float) -> Action | None:
        """The answer to `report` if it comes within `timeout` s; None otherwise (it stays queued)."""
        report.answered.wait(timeout)
        self.raise_if_rejected()
        return report.action

    def raise_if_rejected(self) -> None:
        with self._changed:
            if self._rejected is not None:
                raise self._rejected

    def flush(self) -> None:
        """Waits until every queued report is answered or dropped at its deadline."""
        with self._changed:
            while self._queue and self._rejected is None:
                self._changed.wait()
        self.raise_if_rejected()

    def close(self) -> None:
        """Abandons what is queued and stops the thread."""
        with self._changed:
            self._closing = True
            for report in self._queue:
                report.answered.set()
            self._queue.clear()
            self._changed.notify_all()
        self._thread.join()

    def _deliver(self) -> None:
        backoff = self._first_backoff
        while True:
            with self._changed:
                while not self._queue and not self._closing:
                    self._changed.wait()
                if self._closing:
                    return
                report = self._queue[0]
            try:
                action = post_report(self._endpoint, self._token, report.body, self._attempt_timeout)
            except ProgressRejected as e:
                log.error("event=progress_rejected epoch=%d error=%r", report.epoch, str(e))
                with self._changed:
                    self._rejected = e
                    for queued in self._queue:
                        queued.answered.set()
                    self._queue.clear()
                    self._changed.notify_all()
                return
            except TransientError as e:
                wait = backoff
                if e.retry_after is not None:
                    wait = max(backoff, min(e.retry_after, MAX_RETRY_AFTER_SECONDS))
                with self._changed:
                    if self._clock() + wait > report.deadline:
                        log.warning("event=progress_dropped epoch=%d deadline_s=%g error=%r "
                                    "detail=%r", report.epoch, self._deadline, str(e),
                                    "training goes on; the next report catches up")
                        self._finish(report, None)
                        backoff = self._first_backoff
                        continue
                    log.warning("event=progress_retry epoch=%d wait_s=%.3g error=%r",
                                report.epoch, wait, str(e))
                    self._changed.wait_for(lambda: self._closing, timeout=wait)
                backoff = min(backoff * 2, self._max_backoff)
                continue
            with self._changed:
                self._finish(report, action)
            backoff = self._first_backoff

    def _finish(self, report: PendingReport, action: Action | None) -> None:
        # Called with self._changed held.
        report.action = action
        if action is Action.CHECKPOINT_AND_EXIT:
            self._stop_answered = True
        if self._queue and self._queue[0] is report:
            self._queue.popleft()
        report.answered.set()
        self._changed.notify_all()
