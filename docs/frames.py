"""The rendered frame on each env's docs page: ``python docs/frames.py`` rewrites ``docs/envs/img/<env id>.png``.

A frame is the ``"rgb_array"`` render after ``FRAME_STEP`` steps of the paper's algorithm (seed 0), on the env
kwargs the benchmark runs every agent with (``baselines/eval/protocol.yml``). tests/test_docs.py renders the frames
again and compares them pixel for pixel with the committed PNGs, so a renderer change that forgets them fails.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a clone without installing

import cluster_envs  # noqa: E402
from baselines.eval.harness import start  # noqa: E402
from baselines.eval.protocol import require_setting  # noqa: E402

FRAME_STEP = 50
IMAGES = ROOT / "docs" / "envs" / "img"


def frame(env_id: str) -> np.ndarray:
    """The H×W×3 uint8 frame of ``env_id`` after ``FRAME_STEP`` steps of its paper's algorithm."""
    setting = require_setting(env_id)
    env_kwargs = {**setting.env_kwargs, "render_mode": "rgb_array"}
    env, agent, obs = start(env_id, setting.paper_agent, seed=0, env_kwargs=env_kwargs)
    for _ in range(FRAME_STEP):
        obs, *_ = env.step(agent.act(obs))
    image = env.render()
    env.close()
    return image


def write(out_dir: Path = IMAGES) -> list[Path]:
    import matplotlib.image

    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for env_id in cluster_envs.env_ids():
        paths.append(out_dir / f"{env_id}.png")
        matplotlib.image.imsave(paths[-1], frame(env_id))
    return paths


if __name__ == "__main__":
    for path in write():
        print(f"written {path.relative_to(ROOT)}")
