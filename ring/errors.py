"""Exceptions. Every error a collective raises is raised on every rank taking part."""

import builtins


class RingError(Exception):
    """Base class of all project exceptions."""


class MismatchError(RingError, ValueError):
    """Ranks disagree on a call: collective, count, dtype, op, root or in-place."""


class TimeoutError(RingError, builtins.TimeoutError):  # noqa: A001 - the API names it so
    """A peer did not arrive within the communicator's timeout."""


class CommunicatorError(RingError):
    """The communicator was used after an error or after close()."""
