"""The LM study: the analysis of the trainer's finished runs (``experiments.lm``) across
seeds, from the design before the runs to the README after them. It imports the
trainer's modules (task verifiers, config schemas, the per-run report rows); the
trainer never imports it.

Binaries (each module docstring is its ``--help``):

* :mod:`experiments.lm_study.design`: the design note, before the runs;
* :mod:`experiments.lm_study.archive_runs`: a study's finished runs, small files only,
  into a folder to commit;
* :mod:`experiments.lm_study.summary`: the summary across seeds (its docstring defines
  every output);
* :mod:`experiments.lm_study.readme`: the repository README's LM-study blocks.

The library:

* design: :mod:`~experiments.lm_study.design_note` (with
  :mod:`~experiments.lm_study.design_rules`, :mod:`~experiments.lm_study.power`,
  :mod:`~experiments.lm_study.pilot`, :mod:`~experiments.lm_study.design_markdown`);
* reading a study: :mod:`~experiments.lm_study.config` (the study config,
  ``--study_config``), :mod:`~experiments.lm_study.files` (errors, JSON and CSV),
  :mod:`~experiments.lm_study.runs` (one run from its per-prompt file),
  :mod:`~experiments.lm_study.loading` (the study folder against its design),
  :mod:`~experiments.lm_study.commits` (the runs' code),
  :mod:`~experiments.lm_study.steps` (training curves),
  :mod:`~experiments.lm_study.checkpoints` (evaluations at checkpoints),
  :mod:`~experiments.lm_study.methods` (each run's estimator, k schedule and weights);
* computing: :mod:`~experiments.lm_study.significance` (the floored interval over
  seeds, Holm, equivalence, power, verdicts), :mod:`~experiments.lm_study.seeds`
  (intervals over seeds), :mod:`~experiments.lm_study.evaluation_tables`,
  :mod:`~experiments.lm_study.contrast_table`,
  :mod:`~experiments.lm_study.training_tables`,
  :mod:`~experiments.lm_study.split_table`, :mod:`~experiments.lm_study.frontier`,
  :mod:`~experiments.lm_study.matched_kl`,
  :mod:`~experiments.lm_study.answer_shares`;
* rendering: :mod:`~experiments.lm_study.figures` (with
  :mod:`~experiments.lm_study.styles`, :mod:`~experiments.lm_study.plot_curves`,
  :mod:`~experiments.lm_study.plot_bars`, :mod:`~experiments.lm_study.plot_frontier`),
  :mod:`~experiments.lm_study.summary_readme` (with
  :mod:`~experiments.lm_study.summary_sections`,
  :mod:`~experiments.lm_study.markdown`);
* both: :mod:`~experiments.lm_study.summarize`;
* an archived study's audit: :mod:`~experiments.lm_study.audit` (with
  :mod:`~experiments.lm_study.audit_measures`);
* the repository README's blocks: :mod:`~experiments.lm_study.readme_8seed`,
  :mod:`~experiments.lm_study.readme_matched_kl` (with
  :mod:`~experiments.lm_study.readme_verdicts`, :mod:`~experiments.lm_study.readme_block`),
  and their claims checker :mod:`~experiments.lm_study.readme_claims`.
"""
