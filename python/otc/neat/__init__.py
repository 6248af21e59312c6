"""neat-python's API over otc's NEAT: `import otc.neat as neat` in place of `import neat`.

Evolution (speciation, stagnation, reproduction) is otc's neat-python dialect in C; the
fitness function stays the user's Python. See docs/python.md for what differs."""
from . import ctrnn, nn
from .checkpoint import Checkpointer
from .config import (Config, DefaultReproduction, DefaultSpeciesSet, DefaultStagnation,
                     GenomeConfig)
from .errors import CompleteExtinctionException
from .genome import DefaultConnectionGene, DefaultGenome, DefaultNodeGene
from .parallel import ParallelEvaluator
from .population import Population
from .reporting import BaseReporter, ReporterSet, StdOutReporter
from .statistics import StatisticsReporter
from .threaded import ThreadedEvaluator

__all__ = ["Checkpointer", "CompleteExtinctionException", "Config", "DefaultConnectionGene",
           "DefaultGenome", "DefaultNodeGene", "DefaultReproduction", "DefaultSpeciesSet",
           "DefaultStagnation", "GenomeConfig", "ParallelEvaluator", "Population",
           "BaseReporter", "ReporterSet", "StatisticsReporter", "StdOutReporter", "ThreadedEvaluator", "ctrnn", "nn"]
