#!/usr/bin/env python3
"""An environment for `otc evolve --task exec:PROGRAM`: XOR as an episode of four steps,
written against otc's line protocol (docs/neat.md, "Environments in any language"). It is what a
Gymnasium environment's wrapper looks like: reset, then observation / action / reward / done.

    otc evolve tests/neat_python/configs/xor_config-feedforward \
        --task "exec:python3 examples/exec/xor_env.py" --out xor.otm

Protocol (one line each way per step, numbers in decimal):
    otc: reset SEED              -> env: obs X1 .. Xn
    otc: act Y1 .. Ym            -> env: step REWARD DONE X1 .. Xn   (DONE 1 ends the episode)
The fitness is the sum of the rewards: here 1 - (y - target)^2 per case, so 4 - sum err^2,
neat-python's XOR fitness. Flush after every line: otc waits for it (exec_timeout seconds).
"""
import sys

CASES = [((0.0, 0.0), 0.0), ((0.0, 1.0), 1.0), ((1.0, 0.0), 1.0), ((1.0, 1.0), 0.0)]


def say(*words):
    sys.stdout.write(" ".join(str(w) for w in words) + "\n")
    sys.stdout.flush()


def main():
    step = 0
    for line in sys.stdin:
        word, *args = line.split()
        if word == "reset":
            step = 0  # the seed (args[0]) would seed a random environment
            say("obs", *CASES[0][0])
        elif word == "act":
            y = float(args[0])
            reward = 1.0 - (y - CASES[step][1]) ** 2
            step += 1
            if step == len(CASES):
                say("step", repr(reward), 1)
            else:
                say("step", repr(reward), 0, *CASES[step][0])
        else:
            sys.exit(f"xor_env.py: unknown command {word!r}")


if __name__ == "__main__":
    main()
