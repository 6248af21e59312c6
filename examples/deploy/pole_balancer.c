/* The double pole balanced without velocity inputs by an evolved DPNV champion compiled with
 * `otc compile CHAMPION.otm --emit-c DIR --name NAME`: this program links only the emitted C
 * and simulates the cart itself (the dpnv task's equations, constants and time step:
 * Wieland's equations, two RK4 steps of 0.01 s per action, Stanley's NEAT 1.2.1 CartPole).
 * Build: cc -O2 -DOTC_MODEL=dpnv -DOTC_MODEL_UPPER=DPNV -I DIR pole_balancer.c DIR/dpnv.c -lm
 * Run:   ./pole_balancer [STEPS]   (default 100000; exit 0 when every step stays balanced) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef OTC_MODEL
#error "define OTC_MODEL as the --name given to otc compile"
#endif
#define STR2(x)    #x
#define STR(x)     STR2(x)
#define CAT2(a, b) a##b
#define CAT(a, b)  CAT2(a, b)
#include STR(OTC_MODEL.h)

#define MODEL_FORWARD   CAT(OTC_MODEL, _forward)
#define MODEL_RESET     CAT(OTC_MODEL, _reset)
#define MODEL_WORKSPACE CAT(OTC_MODEL_UPPER, _WORKSPACE_BYTES)
#define MODEL_IN        CAT(OTC_MODEL_UPPER, _IN_FLOATS)

/* The task's constants (runtime/src/neat/tasks/pole_double.c), digit for digit. */
#define MUP         0.000002
#define GRAVITY     (-9.8)
#define MASS_CART   1.0
#define MASS_POLE_1 0.1
#define MASS_POLE_2 0.01
#define LENGTH_1    0.5 /* half the long pole's length */
#define LENGTH_2    0.05
#define FORCE_MAG   10.0
#define TAU         0.01 /* one RK4 step; two per action */
#define X_LIMIT     2.4
#define ANGLE_LIMIT 0.628329
#define START_ANGLE 0.07

/* y = (x, dx, θ1, dθ1, θ2, dθ2); dydx its derivative under `force`. */
static void derivs(double force, const double *y, double *dydx) {
    double c1 = cos(y[2]), s1 = sin(y[2]), c2 = cos(y[4]), s2 = sin(y[4]);
    double gs1 = GRAVITY * s1, gs2 = GRAVITY * s2;
    double ml1 = LENGTH_1 * MASS_POLE_1, ml2 = LENGTH_2 * MASS_POLE_2;
    double t1 = MUP * y[3] / ml1, t2 = MUP * y[5] / ml2;
    double fi1 = (ml1 * y[3] * y[3] * s1) + (0.75 * MASS_POLE_1 * c1 * (t1 + gs1));
    double fi2 = (ml2 * y[5] * y[5] * s2) + (0.75 * MASS_POLE_2 * c2 * (t2 + gs2));
    double mi1 = MASS_POLE_1 * (1 - (0.75 * c1 * c1));
    double mi2 = MASS_POLE_2 * (1 - (0.75 * c2 * c2));
    dydx[0] = y[1];
    dydx[2] = y[3];
    dydx[4] = y[5];
    dydx[1] = (force + fi1 + fi2) / (mi1 + mi2 + MASS_CART);
    dydx[3] = -0.75 * (dydx[1] * c1 + gs1 + t1) / LENGTH_1;
    dydx[5] = -0.75 * (dydx[1] * c2 + gs2 + t2) / LENGTH_2;
}

/* Classical RK4 in the reference's operation order. */
static void rk4(double force, double *y) {
    const double hh = TAU * 0.5, h6 = TAU / 6.0;
    double dydx[6], dym[6], dyt[6], yt[6];
    int i;
    derivs(force, y, dydx);
    for (i = 0; i < 6; i++) yt[i] = y[i] + hh * dydx[i];
    derivs(force, yt, dyt);
    for (i = 0; i < 6; i++) yt[i] = y[i] + hh * dyt[i];
    derivs(force, yt, dym);
    for (i = 0; i < 6; i++) {
        yt[i] = y[i] + TAU * dym[i];
        dym[i] += dyt[i];
    }
    derivs(force, yt, dyt);
    for (i = 0; i < 6; i++) y[i] = y[i] + h6 * (dydx[i] + dyt[i] + 2.0 * dym[i]);
}

static int failed(const double *y) {
    return !(fabs(y[0]) <= X_LIMIT && fabs(y[2]) <= ANGLE_LIMIT && fabs(y[4]) <= ANGLE_LIMIT &&
             isfinite(y[1]) && isfinite(y[3]) && isfinite(y[5]));
}

int main(int argc, char **argv) {
    long steps = argc > 1 ? strtol(argv[1], NULL, 10) : 100000, t;
    double y[6] = {0, 0, START_ANGLE, 0, 0, 0};
    float in[4], out[1];
    static float ws[MODEL_WORKSPACE(1) / sizeof(float) + 1];
    if (MODEL_IN != 4) {
        fprintf(stderr, "the model takes %d inputs; a DPNV network takes 4\n", MODEL_IN);
        return 2;
    }
    MODEL_RESET(ws, 1); /* the recurrent state starts at zero */
    for (t = 0; t < steps; t++) {
        /* No velocities: cart position and the two angles, scaled, and the bias input. */
        in[0] = (float)(y[0] / 4.8);
        in[1] = (float)(y[2] / 0.52);
        in[2] = (float)(y[4] / 0.52);
        in[3] = 0.5f;
        if (MODEL_FORWARD(in, out, 1, ws) != 0) return 2;
        {
            double action = isfinite(out[0]) ? fmax(0.0, fmin(1.0, out[0])) : 0.5;
            double force = (action - 0.5) * FORCE_MAG * 2;
            rk4(force, y);
            rk4(force, y);
        }
        if (failed(y)) break;
    }
    printf("balanced %ld of %ld steps (%.0f s simulated); cart at %.3f m, poles at %.4f and "
           "%.4f rad\n",
           t, steps, (double)t * 2 * TAU, y[0], y[2], y[4]);
    return t == steps ? 0 : 1;
}
