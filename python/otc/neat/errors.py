"""The exceptions neat-python raises that a run can meet."""


class CompleteExtinctionException(Exception):
    """Every species went extinct and reset_on_extinction is False."""
