"""Write Inspect logs with inspect_ai's own evaluator and writer (mockllm model, no network).

Run as ``python inspect_producer.py OUT``; ``tests/io/test_inspect_producer.py`` runs it in a
subprocess so that inspect_ai's import-time patch of ``zipfile`` (zstd support on Python < 3.14)
never reaches the process that reads the logs. Writes:

- ``zstd/arith.eval``: 4 samples x 3 epochs, ``match`` scorer, written as current inspect_ai
  writes every ``.eval`` log (Zstandard members, zip method 93);
- ``deflate/arith.eval``: the same log written with inspect_ai's writer set to deflate (the
  compression of logs written before inspect_ai switched to Zstandard);
- ``json/arith.json``: the same log in ``--log-format json``;
- ``dict/dictscore.eval``: a scorer whose value is a dictionary ``{"correct", "words"}``
  (``words`` counts words: not a proportion);
- ``evalset/``: an eval-set-like folder, a failed (status ``error``) log holding 2 samples and
  its successful retry with the same task id, both written by inspect_ai's writer;
- ``design/``: five logs of one task ``qa`` with task arguments ``template`` (a prompt),
  ``agent_url`` and ``timeout`` (serving settings): ``plain`` at two URLs and timeouts, ``cot``,
  ``plain`` with a chain-of-thought solver, and ``plain`` at the first URL again (the same
  configuration twice: repeated runs); 2 epochs each.
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

from inspect_ai import Task, eval, task
from inspect_ai.dataset import Sample
from inspect_ai.log import EvalError, write_eval_log
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import Score, Target, match, mean, scorer
from inspect_ai.solver import chain_of_thought, generate, system_message

#: mockllm answers "Default output from mockllm/model": targets 1 and 3 match, 2 and 4 do not.
TARGETS = ["Default", "nope", "mockllm", "zzz"]


def samples() -> list[Sample]:
    return [Sample(id=i, input=f"Say {t}", target=t) for i, t in enumerate(TARGETS, start=1)]


@scorer(metrics={"correct": [mean()], "words": [mean()]})
def two_keys():
    async def score(state, target: Target) -> Score:
        text = state.output.completion
        return Score(
            value={"correct": float(target.text in text), "words": float(len(text.split()))}
        )

    return score


def reply(input, tools, tool_choice, config) -> ModelOutput:
    """mockllm's default answer, with token usage given (else mockllm counts tokens with
    tiktoken, which downloads its encoding: no network here)."""
    out = ModelOutput.from_content(model="mockllm", content="Default output from mockllm/model")
    out.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
    return out


def main(out: Path) -> None:
    model = get_model("mockllm/model", custom_outputs=reply)
    common = {"model": model, "display": "none", "log_dir": str(out / "raw")}
    arith = Task(name="arith", dataset=samples(), solver=generate(), scorer=match("any"), epochs=3)
    log = eval(arith, **common)[0]
    dict_log = eval(
        Task(name="dictscore", dataset=samples(), solver=generate(), scorer=two_keys()), **common
    )[0]
    write_eval_log(log, str(out / "zstd" / "arith.eval"))
    write_eval_log(dict_log, str(out / "dict" / "dictscore.eval"))
    write_eval_log(log, str(out / "json" / "arith.json"), format="json")
    import inspect_ai.log._recorders.eval as recorder

    zstd = dict(recorder.zipfile_compress_kwargs)
    recorder.zipfile_compress_kwargs.update(compression=zipfile.ZIP_DEFLATED, compresslevel=6)
    try:
        write_eval_log(log, str(out / "deflate" / "arith.eval"))
    finally:
        recorder.zipfile_compress_kwargs.clear()
        recorder.zipfile_compress_kwargs.update(zstd)
    failed = log.model_copy(deep=True)
    failed.status = "error"
    failed.samples = failed.samples[:2]
    failed.results = None
    failed.error = EvalError(
        message="RuntimeError('rate limited')", traceback="", traceback_ansi=""
    )
    failed.stats.completed_at = "2025-01-01T00:00:00+00:00"
    write_eval_log(failed, str(out / "evalset" / "2025-01-01T00-00-00_arith_failed.eval"))
    write_eval_log(log, str(out / "evalset" / "2025-01-01T00-05-00_arith_retry.eval"))


@task
def qa(
    template: str = "plain", agent_url: str = "http://a:8000", timeout: int = 30, cot: bool = False
):
    """A task whose arguments mix a prompt (template) with serving settings (URL, timeout)."""
    data = [Sample(id=i, input=f"[{template}] Say {t}", target=t) for i, t in enumerate(TARGETS, 1)]
    solver = [chain_of_thought(), generate()] if cot else generate()
    return Task(dataset=data, solver=solver, scorer=match("any"), epochs=2)


def design(out: Path) -> None:
    model = get_model("mockllm/model", custom_outputs=reply)
    runs = [
        ("plain_a", {"template": "plain", "agent_url": "http://a:8000", "timeout": 30}),
        ("plain_b", {"template": "plain", "agent_url": "http://b:9000", "timeout": 60}),
        ("cot_template", {"template": "cot", "agent_url": "http://a:8000", "timeout": 30}),
        (
            "cot_solver",
            {"template": "plain", "agent_url": "http://a:8000", "timeout": 30, "cot": True},
        ),
        ("plain_a_again", {"template": "plain", "agent_url": "http://a:8000", "timeout": 30}),
    ]
    for name, args in runs:
        log = eval(qa(**args), model=model, display="none", log_dir=str(out / "raw"))[0]
        write_eval_log(log, str(out / "design" / f"{name}.eval"))


def guided(out: Path) -> None:
    """``arith`` and ``arith_guided`` (the same samples under a system prompt), and
    ``arith_hard`` (a name with the same prefix over other samples): two datasets, one of them
    under two prompt variants."""
    model = get_model("mockllm/model", custom_outputs=reply)
    common = {"model": model, "display": "none", "log_dir": str(out / "raw")}
    hard = [Sample(id=i, input=f"Spell {t} backwards", target=t) for i, t in enumerate(TARGETS, 10)]
    tasks = [
        Task(name="arith", dataset=samples(), solver=generate(), scorer=match("any")),
        Task(
            name="arith_guided",
            dataset=samples(),
            solver=[system_message("Answer with one word."), generate()],
            scorer=match("any"),
        ),
        Task(name="arith_hard", dataset=hard, solver=generate(), scorer=match("any")),
    ]
    for t in tasks:
        log = eval(t, **common)[0]
        write_eval_log(log, str(out / "guided" / f"{t.name}.eval"))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
    design(Path(sys.argv[1]))
    guided(Path(sys.argv[1]))
