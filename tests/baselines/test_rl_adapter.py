"""The RL adapter: a trained SB3 model with its VecNormalize statistics, saved and loaded, acts as an Agent
through the same rollout as the reference agents; a short PPO run beats a random policy."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest

yaml = pytest.importorskip("yaml")

pytest.importorskip("stable_baselines3")

from baselines.eval.harness import rollout  # noqa: E402
from baselines.eval.protocol import SETTINGS, TRAIN_SEED_BASE, training_seed  # noqa: E402
from baselines.rl.agent import SB3Agent, load_agent  # noqa: E402
from baselines.rl.config import HYPERPARAMS_DIR, RunConfig, wrapper_class  # noqa: E402
from baselines.rl.runs import save_run  # noqa: E402
from baselines.rl.train import make_vec_env, train  # noqa: E402
from cluster_envs import env_ids  # noqa: E402

ENV = "ClusterSLA-v1"
SHORT = {"horizon": 300}


@pytest.fixture
def tiny_hyperparams(tmp_path):
    """PPO with observation normalization on (so the statistics matter) and tiny rollouts."""
    section = {
        "env_kwargs": dict(SETTINGS[ENV].rl_env_kwargs),
        "normalize": {"norm_obs": True, "norm_reward": True},
        "n_envs": 2,
        "n_timesteps": 256,
        "policy": "MlpPolicy",
        "n_steps": 64,
        "batch_size": 64,
        "n_epochs": 2,
        "policy_kwargs": "dict(net_arch=[16, 16])",
    }
    path = tmp_path / "ppo.yml"
    path.write_text(yaml.safe_dump({ENV: section}))
    return path


def test_save_load_round_trip_keeps_actions_and_statistics(tmp_path, tiny_hyperparams):
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecNormalize

    config = RunConfig.resolve("ppo", ENV, SHORT, tiny_hyperparams)
    vec_env = VecNormalize(make_vec_env(config, training_seed(0))[0], **config.normalize)
    model = PPO(env=vec_env, seed=0, device="cpu", **config.model_kwargs)
    model.learn(256)
    live = SB3Agent(model, vec_env, name="ppo", env_kwargs=config.env_kwargs)
    save_run(tmp_path / "run", model, config, seed=0)
    loaded = load_agent(tmp_path / "run")

    saved_stats = pickle.loads((tmp_path / "run" / "vecnormalize.pkl").read_bytes())
    for stats in (saved_stats.obs_rms, loaded.obs_normalizer.obs_rms):
        np.testing.assert_array_equal(stats.mean, vec_env.obs_rms.mean)
        np.testing.assert_array_equal(stats.var, vec_env.obs_rms.var)
        assert stats.count == vec_env.obs_rms.count
    assert np.any(vec_env.obs_rms.var != 1.0)  # the statistics were really updated by training
    assert loaded.env_kwargs == dict(SETTINGS[ENV].rl_env_kwargs)

    env = gym.make(ENV, **{**config.env_kwargs, **SHORT}).unwrapped
    env.reset(seed=0)
    for agent in (live, loaded):  # an agent acts after its reset (agents/base.py checks it)
        agent.reset(env.problem, seed=0)
    observations = np.random.default_rng(0).uniform(0, 1, size=(50, vec_env.observation_space.shape[0]))
    for obs in observations.astype(np.float32):
        np.testing.assert_array_equal(live.act(obs), loaded.act(obs))
    a = rollout(ENV, live, seed=5, env_kwargs=SHORT)
    b = rollout(ENV, loaded, seed=5, env_kwargs=SHORT)
    assert a.metrics == b.metrics


def test_train_writes_the_run_and_resumes(tmp_path, tiny_hyperparams):
    out = tmp_path / "run"
    first = train(ENV, "ppo", steps=128, env_overrides=SHORT, out_dir=out, hyperparams=tiny_hyperparams,
                  progress=False)  # fmt: skip
    for name in ("model.zip", "vecnormalize.pkl", "config.yml", "meta.json", "training.csv", "training.png"):
        assert (out / name).is_file(), name
    config = yaml.safe_load((out / "config.yml").read_text())[ENV]
    assert config["env_kwargs"] == {**SETTINGS[ENV].rl_env_kwargs, **SHORT}
    rows = (out / "training.csv").read_text().splitlines()
    resumed = train(ENV, "ppo", steps=128, env_overrides=SHORT, out_dir=out, hyperparams=tiny_hyperparams,
                    load=True, progress=False)  # fmt: skip
    assert resumed.total_timesteps == first.total_timesteps + 128
    assert len((out / "training.csv").read_text().splitlines()) > len(rows)  # the curve goes on
    with pytest.raises(ValueError, match="--load"):
        train(ENV, "ppo", steps=128, env_overrides={"horizon": 600}, out_dir=out, hyperparams=tiny_hyperparams,
              load=True, progress=False)  # fmt: skip


def _trained_parameters(out) -> dict[str, np.ndarray]:
    """The saved run's policy parameters and VecNormalize statistics, as numpy arrays."""
    from stable_baselines3 import PPO

    params = {k: v.cpu().numpy() for k, v in PPO.load(out / "model.zip", device="cpu").policy.state_dict().items()}
    with open(out / "vecnormalize.pkl", "rb") as f:
        normalizer = pickle.load(f)
    params.update(obs_mean=normalizer.obs_rms.mean, obs_var=normalizer.obs_rms.var, ret_var=normalizer.ret_rms.var)
    return params


