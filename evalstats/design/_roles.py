"""The vocabulary of the design: roles, their meanings, the design file version."""

from __future__ import annotations

__all__ = [
    "ATTRIBUTE_ROLES",
    "DESIGN_VERSION",
    "LEFT_OUT_ROLES",
    "ROLE_MEANING",
    "ROLE_ORDER",
    "USER_ROLES",
    "user_role",
]

#: Version of the design file layout (``evalstats design --out design.toml``).
DESIGN_VERSION = 1

#: Roles a user may give a column (``--roles NAME=ROLE``), with their synonyms.
USER_ROLES: dict[str, str] = {
    "model": "model",
    "dataset": "dataset",
    "metric": "metric",
    "item": "item",
    "cluster": "cluster",
    "variant": "variant",
    "prompt": "prompt",
    "factor": "prompt",
    "setting": "setting",
    "run": "run",
    "score": "score",
    "answer": "answer",
    "response": "response",
    "gold": "gold",
    "input_text": "input_text",
    "latency_s": "latency_s",
    "error": "error",
    "text": "text",
    "ignore": "text",
    "metadata": "metadata",
    "fixed": "fixed",
}

#: Every role a column can have, in display order.
ROLE_ORDER = (
    "model",
    "dataset",
    "metric",
    "item",
    "cluster",
    "variant",
    "prompt",
    "setting",
    "run",
    "score",
    "output",
    "metric_info",
    "fixed",
    "item_attribute",
    "model_attribute",
    "outcome",
    "measurement",
    "text",
    "metadata",
)

#: Roles the structure rules give a column that is not a design dimension; a design file
#: writes them as ``metadata`` (what reading it back needs), the design shows them as they are.
ATTRIBUTE_ROLES = ("item_attribute", "model_attribute", "outcome", "measurement")

#: Roles of the columns no analysis reads.
LEFT_OUT_ROLES = ("text", "metadata", *ATTRIBUTE_ROLES)

#: What each role means, for the terminal table and docs/design.md.
ROLE_MEANING = {
    "model": "the evaluated object",
    "dataset": "benchmark or task",
    "metric": "the metric's name",
    "item": "item id within the dataset",
    "cluster": "items sharing a passage, document or family: analysed as dependent",
    "variant": "one prompt variant (with the settings held fixed)",
    "prompt": "a prompt dimension: what defines a variant",
    "setting": "a decoding or serving setting: held fixed, analysed per value",
    "run": "an identical repeated run",
    "score": "the item score",
    "output": "model output or reference (answers, responses, lengths, errors)",
    "metric_info": "the metric's bounds and direction",
    "fixed": "one value in each model and dataset: held fixed, kept, tells no row apart",
    "item_attribute": "the same on every row of an item: not a prompt dimension",
    "model_attribute": "the same on every row of a model, different between models",
    "outcome": "a function of the score (a failure reason, a verdict): records the result",
    "measurement": "a count or a duration of the call (tokens, seconds): not a dimension",
    "text": "free text or model output: no analysis reads it",
    "metadata": "timings, sizes, harness settings: no analysis reads it",
}


def user_role(role: str, where: str) -> str:
    """The role ``role`` names (synonyms resolved); ``where`` starts the error message.

    Raises
    ------
    ParameterError
        ``role`` is not a role: ``"<where> 'x', which is not a role (roles: ...)."``
    """
    if role not in USER_ROLES:
        from evalstats.errors import ParameterError

        raise ParameterError(
            f"{where} {role!r}, which is not a role (roles: {', '.join(dict.fromkeys(USER_ROLES))})."
        )
    return USER_ROLES[role]
