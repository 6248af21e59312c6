"""The PyTorch bench scripts' timer (the Python twin of bench/bench_timing.h): the median
seconds per call over blocks of calls sized so that all blocks take about min_seconds."""
import statistics
import time


def median_time(fn, min_seconds=0.3, blocks=7, max_calls=1 << 20, clock=time.perf_counter):
    """Median seconds per call over `blocks` blocks of calls, after a warm-up; clock
    time.process_time counts this process's CPU time only (a machine shared with other work)."""
    for _ in range(3):
        fn()
    n = 1
    while True:  # calls per block so that all blocks together take about min_seconds
        t0 = clock()
        for _ in range(n):
            fn()
        if (clock() - t0) * blocks >= min_seconds or n >= max_calls:
            break
        n *= 2
    times = []
    for _ in range(blocks):
        t0 = clock()
        for _ in range(n):
            fn()
        times.append((clock() - t0) / n)
    return statistics.median(times)
