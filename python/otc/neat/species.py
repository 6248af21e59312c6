"""Species as neat-python's reporters see them: SpeciesSet.species {id: Species}."""


class Species:
    def __init__(self, key, created, last_improved, fitness, members):
        self.key = key
        self.created = created
        self.last_improved = last_improved
        self.fitness = fitness
        self.adjusted_fitness = None
        self.members = members  # {genome key: genome}

    def get_fitnesses(self):
        return [g.fitness for g in self.members.values()]


class SpeciesSet:
    def __init__(self, species=None):
        self.species = species or {}
        self.genome_to_species = {k: s.key for s in self.species.values() for k in s.members}

    def get_species_id(self, individual_id):
        return self.genome_to_species[individual_id]

    def get_species(self, individual_id):
        return self.species[self.genome_to_species[individual_id]]
