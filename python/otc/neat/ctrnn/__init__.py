"""neat-python's CTRNN: advance(inputs, advance_time, time_step), exponential Euler steps."""
from ... import _otc


class CTRNN(_otc.Network):
    """create(genome, config, time_constant=None): time_constant (optional) replaces every
    node's own, as neat-python's older API."""
    __slots__ = ()
    _kind = "ctrnn"


__all__ = ["CTRNN"]
