"""A local ``pyarrow`` filesystem that stops Ray Tune's experiment-state copy half-way, on request.

Ray Tune 2.60 stages each experiment snapshot on the driver and copies it to ``storage_path`` in a
background thread, file by file (``pyarrow.fs.copy_files``), in about 10 ms. To SIGKILL a driver
*inside* that copy reliably, the tests give Tune this filesystem as ``RunConfig(storage_filesystem=...)``
(a public Tune option; ``Tuner.restore(..., storage_filesystem=...)`` on restore). It is the local
filesystem, except that once the harness *arms* it (writes ``arm.json`` in the control directory),
the next copy of the chosen experiment-state file stops:

* ``mode="mid"``: the file is truncated and ``fraction`` of its new bytes are written (a torn file);
* ``mode="before"``: before the file is opened (it keeps the previous snapshot's bytes, or stays
  absent, while the other files of the copy get the new snapshot's).

It then writes ``torn.json`` (which file, how many bytes) and blocks, so the harness can SIGKILL the
driver while the copy is stopped there; if nobody kills it within ``hold_s`` it finishes the file
(the test then fails on the missing kill, not on a hang). Only files directly in the experiment
directory whose name starts with ``target`` are affected, and with ``newest`` (the default) only the
newest session's (after a restore, every copy also rewrites the earlier sessions' files, which Tune
no longer reads); everything else is copied untouched.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs

ARM, TORN = "arm.json", "torn.json"


class TearingHandler(pafs.FileSystemHandler):
    """``pyarrow.fs.PyFileSystem`` handler: the local filesystem with an armable tear (module docstring)."""

    def __init__(self, control_dir: str, experiment_dir: str) -> None:
        self.control_dir = control_dir
        self.experiment_dir = os.path.abspath(experiment_dir)
        self.local = pafs.LocalFileSystem()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TearingHandler) and (self.control_dir, self.experiment_dir) == (
            other.control_dir, other.experiment_dir)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __reduce__(self):
        return TearingHandler, (self.control_dir, self.experiment_dir)

    # ------------------------------------------------------------------ the tear
    def _armed_for(self, path: str) -> dict | None:
        """The arming spec if ``path`` is the file to tear now, else ``None``."""
        if os.path.dirname(os.path.abspath(path)) != self.experiment_dir:
            return None
        try:
            spec = json.loads(Path(self.control_dir, ARM).read_text())
        except (OSError, ValueError):
            return None
        name = os.path.basename(path)
        if not name.startswith(spec["target"]) or Path(self.control_dir, TORN).exists():
            return None
        if spec.get("newest", True) and any(other > name for other in os.listdir(self.experiment_dir)
                                            if other.startswith(spec["target"])):
            return None
        return spec

    def _hold(self, spec: dict, path: str, written: int, size: int | None) -> None:
        """Report the tear (atomically) and block until SIGKILLed or ``hold_s`` passes."""
        tmp = Path(self.control_dir, f".{TORN}.{os.getpid()}")
        tmp.write_text(json.dumps({"file": os.path.basename(path), "mode": spec["mode"], "written": written,
                                   "size": size}))
        tmp.replace(Path(self.control_dir, TORN))
        time.sleep(float(spec.get("hold_s", 60.0)))

    def open_output_stream(self, path, metadata):
        spec = self._armed_for(path)
        if spec is not None and spec["mode"] == "before":
            self._hold(spec, path, 0, None)
        stream = self.local.open_output_stream(path, metadata=metadata)
        if spec is None or spec["mode"] != "mid":
            return stream
        return pa.PythonFile(_TearingWriter(self, spec, path, stream), mode="w")

    # ------------------------------------------------------------------ delegation to the local filesystem
    def get_type_name(self):
        return "tearing-local"

    def normalize_path(self, path):
        return self.local.normalize_path(path)

    def get_file_info(self, paths):
        return self.local.get_file_info(paths)

    def get_file_info_selector(self, selector):
        return self.local.get_file_info(selector)

    def create_dir(self, path, recursive):
        self.local.create_dir(path, recursive=recursive)

    def delete_dir(self, path):
        self.local.delete_dir(path)

    def delete_dir_contents(self, path, missing_dir_ok=False):
        self.local.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self):
        self.local.delete_dir_contents("/", accept_root_dir=True)

    def delete_file(self, path):
        self.local.delete_file(path)

    def move(self, src, dest):
        self.local.move(src, dest)

    def copy_file(self, src, dest):
        self.local.copy_file(src, dest)

    def open_input_stream(self, path):
        return self.local.open_input_stream(path)

    def open_input_file(self, path):
        return self.local.open_input_file(path)

    def open_append_stream(self, path, metadata):
        return self.local.open_append_stream(path, metadata=metadata)


class _TearingWriter:
    """Buffers the new bytes; on ``close`` writes ``fraction`` of them, then holds (``mode="mid"``)."""

    def __init__(self, handler: TearingHandler, spec: dict, path: str, stream) -> None:
        self.handler, self.spec, self.path, self.stream = handler, spec, path, stream
        self.buffer = bytearray()
        self.closed = False

    def write(self, data) -> int:
        self.buffer += bytes(data)
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        cut = int(len(self.buffer) * float(self.spec["fraction"]))
        self.stream.write(bytes(self.buffer[:cut]))
        self.stream.flush()
        self.handler._hold(self.spec, self.path, cut, len(self.buffer))
        self.stream.write(bytes(self.buffer[cut:]))
        self.stream.close()


def tearing_filesystem(control_dir: str | os.PathLike, experiment_dir: str | os.PathLike) -> pafs.PyFileSystem:
    """The filesystem to give Tune (``storage_filesystem``) for an experiment at ``experiment_dir``."""
    return pafs.PyFileSystem(TearingHandler(str(control_dir), str(experiment_dir)))
