"""An analysis that fails through an evalstats bug: the one line the report gives it."""

from __future__ import annotations

__all__ = ["FAILED", "failed_reason"]

#: How a skipped analysis's reason starts when evalstats itself failed (a bug, not the data).
FAILED = "failed (an evalstats bug)"


def failed_reason(exc: BaseException) -> str:
    """The one line a failed analysis reports: what was raised, where, and where to send it."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "evalstats" in f.filename.replace("\\", "/")]
    where = ours[-1] if ours else (frames[-1] if frames else None)
    at = (
        f" at {where.filename.rsplit('evalstats', 1)[-1].lstrip('/')}:{where.lineno}"
        if where
        else ""
    )
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return (
        f"{FAILED}: {type(exc).__name__}{': ' + message[:200] if message else ''}{at}; the "
        "other analyses ran. Please report it to the evalstats maintainers with the command "
        "line and `evalstats --version`."
    )
