#!/usr/bin/env bash
# Regenerate (or resume) the shipped tables, one after the other, pinned to one CPU core.
# Usage: nohup datasets/generate.sh [core] > /tmp/gen_all.log 2>&1 &
# Each table logs to /tmp/gen_<name>.log; a rerun skips configurations already in datasets/_parts/.
set -u
cd "$(dirname "$0")/.."
CORE="${1:-1}"
PY=.venv/bin/python
export XLA_FLAGS="--xla_force_host_platform_device_count=1"

run() {  # run <name> <generate args...>
  local name="$1"; shift
  echo "$(date -Is) start $name"
  taskset -c "$CORE" "$PY" -m rl_tasks.cli generate "$@" --out "datasets/$name.parquet" >> "/tmp/gen_$name.log" 2>&1
  echo "$(date -Is) end $name (exit $?)"
}

run ppo_cartpole --algo ppo --env CartPole-v1 --configs 128 --seeds 50 --steps 100000
run ppo_acrobot --algo ppo --env Acrobot-v1 --configs 128 --seeds 50 --steps 100000
run dqn_cartpole --algo dqn --env CartPole-v1 --configs 128 --seeds 50 --steps 100000
