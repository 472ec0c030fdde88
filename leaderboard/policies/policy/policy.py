"""A hand-written policy from outside the repository, for every env: on the RL-ready interface (``--rl-interface``,
where every action space is a Box), every action entry at the middle of its range (no preference between the
choices an action ranks or shares out). It takes the action space as its second argument, since the action's size
depends on the env and, on held-out instances, on the instance.

    cluster-envs evaluate --all-envs --agent leaderboard/policies/policy/policy.py:policy --rl-interface \\
        --declaration leaderboard/policies/policy/declaration.yml --name policy
"""

import numpy as np


def policy(observation, action_space):
    return ((action_space.low.astype(np.float64) + action_space.high) / 2).astype(action_space.dtype)
