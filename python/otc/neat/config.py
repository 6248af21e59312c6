"""neat-python's Config over otc's NEAT config parser (every key checked, errors naming the
file, line and key)."""
import os

from .. import _otc
from .genome import DefaultGenome


class DefaultReproduction:
    """neat-python's reproduction, done by otc (its neat-python dialect's rules)."""


class DefaultSpeciesSet:
    """neat-python's speciation, done by otc."""


class DefaultStagnation:
    """neat-python's stagnation, done by otc."""


class GenomeConfig:
    """What neat-python's config.genome_config tells about genomes."""

    def __init__(self, c):
        self.num_inputs, self.num_outputs, self.num_hidden = c.num_inputs, c.num_outputs, c.num_hidden
        self.feed_forward = c.feed_forward
        self.input_keys = [-i - 1 for i in range(c.num_inputs)]
        self.output_keys = list(range(c.num_outputs))

    def add_activation(self, name, func):
        raise NotImplementedError(
            f"add_activation('{name}'): otc.neat computes activations in C; custom Python "
            "activation functions are not supported (use a built-in one)")

    def add_aggregation(self, name, func):
        raise NotImplementedError(
            f"add_aggregation('{name}'): otc.neat computes aggregations in C; custom Python "
            "aggregation functions are not supported (use a built-in one)")


class Config:
    """Config(genome_type, reproduction_type, species_set_type, stagnation_type, filename)."""

    def __init__(self, genome_type, reproduction_type, species_set_type, stagnation_type,
                 filename, _text=None):
        if not (isinstance(genome_type, type) and issubclass(genome_type, DefaultGenome)):
            raise TypeError("genome_type: otc.neat supports DefaultGenome (or a subclass)")
        if _text is None:
            if not os.path.isfile(filename):
                raise Exception(f"No such config file: {os.path.abspath(filename)}")
            with open(filename, encoding="utf-8") as f:
                _text = f.read()
        self._text = _text
        self._c = _otc.NeatConfig._parse(_text, str(filename))
        self.filename = filename
        self.genome_type = genome_type
        self.reproduction_type = reproduction_type
        self.species_set_type = species_set_type
        self.stagnation_type = stagnation_type
        c = self._c
        self.pop_size = c.pop_size
        self.fitness_criterion = c.fitness_criterion
        self.fitness_threshold = c.fitness_threshold
        self.no_fitness_termination = c.no_fitness_termination
        self.reset_on_extinction = c.reset_on_extinction
        self.genome_config = GenomeConfig(c)

    def __reduce__(self):
        # Pickled as its text (ParallelEvaluator's workers parse it again).
        return (Config, (self.genome_type, self.reproduction_type, self.species_set_type,
                         self.stagnation_type, self.filename, self._text))
