"""The progress protocol's client side: the request, answers, retries with backoff and
Retry-After until the retry deadline (on a fake clock that the fake sleep moves), final 4xx."""


import pytest
from conftest import Answer

from depl.errors import ProgressRejected, ProgressUnreachable
from depl.progress import (Action, Endpoint, ProgressClient, TransientError, parse_retry_after,
                           post_report, report_body, wait_before_retry)


class FakeTime:
    """A clock that only sleep() moves, so retries over minutes take no time."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.sleeps.append(seconds)
        self.now += seconds


def client(url, time, retry_for=300.0):
    return ProgressClient(url, "secret-token", 1, retry_for=retry_for, attempt_timeout=2.0,
                          clock=time.clock, sleep=time.sleep)


def test_one_report_carries_the_token_and_the_contracts_body(endpoint_factory):
    e = endpoint_factory()
    assert post_report(Endpoint.parse(e.url), "tok", report_body(1, 0, 7, 0.4312)) is Action.CONTINUE
    assert e.requests[0]["authorization"] == "Bearer tok"
    assert e.requests[0]["path"] == "/v1/namespaces/ml/jobs/j/progress"
    assert e.requests[0]["body"] == {"phase": 1, "rank": 0, "epoch": 7, "loss": 0.4312}


def test_checkpoint_and_exit_is_read(endpoint_factory):
    e = endpoint_factory(lambda r: Answer(body={"action": "checkpointAndExit", "message": "m"}))
    assert post_report(Endpoint.parse(e.url), "t", b"{}") is Action.CHECKPOINT_AND_EXIT


@pytest.mark.parametrize("status,hint", [(400, ""), (401, "DEPL_PROGRESS_TOKEN"), (403, "DEPL_PROGRESS_TOKEN"),
                                         (404, "does the job still exist"), (405, ""), (413, "")])
def test_4xx_is_final_and_says_why(endpoint_factory, status, hint):
    e = endpoint_factory(lambda r: Answer(status, "no such thing"))
    with pytest.raises(ProgressRejected, match=f"HTTP {status}.*{hint}.*no such thing"):
        post_report(Endpoint.parse(e.url), "t", b"{}")


@pytest.mark.parametrize("status,retry_after,expected", [(503, "1", 1.0), (429, "3", 3.0),
                                                         (500, "9", None), (503, "soon", None)])
def test_5xx_and_429_are_transient_with_their_retry_after(endpoint_factory, status, retry_after, expected):
    e = endpoint_factory(lambda r: Answer(status, "busy", {"Retry-After": retry_after}))
    with pytest.raises(TransientError) as caught:
        post_report(Endpoint.parse(e.url), "t", b"{}")
    assert caught.value.retry_after == expected


@pytest.mark.parametrize("body", ['{"action": "explode"}', "not json", '{"no": "action"}'])
def test_an_answer_outside_the_contract_is_final(endpoint_factory, body):
    e = endpoint_factory(lambda r: Answer(200, body))
    with pytest.raises(ProgressRejected):
        post_report(Endpoint.parse(e.url), "t", b"{}")


def test_retry_after_parsing():
    assert parse_retry_after("2") == 2.0 and parse_retry_after(" 10 ") == 10.0
    for value in (None, "", "1.5", "-1", "Wed, 21 Oct 2015 07:28:00 GMT", "١"):
        assert parse_retry_after(value) is None


def test_a_report_outlasts_a_controller_away_for_minutes(endpoint_factory):
    time = FakeTime()
    e = endpoint_factory(lambda r: Answer(503, "restarting") if time.now < 120 else Answer())
    assert client(e.url, time).post(4, 0.5) is Action.CONTINUE
    assert time.now >= 120 and all(b["epoch"] == 4 for b in e.reports())
    # Backoff from 200 ms, doubling up to 10 s between attempts.
    assert time.sleeps[:7] == pytest.approx([0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 10.0])
    assert max(time.sleeps) == 10.0


def test_retry_after_is_honoured_when_longer_than_the_backoff(endpoint_factory):
    time = FakeTime()
    e = endpoint_factory(lambda r: Answer(429, "slow down", {"Retry-After": "3"})
                         if len(e.requests) < 3 else Answer())
    assert client(e.url, time).post(1, 0.5) is Action.CONTINUE
    assert time.sleeps == [3.0, 3.0]
    assert wait_before_retry(0.2, 500.0) == 60.0 and wait_before_retry(12.0, 3.0) == 12.0
    assert wait_before_retry(0.4, None) == 0.4


def test_an_unreachable_endpoint_is_given_up_at_the_retry_deadline(refused_port):
    time = FakeTime()
    c = client(f"http://127.0.0.1:{refused_port}/p", time, retry_for=30.0)
    with pytest.raises(ProgressUnreachable, match="did not take the report of epoch 2 within 30 s"
                       ) as caught:
        c.post(2, 0.5)
    assert caught.value.exit_code == 75
    assert time.now == pytest.approx(30.0)  # the last attempt is made at the deadline, not after
    assert sum(time.sleeps) == pytest.approx(30.0)


def test_no_retry_with_a_deadline_of_zero(refused_port):
    time = FakeTime()
    with pytest.raises(ProgressUnreachable, match="1 attempt"):
        client(f"http://127.0.0.1:{refused_port}/p", time, retry_for=0).post(1, 0.5)
    assert time.sleeps == []


def test_a_4xx_is_not_retried(endpoint_factory):
    time = FakeTime()
    e = endpoint_factory(lambda report: Answer(401, "wrong token"))
    with pytest.raises(ProgressRejected, match="HTTP 401"):
        client(e.url, time).post(1, 0.5)
    assert len(e.requests) == 1 and time.sleeps == []


def test_urls_are_checked():
    assert Endpoint.parse("http://h:81/a?b=1") == Endpoint("http", "h", 81, "/a?b=1")
    assert Endpoint.parse("https://h/x").port == 443
    for bad in ("h:81/x", "http:///x", "http://h:99999/x"):
        with pytest.raises(Exception, match="DEPL_PROGRESS_URL"):
            Endpoint.parse(bad)
