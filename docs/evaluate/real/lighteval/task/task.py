import os

from lighteval.metrics.metrics import Metrics
from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.requests import Doc


def prompt(line, task_name=None):
  return Doc(task_name=task_name, query=line["question"], choices=[line["answer"]], gold_index=0)


maxk_gen = LightevalTaskConfig(
  name="maxk_gen",
  prompt_function=prompt,
  hf_repo=os.path.join(os.path.dirname(os.path.abspath(__file__)), "data"),
  hf_subset="default",
  hf_avail_splits=["test"],
  evaluation_splits=["test"],
  few_shots_split=None,
  few_shots_select=None,
  generation_size=8,
  metrics=[
    Metrics.avg_at_n(sample_params={"n": 4}),
    Metrics.pass_at_k(sample_params={"k": 1, "n": 4}),
    Metrics.maj_at_n(sample_params={"n": 4}),
  ],
  version=0,
)
TASKS_TABLE = [maxk_gen]
