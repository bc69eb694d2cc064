"""SIGTERM (depl.signals): the rank that gets it finishes its epoch, every rank stops after that
epoch with its checkpoint saved and its report posted, and the worker exits 143; a run resumed
from the checkpoint goes on after it. Before, SIGTERM ended the process at once: exit -15 and the
epoch in progress lost."""

import os
import signal

from conftest import TINY, operator_env, run_script, until

from depl import checkpoint as checkpoints
from depl.signals import EXIT_TERMINATED, TerminationRequest


def test_the_handler_records_the_request_and_is_restored():
    before = signal.getsignal(signal.SIGTERM)
    request = TerminationRequest()
    assert request.install()
    try:
        assert not request.requested
        os.kill(os.getpid(), signal.SIGTERM)  # handled between bytecodes, in this thread
        assert request.requested
    finally:
        request.restore()
    assert signal.getsignal(signal.SIGTERM) == before


def checkpoint_epoch(directory):
    return checkpoints.read_checkpoint_header(os.path.join(directory, checkpoints.FILE_NAME)).epoch


def test_sigterm_stops_after_the_epoch_with_its_checkpoint_and_exit_143(tmp_path):
    ckpt = str(tmp_path / "ckpt")
    stopped = run_script(TINY, ["--epochs", "6", "--seed", "3", "--checkpoint-dir", ckpt,
                                "--term-rank", "0", "--term-at-epoch", "3"])
    assert stopped.code == EXIT_TERMINATED, stopped.stderr
    assert [l["epoch"] for l in stopped.lines()] == [1, 2, 3]
    assert checkpoint_epoch(ckpt) == 3
    assert "event=terminating epoch=3" in stopped.stderr
    resumed = run_script(TINY, ["--epochs", "6", "--seed", "3", "--checkpoint-dir", ckpt])
    assert resumed.code == 0, resumed.stderr
    assert [l["epoch"] for l in resumed.lines()] == [4, 5, 6]


def test_every_rank_stops_after_the_epoch_a_peer_was_signalled_in(tmp_path):
    ckpt = str(tmp_path / "ckpt")
    done = run_script(TINY, ["--epochs", "6", "--nproc", "2", "--checkpoint-dir", ckpt,
                             "--term-rank", "1", "--term-at-epoch", "2", "--peer-timeout", "20"])
    assert done.code == EXIT_TERMINATED, done.stderr
    assert [l["epoch"] for l in done.lines()] == [1, 2]
    assert checkpoint_epoch(ckpt) == 2
    assert "signalled=another rank" in done.stderr  # rank 0 learnt it from rank 1


def test_under_the_operator_the_last_epoch_is_reported_before_the_exit(tmp_path, endpoint_factory):
    e = endpoint_factory(until(5))
    env = operator_env(tmp_path, e.url, DEPL_EPOCHS="5")
    done = run_script(TINY, ["--term-rank", "0", "--term-at-epoch", "2"], env=env)
    assert done.code == EXIT_TERMINATED, done.stderr
    assert [r["body"]["epoch"] for r in e.requests] == [1, 2]
    assert checkpoint_epoch(str(tmp_path / "checkpoints")) == 2
