"""A real multi-node Ray cluster on one machine: replicates spread over nodes and get cancelled.

The driver runs in a subprocess because it starts its own 3-node cluster (head + 2 workers) while
the test session already has a local Ray instance.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

DRIVER = Path(__file__).with_name("multinode_driver.py")


def test_live_ppo_on_a_three_node_cluster(tmp_path):
    pytest.importorskip("jax")
    completed = subprocess.run([sys.executable, str(DRIVER), str(tmp_path)], capture_output=True, text=True,
                               timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["trials"] == 14 and result["errors"] == 0
    assert len(result["nodes_used"]) > 1  # trials ran on more than one node
    assert set(result["nodes_used"]) <= set(result["worker_nodes"])  # never on the CPU-less head
    assert result["cancelled"] > 0 and "certified" in result["statuses"]  # replicates were cancelled
    counts = result["counts"]
    assert counts["runs_completed"] + counts["runs_cancelled"] + counts["runs_failed"] == counts["runs_launched"] == 14
    assert result["pool_manager_on_driver_node"]  # a node loss never takes the warm pool's manager
