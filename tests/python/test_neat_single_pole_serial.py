"""neat-python's single-pole example as test_neat_single_pole.py runs it, with the genomes
scored serially by its eval_genomes (the example's other form) instead of ParallelEvaluator."""
from test_neat_single_pole import check_winner, run


def test_single_pole_serial_solves():
    config, winner = run(0, 2)
    check_winner(config, winner)
