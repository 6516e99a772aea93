"""Check any advantage function for bias and variance: exact expectations by enumeration.

``maxk.testing`` measures an advantage function (rewards [..., n] -> advantages
[..., n], written in NumPy or JAX) against the exact policy gradient of a rank
objective (max@k, pass@k, any ``maxk.rank_weights``) on a small softmax policy
(``gradient_bias``, over all outcome tuples), and gives the exact mean and covariance
of its gradient estimate (``gradient_moments``, over count vectors), for one prompt or a
batch of prompts, and the least variance any leave-one-out baseline can reach
(``variance_floor``, a weighted least-squares problem over count vectors).
``aggregation_bias`` checks how GRPO, DAPO, Dr. GRPO and GSPO average a group's loss over
tokens, on a small policy over token sequences.
"""

from maxk._src.gradient_check import MAX_TUPLES
from maxk._src.gradient_check import GradientBias
from maxk._src.gradient_check import exact_gradient
from maxk._src.gradient_check import expected_gradient
from maxk._src.gradient_check import gradient_bias
from maxk._src.gradient_moments import MAX_COUNT_VECTORS
from maxk._src.gradient_moments import GradientMoments
from maxk._src.gradient_moments import gradient_moments
from maxk._src.loss_aggregation import AGGREGATIONS
from maxk._src.loss_aggregation import MAX_SEQUENCE_GROUPS
from maxk._src.loss_aggregation import AggregationBias
from maxk._src.loss_aggregation import aggregation_bias
from maxk._src.loss_aggregation import expected_aggregated_gradient
from maxk._src.loss_aggregation import sequence_objective_gradients
from maxk._src.loss_aggregation import token_sequences
from maxk._src.variance_floors import MAX_FLOOR_ENTRIES
from maxk._src.variance_floors import VarianceFloor
from maxk._src.variance_floors import variance_floor

__all__ = (
  "AGGREGATIONS",
  "MAX_COUNT_VECTORS",
  "MAX_FLOOR_ENTRIES",
  "MAX_SEQUENCE_GROUPS",
  "MAX_TUPLES",
  "AggregationBias",
  "GradientBias",
  "GradientMoments",
  "VarianceFloor",
  "aggregation_bias",
  "exact_gradient",
  "expected_aggregated_gradient",
  "expected_gradient",
  "gradient_bias",
  "gradient_moments",
  "sequence_objective_gradients",
  "token_sequences",
  "variance_floor",
)
