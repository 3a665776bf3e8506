#!/usr/bin/env bash
# Generate (or resume) every shipped table, one after the other, pinned to one CPU core.
# Usage: nohup datasets/generate.sh [core [table ...]] > /tmp/gen_<core>.log 2>&1 &
#   one per core: nohup datasets/generate.sh 1 > /tmp/gen_1.log 2>&1 & nohup datasets/generate.sh 0 > /tmp/gen_0.log 2>&1 &
# Generators started together share each table configuration by configuration (each claims a configuration
# before training it: rl_tasks.generate.claim_part), so the sequence finishes on every core at about the same time.
# Each table logs to /tmp/gen_<name>.log; a rerun skips configurations already in datasets/_parts/, so the
# same command resumes after an interruption (a session's end). Commit datasets/_parts as parts finish.
# Order: the new tasks first (SAC, DQN to 512, DQN Acrobot), then the brax task and the PPO extensions to 512.
set -u
cd "$(dirname "$0")/.."
CORE="${1:-1}"
ONLY=("${@:2}")  # table names to run (default: all, in the order below)
PY=.venv/bin/python
export XLA_FLAGS="--xla_force_host_platform_device_count=1"

run() {  # run <name> <generate args...>
  local name="$1"; shift
  if [ ${#ONLY[@]} -gt 0 ] && [[ ! " ${ONLY[*]} " =~ " $name " ]]; then return; fi
  echo "$(date -Is) start $name"
  taskset -c "$CORE" "$PY" -m rl_tasks.cli generate "$@" --out "datasets/$name.parquet" >> "/tmp/gen_$name.log" 2>&1
  local rc=$?  # before $(date) below, which would reset it
  echo "$(date -Is) end $name (exit $rc)"
}

# 128 x 50, 10k steps, 64-64 networks and a Polyak target update every step (rl_tasks/README.md says why).
run sac_pendulum --algo sac --env Pendulum-v1 --configs 128 --seeds 50 --steps 10000 \
  --fixed hidden_size=64 --fixed target_update_interval=1
# The three original tables, extended from 128 to 512 configurations (the same Sobol sequence continued:
# the first 128 configurations and their parts are unchanged).
run dqn_cartpole --algo dqn --env CartPole-v1 --configs 512 --seeds 50 --steps 100000
# A second DQN task (the paper's dqn/cc_acrobot), ARLBench's 100k-step budget.
run dqn_acrobot --algo dqn --env Acrobot-v1 --configs 128 --seeds 50 --steps 100000
run ppo_brax_fast --algo ppo --env brax/fast --configs 128 --seeds 50 --steps 100000
run ppo_acrobot --algo ppo --env Acrobot-v1 --configs 512 --seeds 50 --steps 100000
run ppo_cartpole --algo ppo --env CartPole-v1 --configs 512 --seeds 50 --steps 100000
