"""The ``"rgb_array"`` render mode of every env: panels of grouped bars drawn with numpy alone (matplotlib is an
optional extra, not a dependency of the env layer).

Rendering only reads the state: it draws no random numbers and changes nothing, so a rendered episode is the
same trajectory as an unrendered one.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

PANEL_HEIGHT = 120  # pixels per panel; a bar of level 1 is PANEL_HEIGHT - 1 high
MAX_BAR, MAX_WIDTH = 12, 640  # bars narrow (gap = 2/3 bar) so a panel fits MAX_WIDTH, down to 1 px without gaps
WHITE, TRACK, RULE = (255, 255, 255), (235, 235, 235), (160, 160, 160)
BLUE, ORANGE, GREEN, RED, GRAY = (31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (110, 110, 110)
# per-class colours (server classes, device types); red and gray are left out, they mean queues and estimates
CYCLE = ((31, 119, 180), (255, 127, 14), (44, 160, 44), (148, 103, 189), (140, 86, 75), (227, 119, 194),
         (188, 189, 34), (23, 190, 207))  # fmt: skip

Color = tuple[int, int, int]
RENDER_MODES = ("ansi", "rgb_array")


def render_metadata(render_fps: int = 4) -> dict[str, object]:
    """Every env's ``metadata``: a plain dict, gymnasium's contract at every version from the floor on. With it,
    ``gym.make(id, render_mode="human")`` gives gymnasium's ``HumanRendering`` over the ``"rgb_array"`` mode (it
    needs pygame, and says so at the first frame), and ``render_mode="rgb_array_list"`` gives ``RenderCollection``;
    the env's constructor itself accepts only its own modes (``check_render_mode``)."""
    return {"render_modes": list(RENDER_MODES), "render_fps": render_fps}


def check_render_mode(render_mode: str | None) -> None:
    """A ``ValueError`` naming the supported modes for any other ``render_mode`` than None, "ansi", "rgb_array"
    (with the gymnasium wrapper that gives "human" or a "*_list" mode)."""
    if render_mode is not None and render_mode not in RENDER_MODES:
        hint = ""
        if render_mode == "human":
            hint = "; for a window, wrap an rgb_array env in gymnasium.wrappers.HumanRendering (needs pygame)"
        elif str(render_mode).endswith("_list"):
            hint = "; to collect frames, wrap an env in gymnasium.wrappers.RenderCollection"
        raise ValueError(f"render_mode={render_mode!r} is not supported; supported: None, 'ansi', 'rgb_array'{hint}")


def cycle_colors(n: int) -> tuple[Color, ...]:
    """``n`` per-class colours (repeating after eight)."""
    return tuple(CYCLE[s % len(CYCLE)] for s in range(n))


def log_levels(values: np.ndarray) -> np.ndarray:
    """Unbounded non-negative values (queues) as bar levels: log1p, scaled so the largest is 1 (when above e - 1)."""
    logs = np.log1p(np.asarray(values, dtype=np.float64))
    return logs / max(float(logs.max(initial=0.0)), 1.0)


def _bar_sizes(n_groups: int, n_series: int) -> tuple[int, int, int]:
    """(bar, gap, panel width): the widest bar whose panel fits ``MAX_WIDTH``, else 1 px bars without gaps."""
    for bar in range(MAX_BAR, 0, -1):
        gap = 2 * bar // 3
        width = n_groups * (n_series * bar + gap) + gap
        if width <= MAX_WIDTH:
            return bar, gap, width
    return 1, 0, n_groups * n_series


def bar_chart(*panels: tuple[np.ndarray, Sequence[Color]]) -> np.ndarray:
    """An (H, W, 3) uint8 image of ``panels`` stacked top to bottom, separated by a 2 px grey rule.

    A panel ``(levels, colors)`` with ``levels`` of shape (G, S) draws G groups of S adjacent bars, bar s in
    ``colors[s]``, rising from the bottom to ``levels[g, s]`` (clipped to [0, 1]; NaN draws nothing) over a light
    grey track, so an empty bar still shows where it is. H = 122 P - 2 for P panels; W is the widest panel's,
    gap + G (S bar + gap) with bar 12 px and gap 8 px, both narrowed so the panel fits 640 px (1 px bars without
    gaps when even that is too wide). The size depends only on G and S, so it is fixed for an env's configuration
    (a video needs constant frames).
    """
    images = []
    for levels, colors in panels:
        levels = np.clip(np.nan_to_num(np.asarray(levels, dtype=np.float64), nan=0.0), 0.0, 1.0)
        n_groups, n_series = levels.shape
        bar, gap, width = _bar_sizes(n_groups, n_series)
        image = np.full((PANEL_HEIGHT, width, 3), WHITE, dtype=np.uint8)
        heights = np.round(levels * (PANEL_HEIGHT - 1)).astype(np.int64)
        for g in range(n_groups):
            for s in range(n_series):
                left = gap + g * (n_series * bar + gap) + s * bar
                image[1:, left : left + bar] = TRACK
                image[PANEL_HEIGHT - heights[g, s] :, left : left + bar] = colors[s]
        images.append(image)
    width = max(image.shape[1] for image in images)
    canvas = np.full((len(images) * (PANEL_HEIGHT + 2) - 2, width, 3), RULE, dtype=np.uint8)
    for p, image in enumerate(images):
        top = p * (PANEL_HEIGHT + 2)
        canvas[top : top + PANEL_HEIGHT] = WHITE
        canvas[top : top + PANEL_HEIGHT, : image.shape[1]] = image
    return canvas
