"""The progress protocol's client side: the request, answers, retries with Retry-After, final
4xx, and giving a report up at its deadline without stopping."""

import socket
import threading

import pytest
from conftest import Answer

from depl.errors import ProgressRejected
from depl.progress import (Action, Endpoint, ProgressReporter, TransientError, parse_retry_after,
                           post_report, report_body)


def reporter(url, deadline=30.0, **kw):
    return ProgressReporter(url, "secret-token", 1, deadline=deadline, first_backoff=0.01,
                            max_backoff=0.05, attempt_timeout=2.0, **kw)


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


def test_reports_are_retried_through_an_outage_and_delivered_in_order(endpoint_factory):
    failures = {"left": 4}
    lock = threading.Lock()

    def answer(report):
        with lock:
            if failures["left"] > 0:
                failures["left"] -= 1
                return Answer(503, "standby", {"Retry-After": "0"})
        return Answer()

    e = endpoint_factory(answer)
    r = reporter(e.url)
    first, second = r.post(1, 0.9), r.post(2, 0.8)
    assert r.wait(second, 30) is Action.CONTINUE and first.action is Action.CONTINUE
    assert [b["epoch"] for b in e.reports()] == [1, 1, 1, 1, 1, 2]
    r.close()


def test_an_unreachable_endpoint_never_fails_a_report_it_drops_it_at_its_deadline():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    now = {"t": 0.0}
    r = reporter(f"http://127.0.0.1:{port}/p", deadline=5.0, clock=lambda: now["t"])
    pending = r.post(1, 0.5)
    assert r.wait(pending, 0.05) is None  # no answer yet: training goes on
    now["t"] = 10.0  # past the deadline: the next retry gives it up
    r.flush()
    assert pending.action is None and r.backlog() == 0
    r.close()


def test_a_4xx_stops_the_reporter_and_is_raised_to_the_worker(endpoint_factory):
    e = endpoint_factory(lambda report: Answer(401, "wrong token"))
    r = reporter(e.url)
    pending = r.post(1, 0.5)
    with pytest.raises(ProgressRejected, match="HTTP 401"):
        r.wait(pending, 30)
    with pytest.raises(ProgressRejected):
        r.post(2, 0.4)
    r.close()


def test_a_late_checkpoint_and_exit_is_remembered(endpoint_factory):
    gate = threading.Event()

    def answer(report):
        gate.wait(30)
        return Answer(body={"action": "checkpointAndExit"})

    e = endpoint_factory(answer)
    r = reporter(e.url)
    pending = r.post(3, 0.5)
    assert r.wait(pending, 0.01) is None and not r.stop_answered
    gate.set()
    r.flush()
    assert r.stop_answered and pending.action is Action.CHECKPOINT_AND_EXIT
    r.close()


def test_urls_are_checked():
    assert Endpoint.parse("http://h:81/a?b=1") == Endpoint("http", "h", 81, "/a?b=1")
    assert Endpoint.parse("https://h/x").port == 443
    for bad in ("h:81/x", "http:///x", "http://h:99999/x"):
        with pytest.raises(Exception, match="DEPL_PROGRESS_URL"):
            Endpoint.parse(bad)
