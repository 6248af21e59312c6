"""neat-python's Checkpointer: the run saved every N generations or T seconds, restored with
Checkpointer.restore_checkpoint(filename). A file is one header line, the config's text and
otc's checkpoint JSON (written atomically); every part is checked when read."""
import os
import time

from .. import _otc
from .config import Config, DefaultReproduction, DefaultSpeciesSet, DefaultStagnation
from .genome import DefaultGenome
from .population import Population
from .reporting import BaseReporter

_MAGIC = "otc-neat-python-checkpoint"


class Checkpointer(BaseReporter):
    def __init__(self, generation_interval=100, time_interval_seconds=300,
                 filename_prefix="neat-checkpoint-"):
        self.generation_interval = generation_interval
        self.time_interval_seconds = time_interval_seconds
        self.filename_prefix = filename_prefix
        self.current_generation = None
        self.last_generation_checkpoint = -1
        self.last_time_checkpoint = time.time()

    def start_generation(self, generation):
        self.current_generation = generation

    def _otc_end_generation(self, population, generation):
        save = False
        if self.time_interval_seconds is not None:
            save = time.time() - self.last_time_checkpoint >= self.time_interval_seconds
        if not save and self.generation_interval is not None:
            save = generation - self.last_generation_checkpoint >= self.generation_interval
        if save:
            self.save_checkpoint(population, generation)
            self.last_generation_checkpoint = generation
            self.last_time_checkpoint = time.time()

    def save_checkpoint(self, population, generation):
        """Writes filename_prefix + generation: the population about to run generation + 1."""
        filename = f"{self.filename_prefix}{generation}"
        print(f"Saving checkpoint to {filename}")
        tmp = f"{filename}.otc-json-{os.getpid()}"
        try:
            population._pop.save_checkpoint(tmp)
            with open(tmp, "rb") as f:
                body = f.read()
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        text = population.config._text.encode("utf-8")
        header = f"{_MAGIC} 1 {len(text)} {population._pop.next_key}\n".encode()
        part = f"{filename}.tmp-{os.getpid()}"
        with open(part, "wb") as f:
            f.write(header + text + body)
            f.flush()
            os.fsync(f.fileno())
        os.replace(part, filename)

    @staticmethod
    def restore_checkpoint(filename, new_config=None):
        """A Population continuing the run saved in filename (its own config, or new_config,
        which otc checks against the one the run started with)."""
        with open(filename, "rb") as f:
            data = f.read()
        line, sep, rest = data.partition(b"\n")
        fields = line.split()
        if (not sep or len(fields) != 4 or fields[0] != _MAGIC.encode() or fields[1] != b"1"
                or not fields[2].isdigit() or not fields[3].isdigit()
                or int(fields[2]) > len(rest)):
            raise ValueError(f"{filename}: not an otc.neat checkpoint (bad header line)")
        n = int(fields[2])
        try:
            text = rest[:n].decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"{filename}: config text is not UTF-8 ({e})") from None
        config = new_config or Config(DefaultGenome, DefaultReproduction, DefaultSpeciesSet,
                                      DefaultStagnation, filename, _text=text)
        pop = _otc.Population._from_checkpoint(config._c, rest[n:], str(filename),
                                               config.genome_type, int(fields[3]))
        return Population(config, pop)