def test_training_is_seeded_same_seed_same_parameters(tmp_path, tiny_hyperparams):
    """``train`` (what ``cluster-envs train`` and the benchmark call, torch on the one thread it sets) with the
    same seed gives bit-identical policy parameters and normalization statistics; another seed does not."""
    import torch

    runs = {}
    for name, seed in (("a", 0), ("b", 0), ("c", 1)):
        train(ENV, "ppo", steps=256, seed=seed, env_overrides=SHORT, out_dir=tmp_path / name,
              hyperparams=tiny_hyperparams, progress=False)  # fmt: skip
        runs[name] = _trained_parameters(tmp_path / name)
    assert torch.get_num_threads() == 1
    assert runs["a"].keys() == runs["b"].keys() == runs["c"].keys()
    for key, value in runs["a"].items():
        np.testing.assert_array_equal(runs["b"][key], value, err_msg=key)
    assert any(not np.array_equal(runs["c"][k], v) for k, v in runs["a"].items() if k.startswith("mlp_extractor"))
    assert not np.array_equal(runs["c"]["obs_mean"], runs["a"]["obs_mean"])  # other training episodes


def test_training_seeds_never_meet_evaluation_seeds():
    seeds = {training_seed(s, resumed) for s in range(50) for resumed in (0, 4096)}
    assert min(seeds) >= TRAIN_SEED_BASE and len(seeds) == 100


def test_training_envs_reset_with_training_seeds_fresh_on_resume(tmp_path, tiny_hyperparams, monkeypatch):
    """The training envs are reset with ``training_seed(seed, resumed_at) + i`` (≥ 10⁹, never an evaluation
    seed), not with SB3's own ``seed + i``, and a resumed run gets fresh ones."""
    import gymnasium as gym

    env_class = type(gym.make(ENV).unwrapped)
    original, seen = env_class.reset, []

    def spy(self, *, seed=None, options=None):
        seen.append(seed)
        return original(self, seed=seed, options=options)

    monkeypatch.setattr(env_class, "reset", spy)
    out = tmp_path / "run"
    first = train(ENV, "ppo", steps=128, seed=0, env_overrides=SHORT, out_dir=out, hyperparams=tiny_hyperparams,
                  progress=False)  # fmt: skip
    first_seeds, seen[:] = [s for s in seen if s is not None], []
    train(ENV, "ppo", steps=128, seed=0, env_overrides=SHORT, out_dir=out, hyperparams=tiny_hyperparams,
          load=True, progress=False)  # fmt: skip
    resumed_seeds = [s for s in seen if s is not None]
    assert first_seeds == [training_seed(0) + i for i in range(2)]  # n_envs = 2, one seeded reset each
    assert resumed_seeds == [training_seed(0, first.total_timesteps) + i for i in range(2)]
    assert min(first_seeds + resumed_seeds) >= TRAIN_SEED_BASE


def test_short_ppo_beats_a_random_policy_on_the_default_preset(tmp_path):
    """49152 PPO steps with the shipped hyperparameters vs uniformly random actions, on two held-out seeds. With the
    shipped normalize action mode PPO is below random at 4096 and 8192 steps and on either side of it at 16384
    (depending on the training seeds); docs/appendix/rl_ablations.md has it at regret 200 [145, 256] after 51k steps."""

    class RandomLogits:
        name, privileged = "random", False
        env_kwargs = dict(SETTINGS[ENV].rl_env_kwargs)

        def reset(self, problem, seed=None):
            self.rng = np.random.default_rng(seed)
            self.n = problem.n_users

        def act(self, observation):
            return self.rng.uniform(-10, 10, self.n).astype(np.float32)

    train(ENV, "ppo", steps=49152, seed=0, out_dir=tmp_path / "ppo", progress=False)
    ppo = load_agent(tmp_path / "ppo")
    for seed in (0, 1):
        learned = rollout(ENV, ppo, seed, record=()).metrics
        random = rollout(ENV, RandomLogits(), seed, record=()).metrics
        assert learned["return"] > random["return"] + 100
        assert learned["regret"] < random["regret"]


