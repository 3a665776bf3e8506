"""Pre-warming the compilation cache: one program set per static shape, found later by a fresh worker."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
STEPS, EVAL_EVERY, EPISODES = 3072, 2048, 2  # 3 iterations of 1024 steps: chunks of 2 and a last one of 1

# A fresh process that trains one replicate with the given cache and reports which of the replicate's
# expensive programs (init = jit__lambda, advance, evaluate) it compiled (cache miss) or loaded (hit).
PROBE = r"""
import json, logging, sys
from rl_tasks.training import use_compilation_cache
from rl_tasks.seed_run import SeedRun
cache, minibatch = sys.argv[1], int(sys.argv[2])
use_compilation_cache(cache)
events = []
class Record(logging.Handler):
    def emit(self, record):
        events.append(record.getMessage())
for name in ("jax._src.compiler", "jax._src.compilation_cache"):
    logging.getLogger(name).setLevel(logging.DEBUG)
    logging.getLogger(name).addHandler(Record())
run = SeedRun("ppo", "CartPole-v1", {"minibatch_size": minibatch}, 0, STEPS, EVAL_EVERY, EPISODES)
while not run.finished:
    run.advance()
programs = ("'jit__lambda'", "'jit_advance'", "'jit_evaluate'")
hits = [m for m in events if m.startswith("Persistent compilation cache hit") and any(p in m for p in programs)]
misses = [m for m in events if "CACHE MISS" in m and any(p in m for p in programs)]
print(json.dumps({"hits": len(hits), "misses": len(misses)}))
""".replace("STEPS", str(STEPS)).replace("EVAL_EVERY", str(EVAL_EVERY)).replace("EPISODES", str(EPISODES))


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
    return {**env, "PYTHONPATH": os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]),
            "XLA_FLAGS": "--xla_force_host_platform_device_count=1"}


def _probe(cache: Path, minibatch: int) -> dict[str, int]:
    done = subprocess.run([sys.executable, "-c", PROBE, str(cache), str(minibatch)], env=_env(),
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_shape_configs_has_one_configuration_per_static_shape() -> None:
    pytest.importorskip("jax")
    from ray import tune

    from rl_tasks.prewarm import shape_configs

    ppo = shape_configs("ppo", "CartPole-v1", 100_000)  # minibatch_size is static, normalize_advantage traced
    assert sorted(c["minibatch_size"] for c in ppo) == [128, 256, 512]
    assert len(shape_configs("dqn", "CartPole-v1", 100_000)) == 3  # buffer_batch_size
    fixed = {"minibatch_size": 256, "learning_rate": tune.loguniform(1e-5, 1e-2), "seed": tune.randint(0, 9)}
    assert [c["minibatch_size"] for c in shape_configs("ppo", "CartPole-v1", 100_000, fixed)] == [256]


def test_prewarm_command_rejects_a_bad_task_before_loading_jax() -> None:
    done = subprocess.run([sys.executable, "-m", "tune_risk.cli", "prewarm", "--algo", "dqn", "--env",
                           "Pendulum-v1", "--steps", "10", "--eval-every", "5", "--cache", "/tmp/x"],
                          env=_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Pendulum" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_a_fresh_worker_loads_every_prewarmed_program_instead_of_compiling(tmp_path: Path) -> None:
    """After ``prewarm`` with one static shape (minibatch 128), a new process training a replicate of that
    shape compiles none of init/advance (both chunk lengths)/evaluate; a shape not pre-warmed (256) compiles
    its advance programs."""
    pytest.importorskip("jax")
    cache = tmp_path / "jax_cache"
    warm = (f"from rl_tasks.prewarm import prewarm; "
            f"s = prewarm('ppo', 'CartPole-v1', {STEPS}, {EVAL_EVERY}, {EPISODES}, {str(cache)!r}, "
            f"space={{'minibatch_size': 128}}); print(len(s))")
    done = subprocess.run([sys.executable, "-c", warm], env=_env(), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0 and done.stdout.split()[-1] == "1", done.stderr[-3000:]
    assert _probe(cache, 128) == {"hits": 4, "misses": 0}  # init, advance x2 (n = 2, 1), evaluate
    # The keys do not depend on the cache's path: a copy (another node's mount, a synced folder) serves too.
    copy = tmp_path / "copied_cache"
    shutil.copytree(cache, copy)
    assert _probe(copy, 128) == {"hits": 4, "misses": 0}
    # The check can fail: another shape compiles its two advance programs (init and evaluate do not depend
    # on the minibatch size, so they are shared with the pre-warmed shape).
    assert _probe(cache, 256) == {"hits": 2, "misses": 2}


def test_chunk_lengths_are_the_advance_calls_a_seed_run_makes() -> None:
    from rl_tasks.seed_run import chunk_lengths

    assert chunk_lengths(1024, 3, 2048) == (2, 1)  # chunks of 2 iterations, the last one shorter
    assert chunk_lengths(1024, 4, 2048) == (2,)
    assert chunk_lengths(1024, 3, 10**9) == (3,)  # one chunk for the whole budget
    assert chunk_lengths(1024, 5, 100) == (1,)  # at least one iteration per chunk
