"""Lunar Lander 12D: the heuristic controller of Eriksson et al. 2019 (TuRBO) with 12 weights
``w in [0, 2]^12``, reward averaged over environment seeds 0..49 (docs/algorithms.md §4.9, O-20).

Needs ``gymnasium[box2d]`` (``pip install 'tune-risk[bench]'``). An episode that reaches
gymnasium's 1000-step truncation scores -100 (TuRBO's timeout penalty).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from oscbo_harness.unavailable import TaskUnavailable

GYM_HEURISTIC_WEIGHTS = (0.5, 1.0, 0.4, 0.55, 0.5, 1.0, 0.5, 0.5, 0.0, 0.5, 0.05, 0.05)


def heuristic_action(s: Sequence[float], w: Sequence[float]) -> int:
    """TuRBO's parameterised version of gymnasium's ``heuristic`` lander controller.

    Pass Python floats (``state.tolist()``): scalar arithmetic on floats is several times faster than on
    numpy scalars and gives the same doubles, so the controller is no longer a quarter of an episode's time.
    """
    angle_target = min(max(s[0] * w[0] + s[2] * w[1], -w[2]), w[2])
    hover_target = w[3] * abs(s[0])
    angle_todo = (angle_target - s[4]) * w[4] - s[5] * w[5]
    hover_todo = (hover_target - s[1]) * w[6] - s[3] * w[7]
    if s[6] or s[7]:  # a leg touches the ground
        angle_todo = w[8]
        hover_todo = -s[3] * w[9]
    if hover_todo > abs(angle_todo) and hover_todo > w[10]:
        return 2
    if angle_todo < -w[11]:
        return 3
    if angle_todo > w[11]:
        return 1
    return 0


def lunar_reward(w: np.ndarray, episodes: int = 50) -> float:
    """Mean return of the controller with weights ``w`` over environment seeds ``0..episodes-1``."""
    try:
        import gymnasium as gym
    except ImportError as error:
        raise TaskUnavailable("lunar12 needs gymnasium[box2d] (pip install 'tune-risk[bench]')") from error
    w = np.asarray(w, dtype=np.float64).tolist()
    try:
        env = gym.make("LunarLander-v3")
    except Exception as error:  # Box2D missing: gymnasium raises DependencyNotInstalled
        raise TaskUnavailable(f"lunar12 needs Box2D: {error}") from error
    total = 0.0
    try:
        for seed in range(episodes):
            state, _ = env.reset(seed=seed)
            episode = 0.0
            while True:
                state, reward, terminated, truncated, _ = env.step(heuristic_action(state.tolist(), w))
                episode += float(reward)
                if terminated:
                    break
                if truncated:
                    episode = -100.0
                    break
            total += episode
    finally:
        env.close()
    return total / episodes
