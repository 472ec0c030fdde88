"""The permutation-equivariant policy of the entity ids (``baselines.rl.edge_policy``): permuting the edge rows
permutes its action distribution with them, and padding rows change nothing on the valid ones."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch")
sb3 = pytest.importorskip("stable_baselines3")

from baselines.rl.edge_policy import EdgePolicy  # noqa: E402
from cluster_envs.multiserver.entity import COLUMN, N_FEATURES  # noqa: E402

IDS = ["ClusterMultiServerEntityRL-v0", "ClusterGangEntityRL-v0"]


def played_observation(env_id: str) -> tuple[np.ndarray, int]:
    """An observation after a few random slots (so the feedback columns are not zero), and its edge count."""
    env = gym.make(env_id, horizon=20)
    obs, _ = env.reset(seed=1)
    env.action_space.seed(1)
    for _ in range(8):
        obs, *_ = env.step(env.action_space.sample())
    n_e = env.unwrapped.instance.n_edges
    env.close()
    return obs, n_e


def policy_for(env_id: str) -> EdgePolicy:
    torch.manual_seed(0)
    env = gym.make(env_id, horizon=20)
    return sb3.PPO(EdgePolicy, env, n_steps=16, batch_size=16, seed=0, device="cpu").policy


def outputs(policy: EdgePolicy, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    with torch.no_grad():
        tensor = torch.as_tensor(obs, dtype=torch.float32)[None]
        dist = policy.get_distribution(tensor).distribution
        return dist.mean[0].numpy(), dist.stddev[0].numpy(), policy.predict_values(tensor)[0].numpy()


@pytest.mark.parametrize("env_id", IDS)
def test_permuting_the_edge_rows_permutes_the_action_distribution(env_id):
    obs, n_e = played_observation(env_id)
    policy = policy_for(env_id)
    rows = obs.reshape(-1, N_FEATURES)
    perm = np.random.default_rng(0).permutation(rows.shape[0])  # valid and padding rows mixed
    mean, std, value = outputs(policy, obs)
    p_mean, p_std, p_value = outputs(policy, rows[perm].ravel())
    assert np.abs(mean[:n_e]).max() > 0  # the test looks at a non-trivial output
    np.testing.assert_allclose(p_mean, mean[perm], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(p_std, std[perm], rtol=1e-6)
    np.testing.assert_allclose(p_value, value, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("env_id", IDS)
def test_padding_rows_change_nothing_on_the_valid_rows(env_id):
    """The same instance's rows with the family's padding, with twice as much, and with garbage in the padding:
    the trunk's per-edge outputs and the value are the same on the valid rows."""
    obs, n_e = played_observation(env_id)
    policy = policy_for(env_id)
    rows = obs.reshape(-1, N_FEATURES)
    more = np.concatenate([rows, np.zeros_like(rows)])
    garbage = rows.copy()
    garbage[n_e:, COLUMN["port"] + 1 :] = np.random.default_rng(0).uniform(
        0, 1, garbage[n_e:, COLUMN["port"] + 1 :].shape
    )
    extractor = policy.mlp_extractor
    with torch.no_grad():
        results = [
            (extractor.forward_actor(t)[0, :n_e].numpy(), extractor.forward_critic(t)[0].numpy())
            for t in (torch.as_tensor(x.ravel(), dtype=torch.float32)[None] for x in (rows, more, garbage))
        ]
    for actor, critic in results[1:]:
        np.testing.assert_allclose(actor, results[0][0], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(critic, results[0][1], rtol=1e-5, atol=1e-6)


def test_the_policy_refuses_an_observation_that_is_not_entity_rows():
    with pytest.raises(ValueError, match="observation_mode='entity'"):
        sb3.PPO(EdgePolicy, gym.make("ClusterMultiServerRL-v1"), device="cpu")


def test_ppo_with_the_edge_policy_trains_on_the_native_batched_env():
    from cluster_envs.sb3 import make_native

    env = make_native("ClusterMultiServerEntityRL-v0", 2, {"horizon": 32})
    model = sb3.PPO(EdgePolicy, env, n_steps=32, batch_size=32, n_epochs=1, seed=0, device="cpu")
    model.learn(64)
    assert model.num_timesteps == 64


def test_resampled_instances_change_per_episode_within_the_training_range():
    from baselines.rl.instances import ResampledInstance

    env = ResampledInstance("ClusterMultiServerEntityRL-v0", horizon=5)
    drawn = {env.reset(seed=k)[1]["instance_seed"] for k in range(6)}
    assert len(drawn) > 1 and all(0 <= s < 1000 for s in drawn)
    with pytest.raises(ValueError, match="held-out"):
        ResampledInstance("ClusterMultiServerEntityRL-v0", seeds=[1000])
    with pytest.raises(ValueError, match="changes its spaces"):
        ResampledInstance("ClusterMultiServerRL-v1", seeds=[0, 1]).reset(seed=0)
