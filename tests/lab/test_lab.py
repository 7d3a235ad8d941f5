"""Tests of grpo_theory.lab: one shared quick run of TRL's GRPOTrainer, read back by the
project's readers, plus cheap checks of the pieces against independent references.  Nothing
but the quick run trains; the file stays on one xdist worker so the run is made once.

The quick run is ``lab --quick --model DIR --kernel lanczos``: DIR is the built-in tiny GPT-2
written by ``save_pretrained`` as a plain ``transformers.GPT2LMHeadModel`` (the any-model path
end to end: from_pretrained, the answer-restricted head, the tokenizer read back, the tangent
kernel without J); :func:`test_saved_model_is_the_builtin_model` ties it to the built-in path."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
pytest.importorskip("trl")
pytest.importorskip("datasets")
torch = pytest.importorskip("torch")

from grpo_theory.validate import ParameterError  # noqa: E402

pytestmark = pytest.mark.xdist_group("lab")

CONTRACT = ("engine", "model_parameters", "stiffness", "k_max_predicted", "k_max_published",
            "k_max_observed", "per_k", "group_family", "seconds", "model", "executor",
            "processes", "failed_tasks")


def _env():
    env = dict(os.environ, PYTHONPATH=str(ROOT), GRPO_THEORY_PROGRESS="0")
    env.pop("PYTHONUNBUFFERED", None)
    return env


# ----------------------------------------------------------------------------------------
# the quick run: the JSON contract and what it says
# ----------------------------------------------------------------------------------------

def test_quick_contract(quick):
    d, _, p = quick
    for key in CONTRACT:
        assert key in d, key
    assert d["engine"].startswith("trl ") and "GRPOTrainer" in d["engine"]
    assert set(d["stiffness"]) >= {"ntk", "response", "response_se"}
    for row in d["per_k"]:
        assert set(row) >= {"k", "multiplier", "se", "predicted", "stable_observed",
                            "stable_predicted"}
    assert set(d["group_family"]) >= {"values", "invariant", "exponent", "exponent_interval",
                                      "predicted_exponent"}
    assert d["group_family"]["values"] == [4, 16]
    assert p.returncode == d["exit_code"]
    # the any-model path: loaded by from_pretrained, kernel by Lanczos (said so), all ran
    assert d["model"].startswith("GPT2LMHeadModel (26,624 parameters") and "from_pretrained" in \
        d["model"]
    assert d["stiffness"]["kernel_route"] == "lanczos"
    assert 1 <= d["stiffness"]["kernel_iterations"] <= d["prompts"]
    assert d["stiffness"]["kernel_residual"] < 1e-8
    assert d["failed_tasks"] == [] and d["processes"] == 1 and d["executor"].startswith("serial")


def test_quick_parameter_count_matches_the_formula(quick):
    """The model's trainable parameters against the closed count of a GPT-2 block."""
    from grpo_theory.lab.model import ModelSpec, parameter_count

    d, _, _ = quick
    assert d["model_parameters"] == parameter_count(ModelSpec(width=32, layers=2))


def test_quick_stiffness_two_ways_agree(quick):
    """Tangent kernel x bandit against the linear response of the engine (independent):
    within 3 standard errors and 25 %."""
    s = quick[0]["stiffness"]
    assert s["ntk"] > 0 and s["response_se"] > 0
    assert abs(s["response"] - s["ntk"]) < 3 * s["response_se"] + 0.05 * s["ntk"]
    assert abs(s["response"] / s["ntk"] - 1) < 0.25


def test_quick_thresholds_are_the_theorys(quick):
    """k_max and the per-k spectral radii recomputed from the model object at the reported
    eta K and split; the published rule from its own formula."""
    from grpo_theory.theory.discrete import max_stable_refresh_interval, spectral_radius

    d, _, _ = quick
    sw = d["sweeps"][0]
    a, mu, phi = sw["eta_K"], sw["momentum"], sw["fresh_fraction"]
    assert d["k_max_predicted"] == max_stable_refresh_interval(a, mu, 1.0, fresh_fraction=phi)
    assert d["k_max_published"] == math.ceil((1 - mu) / a) - 1
    for row in d["per_k"]:
        assert row["predicted"] == pytest.approx(
            float(spectral_radius(a, mu, row["k"], 1.0, fresh_fraction=phi)), rel=1e-9)
    # the quick bracket is the exact k_max and k_max + 1
    assert [r["k"] for r in d["per_k"]] == [d["k_max_predicted"], d["k_max_predicted"] + 1]


