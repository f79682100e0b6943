"""The retail Generator's records: the draft under construction and the request."""

from __future__ import annotations

from dataclasses import dataclass

from tau2.domains.retail.data_model import User

from evosyn.environments.kit.grounding import Draft, Request


@dataclass(kw_only=True)
class _Draft(Draft):
    """A retail task under construction: the authenticated caller and their orders."""

    user: User


@dataclass(kw_only=True)
class _Request(Request):
    """What the blueprint asks for, in the retail Generator's terms."""

    writes: int
    #: The requested ``computation``, or the one the Generator makes of the request (a
    #: calculation pattern asks for ``aggregate``; unrequested, it is varied where it fits).
    computation: str | None
    #: Fewest writes the request allows (a retry may step down to it).
    write_floor: int = 0
    #: The requested ``write_mix`` (None: not requested).
    mix: str | None = None
