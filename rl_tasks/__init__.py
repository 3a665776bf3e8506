"""rl_tasks."""
