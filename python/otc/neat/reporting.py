"""neat-python's reporter interface: BaseReporter, ReporterSet and StdOutReporter."""
import statistics
import time


class BaseReporter:
    """Override the hooks you need; each does nothing by default."""

    def start_generation(self, generation):
        pass

    def end_generation(self, config, population, species_set):
        pass

    def post_evaluate(self, config, population, species, best_genome):
        pass

    def post_reproduction(self, config, population, species):
        pass

    def complete_extinction(self):
        pass

    def found_solution(self, config, generation, best):
        pass

    def species_stagnant(self, sid, species):
        pass

    def info(self, msg):
        pass


class ReporterSet:
    """Every hook call forwarded to each reporter added."""

    def __init__(self):
        self.reporters = []

    def add(self, reporter):
        self.reporters.append(reporter)

    def remove(self, reporter):
        self.reporters.remove(reporter)

    def __getattr__(self, name):
        if name not in BaseReporter.__dict__:
            raise AttributeError(name)

        def call(*args):
            for r in self.reporters:
                getattr(r, name)(*args)
        return call


class StdOutReporter(BaseReporter):
    """Progress on standard output, as neat-python prints it."""

    def __init__(self, show_species_detail):
        self.show_species_detail = show_species_detail
        self.generation = None
        self.generation_start_time = None
        self.generation_times = []
        self.num_extinctions = 0

    def start_generation(self, generation):
        self.generation = generation
        print(f"\n ****** Running generation {generation} ****** \n")
        self.generation_start_time = time.time()

    def end_generation(self, config, population, species_set):
        ng, ns = len(population), len(species_set.species)
        if self.show_species_detail:
            print(f"Population of {ng:d} members in {ns:d} species:")
            print("   ID   age  size   fitness   stag")
            print("  ====  ===  ====  =========  ====")
            for sid in sorted(species_set.species):
                s = species_set.species[sid]
                age = self.generation - s.created
                stag = self.generation - s.last_improved
                print(f"  {sid:>4}  {age:>3}  {len(s.members):>4}  {s.fitness:>9.3f}  {stag:>4}")
        else:
            print(f"Population of {ng:d} members in {ns:d} species")
        elapsed = time.time() - self.generation_start_time
        self.generation_times.append(elapsed)
        self.generation_times = self.generation_times[-10:]
        average = sum(self.generation_times) / len(self.generation_times)
        print(f"Total extinctions: {self.num_extinctions:d}")
        if len(self.generation_times) > 1:
            print(f"Generation time: {elapsed:.3f} sec ({average:.3f} average)")
        else:
            print(f"Generation time: {elapsed:.3f} sec")

    def post_evaluate(self, config, population, species, best_genome):
        fitnesses = [g.fitness for g in population.values()]
        mean = statistics.fmean(fitnesses)
        std = statistics.pstdev(fitnesses)
        sid = species.genome_to_species.get(best_genome.key, "?")
        print(f"Population's average fitness: {mean:3.5f} stdev: {std:3.5f}")
        print(f"Best fitness: {best_genome.fitness:3.5f} - size: {best_genome.size()!r} - "
              f"species {sid} - id {best_genome.key}")

    def complete_extinction(self):
        self.num_extinctions += 1
        print("All species extinct.")

    def found_solution(self, config, generation, best):
        print(f"\nBest individual in generation {generation} meets fitness threshold - "
              f"complexity: {best.size()!r}")

    def species_stagnant(self, sid, species):
        if self.show_species_detail:
            print(f"\nSpecies {sid} with {len(species.members)} members is stagnated: removing it")

    def info(self, msg):
        print(msg)
