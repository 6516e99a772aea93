import random

from evalscope import TaskConfig
from evalscope import run_task
from evalscope.api.model import ModelOutput

rng = random.Random(0)
outputs = [
  ModelOutput.from_content(model="mockllm", content=f"ANSWER: {rng.choice('ABBC')}")
  for _ in range(24)
]
run_task(
  TaskConfig(
    model="mock",
    eval_type="mock_llm",
    model_args={"custom_outputs": outputs},
    datasets=["general_mcq"],
    dataset_args={"general_mcq": {"local_path": "data", "subset_list": ["default"]}},
    repeats=4,
    eval_batch_size=1,
    work_dir="scratch",
    no_timestamp=True,
  )
)
