"""neat-python's Population: run(fitness_function, n) over otc's NEAT, one generation per
otc step, the user's fitness function called on the genomes otc has to score."""
import os
import random
from operator import attrgetter

from .. import _otc
from .errors import CompleteExtinctionException
from .reporting import ReporterSet
from .species import Species, SpeciesSet

_fitness = attrgetter("fitness")


class Population:
    """Population(config, initial_state=None). The run's seed is the config's [NEAT] seed,
    else drawn from Python's random module (random.seed() makes runs repeatable)."""

    def __init__(self, config, initial_state=None):
        self.reporters = ReporterSet()
        self.config = config
        if initial_state is None:
            seed = config._c.seed if config._c.has_seed else random.getrandbits(63) + 1
            initial_state = _otc.Population(config._c, seed, config.genome_type)
        self._pop = initial_state
        self.best_genome = None
        self._refresh()

    def _refresh(self):
        genomes = self._pop.genomes()
        self.population = {g.key: g for g in genomes}
        species = {}
        for sid, created, last_improved, fitness, members in self._pop.species():
            species[sid] = Species(sid, created, last_improved, fitness,
                                   {genomes[i].key: genomes[i] for i in members})
        self.species = SpeciesSet(species)

    @property
    def generation(self):
        return self._pop.generation

    def add_reporter(self, reporter):
        self.reporters.add(reporter)

    def remove_reporter(self, reporter):
        self.reporters.remove(reporter)

    def run(self, fitness_function, n=None, threads=None):
        """Runs up to n generations (None: until the fitness criterion is met) and returns
        the best genome seen. fitness_function(genomes, config) gets (genome_id, genome)
        pairs of the genomes otc has to score and sets each genome.fitness. Or it names one
        of otc's tasks (a string, as `otc evolve --task`: "xor:neat-python", "pole1", ...):
        then every genome is scored in C on `threads` threads (None: one per core), with no
        Python in the loop."""
        if self.config.no_fitness_termination and n is None:
            raise RuntimeError("Cannot have no generational limit with no fitness termination")
        if isinstance(fitness_function, str):
            task = fitness_function
            if threads is None:
                threads = os.cpu_count() or 1
            step = lambda: self._pop.step_task(task, threads)
        elif threads is not None:
            raise ValueError("threads: only for a task named by a string")
        else:
            step = lambda: self._pop.step(lambda pairs: fitness_function(pairs, self.config))
        k = 0
        while n is None or k < n:
            k += 1
            self.reporters.start_generation(self.generation)
            generation, species = self.generation, self.species
            # The fitness function gets the genomes otc has to score as (key, genome) pairs;
            # they are the objects self.population holds, so once it returns every genome
            # there has its fitness (under evolution = otc, elites kept theirs).
            status = step()
            best = max(self.population.values(), key=_fitness)
            self.reporters.post_evaluate(self.config, self.population, species, best)
            if self.best_genome is None or best.fitness > self.best_genome.fitness:
                self.best_genome = best
            if status == "solved":
                self.reporters.found_solution(self.config, generation, best)
                break
            if status == "extinct":
                self.reporters.complete_extinction()
                raise CompleteExtinctionException()
            self._refresh()
            self.reporters.end_generation(self.config, self.population, self.species)
            for r in self.reporters.reporters:
                hook = getattr(r, "_otc_end_generation", None)
                if hook:
                    hook(self, generation)
        if self.config.no_fitness_termination:
            self.reporters.found_solution(self.config, self.generation, self.best_genome)
        return self.best_genome
