"""neat-python's FeedForwardNetwork and RecurrentNetwork, each a genome's flat program in C."""
from ... import _otc


class FeedForwardNetwork(_otc.Network):
    """activate(inputs) -> outputs; activate_batch(X [rows, inputs]) -> [rows, outputs]."""

    @staticmethod
    def create(genome, config):
        return FeedForwardNetwork(genome, config._c, "feedforward")


class RecurrentNetwork(_otc.Network):
    """activate(inputs) is one synchronous step (every node reads the previous step's values);
    reset() zeroes the state."""

    @staticmethod
    def create(genome, config):
        return RecurrentNetwork(genome, config._c, "recurrent")


__all__ = ["FeedForwardNetwork", "RecurrentNetwork"]
