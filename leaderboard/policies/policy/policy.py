"""A hand-written policy outside the repository: on the RL-ready interface, the same share for every action entry."""

import numpy as np

ACTION_SIZE = {9: 3, 378: 28, 64: 10, 115: 22, 35: 10, 95: 30}  # flat observation size -> action size, per env


def policy(observation):
    return np.full(ACTION_SIZE[observation.shape[0]], 0.5, dtype=np.float32)
