"""The progress protocol (docs/worker-contract.md section 3), rank 0's side.

``post_report`` is one HTTP attempt. ``ProgressClient.post`` delivers one report: it retries
connection errors, timeouts, 5xx and 429 with exponential backoff (honouring ``Retry-After`` on
429 and 503) until the retry deadline, ``DEPL_PROGRESS_RETRY_SECONDS`` after the first attempt,
and raises ``ProgressUnreachable`` (exit 75) when the endpoint has not taken the report by then.
4xx answers are final (``ProgressRejected``, exit 1 with the controller's message).
"""

from __future__ import annotations

import enum
import http.client
import json
import logging
import time
import urllib.parse
from dataclasses import dataclass
from typing import Callable

from .errors import ConfigError, ProgressRejected, ProgressUnreachable

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


def wait_before_retry(backoff: float, retry_after: float | None) -> float:
    """The wait before the next attempt: the backoff, or the endpoint's Retry-After when longer
    (at most MAX_RETRY_AFTER_SECONDS of it)."""
    if retry_after is None:
        return backoff
    return max(backoff, min(retry_after, MAX_RETRY_AFTER_SECONDS))


class ProgressClient:
    """Rank 0's reports to the job's progress endpoint, each delivered before training goes on."""

    def __init__(self, url: str, token: str, phase: int, *, retry_for: float,
                 first_backoff: float = FIRST_BACKOFF_SECONDS,
                 max_backoff: float = MAX_BACKOFF_SECONDS,
                 attempt_timeout: float = ATTEMPT_TIMEOUT_SECONDS,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if retry_for < 0:
            raise ConfigError(f"DEPL_PROGRESS_RETRY_SECONDS: want >= 0, got {retry_for}")
        self._endpoint = Endpoint.parse(url)
        self._token = token
        self._phase = phase
        self._retry_for = retry_for
        self._first_backoff = first_backoff
        self._max_backoff = max_backoff
        self._attempt_timeout = attempt_timeout
        self._clock = clock
        self._sleep = sleep

    @property
    def retry_for(self) -> float:
        return self._retry_for

    def post(self, epoch: int, loss: float) -> Action:
        """Reports `epoch` and returns the controller's answer.

        Raises ProgressRejected on a final answer, ProgressUnreachable when the endpoint has not
        taken the report by the retry deadline (the last attempt is made at the deadline).
        """
        body = report_body(self._phase, 0, epoch, loss)
        deadline = self._clock() + self._retry_for
        backoff = self._first_backoff
        attempt = 0
        while True:
            attempt += 1
            try:
                return post_report(self._endpoint, self._token, body, self._attempt_timeout)
            except ProgressRejected as e:
                log.error("event=progress_rejected epoch=%d error=%r", epoch, str(e))
                raise
            except TransientError as e:
                now = self._clock()
                if now >= deadline:
                    raise ProgressUnreachable(
                        f"the progress endpoint {self._endpoint.host}:{self._endpoint.port} did "
                        f"not take the report of epoch {epoch} within {self._retry_for:g} s "
                        f"(DEPL_PROGRESS_RETRY_SECONDS), {attempt} attempt(s): {e}") from None
                wait = min(wait_before_retry(backoff, e.retry_after), deadline - now)
                log.warning("event=progress_retry epoch=%d attempt=%d wait_s=%.3g error=%r",
                            epoch, attempt, wait, str(e))
                self._sleep(wait)
                backoff = min(backoff * 2, self._max_backoff)