def _yaml_sections(algo: str) -> dict:
    return yaml.safe_load((HYPERPARAMS_DIR / f"{algo}.yml").read_text())


@pytest.mark.parametrize(
    ("algo", "env_id"),
    [
        (algo, env_id)
        for env_id in env_ids()
        if env_id in SETTINGS
        for algo in ("a2c", "sac", "td3", "ppo_lstm", "ppo_mask")
        if env_id in _yaml_sections(algo)
    ],
)
def test_every_algorithm_trains_from_its_yaml_and_runs_as_an_agent(algo, env_id, tmp_path):
    """The shipped YAML section with its rollout sizes shrunk, so each algorithm does a few updates."""
    section = _yaml_sections(algo)[env_id]
    small = {"n_steps": 16, "batch_size": 32, "learning_starts": 64, "buffer_size": 1000}
    section.update({k: v for k, v in small.items() if k in section})
    path = tmp_path / f"{algo}.yml"
    path.write_text(yaml.safe_dump({env_id: section}))
    short = {"horizon": 120}
    train(env_id, algo, steps=128, env_overrides=short, out_dir=tmp_path / algo, hyperparams=path, progress=False)
    agent = load_agent(tmp_path / algo)
    env_kwargs = {**SETTINGS[env_id].env_kwargs, **short}
    first = rollout(env_id, agent, seed=1, env_kwargs=env_kwargs)
    again = rollout(env_id, load_agent(tmp_path / algo), seed=1, env_kwargs=env_kwargs)
    assert first.metrics == again.metrics  # deterministic, and a recurrent state does not leak across episodes
    assert rollout(env_id, agent, seed=1, env_kwargs=env_kwargs).metrics == first.metrics


def test_the_adapter_sees_the_env_through_the_training_wrapper(tmp_path):
    """On a Dict-observation env the adapter flattens and normalizes the raw observation exactly as the
    training envs did: its actions equal the model's on the wrapped env, step by step."""
    import gymnasium as gym

    env_id, short = "ClusterMultiServer-v0", {"horizon": 60}
    setting = SETTINGS[env_id]
    assert setting.rl_wrapper == "gymnasium.wrappers.FlattenObservation"
    section = {**_yaml_sections("ppo")[env_id], "normalize": {"norm_obs": True, "norm_reward": True}}
    path = tmp_path / "ppo.yml"
    path.write_text(yaml.safe_dump({env_id: section}))  # observations normalized too: the adapter must do both
    train(env_id, "ppo", steps=256, env_overrides=short, out_dir=tmp_path / "ppo", progress=False, hyperparams=path)
    agent = load_agent(tmp_path / "ppo")
    assert agent.obs_normalizer.norm_obs and np.any(agent.obs_normalizer.obs_rms.var != 1.0)
    kwargs = {**setting.rl_training_kwargs, **short}
    wrapped = gym.wrappers.FlattenObservation(gym.make(env_id, **kwargs))
    raw = gym.make(env_id, **kwargs)
    flat, _ = wrapped.reset(seed=3)
    obs, _ = raw.reset(seed=3)
    agent.reset(raw.unwrapped.problem, seed=3)
    actions = set()
    for _ in range(short["horizon"]):
        expected, _ = agent.model.predict(agent.obs_normalizer.normalize_obs(flat), deterministic=True)
        action = agent.act(obs)
        np.testing.assert_array_equal(action, expected)
        actions.add(tuple(action))
        flat, *_ = wrapped.step(expected)
        obs, *_ = raw.step(action)
    assert len(actions) > 1  # the policy reacts to what it sees, so the comparison is not vacuous


def test_a_wrapper_that_disagrees_with_the_settings_is_refused(tmp_path):
    section = _yaml_sections("ppo")["ClusterGang-v0"]
    for wrapper in (None, "gymnasium.wrappers.ClipAction"):
        path = tmp_path / "ppo.yml"
        path.write_text(yaml.safe_dump({"ClusterGang-v0": {**section, "env_wrapper": wrapper}}))
        with pytest.raises(ValueError, match="env_wrapper"):
            RunConfig.resolve("ppo", "ClusterGang-v0", path=path)
    with pytest.raises(ValueError, match="ObservationWrapper"):
        wrapper_class("gymnasium.wrappers.ClipAction")
    with pytest.raises(ValueError, match="importable"):
        wrapper_class("gymnasium.wrappers.NoSuchWrapper")


