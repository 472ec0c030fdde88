"""cluster-envs: Gymnasium environments for online scheduling in computing clusters.

Importing the package registers every env id; ``gym.make("cluster_envs:ClusterSLA-v1")`` imports it
for you.
"""

from cluster_envs.registration import env_ids, register_envs, rl_ids

register_envs()

__all__ = ["env_ids", "register_envs", "rl_ids"]
__version__ = "0.1.0"
