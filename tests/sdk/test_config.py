"""The contract's environment and the standalone flags: what is accepted, and errors that name
the variable or flag (exit 2)."""

import pytest

from depl.config import parse_run_config
from depl.errors import ConfigError

OPERATOR = {"DEPL_JOB": "fmnist", "DEPL_NAMESPACE": "ml", "DEPL_PHASE": "1", "DEPL_MODEL": "half",
            "DEPL_EPOCHS": "4", "DEPL_START_EPOCH": "6", "DEPL_DATASETS": "shard0, shard3",
            "DEPL_CHECKPOINT_DIR": "/checkpoints/ml/fmnist",
            "DEPL_PROGRESS_URL": "http://ctl:8081/v1/namespaces/ml/jobs/fmnist/progress",
            "DEPL_PROGRESS_TOKEN": "q8", "WORLD_SIZE": "2", "RANK": "1",
            "MASTER_ADDR": "fmnist-p1-w0.fmnist-p1.ml.svc", "MASTER_PORT": "29512"}
MODELS = ["full", "half", "quarter"]


def parse(argv=(), env=None, models=MODELS):
    return parse_run_config(list(argv), env or {}, models=models)


def test_standalone_flags():
    c = parse(["--model", "quarter", "--epochs", "3", "--datasets", "shard0,shard1", "--seed", "9",
               "--checkpoint-dir", "/tmp/c", "--init-from", "/tmp/i", "--start-epoch", "4",
               "--eval-initial", "--nproc", "2"])
    assert (c.model, c.epochs, c.start_epoch, c.end_epoch) == ("quarter", 3, 4, 7)
    assert c.datasets == ["shard0", "shard1"] and c.seed == 9 and c.nproc == 2
    assert c.checkpoint_dir == "/tmp/c" and c.init_from == "/tmp/i" and c.eval_initial
    assert c.operator is None and c.world_size == 1 and c.rank == 0


def test_the_seed_comes_from_the_flag_else_depl_seed():
    assert parse().seed == 1
    assert parse(env={"DEPL_SEED": "7"}).seed == 7
    assert parse(["--seed", "3"], {"DEPL_SEED": "7"}).seed == 3
    with pytest.raises(ConfigError, match="DEPL_SEED: want an integer"):
        parse(env={"DEPL_SEED": "x"})


def test_model_defaults_to_the_first_known_variant_and_must_be_known():
    assert parse().model == "full"
    with pytest.raises(ConfigError, match="--model: 'huge' is not a model of this worker"):
        parse(["--model", "huge"])
    with pytest.raises(ConfigError, match="--model: name the model variant"):
        parse(models=None)


def test_operator_environment_overrides_the_flags():
    c = parse(["--model", "full", "--epochs", "99"], OPERATOR)
    assert (c.model, c.epochs, c.start_epoch) == ("half", 4, 6)
    assert c.datasets == ["shard0", "shard3"]
    assert c.checkpoint_dir == "/checkpoints/ml/fmnist"
    assert (c.world_size, c.rank, c.master_addr, c.master_port) == (2, 1, "fmnist-p1-w0.fmnist-p1.ml.svc", 29512)
    assert c.operator.job == "fmnist" and c.operator.namespace == "ml" and c.operator.phase == 1
    assert c.operator.progress_token == "q8"


@pytest.mark.parametrize("name", ["DEPL_JOB", "DEPL_NAMESPACE", "DEPL_PHASE", "DEPL_MODEL",
                                  "DEPL_EPOCHS", "DEPL_START_EPOCH", "DEPL_DATASETS",
                                  "DEPL_CHECKPOINT_DIR", "DEPL_PROGRESS_URL",
                                  "DEPL_PROGRESS_TOKEN", "RANK", "MASTER_ADDR", "MASTER_PORT"])
def test_a_missing_contract_variable_is_named(name):
    env = dict(OPERATOR)
    env[name] = ""  # set but empty counts as missing
    if name == "DEPL_JOB":
        env["DEPL_JOB"] = "x"
        del env["DEPL_NAMESPACE"]
        name = "DEPL_NAMESPACE"
    with pytest.raises(ConfigError, match=f"^{name} is not set"):
        parse(env=env)


