"""``observation_mode="entity"`` of ClusterMultiServer-v0 and ClusterGang-v0: spaces fixed for the family, the
rows' statistics, the batched env equal to the single one, refusals, and the information rule."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest

import cluster_envs  # noqa: F401  (registers the ids)
from cluster_envs.multiserver.config import MultiServerConfig
from cluster_envs.multiserver.entity import COLUMN, N_FEATURES
from cluster_envs.multiserver.model import generate_instance

CASES = [("ClusterMultiServer-v0", ("default", "small", "tiny")), ("ClusterGang-v0", ("default", "paper", "tiny"))]
ENTITY = {"observation_mode": "entity", "observation_format": "flat", "action_mode": "scores"}


@pytest.mark.parametrize(("env_id", "presets"), CASES)
def test_the_spaces_are_the_same_for_every_preset_and_instance_seed(env_id, presets):
    made = [gym.make(env_id, preset=p, instance_seed=s, horizon=10, **ENTITY) for p in presets for s in (0, 1001, 7)]
    assert len({e.unwrapped.instance.n_edges for e in made}) > 1  # the instances do differ
    assert all(e.observation_space == made[0].observation_space for e in made)
    assert all(e.action_space == made[0].action_space for e in made)


@pytest.mark.parametrize("env_id", ["ClusterMultiServer-v0", "ClusterGang-v0"])
def test_rows_hold_the_feedback_statistics_and_padding_is_zero(env_id):
    env = gym.make(env_id, horizon=30, **ENTITY)
    obs, _ = env.reset(seed=2)
    n_e = env.unwrapped.instance.n_edges
    env.action_space.seed(2)
    counts, sums = np.zeros(n_e), np.zeros(n_e)
    for _ in range(12):
        obs, *_ = env.step(env.action_space.sample())
        last = env.unwrapped.last_observation
        counts += last["last_action"]
        sums += last["last_utility"]
        rows = obs.reshape(-1, N_FEATURES)
        assert env.observation_space.contains(obs)
        np.testing.assert_array_equal(rows[n_e:], 0.0)
        np.testing.assert_allclose(rows[:n_e, COLUMN["count"]], counts / 30, rtol=1e-6)
        mean = np.divide(sums, counts, out=np.zeros(n_e), where=counts > 0)
        np.testing.assert_allclose(rows[:n_e, COLUMN["mean_utility"]], mean, rtol=1e-5, atol=1e-7)
        np.testing.assert_array_equal(rows[:n_e, COLUMN["last_action"]], last["last_action"])
        np.testing.assert_array_equal(rows[:n_e, COLUMN["arrived"]], last["edge_mask"])
    assert counts.sum() > 0


@pytest.mark.parametrize("env_id", ["ClusterMultiServer-v0", "ClusterGang-v0"])
def test_the_batched_env_gives_the_single_envs_rows(env_id):
    n, horizon = 3, 12
    vec = gym.make_vec(env_id, n, vectorization_mode="vector_entry_point", horizon=horizon, **ENTITY)
    singles = [gym.make(env_id, horizon=horizon, **ENTITY) for _ in range(n)]
    obs, _ = vec.reset(seed=10)
    expected = [env.reset(seed=10 + i)[0] for i, env in enumerate(singles)]
    vec.action_space.seed(0)
    ended = np.zeros(n, dtype=bool)  # NEXT_STEP autoreset: a copy that ended resets on the following step
    for _ in range(horizon + 3):
        np.testing.assert_allclose(obs, np.stack(expected), rtol=1e-6)
        actions = vec.action_space.sample()
        obs, _, _, truncated, _ = vec.step(actions)
        expected = [
            env.reset()[0] if done else env.step(a)[0] for env, a, done in zip(singles, actions, ended, strict=True)
        ]
        ended = truncated
    masks = gym.make_vec(
        env_id, 2, vectorization_mode="vector_entry_point", observation_mode="entity", observation_format="flat"
    )
    masks.reset(seed=0)
    assert masks.unwrapped.action_masks().shape == (2, 2 * masks.unwrapped.config.max_edges)


def test_an_instance_larger_than_the_maximum_is_refused_naming_the_keyword():
    with pytest.raises(ValueError, match=r"max_edges=40 .* raise max_edges"):
        gym.make("ClusterGang-v0", preset="paper", **ENTITY, max_edges=40)
    with pytest.raises(ValueError, match=r"max_ports=4 .* raise max_ports"):
        gym.make("ClusterMultiServer-v0", **ENTITY, max_ports=4)
    with pytest.raises(ValueError, match="only read with observation_mode='entity'"):
        gym.make("ClusterMultiServer-v0", max_servers=50)


def test_padding_in_the_action_is_ignored_and_the_mask_allows_it_value_0_only():
    env = gym.make(
        "ClusterMultiServer-v0", preset="small", horizon=5, observation_mode="entity", observation_format="flat"
    )
    env.reset(seed=0)
    n_e, mask = env.unwrapped.instance.n_edges, env.unwrapped.action_masks().reshape(-1, 2)
    assert mask.shape[0] == env.unwrapped.config.max_edges and mask[n_e:, 0].all() and not mask[n_e:, 1].any()
    action = np.zeros(env.action_space.shape, np.int8)
    action[n_e:] = 1
    *_, info = env.step(action)
    assert info["x"].sum() == 0


def test_the_rows_do_not_depend_on_the_hidden_means():
    """The information rule: two instances that differ only in the hidden μ give the same rows before any feedback
    (the static columns read no hidden parameter)."""
    cfg = MultiServerConfig(n_ports=4, n_servers=10, edge_prob=0.3)
    inst = generate_instance(cfg.generator_params(), np.random.default_rng(3))
    other = dataclasses.replace(inst, utility=dataclasses.replace(inst.utility, mu=inst.utility.mu[::-1].copy()))
    firsts = [
        gym.make("ClusterMultiServer-v0", instance=i, compute_regret=False, **ENTITY).reset(seed=0)[0]
        for i in (inst, other)
    ]
    np.testing.assert_array_equal(*firsts)


def test_the_entity_rows_come_in_one_form_only():
    """``observation_mode`` is the content and ``observation_format`` the form: the padded rows are one Box, so the
    Dict form is refused by name."""
    with pytest.raises(ValueError, match="observation_format='flat'"):
        gym.make("ClusterMultiServer-v0", observation_mode="entity", observation_format="dict")


@pytest.mark.parametrize("env_id", ["ClusterMultiServer-v0", "ClusterGang-v0"])
def test_the_kernels_rows_equal_the_rows_of_the_dict_bit_for_bit(env_id):
    """The rows the env keeps up to date in one kernel per slot equal ``EntityRows.rows`` of the Dict observation
    and of the statistics summed in numpy (what the env computed before), over an episode and its reset."""
    env = gym.make(env_id, horizon=25, **ENTITY)
    entity = env.unwrapped.entity
    obs, _ = env.reset(seed=4)
    env.action_space.seed(4)
    n_e = env.unwrapped.instance.n_edges
    counts, sums = np.zeros(n_e), np.zeros(n_e)
    for _ in range(40):
        last = env.unwrapped.last_observation
        expected = entity.rows(last["edge_mask"][None], last["last_action"][None], counts[None], sums[None],
                               last["time"][None])[0]  # fmt: skip
        np.testing.assert_array_equal(obs, expected)
        obs, _, _, truncated, _ = env.step(env.action_space.sample())
        last = env.unwrapped.last_observation
        counts += last["last_action"]
        sums += last["last_utility"]
        if truncated:
            obs, _ = env.reset()
            counts[:], sums[:] = 0.0, 0.0


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_the_scores_kernel_gives_numpys_request_and_stable_priority(dtype):
    """``score_request``: the requested edges (score > 0.5) and numpy's ``argsort(-score, kind="stable")`` over the
    instance's edges (padding ignored), ties (repeated scores, 0.0 and -0.0) in index order; a non-finite entry, in
    the padding too, refused."""
    from cluster_envs.multiserver.kernel import score_request

    rng = np.random.default_rng(0)
    for n_edges, size in ((1, 1), (7, 7), (49, 96), (141, 256)):
        for k in range(20):
            if dtype == np.int64:
                scores = rng.integers(0, 3, size)
            else:  # ties, or distinct scores
                scores = rng.choice([0.0, -0.0, 0.25, 0.5, 0.75, 1.0], size) if k % 2 else rng.uniform(0, 1, size)
            scores = scores.astype(dtype)
            requested, priority = np.zeros(n_edges, bool), np.zeros(n_edges, np.int64)
            assert score_request(scores, n_edges, requested, priority)
            arr = scores.astype(np.float64)[:n_edges]
            np.testing.assert_array_equal(requested, arr > 0.5)
            np.testing.assert_array_equal(priority, np.argsort(-arr, kind="stable"))
    if dtype != np.int64:
        for bad in (np.nan, np.inf):
            scores = np.zeros(10, dtype)
            scores[-1] = bad
            assert not score_request(scores, 4, np.zeros(4, bool), np.zeros(4, np.int64))
