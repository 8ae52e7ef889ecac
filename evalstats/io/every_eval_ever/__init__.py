"""Every Eval Ever records (the EvalEval coalition's exchange schema) in and out.

An evaluation is one aggregate JSON (``eval.schema.json``: ``model_info``, one entry of
``evaluation_results`` per metric result, each with its ``metric_config`` and the producer's
``score_details.score``) and, for per-sample results, a companion ``{uuid}_samples.jsonl``
(``instance_level_eval.schema.json``: one line per sample and result, with ``sample_id``,
``interaction_type`` ``single_turn``, ``multi_turn`` or ``agentic``, ``evaluation.score`` and
``evaluation.is_correct``). :func:`read_every_eval_ever` reads them into the observation table;
:func:`write_every_eval_ever` writes an observation table as such records. See
``docs/formats/every-eval-ever.md``.
"""

from evalstats.io.every_eval_ever._common import SCHEMA_VERSION, detect_every_eval_ever
from evalstats.io.every_eval_ever._read import read_every_eval_ever
from evalstats.io.every_eval_ever._write import write_every_eval_ever

__all__ = [
    "SCHEMA_VERSION",
    "detect_every_eval_ever",
    "read_every_eval_ever",
    "write_every_eval_ever",
]