@pytest.mark.parametrize("name,value,message", [
    ("DEPL_EPOCHS", "four", "DEPL_EPOCHS: want an integer in [0, 1048576], got 'four'"),
    ("DEPL_EPOCHS", "-1", "DEPL_EPOCHS: want an integer in [0, 1048576], got '-1'"),
    ("DEPL_PHASE", "1.5", "DEPL_PHASE: want an integer"),
    ("DEPL_START_EPOCH", "2x", "DEPL_START_EPOCH: want an integer"),
    ("WORLD_SIZE", "0", "WORLD_SIZE: want an integer in [1, 4096], got '0'"),
    ("RANK", "2", "RANK: want an integer in [0, 1], got '2'"),
    ("MASTER_PORT", "70000", "MASTER_PORT: want an integer in [1, 65535]"),
    ("DEPL_MODEL", "huge", "DEPL_MODEL: 'huge' is not a model of this worker"),
    ("DEPL_DATASETS", " , ", "DEPL_DATASETS: names no dataset"),
    ("DEPL_PROGRESS_URL", "ftp://x/y", "DEPL_PROGRESS_URL: want http://host[:port]/path"),
    ("DEPL_LOSS_PROFILE", "{nope", "DEPL_LOSS_PROFILE: not valid JSON"),
    ("DEPL_LOSS_PROFILE", "[1]", "DEPL_LOSS_PROFILE: want a JSON object"),
    ("DEPL_PROGRESS_RETRY_SECONDS", "soon",
     "DEPL_PROGRESS_RETRY_SECONDS: want whole seconds in [0, 604800], got 'soon'"),
    ("DEPL_PROGRESS_RETRY_SECONDS", "1.5", "DEPL_PROGRESS_RETRY_SECONDS: want whole seconds"),
    ("DEPL_PROGRESS_RETRY_SECONDS", "-1", "DEPL_PROGRESS_RETRY_SECONDS: want whole seconds"),
    ("DEPL_PROGRESS_RETRY_SECONDS", "604801", "DEPL_PROGRESS_RETRY_SECONDS: want whole seconds"),
    ("DEPL_PEER_TIMEOUT_SECONDS", "0", "DEPL_PEER_TIMEOUT_SECONDS: want a number"),
    ("DEPL_THREADS", "0", "DEPL_THREADS: want an integer in [1, 1024]"),
    ("DEPL_DEVICE", "tpu", "DEPL_DEVICE: want cpu, cuda, cuda:N or auto, got 'tpu'"),
])
def test_a_malformed_variable_is_named_with_what_is_wrong(name, value, message):
    env = dict(OPERATOR)
    env[name] = value
    with pytest.raises(ConfigError) as e:
        parse(env=env)
    assert str(e.value).startswith(message)


def test_a_single_worker_may_omit_the_rendezvous_variables():
    env = {k: v for k, v in OPERATOR.items() if k not in ("WORLD_SIZE", "RANK", "MASTER_ADDR", "MASTER_PORT")}
    c = parse(env=env)
    assert (c.world_size, c.rank) == (1, 0)
    assert parse(env={**env, "DEPL_LOSS_PROFILE": '{"initialLoss": 2.3}'}).operator.loss_profile == {"initialLoss": 2.3}


def test_torchrun_style_environment_in_standalone_mode():
    c = parse(env={"WORLD_SIZE": "2", "RANK": "1", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500",
                   "LOCAL_RANK": "1"})
    assert (c.world_size, c.rank, c.local_rank, c.master_port) == (2, 1, 1, 29500)
    with pytest.raises(ConfigError, match="--nproc: WORLD_SIZE=2 is set already"):
        parse(["--nproc", "2"], {"WORLD_SIZE": "2", "RANK": "0", "MASTER_ADDR": "h", "MASTER_PORT": "1"})
    with pytest.raises(ConfigError, match="MASTER_ADDR is not set"):
        parse(env={"WORLD_SIZE": "2", "RANK": "0"})


@pytest.mark.parametrize("argv,message", [
    (["--epochs", "x"], "command line: argument --epochs: want an integer in [0, 1048576], got 'x'"),
    (["--nproc", "0"], "command line: argument --nproc: want an integer in [1, 4096], got '0'"),
    (["--peer-timeout", "0"], "command line: argument --peer-timeout: want a number > 0"),
    (["--device", "gpu7"], "--device: want cpu, cuda, cuda:N or auto, got 'gpu7'"),
    (["--bogus"], "command line: unrecognized arguments: --bogus"),
])
def test_bad_flags_are_named(argv, message):
    with pytest.raises(ConfigError) as e:
        parse(argv)
    assert str(e.value).startswith(message)


def test_nproc_is_refused_under_the_operator():
    with pytest.raises(ConfigError, match="--nproc: the operator starts one pod per rank"):
        parse(["--nproc", "2"], OPERATOR)


def test_target_loss_is_a_positive_number_and_refused_under_the_operator():
    assert parse(["--target-loss", "0.42"]).target_loss == 0.42
    assert parse([]).target_loss is None
    for bad in ("0", "-1", "low"):
        with pytest.raises(ConfigError, match="--target-loss"):
            parse(["--target-loss", bad])
    with pytest.raises(ConfigError, match="--target-loss: the operator ends the job"):
        parse(["--target-loss", "0.42"], OPERATOR)


def test_the_scripts_own_options_land_in_options():
    def options(group, env):
        group.add_argument("--batch-size", type=int, default=int(env.get("BATCH", "128")))

    c = parse_run_config(["--batch-size", "64", "--model", "a"], {}, options=options)
    assert c.options.batch_size == 64 and not hasattr(c.options, "model")
    assert parse_run_config(["--model", "a"], {"BATCH": "32"}, options=options).options.batch_size == 32
