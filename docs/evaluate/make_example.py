"""Writes docs/evaluate/example.jsonl, README's made-up evaluation (one record per sample).

  python docs/evaluate/make_example.py   # a fixed seed: writes the same file every time

20 problems with 16 samples each, except p07 and p15 with 12 (some generations failed).
Problem i is solved with probability p_i ~ Beta(1, 1.5).  A correct sample answers the
problem's answer; a wrong one one of three distractors (the first twice as likely as
the others), or nothing (null, an abstention) with probability 0.05.  reward is 1 for
a correct sample and the fraction of unit tests passed, U(0, 0.8), otherwise; score is
a verifier's noisy score, correct + N(0, 0.8²).
"""

import json
import os

import numpy as np

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "example.jsonl")


def records(seed: int = 0) -> list[dict[str, object]]:
  rng = np.random.default_rng(seed)
  out: list[dict[str, object]] = []
  for i in range(1, 21):
    problem = f"p{i:02d}"
    rate = rng.beta(1.0, 1.5)
    truth = str(int(rng.integers(10, 100)))
    distractors = [str(int(truth) + d) for d in (1, -3, 10)]
    for j in range(12 if problem in ("p07", "p15") else 16):
      correct = bool(rng.random() < rate)
      if correct:
        answer: str | None = truth
      elif rng.random() < 0.05:
        answer = None
      else:
        answer = distractors[int(rng.choice(3, p=[0.5, 0.25, 0.25]))]
      reward = 1.0 if correct else round(float(rng.uniform(0.0, 0.8)), 3)
      score = round(float(correct) + float(rng.normal(0.0, 0.8)), 3)
      out.append(
        {
          "problem_id": problem,
          "sample_id": j,
          "answer": answer,
          "correct": correct,
          "reward": reward,
          "score": score,
        }
      )
  return out


def text(seed: int = 0) -> str:
  return "".join(json.dumps(record) + "\n" for record in records(seed))


if __name__ == "__main__":
  with open(PATH, "w", encoding="utf-8") as f:
    f.write(text())