def test_quick_engine_finds_the_threshold(quick):
    """The engine's observed k_max is the exact one within 1, and k_max + 1 grows."""
    d, _, _ = quick
    assert d["k_max_observed"] is not None
    assert abs(d["k_max_observed"] - d["k_max_predicted"]) <= 1
    top = d["per_k"][-1]
    assert top["multiplier"] > 1 - 2 * top["se"]


def test_quick_group_pair_plateaus_follow_the_finite_G_theory(quick):
    """The exact finite-G fixed point moves with G (0.697 -> 0.810 for G = 4 -> 16); the
    engine's late expected reward (noise-free) follows it within 0.03, and the plateau that
    `compare` fits to TRL's logged reward within 0.08."""
    gf = quick[0]["group_family"]
    pl = {p["G"]: p for p in gf["plateaus"]}
    assert pl[16]["p_star_exact"] - pl[4]["p_star_exact"] > 0.1
    for p in pl.values():
        assert abs(p["late_expected_reward_mean"] - p["p_star_exact"]) < 0.03
        assert abs(p["fitted_plateau_mean"] - p["p_star_exact"]) < 0.08


# ----------------------------------------------------------------------------------------
# the written TRL logs: every existing reader runs on them unchanged
# ----------------------------------------------------------------------------------------

def _logs(out):
    """The family members' TRL logs (the sweep runs' short logs are under refresh/)."""
    return sorted((Path(out) / "group_size").rglob("trainer_state.json"))


def test_every_run_wrote_its_trl_log_and_run_json(quick):
    """With --out every run (a task) writes trainer_state.json, config.json and run.json: the
    refresh bracket's 2 k x 3 pairs x 2 signs, the linear response's 2 x 2, the 2 members."""
    d, out, _ = quick
    for sub, n in (("refresh", 12), ("stiffness", 4), ("group_size", 2)):
        runs = sorted((Path(out) / sub).rglob("run.json"))
        assert len(runs) == n, sub
        for r in runs:
            rec = json.loads(r.read_text())
            assert (r.parent / "trainer_state.json").is_file() and (r.parent / "config.json").is_file()
            obs = rec["observed"]
            assert rec["attempts"] == 1 and rec["id"] and (
                obs["steps"] == rec["spec"]["steps"] or obs["diverged_step"] is not None)


def test_written_logs_are_trl_trainer_states(quick):
    from grpo_theory.runs.logs import read_log

    logs = _logs(quick[1])
    assert len(logs) >= 2
    for p in logs:
        log = read_log(p)
        assert log.format == "trl"
        s, v = log.series("reward")
        assert s.size >= 10 and np.all((v >= 0) & (v <= 1))
        assert log.has("lab/expected_reward") and log.has("eval_reward")


def test_readers_run_on_the_written_logs(quick, capsys):
    """fit, diagnose, compare and check-config on the quick run's own logs (the CLI, in
    process: exit 0/1 and valid JSON)."""
    from grpo_theory.cli.main import main

    out = quick[1]
    logs = [str(p) for p in _logs(out) if "group_size" in str(p)]
    cfg = str(Path(logs[0]).parent / "config.json")
    got = {}
    for cmd in (["fit", logs[0], "--json"], ["diagnose", logs[0], "--json"],
                ["compare", *logs, "--by", "group_size", "--json"],
                ["check-config", cfg, "--json"]):
        code = main(cmd)
        captured = capsys.readouterr()
        assert code in (0, 1), (cmd, captured.err[-1500:])
        got[cmd[0]] = json.loads(captured.out)
    # G from the GRPOConfig saved next to TRL's state (the state has none): no --values needed
    G = json.loads(Path(cfg).read_text())["num_generations"]
    assert got["diagnose"]["group_size"] == G
    assert sorted(r["value"] for r in got["compare"]["runs"]) == [4, 16]
    assert got["check-config"]["assumptions"][0].startswith("optimizer torch SGD")


