"""neat-python's genome classes over otc's genomes: DefaultGenome with its node and
connection gene dicts (read-only views of otc's genes, built on first access)."""
from .. import _otc


class DefaultNodeGene:
    """A node gene as neat-python shows it."""
    __slots__ = ("key", "bias", "response", "activation", "aggregation", "time_constant")

    def __init__(self, key, bias, response, activation, aggregation, time_constant):
        self.key, self.bias, self.response = key, bias, response
        self.activation, self.aggregation, self.time_constant = activation, aggregation, time_constant

    def __str__(self):
        return (f"DefaultNodeGene(key={self.key}, bias={self.bias}, response={self.response}, "
                f"activation={self.activation}, aggregation={self.aggregation})")

    __repr__ = __str__


class DefaultConnectionGene:
    """A connection gene as neat-python shows it: key is (input key, output key)."""
    __slots__ = ("key", "weight", "enabled", "innovation")

    def __init__(self, key, weight, enabled, innovation):
        self.key, self.weight, self.enabled, self.innovation = key, weight, enabled, innovation

    def __str__(self):
        return f"DefaultConnectionGene(key={self.key}, weight={self.weight}, enabled={self.enabled})"

    __repr__ = __str__


class DefaultGenome(_otc.Genome):
    """A genome: key, fitness, nodes {key: DefaultNodeGene}, connections {(in, out):
    DefaultConnectionGene}. Inputs have keys -1, -2, ...; outputs 0 .. num_outputs-1.
    The gene objects are a copy: changing them does not change the genome otc evolves."""

    def _load_genes(self):
        nodes, conns = self._genes()
        d = self.__dict__
        # otc names neat-python's own functions np_sigmoid, np_tanh...: neat-python's names.
        d["_nodes"] = {n[0]: DefaultNodeGene(n[0], n[1], n[2], n[3][3:] if n[3].startswith("np_")
                                             else n[3], n[4], n[5]) for n in nodes}
        d["_connections"] = {(c[0], c[1]): DefaultConnectionGene((c[0], c[1]), c[2], c[3], c[4])
                             for c in conns}

    @property
    def nodes(self):
        if "_nodes" not in self.__dict__:
            self._load_genes()
        return self.__dict__["_nodes"]

    @property
    def connections(self):
        if "_connections" not in self.__dict__:
            self._load_genes()
        return self.__dict__["_connections"]

    def size(self):
        """(number of nodes, enabled connections), as neat-python's size()."""
        return len(self.nodes), sum(1 for c in self.connections.values() if c.enabled)

    def __str__(self):
        lines = [f"Key: {self.key}", f"Fitness: {self.fitness}", "Nodes:"]
        lines += [f"\t{k} {g}" for k, g in sorted(self.nodes.items())]
        lines.append("Connections:")
        lines += [f"\t{g}" for _, g in sorted(self.connections.items())]
        return "\n".join(lines)
