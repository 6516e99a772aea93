"""maxk: exact, jitted estimators for pass@k / max@k and best-of-n mathematics."""

from maxk._src.advantages import BASELINES
from maxk._src.advantages import max_at_k_advantages
from maxk._src.best_of_n import bon_kl
from maxk._src.best_of_n import bon_kl_bound
from maxk._src.best_of_n import bon_kl_estimate
from maxk._src.best_of_n import bon_kl_estimate_expectation
from maxk._src.best_of_n import bon_pmf
from maxk._src.best_of_n import bon_win_rate
from maxk._src.best_of_n import bon_win_rate_bound
from maxk._src.best_of_n import max_at_k_exact
from maxk._src.best_of_n_bounds import bon_kl_gap_bound
from maxk._src.best_of_n_bounds import bon_kl_gap_bound_delta
from maxk._src.best_of_n_bounds import bon_kl_gap_lower_bound
from maxk._src.best_of_n_bounds import bon_win_rate_gap_bound
from maxk._src.best_of_n_bounds import bon_win_rate_gap_bound_delta
from maxk._src.divergences import kl_divergence
from maxk._src.divergences import win_rate
from maxk._src.metrics import max_at_k
from maxk._src.metrics import pass_at_k
from maxk._src.off_policy import max_at_k_advantages_off_policy
from maxk._src.off_policy import max_at_k_surrogate
from maxk._src.peers import grpo_advantages
from maxk._src.peers import max_minus_second_advantages
from maxk._src.peers import pass_at_k_training_advantages
from maxk._src.peers import rloo_advantages
from maxk._src.rewind_repeat import rewind_repeat_pmf
from maxk._src.tie_classes import reward_collision_probability

__version__ = "0.1.0"

__all__ = (
  "BASELINES",
  "bon_kl",
  "bon_kl_bound",
  "bon_kl_estimate",
  "bon_kl_estimate_expectation",
  "bon_kl_gap_bound",
  "bon_kl_gap_bound_delta",
  "bon_kl_gap_lower_bound",
  "bon_pmf",
  "bon_win_rate",
  "bon_win_rate_bound",
  "bon_win_rate_gap_bound",
  "bon_win_rate_gap_bound_delta",
  "grpo_advantages",
  "kl_divergence",
  "max_at_k",
  "max_at_k_advantages",
  "max_at_k_advantages_off_policy",
  "max_at_k_exact",
  "max_at_k_surrogate",
  "max_minus_second_advantages",
  "pass_at_k",
  "pass_at_k_training_advantages",
  "reward_collision_probability",
  "rewind_repeat_pmf",
  "rloo_advantages",
  "win_rate",
)
