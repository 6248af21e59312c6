"""neat-python's FeedForwardNetwork and RecurrentNetwork, each a genome's flat program in C."""
from ... import _otc


class FeedForwardNetwork(_otc.Network):
    """create(genome, config); activate(inputs) -> outputs; activate_batch(X [rows, inputs])
    -> [rows, outputs]. create and activate are single C calls."""
    __slots__ = ()
    _kind = "feedforward"


class RecurrentNetwork(_otc.Network):
    """create(genome, config); activate(inputs) is one synchronous step (every node reads the
    previous step's values); reset() zeroes the state."""
    __slots__ = ()
    _kind = "recurrent"


__all__ = ["FeedForwardNetwork", "RecurrentNetwork"]
