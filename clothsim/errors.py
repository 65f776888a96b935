"""Errors raised by clothsim. Every message names what is wrong and where."""


class ClothsimError(Exception):
    """Base class of every error clothsim raises on purpose."""


class InputError(ClothsimError, ValueError):
    """Bad input: the message names the argument (or file and key), the offending entry and what was expected."""


class SimulationError(ClothsimError, RuntimeError):
    """The simulation cannot go on (e.g. the state became non-finite); the message names the step."""


class StaleViewError(ClothsimError, RuntimeError):
    """A zero-copy view (Warp array or torch tensor) was used after the buffer it viewed was released."""