@pytest.mark.parametrize("env_id", ["ClusterMultiServer-v0", "ClusterGang-v0"])
def test_the_action_mask_is_public_data(env_id):
    """What the MaskablePPO adapter computes from the static problem and the observation is the env's own
    action_masks(), on every step of an episode."""
    import gymnasium as gym

    from baselines.rl.agent import action_mask_function

    mask_from = action_mask_function(env_id)
    env = gym.make(env_id, **{**SETTINGS[env_id].training_kwargs("ppo_mask"), "horizon": 40})
    obs, _ = env.reset(seed=2)
    rng = np.random.default_rng(0)
    seen = set()
    inst = env.unwrapped.instance
    if env_id == "ClusterMultiServer-v0":  # an edge fits alone: A_e ≤ c
        fits_alone = (inst.A <= inst.c[:, None]).all(axis=0)
    else:  # an arm (port, task, server) fits alone: the task's requirement ≤ the server's capacity
        fits_alone = (inst.task_req[:, inst.arms[:, 1]] <= inst.server_cap[:, inst.arms[:, 2]]).all(axis=0)
    for _ in range(40):
        mask = env.unwrapped.action_masks()
        np.testing.assert_array_equal(mask_from(env.unwrapped.problem, obs), mask)
        # independently: "0" is always allowed; "1" iff the port has a job this slot (hidden state) and it fits alone
        pairs = mask.reshape(-1, 2)
        assert pairs[:, 0].all()
        np.testing.assert_array_equal(pairs[:, 1], env.unwrapped.simulator.edge_mask & fits_alone)
        seen.add(tuple(mask))
        obs, *_ = env.step(rng.integers(0, 2, env.action_space.shape))
    assert len(seen) > 1  # the arrivals change the mask
    with pytest.raises(ValueError, match="action_mask_from"):
        action_mask_function("ClusterSLA-v1")


def test_maskable_ppo_never_requests_a_masked_edge(tmp_path):
    env_id = "ClusterMultiServer-v0"
    short = {"horizon": 60}
    train(env_id, "ppo_mask", steps=256, env_overrides=short, out_dir=tmp_path / "mask", progress=False)
    agent = load_agent(tmp_path / "mask")
    assert agent.env_kwargs == {"action_mode": "binary"} and agent.action_mask is not None
    episode = rollout(env_id, agent, seed=4, env_kwargs={**SETTINGS[env_id].env_kwargs, **short})
    assert episode.trace["n_dropped_arrival"].sum() == 0  # no bit on an idle port's edge, though PPO samples freely
    assert episode.metrics["aou"] > 0


def test_a_model_refuses_an_env_whose_spaces_differ_from_its_training_env(tmp_path):
    """Audit 13: a run trained on the 'small' preset, rolled out on the default preset, fails with a ValueError
    naming the training kwargs (meta.json) and each size that differs, not SB3's bare "Unexpected observation
    shape"; a Box's bounds (they follow the horizon) do not count."""
    import gymnasium as gym
    from stable_baselines3 import PPO

    env_id = "ClusterMultiServer-v0"
    config = RunConfig.resolve("ppo", env_id, {"horizon": 20})
    model = PPO(env=make_vec_env(config, training_seed(0))[0], seed=0, device="cpu", **config.model_kwargs)
    save_run(tmp_path / "run", model, config, seed=0)
    agent = load_agent(tmp_path / "run")
    assert rollout(env_id, agent, seed=0, env_kwargs={"preset": "small", "horizon": 30}).metrics["steps"] == 30
    expected = (
        r"'ppo' trained with env_kwargs \{'preset': 'small', 'action_mode': 'scores', 'horizon': 20\} does not fit "
        r"this env: observation\['arrivals'\] is MultiBinary\(8,\) here but MultiBinary\(4,\) in training; .*"
        r"action is Box\(33,\) here but Box\(10,\) in training"
    )
    with pytest.raises(ValueError, match=expected):
        rollout(env_id, agent, seed=0)

    bilinear = {**SETTINGS["ClusterBilinear-v0"].rl_training_kwargs, "horizon": 20}
    live = SB3Agent(PPO("MlpPolicy", gym.make("ClusterBilinear-v0", **bilinear), n_steps=64, device="cpu"))
    longer = gym.make("ClusterBilinear-v0", **{**bilinear, "horizon": 40})
    assert longer.observation_space != live.observation_space  # the bounds grow with the horizon ...
    live.check_spaces(longer.observation_space, longer.action_space)  # ... and the model still fits
    with pytest.raises(
        ValueError,
        match=r"^agent 'rl' does not fit this env: observation is Box\(49,\) here but Box\(115,\) in training",
    ):
        live.check_spaces(
            gym.make("ClusterBilinear-v0", num_job_classes=4, **bilinear).observation_space, longer.action_space
        )
