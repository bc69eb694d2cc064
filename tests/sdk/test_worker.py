"""One rank end to end, in this process: standalone epochs and checkpoints, operator mode against
a progress endpoint, and the exit codes of bad settings and damaged checkpoints."""

import importlib.util
import json
import os

import pytest
from conftest import TINY, Answer, operator_env, until

from depl.checkpoint import FILE_NAME
from depl.runner import run_worker

spec = importlib.util.spec_from_file_location("tiny_train", TINY)
tiny = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tiny)


def run(capsys, argv, env=None):
    code = run_worker(tiny.train, argv=argv, env=env or {}, convert=tiny.depl.width_scaled(tiny.build),
                      options=tiny.options, models=list(tiny.WIDTHS), prog="tiny")
    out, err = capsys.readouterr()
    return code, [json.loads(l) for l in out.splitlines() if l.startswith("{")], err


def losses(lines):
    return [(l["epoch"], l["loss"]) for l in lines]


def test_standalone_prints_one_json_line_per_epoch(capsys):
    code, lines, _ = run(capsys, ["--epochs", "3", "--start-epoch", "2"])
    assert code == 0
    assert [l["epoch"] for l in lines] == [3, 4, 5]
    assert all(l["variant"] == "small" and l["loss"] > 0 and l["seconds"] >= 0 for l in lines)


def test_a_resumed_run_repeats_an_uninterrupted_one_exactly(capsys, tmp_path):
    _, whole, _ = run(capsys, ["--epochs", "4", "--seed", "5"])
    checkpoints = str(tmp_path / "c")
    _, first, _ = run(capsys, ["--epochs", "2", "--seed", "5", "--checkpoint-dir", checkpoints])
    code, rest, err = run(capsys, ["--epochs", "4", "--seed", "5", "--checkpoint-dir", checkpoints])
    assert code == 0 and "event=resume" in err
    assert losses(first + rest) == losses(whole)


def test_target_loss_stops_at_the_first_epoch_at_or_below_it_with_its_checkpoint(capsys, tmp_path):
    # Standalone, the run ends where the operator would end the job: the first epoch whose loss
    # meets the target, with that epoch's checkpoint.
    _, whole, _ = run(capsys, ["--epochs", "5", "--seed", "5"])
    target = whole[2]["loss"]
    assert whole[1]["loss"] > target  # the tiny job's loss falls: epoch 3 is the first at it
    checkpoints = str(tmp_path / "c")
    code, lines, err = run(capsys, ["--epochs", "5", "--seed", "5", "--target-loss", str(target),
                                    "--checkpoint-dir", checkpoints])
    assert code == 0 and "event=target_reached epoch=3" in err
    assert losses(lines) == losses(whole[:3])
    code, rest, _ = run(capsys, ["--epochs", "5", "--seed", "5", "--checkpoint-dir", checkpoints])
    assert code == 0 and losses(rest) == losses(whole[3:])  # the checkpoint held epoch 3


def test_a_finished_phase_exits_at_once(capsys, tmp_path):
    checkpoints = str(tmp_path / "c")
    run(capsys, ["--epochs", "2", "--checkpoint-dir", checkpoints])
    code, lines, err = run(capsys, ["--epochs", "2", "--checkpoint-dir", checkpoints])
    assert code == 0 and lines == [] and "event=nothing_to_do" in err


def test_init_from_converts_to_the_new_variant_and_eval_initial_reports_it(capsys, tmp_path):
    checkpoints = str(tmp_path / "c")
    run(capsys, ["--model", "small", "--epochs", "3", "--checkpoint-dir", checkpoints])
    code, lines, err = run(capsys, ["--model", "large", "--init-from", checkpoints, "--start-epoch",
                                    "3", "--epochs", "0", "--eval-initial"])
    assert code == 0 and "event=convert_checkpoint from_model=small to_model=large" in err
    assert [l["epoch"] for l in lines] == [3] and lines[0]["variant"] == "large"
    code, lines, _ = run(capsys, ["--model", "large", "--init-from", checkpoints, "--start-epoch",
                                  "3", "--epochs", "2"])
    assert code == 0 and [l["epoch"] for l in lines] == [4, 5]


def test_a_damaged_checkpoint_is_exit_1_naming_the_file(capsys, tmp_path):
    checkpoints = tmp_path / "c"
    run(capsys, ["--epochs", "1", "--checkpoint-dir", str(checkpoints)])
    path = checkpoints / FILE_NAME
    path.write_bytes(path.read_bytes()[:-3])
    code, lines, err = run(capsys, ["--epochs", "3", "--checkpoint-dir", str(checkpoints)])
    assert code == 1 and lines == []
    assert f"checkpoint {path} is damaged" in err


