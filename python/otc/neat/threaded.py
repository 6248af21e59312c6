"""neat-python's ThreadedEvaluator: eval_function(genome, config) -> fitness on num_workers
threads of this process (useful when the fitness function waits on I/O or releases the GIL)."""
from concurrent.futures import ThreadPoolExecutor


class ThreadedEvaluator:
    def __init__(self, num_workers, eval_function):
        if not callable(eval_function):
            raise TypeError("eval_function: not callable")
        self.num_workers = max(1, int(num_workers))
        self.eval_function = eval_function
        self.pool = ThreadPoolExecutor(self.num_workers)

    def stop(self):
        self.pool.shutdown()

    def __del__(self):
        pool = getattr(self, "pool", None)
        if pool is not None:
            pool.shutdown(wait=False)

    def evaluate(self, genomes, config):
        futures = [self.pool.submit(self.eval_function, genome, config) for _, genome in genomes]
        for future, (_, genome) in zip(futures, genomes):
            genome.fitness = future.result()
