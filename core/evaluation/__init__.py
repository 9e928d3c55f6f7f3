"""The evaluation harness: tau2-format tasks, isolated concurrent trials, tau2-style rewards, pass^k and reports.

No domain imports and no UI: a run gets a `Domain`, its tasks and a function that opens a fresh database
(`DomainRun`), and reports through callbacks. `console/cli/eval.py` wires it to the command line.
"""

from core.evaluation.harness import EvalOutcome, run_evaluation
from core.evaluation.loading import load_results
from core.evaluation.metrics import Metrics, compute_metrics, pass_hat_k, pass_k
from core.evaluation.offline import AdaptiveScriptedAgent, GoldPlanner, OfflineCustomer, OfflinePlan
from core.evaluation.participants import ModelParticipants, OfflineParticipants
from core.evaluation.results import EvalResults, ResultsError, RunHeader, TrialResult, TrialSummary
from core.evaluation.runner import AgentVariant, DomainRun, EvalRunner, RunSettings
from core.evaluation.tasks import Task, TaskFileError, load_tasks, select_tasks

__all__ = [
    "AdaptiveScriptedAgent", "AgentVariant", "DomainRun", "EvalOutcome", "EvalResults", "EvalRunner", "GoldPlanner",
    "Metrics", "ModelParticipants", "OfflineCustomer", "OfflineParticipants", "OfflinePlan", "ResultsError",
    "RunHeader", "RunSettings", "Task", "TaskFileError", "TrialResult", "TrialSummary", "compute_metrics",
    "load_results", "load_tasks", "pass_hat_k", "pass_k", "run_evaluation", "select_tasks",
]
