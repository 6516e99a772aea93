"""Tests of experiments.lm.checkpointing: the metrics log and damaged checkpoint folders."""

import binascii
import json
import os
import shutil

import jax.numpy as jnp
import numpy as np
import pytest

from experiments.lm import checkpointing
from experiments.lm import workdir


def test_metrics_log_skips_a_torn_last_line_and_rewrites_atomically(tmp_path):
  log = checkpointing.MetricsLog(str(tmp_path / "metrics.jsonl"))
  assert log.read() == []
  log.append({"stage": "sft", "step": 1})
  log.append({"stage": "sft", "step": 2})
  with open(log.path, "a") as f:
    f.write('{"stage": "sft", "st')  # A kill during the write.
  assert log.read() == [{"stage": "sft", "step": 1}, {"stage": "sft", "step": 2}]
  log.rewrite([{"stage": "sft", "step": 1}])
  assert log.read() == [{"stage": "sft", "step": 1}]
  assert not os.path.exists(log.path + ".tmp")
  reader = checkpointing.MetricsLog(log.path, writer=False)
  reader.append({"stage": "sft", "step": 2})
  reader.rewrite([])
  assert log.read() == [{"stage": "sft", "step": 1}]  # Only the writer writes.


def test_metrics_log_checksums_catch_an_edited_value(tmp_path):
  log = checkpointing.MetricsLog(str(tmp_path / "metrics.jsonl"))
  records = [{"stage": "sft", "step": 1, "loss": 0.5}, {"stage": "sft", "step": 2, "loss": 0.25}]
  for record in records:
    log.append(record)
  with open(log.path) as f:
    lines = f.readlines()
  for line, record in zip(lines, records):  # CRC-32 of the record's canonical JSON.
    expected = binascii.crc32(json.dumps(record, sort_keys=True).encode())
    assert json.loads(line)["crc32"] == f"{expected:08x}"
  assert log.read() == records
  # Edited values: once read back as if they had been logged.
  with open(log.path, "w") as f:
    f.write(lines[0] + lines[1].replace("0.25", "0.2"))
  with pytest.raises(workdir.WorkdirError, match=r"metrics.jsonl, line 2: .* do not match"):
    log.read()
  # A log written before checksums is read unchecked; a rewrite adds them.
  with open(log.path, "w") as f:
    f.writelines(json.dumps(r) + "\n" for r in records)
  assert log.read() == records
  log.rewrite(log.read())
  with open(log.path) as f:
    assert all("crc32" in json.loads(line) for line in f)
  # Only some lines with a checksum: one was edited (its checksum dropped).
  with open(log.path, "a") as f:
    f.write(json.dumps({"stage": "sft", "step": 3, "loss": 0.1}) + "\n")
  with pytest.raises(workdir.WorkdirError, match="line 3: some records carry"):
    log.read()


def _save(directory, steps):
  ckpt = checkpointing.Checkpointer(directory)
  for step in steps:
    ckpt.save(step, {"w": jnp.full((3,), float(step))})
  ckpt.close()


def test_checkpoint_round_trip(tmp_path):
  directory = str(tmp_path / "sft")
  _save(directory, [2, 4])
  ckpt = checkpointing.Checkpointer(directory)
  assert ckpt.latest_step() == 4
  np.testing.assert_array_equal(ckpt.restore(4, {"w": jnp.zeros((3,))})["w"], [4.0, 4.0, 4.0])
  ckpt.close()


def test_empty_step_folder_is_named(tmp_path):
  directory = str(tmp_path / "sft")
  _save(directory, [2])
  os.makedirs(os.path.join(directory, "6"))
  ckpt = checkpointing.Checkpointer(directory)
  folder = os.path.join(directory, "6")
  with pytest.raises(workdir.WorkdirError, match=rf"Checkpoint folder {folder} is empty"):
    ckpt.latest_step()
  ckpt.close()


def test_step_folder_without_its_data_is_named(tmp_path):
  directory = str(tmp_path / "sft")
  _save(directory, [2])
  folder = os.path.join(directory, "2")
  for name in os.listdir(folder):
    if name != "_CHECKPOINT_METADATA":
      path = os.path.join(folder, name)
      shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
  ckpt = checkpointing.Checkpointer(directory)
  assert ckpt.latest_step() == 2
  with pytest.raises(workdir.WorkdirError, match=rf"Checkpoint folder {folder} cannot be restored"):
    ckpt.restore(2, {"w": jnp.zeros((3,))})
  ckpt.close()
