"""otc from Python: models (load, run, train, compile) and NEAT with neat-python's API.

    import otc
    m = otc.Model.load("model.otm")
    y = m.run(X)                     # X: numpy float32 [batch, inputs]

    import otc.neat as neat          # in place of `import neat`
"""
from ._otc import Model, OtcError

__all__ = ["Model", "OtcError"]