def test_check_config_reads_the_lab_configuration(quick):
    """TRL's sgd optimizer: the momentum comes from optim_args (not adam_beta1)."""
    from grpo_theory.runs.config_map import map_config, read_config

    cfg_path = next((Path(quick[1]) / "group_size").rglob("config.json"))
    cfg, kind = read_config(cfg_path)
    mp = map_config(cfg, kind)
    assert kind == "trl" and cfg["optim"] == "sgd" and cfg["optim_args"] == "momentum=0"
    assert mp.value("momentum") == 0.0 and "optim" in mp["momentum"]["source"]
    assert mp.value("group_size") == cfg["num_generations"]
    assert mp.value("kl") == "k3" and mp.value("surrogate") == "ratio"


def test_trl_callback_reads_the_log_history(quick):
    from grpo_theory.runs.logs.trl import log_from_history
    from grpo_theory.runs.watch import new_warnings

    p = _logs(quick[1])[0]
    hist = json.loads(p.read_text())["log_history"]
    log = log_from_history(hist, "<trainer state>")
    new_warnings(log, set())   # runs without raising


# ----------------------------------------------------------------------------------------
# pieces, cheap
# ----------------------------------------------------------------------------------------

def test_bad_input_one_line_exit_2(capsys):
    from grpo_theory.cli.main import main

    for args, word in ((["--group-size", "1"], "group_size"), (["--refresh-intervals", "0"],
                                                               "refresh_interval"),
                       (["--modulus", "12"], "modulus"), (["--modulus", "3"], "modulus")):
        code = main(["lab", "--quick", *args])
        captured = capsys.readouterr()
        assert code == 2 and captured.out == ""
        lines = captured.err.strip().splitlines()
        assert len(lines) == 1 and word in lines[0]


def test_task_the_tokenizer_cannot_express():
    from grpo_theory.lab.task import TaskSpec

    with pytest.raises(ParameterError, match="one token"):
        TaskSpec(modulus=11)
    with pytest.raises(ParameterError, match="one token"):
        TaskSpec(operands=12)
    with pytest.raises(ParameterError, match="distinct prompts"):
        TaskSpec(prompts=200)


def test_missing_extra_gives_the_install_hint(monkeypatch):
    import importlib

    from grpo_theory.lab import _deps

    real = importlib.import_module

    def fake(name, *a, **k):
        if name == "trl":
            raise ImportError("no trl")
        return real(name, *a, **k)

    monkeypatch.setattr(_deps.importlib, "import_module", fake)
    with pytest.raises(ParameterError) as e:
        _deps.require_lab()
    assert "pip install 'grpo-theory[lab]'" in str(e.value)


