"""neat-python's CTRNN: advance(inputs, advance_time, time_step), exponential Euler steps."""
from ... import _otc


class CTRNN(_otc.Network):
    @staticmethod
    def create(genome, config, time_constant=None):
        """time_constant (optional) replaces every node's own, as neat-python's older API."""
        return CTRNN(genome, config._c, "ctrnn", time_constant)


__all__ = ["CTRNN"]
