#!/usr/bin/env python3
"""The classic cart-pole as an environment for `otc evolve --task exec:PROGRAM` (the exec
protocol: docs/neat.md, "Environments in any language"). Python 3 only, no gym: the
equations of Barto, Sutton & Anderson (1983), frictionless, as in most textbooks.

    otc evolve examples/exec/cartpole.ini \
        --task "exec:python3 examples/exec/cartpole_env.py" --seed 1 --out cartpole.otm

A 1 kg cart on a 4.8 m track carries a 0.1 kg pole 1 m long. Each step the network sees
4 observations (cart position, cart velocity, pole angle, pole angular velocity, each
scaled to about [-1, 1]) and its one output pushes the cart with +10 N (output > 0.5) or
-10 N; the state advances by 0.02 s (one Euler step). The episode ends when the cart
leaves the track (|x| > 2.4 m), the pole falls past 12 degrees, or after MAX_STEPS
steps. Reward 1 per step survived, so the fitness is the number of steps balanced and
cartpole.ini's fitness_threshold = MAX_STEPS means "balanced for the whole episode".
Each episode starts from a random state (up to 1.2 m off centre, the pole up to 6 degrees off
vertical, both moving) drawn from the seed otc sends with `reset`.
"""
import math
import random
import sys

GRAVITY = 9.8  # m/s^2
CART_MASS = 1.0  # kg
POLE_MASS = 0.1  # kg
HALF_POLE = 0.5  # m, half the pole's length
FORCE = 10.0  # N
TAU = 0.02  # s per step
X_LIMIT = 2.4  # m
THETA_LIMIT = 12 * math.pi / 180  # rad
MAX_STEPS = 500


def accelerations(theta, theta_dot, force):
    """The cart's and the pole's accelerations (frictionless cart-pole)."""
    total = CART_MASS + POLE_MASS
    sin, cos = math.sin(theta), math.cos(theta)
    temp = (force + POLE_MASS * HALF_POLE * theta_dot**2 * sin) / total
    theta_acc = (GRAVITY * sin - cos * temp) / (
        HALF_POLE * (4.0 / 3.0 - POLE_MASS * cos**2 / total))
    x_acc = temp - POLE_MASS * HALF_POLE * theta_acc * cos / total
    return x_acc, theta_acc


class CartPole:
    def reset(self, seed):
        rng = random.Random(seed)
        # anywhere on the middle of the track, moving, the pole tilted and swinging
        self.state = [rng.uniform(-1.2, 1.2), rng.uniform(-0.5, 0.5),
                      rng.uniform(-0.1, 0.1), rng.uniform(-0.5, 0.5)]
        self.steps = 0

    def observe(self):
        x, x_dot, theta, theta_dot = self.state
        return (x / X_LIMIT, x_dot / 2.0, theta / THETA_LIMIT, theta_dot / 2.0)

    def step(self, y):
        x, x_dot, theta, theta_dot = self.state
        x_acc, theta_acc = accelerations(theta, theta_dot, FORCE if y > 0.5 else -FORCE)
        x, x_dot = x + TAU * x_dot, x_dot + TAU * x_acc
        theta, theta_dot = theta + TAU * theta_dot, theta_dot + TAU * theta_acc
        self.state = [x, x_dot, theta, theta_dot]
        self.steps += 1
        fell = abs(x) > X_LIMIT or abs(theta) > THETA_LIMIT
        return fell or self.steps >= MAX_STEPS


def say(*words):
    sys.stdout.write(" ".join(str(w) for w in words) + "\n")
    sys.stdout.flush()  # otc waits for each line (exec_timeout seconds)


def main():
    env = CartPole()
    for line in sys.stdin:
        word, *args = line.split()
        if word == "reset":
            env.reset(int(args[0]))
            say("obs", *map(repr, env.observe()))
        elif word == "act":
            done = env.step(float(args[0]))
            say("step", 1, int(done), *map(repr, env.observe()))
        else:
            sys.exit(f"cartpole_env.py: unknown command {word!r}")


if __name__ == "__main__":
    main()