def test_import_does_not_need_torch_or_trl():
    code = ("import sys, grpo_theory.lab, grpo_theory.cli.lab; "
            "print('torch' in sys.modules, 'trl' in sys.modules)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env())
    assert p.stdout.strip() == "False False"


@pytest.fixture(scope="module")
def lab():
    from grpo_theory.lab.engine import Lab
    from grpo_theory.lab.model import ModelSpec
    from grpo_theory.lab.task import TaskSpec

    lb = Lab(TaskSpec(prompts=8), ModelSpec(width=16, layers=1))
    yield lb
    lb.close()


def test_placement_is_exact_and_answers_are_the_only_outputs(lab):
    """Every prompt at the target log-odds; tokens off the answer set get probability 0."""
    from grpo_theory.lab.model import log_odds

    state = lab.placed_state([0.3 * i - 1 for i in range(lab.prompts)])
    m = lab.new_model()
    m.load_state_dict(state)
    with torch.no_grad():
        z = log_odds(m, lab.input_ids, lab.labels).numpy()
        probs = m(input_ids=lab.input_ids).logits[:, -1].softmax(-1)
    assert np.allclose(z, [0.3 * i - 1 for i in range(lab.prompts)], atol=1e-4)
    mask = torch.ones(probs.shape[1], dtype=torch.bool)
    mask[lab.answer_ids] = False
    assert float(probs[:, mask].sum()) == 0.0


def test_divergence_is_recorded_not_raised(lab):
    """The observer stops a run whose answer log-probabilities (or loss) become non-finite and
    records the step (driven directly, no training: the callbacks TRL calls)."""
    from types import SimpleNamespace

    state = lab.placed_state(0.0)
    m = lab.new_model()
    m.load_state_dict(state)
    obs = lab._observer_cls(lab)
    ctl = SimpleNamespace(should_training_stop=False)
    obs.on_step_end(None, SimpleNamespace(global_step=3), ctl, model=m)
    assert obs.diverged_step is None and not ctl.should_training_stop
    with torch.no_grad():
        for p in m.parameters():
            p.fill_(float("nan"))
    obs.on_step_end(None, SimpleNamespace(global_step=4), ctl, model=m)
    assert obs.diverged_step == 4 and ctl.should_training_stop
    assert obs.diverged_reason == "non-finite answer log-probabilities"
    obs2 = lab._observer_cls(lab)
    ctl2 = SimpleNamespace(should_training_stop=False)
    st = SimpleNamespace(global_step=2, log_history=[{"loss": float("inf"), "step": 2}])
    obs2.on_log(None, st, ctl2)
    assert obs2.diverged_step == 2 and ctl2.should_training_stop


def test_committed_divergent_runs_stop_at_the_recorded_step():
    """The data set's divergent runs (built past the exact threshold) were stopped by the
    observer: the record's step is the last step TRL logged, and the sweep went on."""
    root = ROOT / "benchmarks" / "lab_runs"
    div = [json.loads(p.read_text()) for p in sorted(root.glob("lab_reuse_divergence_s*/run.json"))]
    assert len(div) == 3
    for rec, d in zip(div, sorted(root.glob("lab_reuse_divergence_s*"))):
        hist = json.loads((d / "trainer_state.json").read_text())["log_history"]
        last = max(e["step"] for e in hist if "step" in e)
        assert rec["observed"]["diverged_step"] == rec["observed"]["steps"] == last


def test_lab_model_maps_trl_knobs_through_the_one_key_map():
    """steps_per_generation -> fresh batches, num_iterations -> one reused batch, sgd momentum,
    scale_rewards -> normalization; beta with the bias-corrected KL -> the exact KL."""
    from grpo_theory.lab import _theory as th
    from grpo_theory.lab.engine import RunSpec

    m = th.lab_model(RunSpec(steps_per_generation=3, momentum=0.5, beta=0.3), p_ref=0.2,
                     prompts=16)
    assert (m.refresh_interval, m.reuse, m.momentum, m.kl, m.normalization, m.surrogate) == (
        3, "fresh", 0.5, "k3", "std", "ratio")
    m = th.lab_model(RunSpec(num_iterations=4, scale_rewards="none", beta=0.3,
                             bias_corrected_kl=True), p_ref=0.2, prompts=16)
    assert (m.refresh_interval, m.reuse, m.window_batches, m.normalization, m.kl) == (
        4, "batch", 1, "mean", "exact")
    assert m.adv_eps == 1e-4 and m.group_size == 8 and m.prompts == 16


def test_adam_runs_are_the_models_adam_and_reduce_to_heavy_ball():
    """AdamW knobs -> optimizer 'adam' with the run's betas; frozen second moment -> heavy
    ball with mu = beta1 and step eta (1 - beta1) x gain (Adam's update with m = (1 - beta1)
    x the heavy-ball buffer and 1/sqrt(v) = gain, bias corrections 1)."""
    from grpo_theory.lab import _theory as th
    from grpo_theory.lab.engine import RunSpec

    m = th.lab_model(RunSpec(optimizer="adamw", adam_beta1=0.5, adam_beta2=0.99,
                             adam_epsilon=1e-7, learning_rate=0.02, beta=0.3),
                     p_ref=0.2, prompts=16, ntk_scale=3.0)
    assert (m.optimizer, m.adam_beta1, m.adam_beta2, m.adam_eps) == ("adam", 0.5, 0.99, 1e-7)
    assert m.learning_rate == pytest.approx(0.06) and not m.unused_notes()
    hb = th.adam_heavy_ball(m, 40.0)
    assert (hb.optimizer, hb.momentum) == ("sgd", 0.5)
    assert hb.learning_rate == pytest.approx(0.06 * 0.5 * 40.0, rel=1e-12)
    assert th.exact_k_max(hb) >= 1 and th.published_k_max(hb) >= 0


def test_out_holding_an_earlier_output_is_refused_before_any_work(tmp_path, capsys,
                                                                   monkeypatch):
    """One rule for every command that writes: --out with an earlier lab output is refused
    (one line, exit 2, nothing touched) unless --force."""
    import grpo_theory.lab.run as run

    def no_work():
        raise AssertionError("the work started before the output was checked")

    monkeypatch.setattr(run, "require_lab", no_work)
    (tmp_path / "group_size").mkdir()
    (tmp_path / "afile").write_text("x")
    from grpo_theory.cli.main import main

    assert main(["lab", "--quick", "--out", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith("grpo-theory lab: error: --out must be") and "--force" in err
    assert main(["lab", "--quick", "--out", str(tmp_path / "afile")]) == 2
    assert "existing file" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "group_size"]
    with pytest.raises(AssertionError, match="work started"):   # forced: the work starts
        main(["lab", "--quick", "--out", str(tmp_path), "--force"])


# ----------------------------------------------------------------------------------------
# any causal LM, the kernel without J, the executors (cheap: no training)
# ----------------------------------------------------------------------------------------

def test_saved_model_is_the_builtin_model(lab, tiny_model_dir):
    """The quick run's model: the built-in GPT-2 written as a plain GPT2LMHeadModel and read
    back by from_pretrained gives the built-in model's answer log-probabilities (float32
    rounding), all mass on the answers, and its head is a parameter the placement moves."""
    from grpo_theory.lab.engine import Lab
    from grpo_theory.lab.model import ModelSpec, answer_log_probs
    from grpo_theory.lab.task import TaskSpec

    built = Lab(TaskSpec(), ModelSpec())
    loaded = Lab(TaskSpec(), ModelSpec(), source=tiny_model_dir)
    try:
        assert loaded.answer_ids == built.answer_ids
        assert torch.equal(loaded.input_ids, built.input_ids)
        a, b = built.new_model(), loaded.new_model()
        assert type(b).__name__ == "GPT2LMHeadModel"
        with torch.no_grad():
            la, lb = answer_log_probs(a, built.input_ids), answer_log_probs(b, loaded.input_ids)
            probs = b(input_ids=loaded.input_ids).logits[:, -1].softmax(-1)
        assert float((la - lb).abs().max()) < 1e-5
        assert float(probs[:, loaded.answer_ids].sum(-1).min()) == pytest.approx(1.0, abs=1e-6)
        assert loaded.parameter_count() == built.parameter_count()
    finally:
        built.close()
        loaded.close()


def test_a_tied_head_is_untied_and_placed(tmp_path):
    """A model whose output head is tied to the input embeddings (e.g. Qwen2.5-0.5B): the lab
    unties it, so placing the answers' rows leaves the embeddings (the prompts' digits) alone."""
    from transformers import GPT2Config, GPT2LMHeadModel

    from grpo_theory.lab.engine import Lab
    from grpo_theory.lab.model import ModelSpec, log_odds
    from grpo_theory.lab.task import TaskSpec, build_tokenizer

    torch.manual_seed(0)
    m = GPT2LMHeadModel(GPT2Config(vocab_size=14, n_positions=8, n_embd=16, n_layer=1, n_head=2,
                                   tie_word_embeddings=True))
    assert m.lm_head.weight.data_ptr() == m.transformer.wte.weight.data_ptr()
    m.save_pretrained(tmp_path)
    build_tokenizer().save_pretrained(tmp_path)
    lb = Lab(TaskSpec(prompts=8), ModelSpec(width=16, layers=1), source=str(tmp_path))
    try:
        p = lb.new_model()
        assert p.lm_head.weight.data_ptr() != p.transformer.wte.weight.data_ptr()
        state = lb.placed_state(0.7)
        q = lb.new_model()
        q.load_state_dict(state)
        with torch.no_grad():
            assert np.allclose(log_odds(q, lb.input_ids, lb.labels).numpy(), 0.7, atol=1e-4)
    finally:
        lb.close()


def test_a_real_bpe_tokenizer_gives_single_token_answers():
    """A byte-level BPE tokenizer trained here on the task's own text (nothing downloaded):
    the answers are its space-prefixed tokens, the verifier scores their decoded text, and a
    vocabulary without an answer token is refused in one line."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast

    from grpo_theory.lab.task import Task, TaskSpec, answer_token_ids

    task = Task(TaskSpec(modulus=5, prompts=20))
    text = [f"{p} {a}" for p, a in zip(task.prompts, task.answers)] * 20
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(text, vocab_size=300, min_frequency=1, show_progress=False,
                            special_tokens=["<eos>"])
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, eos_token="<eos>")
    ids = answer_token_ids(tok, task.answer_tokens)
    assert [tok.decode([i]) for i in ids] == [" " + a for a in task.answer_tokens]
    rewards = task.verifier()([tok.decode([i]) for i in ids], task.answer_tokens)
    assert rewards == [1.0] * len(ids)
    assert task.verifier()([tok.decode([ids[1]])], [task.answer_tokens[0]]) == [0.0]
    with pytest.raises(ParameterError, match="one token"):
        answer_token_ids(tok, ["12345"])


def test_lanczos_route_is_the_full_route(lab):
    """The top eigenpair by Lanczos on J-vector products (no J) against eigh of J J^T built
    from J: the eigenvalue to 1e-10, the eigenvector and the kick direction to 1e-8; auto
    takes the full route for a small model and says so."""
    from grpo_theory.lab.stiffness import top_mode

    state = lab.placed_state(0.5)
    full = top_mode(lab, state, "full")
    lz = top_mode(lab, state, "lanczos")
    assert (full.route, lz.route, top_mode(lab, state).route) == ("full", "lanczos", "full")
    assert lz.eigenvalue == pytest.approx(full.eigenvalue, rel=1e-10)
    assert abs(float(full.eigenvector @ lz.eigenvector)) == pytest.approx(1.0, abs=1e-8)
    for a, b in zip(full.direction, lz.direction):
        assert torch.allclose(a, b, atol=1e-8 * float(a.abs().max()) + 1e-12)
    assert lz.iterations <= lab.prompts and lz.residual < 1e-8


def test_global_batch_is_split_over_the_processes():
    from grpo_theory.lab.engine import RunSpec

    spec = RunSpec(group_size=8)
    assert spec.grpo_config_kwargs(16)["per_device_train_batch_size"] == 128
    assert spec.grpo_config_kwargs(16, 2)["per_device_train_batch_size"] == 64
    with pytest.raises(ParameterError, match="num_processes"):
        spec.grpo_config_kwargs(16, 3)


def test_a_failing_run_is_retried_once_then_reported(tmp_path):
    """The serial executor (Ray's has the same rule, tests/lab/test_distributed.py): a run that
    raises once is retried and kept; one that raises twice becomes a TaskFailure, which the
    result lists and turns into exit code 1."""
    from grpo_theory.lab.engine import RunSpec
    from grpo_theory.lab.parallel import SerialExecutor, TaskFailure, TrainTask
    from grpo_theory.lab.results import LabResult

    calls = []

    class FlakyLab:   # only the executor's side of a lab: train() raises as told
        def train(self, spec, **kw):
            calls.append(spec.seed)
            if spec.seed == 2 or calls.count(spec.seed) == 1 and spec.seed == 1:
                raise RuntimeError(f"boom {spec.seed}")
            return f"record {spec.seed}"

    tasks = [TrainTask(f"t{s}", RunSpec(seed=s)) for s in (0, 1, 2)]
    out = SerialExecutor().run(FlakyLab(), tasks, state={}, reference=({}, "r"))
    assert out[:2] == ["record 0", "record 1"] and calls == [0, 1, 1, 2, 2]
    assert isinstance(out[2], TaskFailure) and out[2].attempts == 2
    assert out[2].errors == ("RuntimeError: boom 2",) * 2
    flaky = []

    def once(x):   # fails on its first call for x = 1, always for x = 2
        flaky.append(x)
        if x == 2 or (x == 1 and flaky.count(1) == 1):
            raise ValueError(f"no {x}")
        return 10 * x

    got = SerialExecutor().map(once, [0, 1, 2], ["a", "b", "c"])
    assert got[:2] == [0, 10] and flaky == [0, 1, 1, 2, 2]
    assert isinstance(got[2], TaskFailure) and got[2].name == "c" and got[2].attempts == 2
    res = LabResult(engine="e", quick=True, model_parameters=1, prompts=2, group_size=2,
                    plateau={"variant": "v", "p_ref": 0.1, "p_star": 0.2, "stiffness_bandit": 1.0,
                             "fresh_fraction": 0.3},
                    stiffness={"ntk": 1.0, "ntk_top_over_n": 1.0, "uniform_overlap": 1.0},
                    sweeps=(), failed_tasks=(out[2].to_dict(),))
    assert res.exit_code == 1 and "FAILED run t2: 2 attempts" in str(res)
    assert res.to_dict()["failed_tasks"][0]["name"] == "t2"


def test_quick_notes_only_the_experiments_it_does_not_run():
    """--quick refresh runs the quick refresh bracket alone (no note); another experiment with
    --quick is not used and says so."""
    from argparse import Namespace

    from grpo_theory.cli._notes import unused_options

    assert unused_options("lab", Namespace(quick=True, experiment="refresh")) == []
    assert unused_options("lab", Namespace(quick=True, experiment="all")) == []
    notes = unused_options("lab", Namespace(quick=True, experiment="transition"))
    assert len(notes) == 1 and "'transition' is not used with --quick" in notes[0]


def test_bad_model_or_ray_address_one_line_exit_2(tmp_path, capsys):
    from grpo_theory.cli.main import main

    for args, word in ((["--model", str(tmp_path / "nowhere" / "model")], "model"),
                       (["--ray", "refresh"], "ray"), (["--kernel", "svd"], "kernel")):
        code = main(["lab", "--quick", *args])
        captured = capsys.readouterr()
        assert code == 2 and captured.out == "", args
        lines = captured.err.strip().splitlines()
        assert len(lines) == 1 and word in lines[-1], (args, captured.err)


def test_the_high_start_collapse_settings_rest_on_the_theory():
    """Issue 32: the labels of the lab's high-start runs follow from the configuration, not from
    the log: warm_anchor starts at 90 % success with a fixed point below half of it (p* 0.290:
    its reward must fall there), warm_hold starts at its own fixed point (0.898: nothing to
    fall to), and plateau_overshoot starts at that plateau with eta K far past the one-step
    threshold 2 (exactly unstable)."""
    import math

    from grpo_theory.lab import _theory as th
    from grpo_theory.lab.failures import SETTINGS

    by = {s.name: s for s in SETTINGS}
    start = lambda s: 1 / (1 + math.exp(-s.start_z))                         # noqa: E731
    fp = {n: th.fixed_point_of(th.lab_model(by[n].spec, p_ref=by[n].p_ref, prompts=16)).p
          for n in ("warm_anchor", "warm_hold", "plateau_overshoot")}
    a, h = by["warm_anchor"], by["warm_hold"]
    assert a.labels["collapse"] is True and h.labels["collapse"] is False
    assert abs(start(a) - 0.9) < 1e-9 and fp["warm_anchor"] < 0.5 * start(a)
    assert abs(fp["warm_hold"] - start(h)) < 0.01
    o = by["plateau_overshoot"]
    assert o.labels["collapse"] is True and o.start_z == "plateau" and fp["plateau_overshoot"] > 0.85
    K = th.fixed_point_of(th.lab_model(o.spec, p_ref=o.p_ref, prompts=16)).stiffness
    assert o.bandit_lr * K > 2 * 3                 # eta K in the bandit's units, 3x past 2
