"""The run's report: the CTRF model and writer (:mod:`~aicr_pytest.report.ctrf`), statuses, stdout
caps and ``RESULT:`` lines (:mod:`~aicr_pytest.report.outcome`), per-item results and the phase table
(:mod:`~aicr_pytest.report.results`), and the terminal summary (:mod:`~aicr_pytest.report.terminal`).

Imports :mod:`aicr_pytest.core` only: no pytest, no plugin, no cluster client.
"""
