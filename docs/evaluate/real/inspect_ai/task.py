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
