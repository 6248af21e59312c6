"""neat-python's ParallelEvaluator: eval_function(genome, config) -> fitness on each genome,
in num_workers processes (multiprocessing, as neat-python), or in this one for 1 worker."""
import multiprocessing
import random


def _seeded(eval_function, seed, genome, config):
    """neat-python's per-genome seeding: Python's random starts from seed + genome.key."""
    random.seed(seed + genome.key)
    return eval_function(genome, config)


class ParallelEvaluator:
    def __init__(self, num_workers, eval_function, timeout=None, initializer=None,
                 initargs=(), maxtasksperchild=None, seed=None):
        if not callable(eval_function):
            raise TypeError("eval_function: not callable")
        self.num_workers = int(num_workers)
        self.eval_function = eval_function
        self.timeout = timeout
        self.seed = seed  # None: each genome's randomness is whatever the worker's is
        self.pool = None
        if self.num_workers > 1:
            self.pool = multiprocessing.Pool(self.num_workers, initializer, initargs,
                                             maxtasksperchild)

    def close(self):
        if self.pool is not None:
            self.pool.close()
            self.pool.join()
            self.pool = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "pool", None) is not None:
            self.pool.terminate()

    def evaluate(self, genomes, config):
        if self.pool is None:
            for _, genome in genomes:
                if self.seed is None:
                    genome.fitness = self.eval_function(genome, config)
                    continue
                state = random.getstate()  # as in a worker: the caller's stream untouched
                try:
                    genome.fitness = _seeded(self.eval_function, self.seed, genome, config)
                finally:
                    random.setstate(state)
            return
        jobs = [self.pool.apply_async(self.eval_function, (genome, config)) if self.seed is None
                else self.pool.apply_async(_seeded, (self.eval_function, self.seed, genome, config))
                for _, genome in genomes]
        for job, (_, genome) in zip(jobs, genomes):
            genome.fitness = job.get(timeout=self.timeout)