def test_epochs_before_load_with_a_checkpoint_there_is_refused(capsys, tmp_path):
    checkpoints = str(tmp_path / "c")
    run(capsys, ["--epochs", "1", "--checkpoint-dir", checkpoints])
    code, _, err = run(capsys, ["--epochs", "3", "--checkpoint-dir", checkpoints, "--skip-load"])
    assert code == 1 and "call ctx.load() before ctx.epochs()" in err


def test_a_bad_flag_is_exit_2(capsys):
    code, _, err = run(capsys, ["--epochs", "three"])
    assert code == 2 and "argument --epochs: want an integer" in err


def test_a_missing_contract_variable_is_exit_2_naming_it(capsys, tmp_path, endpoint_factory):
    env = operator_env(tmp_path, "http://127.0.0.1:1/p", DEPL_EPOCHS=None)
    code, _, err = run(capsys, [], env)
    assert code == 2 and "DEPL_EPOCHS is not set" in err


def test_operator_mode_reports_every_epoch_with_the_token(capsys, tmp_path, endpoint_factory):
    e = endpoint_factory(until(7))
    code, lines, _ = run(capsys, [], operator_env(tmp_path, e.url, DEPL_PHASE="2", DEPL_START_EPOCH="4"))
    assert code == 0 and [l["epoch"] for l in lines] == [5, 6, 7]
    assert [r["authorization"] for r in e.requests] == ["Bearer secret-token"] * 3
    assert e.reports() == [{"phase": 2, "rank": 0, "epoch": l["epoch"], "loss": l["loss"]} for l in lines]
    assert os.path.exists(tmp_path / "checkpoints" / FILE_NAME)


def test_checkpoint_and_exit_ends_the_phase_early_with_the_checkpoint_at_that_epoch(capsys, tmp_path, endpoint_factory):
    e = endpoint_factory(lambda r: Answer(body={"action": "checkpointAndExit" if r["epoch"] == 2 else "continue"}))
    code, lines, err = run(capsys, [], operator_env(tmp_path, e.url, DEPL_EPOCHS="5"))
    assert code == 0 and [l["epoch"] for l in lines] == [1, 2]
    assert "event=checkpoint_and_exit epoch=2" in err
    from depl.checkpoint import read_checkpoint_header
    assert read_checkpoint_header(str(tmp_path / "checkpoints" / FILE_NAME)).epoch == 2


def test_continue_past_the_planned_end_trains_on(capsys, tmp_path, endpoint_factory):
    e = endpoint_factory(lambda r: Answer(body={"action": "checkpointAndExit" if r["epoch"] == 5 else "continue"}))
    code, lines, _ = run(capsys, [], operator_env(tmp_path, e.url, DEPL_EPOCHS="3"))
    assert code == 0 and [l["epoch"] for l in lines] == [1, 2, 3, 4, 5]


def test_a_wrong_token_is_exit_1_with_the_controllers_message(capsys, tmp_path, endpoint_factory):
    e = endpoint_factory(lambda r: Answer(401, "missing or wrong bearer token"))
    code, lines, err = run(capsys, [], operator_env(tmp_path, e.url))
    assert code == 1 and len(lines) == 1
    assert "HTTP 401" in err and "missing or wrong bearer token" in err


def test_a_restarting_controller_does_not_fail_the_phase(capsys, tmp_path, endpoint_factory):
    # The first three attempts meet a standby replica, as during a fail-over: the report of
    # epoch 1 is retried until taken, before epoch 2 trains.
    seen = []

    def answer(report):
        seen.append(report["epoch"])
        return Answer(503, "standby", {"Retry-After": "0"}) if len(seen) <= 3 else until(3)(report)

    e = endpoint_factory(answer)
    code, lines, _ = run(capsys, [], operator_env(tmp_path, e.url))
    assert code == 0 and [l["epoch"] for l in lines] == [1, 2, 3]
    assert [r["epoch"] for r in e.reports()] == [1, 1, 1, 1, 2, 3]


def test_an_unreachable_controller_stops_the_run_with_exit_75_after_the_checkpoint(capsys, tmp_path,
                                                                                 refused_port):
    url = f"http://127.0.0.1:{refused_port}/v1/progress"
    env = operator_env(tmp_path, url, DEPL_PROGRESS_RETRY_SECONDS="1")
    code, lines, err = run(capsys, [], env)
    assert code == 75 and [l["epoch"] for l in lines] == [1]
    assert "did not take the report of epoch 1 within 1 s" in err and "event=progress_retry" in err
    from depl.checkpoint import read_checkpoint_header
    assert read_checkpoint_header(str(tmp_path / "checkpoints" / FILE_NAME)).epoch == 1


def test_a_malformed_retry_deadline_is_exit_2_naming_it(capsys, tmp_path):
    code, _, err = run(capsys, [], operator_env(tmp_path, "http://127.0.0.1:1/p",
                                                DEPL_PROGRESS_RETRY_SECONDS="5m"))
    assert code == 2 and "DEPL_PROGRESS_RETRY_SECONDS: want whole seconds" in err
