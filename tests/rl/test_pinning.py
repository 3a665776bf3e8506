"""Core claims for training processes (``rl_tasks.pinning``): distinct cores per live process, freed on exit."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rl_tasks.pinning import claim_cores

TWO_CORES = hasattr(os, "sched_getaffinity") and len(os.sched_getaffinity(0)) >= 2


def test_claims_take_distinct_free_cores_and_give_them_back_on_close(tmp_path) -> None:
    first, first_locks = claim_cores([3, 1], 1, tmp_path)
    second, second_locks = claim_cores([3, 1], 1, tmp_path)
    assert (first, second) == ([1], [3])  # lowest free core first; a held core is skipped
    assert claim_cores([1, 3], 1, tmp_path) == ([], [])  # none left: the caller runs unpinned
    os.close(first_locks[0])
    assert claim_cores([1, 3], 1, tmp_path)[0] == [1]  # the closed claim's core is free again
    os.close(second_locks[0])


def test_a_claim_needs_all_its_cores_or_takes_none(tmp_path) -> None:
    held, _ = claim_cores([0, 1, 2], 1, tmp_path)
    assert held == [0]
    assert claim_cores([0, 1, 2], 3, tmp_path) == ([], [])
    assert claim_cores([0, 1, 2], 2, tmp_path)[0] == [1, 2]  # the failed claim released what it had locked
    with pytest.raises(ValueError, match="count"):
        claim_cores([0, 1], 0, tmp_path)


def test_the_cores_of_a_dead_process_are_free(tmp_path) -> None:
    code = (f"import os, sys; sys.path.insert(0, {os.getcwd()!r}); from pathlib import Path; "
            f"from rl_tasks.pinning import claim_cores; print(claim_cores([5, 6], 2, Path({str(tmp_path)!r}))[0]); "
            "os._exit(0)")  # ends without closing anything: the kernel drops the locks
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[5, 6]"
    assert claim_cores([5, 6], 2, tmp_path)[0] == [5, 6]



def test_a_lock_file_that_cannot_be_opened_skips_its_core(tmp_path, monkeypatch) -> None:
    real_open = os.open

    def refuse_core0(path, *args):  # another user's lock file (root opens any file, so it is simulated)
        if str(path).endswith("core0"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args)

    monkeypatch.setattr(os, "open", refuse_core0)
    assert claim_cores([0, 1], 1, tmp_path)[0] == [1]


def test_a_claim_waits_for_a_core_whose_process_is_still_exiting(tmp_path) -> None:
    """A replacement worker may start before the worker it replaces has exited: it waits for the core."""
    code = (f"import os, sys, time; sys.path.insert(0, {os.getcwd()!r}); from pathlib import Path; "
            f"from rl_tasks.pinning import claim_cores; claim_cores([7], 1, Path({str(tmp_path)!r})); "
            "print('held', flush=True); time.sleep(1.0)")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert claim_cores([7], 1, tmp_path) == ([], [])  # no wait: the core is still held
        assert claim_cores([7], 1, tmp_path, wait_s=10.0)[0] == [7]  # freed when the holder exits
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.skipif(not TWO_CORES, reason="needs 2 cores")
def test_pin_once_pins_a_process_once_and_keeps_its_core(tmp_path) -> None:
    """A reused trial actor calls pin_once for every trial: the first call claims and pins, later ones only
    return the same core (claiming again would take a second core from the node)."""
    code = (f"import json, os, sys, time; sys.path.insert(0, {os.getcwd()!r}); from pathlib import Path; "
            f"from rl_tasks.pinning import pin_once; d = Path({str(tmp_path)!r}); "
            "print(json.dumps([pin_once(1, d), pin_once(1, d), sorted(os.sched_getaffinity(0))]), flush=True); "
            "time.sleep(2.0)")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        first, second, mask = json.loads(holder.stdout.readline())
        assert len(first) == 1 and first == second == mask, (first, second, mask)
        everything = sorted(os.sched_getaffinity(0))
        free, locks = claim_cores(everything, len(everything) - 1, tmp_path)  # the child holds exactly one core
        assert sorted(set(everything) - set(free)) == first
        for descriptor in locks:
            os.close(descriptor)
    finally:
        holder.wait()
