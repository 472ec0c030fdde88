"""The tutorial of the docs site (docs/tutorial.md shows it section by section): from ``gym.make`` to a trained PPO
compared with the paper's algorithm on ClusterSLA-v1.

Run it from the repository root: ``python docs/tutorial.py`` (a few minutes on one core). The test suite runs it
with ``CLUSTER_ENVS_TUTORIAL=tiny`` (tests/test_tutorial.py): the same code on a short horizon, two seeds and a
few hundred PPO steps, which checks that it runs, not what it finds.
"""

# ruff: noqa: E402  (the imports sit in the sections that use them, as the tutorial shows them)

# --8<-- [start:settings]
import os

TINY = os.environ.get("CLUSTER_ENVS_TUTORIAL") == "tiny"
ENV_ID = "ClusterSLA-v1"
ENV_KWARGS = {"horizon": 60 if TINY else 600}  # a multiple of 6: the synthetic load has six periods
SEEDS = range(2) if TINY else range(10)  # evaluation seeds, the same for every agent
PPO_STEPS = 256 if TINY else 30_000
RL_SEEDS = 2 if TINY else 3  # PPO's training seeds: one run each, its statistics over runs (the benchmark has 5)
OUT = "results/tutorial"
# --8<-- [end:settings]

# --8<-- [start:make]
import gymnasium as gym

import cluster_envs  # noqa: F401  (registers every id)

env = gym.make(ENV_ID, **ENV_KWARGS)
print(env.observation_space)  # [which queues are non-empty, the allocation just applied, the SLA shares]
print(env.action_space)  # a weight per tenant; the env normalizes it into an allocation
obs, info = env.reset(seed=0)
env.action_space.seed(0)  # a random action, the same on every run
obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
print(f"work done this step: {info['work']}, regret so far: {info['regret']:.3f}")
# --8<-- [end:make]

# --8<-- [start:agent]
from agents import make_agent

agent = make_agent(ENV_ID, "mwu_extended")  # the paper's Algorithm 2
obs, info = env.reset(seed=0)
agent.reset(env.unwrapped.problem, seed=0)  # static public data only: the SLAs, the horizon
while True:
    obs, reward, terminated, truncated, info = env.step(agent.act(obs))
    if terminated or truncated:
        break
print({key: round(value, 3) for key, value in info["episode_summary"].items()})
# --8<-- [end:agent]

# --8<-- [start:evaluate]
from baselines.eval.harness import evaluate

table = evaluate(ENV_ID, ["mwu_extended", "static", "owm"], seeds=SEEDS, env_kwargs=ENV_KWARGS)
print(table.to_markdown(["total_work", "regret", "max_sla_deficit"]))
# --8<-- [end:evaluate]

# --8<-- [start:compare]
from baselines.eval.compare import compare

comparison = compare(
    ENV_ID, "all", rl=["ppo"], seeds=SEEDS, env_kwargs=ENV_KWARGS, rl_steps=PPO_STEPS, rl_seeds=RL_SEEDS
)
runs = comparison.rl_runs["ppo"]["runs"]  # one per training seed, in the cache the command line uses too
print([run["path"] for run in runs])
# --8<-- [end:compare]

# --8<-- [start:results]
headline = comparison.setting.headline  # regret against the offline optimum: lower is better
summary = comparison.summary()
for row in summary:  # the paper's algorithm also keeps SLA deficits small: look at both
    if row["agent"] in ("mwu_extended", "ppo", "static") and row["metric"] in (headline, "max_sla_deficit"):
        low, high = row["ci_low"], row["ci_high"]
        print(f"{row['agent']:>12} {row['metric']:>15} {row['mean']:8.2f}  95% CI [{low:.2f}, {high:.2f}]")
ppo = next(r for r in summary if r["agent"] == "ppo" and r["metric"] == headline)
print(
    f"PPO - mwu_extended, {headline}: {ppo['diff']:+.2f} [{ppo['diff_low']:+.2f}, {ppo['diff_high']:+.2f}], "
    f"P(PPO better) = {ppo['p_improve']:.2f}"
)
for row in comparison.normalized_summary():  # 0 = the naive baseline, 1 = the oracle
    print(f"{row['agent']:>12} normalized score {row['mean']:.2f}")
# --8<-- [end:results]

# --8<-- [start:report]
from baselines.eval.report import write_report

print(write_report(comparison, OUT))  # report.md, CSV and JSON results, figures
# --8<-- [end:report]

# --8<-- [start:replay]
from baselines.eval.harness import rollout
from baselines.rl.agent import load_agent

ppo_agent = load_agent(runs[0]["path"])  # the run of training seed 0
episode = rollout(ENV_ID, ppo_agent, seed=0, env_kwargs=ENV_KWARGS)
print(f"PPO on seed 0: regret {episode.metrics['regret']:.2f}, total work {episode.metrics['total_work']:.1f}")
# --8<-- [end:replay]
