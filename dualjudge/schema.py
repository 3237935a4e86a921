"""Building blocks for settings declared once: strict field types, list rules, and whether a setting
can change a result.

Every setting is declared once (a pydantic field) with `affects_results` in its schema: True (the
default), False (plumbing: concurrency, timeouts, endpoints, cache file), or the name (or names) of the
engine backends for which it matters. The run fingerprint and the request cache key both derive from it.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, AllowInfNan, BaseModel, Field, Strict

T = TypeVar("T")

Int = Annotated[int, Strict()]
Float = Annotated[float, Strict(), AllowInfNan(False)]  # an integer is a valid float; a string, a boolean, inf, nan not
Bool = Annotated[bool, Strict()]
Str = Annotated[str, Strict()]


def _distinct(values: tuple[T, ...]) -> tuple[T, ...]:
    """A list setting names each entry once and is never empty (a repeated judge would double every n)."""
    if not values:
        raise ValueError("must not be empty")
    seen = set()
    for v in values:
        if v in seen:
            raise ValueError(f"{v!r} is listed twice")
        seen.add(v)
    return values


Distinct = AfterValidator(_distinct)


def setting(default: Any = ..., *, affects_results: bool | str | tuple[str, ...] = True, **kwargs: Any) -> Any:
    """A field whose schema records whether it can change a result (see the module docstring)."""
    flag: Any = list(affects_results) if isinstance(affects_results, tuple) else affects_results
    return Field(default, json_schema_extra={"affects_results": flag}, **kwargs)


def affects_results(model: type[BaseModel], name: str, backend: str | None = None) -> bool:
    extra = model.model_fields[name].json_schema_extra
    flag = extra.get("affects_results", True) if isinstance(extra, dict) else True
    if isinstance(flag, str):
        return flag == backend
    return flag is True or (isinstance(flag, (list, tuple)) and backend in flag)


def result_fields(section: BaseModel, backend: str | None = None) -> dict[str, Any]:
    """The fields of a settings section that can change a result (for `backend`), JSON-ready."""
    data = section.model_dump(mode="json")
    return {k: v for k, v in data.items() if affects_results(type(section), k, backend)}
