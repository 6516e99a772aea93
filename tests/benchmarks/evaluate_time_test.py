"""benchmarks.evaluate_time: the records it writes read and evaluate as the command does."""

from benchmarks import evaluate_time
from maxk._src import records


def test_written_records_have_every_sample_of_every_problem(tmp_path):
  path = str(tmp_path / "r.jsonl")
  evaluate_time.write_records(path, problems=7, samples=5)
  source = records.read_source(path)
  groups = records.group_records([source], {}, check_answers=True)
  assert len(groups.problems) == 7 and list(groups.sizes) == [5] * 7
  assert all(r["correct"] == (r["answer"] == "A") for r in source.records)  # 'A' is right


def test_stages_run_on_a_small_file(tmp_path):
  path = str(tmp_path / "r.jsonl")
  evaluate_time.write_records(path, problems=4, samples=4)
  assert all(t >= 0 for t in evaluate_time.time_stages(path))
