"""neat-python's StatisticsReporter: the best genome and fitness of every generation."""
import copy
import statistics

from .reporting import BaseReporter


class StatisticsReporter(BaseReporter):
    def __init__(self):
        self.most_fit_genomes = []
        self.generation_statistics = []  # per generation: {species id: {genome key: fitness}}

    def post_evaluate(self, config, population, species, best_genome):
        self.most_fit_genomes.append(copy.deepcopy(best_genome))
        stats = {}
        for sid, s in species.species.items():
            stats[sid] = {k: g.fitness for k, g in s.members.items() if g.fitness is not None}
        self.generation_statistics.append(stats)

    def get_fitness_stat(self, f):
        return [f([fit for sf in stats.values() for fit in sf.values()] or [0.0])
                for stats in self.generation_statistics]

    def get_fitness_mean(self):
        return self.get_fitness_stat(statistics.fmean)

    def get_fitness_stdev(self):
        return self.get_fitness_stat(statistics.pstdev)

    def get_fitness_median(self):
        return self.get_fitness_stat(statistics.median)

    def best_unique_genomes(self, n):
        best = {}
        for g in self.most_fit_genomes:
            best[g.key] = g
        return sorted(best.values(), key=lambda g: g.fitness, reverse=True)[:n]

    def best_genomes(self, n):
        return sorted(self.most_fit_genomes, key=lambda g: g.fitness, reverse=True)[:n]

    def best_genome(self):
        return self.best_genomes(1)[0]

    def get_species_sizes(self):
        ids = sorted({sid for stats in self.generation_statistics for sid in stats})
        return [[len(stats.get(sid, ())) for sid in ids] for stats in self.generation_statistics]

    def get_species_fitness(self, null_value=""):
        ids = sorted({sid for stats in self.generation_statistics for sid in stats})
        out = []
        for stats in self.generation_statistics:
            row = []
            for sid in ids:
                f = list(stats.get(sid, {}).values())
                row.append(statistics.fmean(f) if f else null_value)
            out.append(row)
        return out

    def save_genome_fitness(self, delimiter=" ", filename="fitness_history.csv"):
        mean = self.get_fitness_mean()
        with open(filename, "w", encoding="utf-8") as f:
            for best, avg in zip(self.most_fit_genomes, mean):
                f.write(f"{best.fitness}{delimiter}{avg}\n")

    def save_species_count(self, delimiter=" ", filename="speciation.csv"):
        with open(filename, "w", encoding="utf-8") as f:
            for row in self.get_species_sizes():
                f.write(delimiter.join(str(v) for v in row) + "\n")

    def save_species_fitness(self, delimiter=" ", null_value="NA", filename="species_fitness.csv"):
        with open(filename, "w", encoding="utf-8") as f:
            for row in self.get_species_fitness(null_value):
                f.write(delimiter.join(str(v) for v in row) + "\n")

    def save(self):
        self.save_genome_fitness()
        self.save_species_count()
        self.save_species_fitness()
