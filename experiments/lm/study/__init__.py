"""The LM study's summary across seeds, as a library (the binary is
:mod:`experiments.lm.study_summary`, whose docstring defines every output).

* reading: :mod:`~experiments.lm.study.config` (the study config, ``--study_config``),
  :mod:`~experiments.lm.study.files` (errors, JSON and CSV),
  :mod:`~experiments.lm.study.runs` (one run from its per-prompt file),
  :mod:`~experiments.lm.study.loading` (the study folder against its design),
  :mod:`~experiments.lm.study.steps` (training curves),
  :mod:`~experiments.lm.study.methods` (each run's estimator, k schedule and weights);
* computing: :mod:`~experiments.lm.study.seeds` (intervals over seeds),
  :mod:`~experiments.lm.study.evaluation_tables`,
  :mod:`~experiments.lm.study.training_tables`, :mod:`~experiments.lm.study.split_table`;
* rendering: :mod:`~experiments.lm.study.figures` (with
  :mod:`~experiments.lm.study.styles`, :mod:`~experiments.lm.study.plot_curves`,
  :mod:`~experiments.lm.study.plot_bars`), :mod:`~experiments.lm.study.report`
  (with :mod:`~experiments.lm.study.report_sections`,
  :mod:`~experiments.lm.study.markdown`);
* both: :mod:`~experiments.lm.study.summary`;
* an archived study's audit: :mod:`~experiments.lm.study.audit`;
* the repository README's LM-study block and its claims checker:
  :mod:`~experiments.lm.study.readme_section` (binary :mod:`experiments.lm.study_readme`).
"""
