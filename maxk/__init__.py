"""maxk: exact, jitted estimators for pass@k / max@k, rank objectives, the variance of
estimates, and best-of-n mathematics."""

from maxk import testing as testing  # The bias checker, maxk.testing (NumPy only).
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
from maxk._src.beta_binomial import fit_beta_binomial
from maxk._src.beta_binomial import pass_at_k_beta_binomial
from maxk._src.chi2_policy import chi2_kl
from maxk._src.chi2_policy import chi2_pmf
from maxk._src.chi2_policy import chi2_win_rate
from maxk._src.curves import g_pass_at_k
from maxk._src.curves import max_at_k_curve
from maxk._src.curves import max_at_k_curve_variance
from maxk._src.curves import mg_pass_at_k
from maxk._src.curves import pass_at_k_curve
from maxk._src.curves import pass_at_k_curve_variance
from maxk._src.curves import pass_hat_k
from maxk._src.curves import pass_hat_k_curve
from maxk._src.distillation import bon_distillation_grad
from maxk._src.distillation import bon_distillation_loss
from maxk._src.distillation import calibrated_rewards
from maxk._src.distillation import exp_calibrated_rewards
from maxk._src.distillation import log_calibrated_rewards
from maxk._src.divergences import kl_divergence
from maxk._src.divergences import win_rate
from maxk._src.estimate_variance import max_at_k_variance
from maxk._src.estimate_variance import pass_at_k_variance
from maxk._src.evaluate import Evaluation
from maxk._src.evaluate import MetricRow
from maxk._src.evaluate import evaluate_records
from maxk._src.jspo import JSPO_VARIANTS
from maxk._src.jspo import jspo_advantages
from maxk._src.jspo import jspo_max_at_k_advantages
from maxk._src.majority_vote import maj_at_k
from maxk._src.majority_vote import maj_at_k_advantages
from maxk._src.majority_vote import maj_at_k_exact
from maxk._src.metrics import max_at_k
from maxk._src.metrics import pass_at_k
from maxk._src.off_policy import max_at_k_advantages_off_policy
from maxk._src.off_policy import max_at_k_surrogate
from maxk._src.optimal_baselines import optimal_baseline_advantages
from maxk._src.order_stats_exact import order_stat_exact
from maxk._src.peers import grpo_advantages
from maxk._src.peers import max_minus_second_advantages
from maxk._src.peers import maxrl_advantages
from maxk._src.peers import pass_at_k_training_advantages
from maxk._src.peers import rloo_advantages
from maxk._src.prompt_weights import implied_prompt_weight
from maxk._src.prompt_weights import success_objective_advantages
from maxk._src.proxy_selection import proxy_bon_best_n
from maxk._src.proxy_selection import proxy_bon_reward
from maxk._src.proxy_selection import proxy_bop_reward
from maxk._src.proxy_selection import proxy_chi2_reward
from maxk._src.proxy_selection import proxy_soft_bon_reward
from maxk._src.proxy_selection import proxy_tilt_reward
from maxk._src.rank_objectives import lift_rank_weights
from maxk._src.rank_objectives import order_stat_advantages
from maxk._src.rank_objectives import order_stat_at_k
from maxk._src.rank_objectives import rank_weights
from maxk._src.rewind_repeat import rewind_repeat_pmf
from maxk._src.selectors import selected_at_k
from maxk._src.selectors import selected_at_k_advantages
from maxk._src.selectors import selected_at_k_exact
from maxk._src.selectors import selected_pmf
from maxk._src.soft_best_of_n import soft_bon_kl
from maxk._src.soft_best_of_n import soft_bon_pmf
from maxk._src.soft_best_of_n import soft_bon_win_rate
from maxk._src.tie_classes import reward_collision_probability
from maxk._src.tilted_policies import bop_kl
from maxk._src.tilted_policies import bop_pmf
from maxk._src.tilted_policies import bop_win_rate
from maxk._src.tilted_policies import tilt_kl
from maxk._src.tilted_policies import tilt_log_partition
from maxk._src.tilted_policies import tilt_pmf
from maxk._src.tilted_policies import tilt_win_rate
from maxk._src.uncertainty import Interval
from maxk._src.uncertainty import VarianceSplit
from maxk._src.uncertainty import bayes_at_n
from maxk._src.uncertainty import mean_with_interval
from maxk._src.uncertainty import paired_difference
from maxk._src.uncertainty import pass_at_k_posterior
from maxk._src.uncertainty import variance_split
from maxk._src.unlikeliness import unlikeliness_advantages
from maxk._version import __version__ as __version__

__all__ = (
  "BASELINES",
  "Evaluation",
  "Interval",
  "JSPO_VARIANTS",
  "MetricRow",
  "VarianceSplit",
  "bayes_at_n",
  "bon_distillation_grad",
  "bon_distillation_loss",
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
  "bop_kl",
  "bop_pmf",
  "bop_win_rate",
  "calibrated_rewards",
  "chi2_kl",
  "chi2_pmf",
  "chi2_win_rate",
  "evaluate_records",
  "exp_calibrated_rewards",
  "fit_beta_binomial",
  "g_pass_at_k",
  "grpo_advantages",
  "implied_prompt_weight",
  "jspo_advantages",
  "jspo_max_at_k_advantages",
  "kl_divergence",
  "lift_rank_weights",
  "log_calibrated_rewards",
  "maj_at_k",
  "maj_at_k_advantages",
  "maj_at_k_exact",
  "max_at_k",
  "max_at_k_advantages",
  "max_at_k_advantages_off_policy",
  "max_at_k_curve",
  "max_at_k_curve_variance",
  "max_at_k_exact",
  "max_at_k_surrogate",
  "max_at_k_variance",
  "max_minus_second_advantages",
  "maxrl_advantages",
  "mean_with_interval",
  "mg_pass_at_k",
  "optimal_baseline_advantages",
  "order_stat_advantages",
  "order_stat_at_k",
  "order_stat_exact",
  "paired_difference",
  "pass_at_k",
  "pass_at_k_beta_binomial",
  "pass_at_k_curve",
  "pass_at_k_curve_variance",
  "pass_at_k_posterior",
  "pass_at_k_training_advantages",
  "pass_at_k_variance",
  "pass_hat_k",
  "pass_hat_k_curve",
  "proxy_bon_best_n",
  "proxy_bon_reward",
  "proxy_bop_reward",
  "proxy_chi2_reward",
  "proxy_soft_bon_reward",
  "proxy_tilt_reward",
  "rank_weights",
  "reward_collision_probability",
  "rewind_repeat_pmf",
  "rloo_advantages",
  "selected_at_k",
  "selected_at_k_advantages",
  "selected_at_k_exact",
  "selected_pmf",
  "soft_bon_kl",
  "soft_bon_pmf",
  "soft_bon_win_rate",
  "success_objective_advantages",
  "tilt_kl",
  "tilt_log_partition",
  "tilt_pmf",
  "tilt_win_rate",
  "unlikeliness_advantages",
  "variance_split",
  "win_rate",
)
