"""TorchRL: GymEnv(id), its specs checked, and a collector's rollouts of a random policy."""

import sys

from torchrl.collectors import Collector
from torchrl.envs import GymEnv
from torchrl.envs.utils import check_env_specs

if __name__ == "__main__":
    env_id, steps = sys.argv[1], int(sys.argv[2])  # e.g. cluster_envs:ClusterSLARL-v1 10000
    env = GymEnv(env_id)
    check_env_specs(env)
    collector = Collector(env, policy=None, frames_per_batch=500, total_frames=steps)
    frames = sum(batch.numel() for batch in collector)
    collector.shutdown()
    print(f"collected {frames} frames")
