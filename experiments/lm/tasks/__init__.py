"""Procedurally generated verifiable tasks, their tokenizer, problem keys and verifiers.

Every task draws problems from a ``numpy.random.Generator`` (no downloads),
vectorised: ``sample_problems(rng, num)`` returns an int64 array with one row per
problem (its parameters and reference solution). ``example(row)`` writes the
row's prompt, of a fixed length (so that prompts batch without padding), and its
reference solution for the supervised warm start. ``score`` rates a model
completion with two rewards:

* ``binary``: 1.0 when the completion is fully correct, else 0.0 (pass@k input);
* ``continuous``: partial credit in [0, 1] (max@k input), defined per task.
  It is 1.0 exactly when ``binary`` is 1.0.

Verifiers parse the completion text with a small recursive-descent parser and run
it with our own interpreter (``expressions.parse``); model output is never executed.

**Problem keys.** Each task names a problem by a canonical integer key
(``problem_keys`` for drawn rows, ``prompt_key`` for a prompt's text, ``key_text``
for a readable form, ``key_description`` in words). Two prompts with the same key
are the same problem for the model: a model trained on one has been trained on the
other. Held-out evaluation problems are excluded from training by key
(``sample_examples(..., exclude=keys)``), not by prompt text: reordering the numbers
of a held-out countdown prompt does not make it a new problem.

**Near problems.** Two distinct problems are *near* when they differ in one
component (``near_signatures``, ``near_description`` in words): countdown problems
with the same target and all numbers but one, addition problems with one addend in
common, program problems whose hidden functions share all coefficients but one. A
held-out problem with a near training problem tests less generalisation than its key
alone suggests; ``splits`` counts them.

**Answers.** A task may also say which reference solutions solve which problems
(``AnswerIndexed``: ``answer_signatures``, ``solver_signatures``); ``answer_overlap``
uses it to find held-out problems whose answer the warm start shows verbatim.

Modules: ``base`` (the ``Task`` protocol), ``tokenizer``, ``problems`` (draws,
held-out problems, batch scoring), ``registry`` (``TASKS``, ``register``,
``make_task``) and one module per task: ``countdown``, ``addition``, ``program``.
Importing this package registers the three tasks.
"""

from experiments.lm.tasks.addition import Addition
from experiments.lm.tasks.base import AnswerIndexed
from experiments.lm.tasks.base import Example
from experiments.lm.tasks.base import Score
from experiments.lm.tasks.base import Task
from experiments.lm.tasks.countdown import Countdown
from experiments.lm.tasks.problems import contains
from experiments.lm.tasks.problems import draw_problems
from experiments.lm.tasks.problems import heldout_problems
from experiments.lm.tasks.problems import sample_examples
from experiments.lm.tasks.problems import score_batch
from experiments.lm.tasks.program import Program
from experiments.lm.tasks.registry import TASKS
from experiments.lm.tasks.registry import make_task
from experiments.lm.tasks.registry import register
from experiments.lm.tasks.tokenizer import BOS_ID
from experiments.lm.tasks.tokenizer import EOS_ID
from experiments.lm.tasks.tokenizer import PAD_ID
from experiments.lm.tasks.tokenizer import VOCAB_SIZE
from experiments.lm.tasks.tokenizer import decode_completion
from experiments.lm.tasks.tokenizer import encode
from experiments.lm.tasks.tokenizer import encode_completions
from experiments.lm.tasks.tokenizer import encode_prompts

__all__ = [
  "BOS_ID",
  "EOS_ID",
  "PAD_ID",
  "TASKS",
  "VOCAB_SIZE",
  "Addition",
  "AnswerIndexed",
  "Countdown",
  "Example",
  "Program",
  "Score",
  "Task",
  "contains",
  "decode_completion",
  "draw_problems",
  "encode",
  "encode_completions",
  "encode_prompts",
  "heldout_problems",
  "make_task",
  "register",
  "sample_examples",
  "score_batch",
]
