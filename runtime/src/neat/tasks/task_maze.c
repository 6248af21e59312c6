/* The maze task (Lehman & Stanley 2011): the robot's sensors and motion, the paper's medium and
 * hard maps, fitness from the final distance to the goal, the final position as behaviour. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neat_internal.h"
#include "otc/file.h"
#include "otc/neat_maze.h"

/* The maps' walls, start, heading and goal as published with the paper's novelty search code
 * (medium_maze.txt, hard_maze.txt); y grows downwards on screen. */
static const otc_maze_wall medium_walls[] = {
    {293, 7, 289, 130},  {289, 130, 6, 134}, {6, 134, 8, 5},      {8, 5, 292, 7},
    {241, 130, 58, 65},  {114, 7, 73, 42},   {130, 91, 107, 46},  {196, 8, 139, 51},
    {219, 122, 182, 63}, {267, 9, 214, 63},  {271, 129, 237, 88},
};
static const otc_maze_wall hard_walls[] = {
    {41, 5, 3, 8},       {3, 8, 4, 49},       {4, 49, 57, 53},  {4, 49, 7, 202},
    {7, 202, 195, 198},  {195, 198, 186, 8},  {186, 8, 39, 5},  {56, 54, 56, 157},
    {57, 106, 158, 162}, {77, 201, 108, 164}, {6, 80, 33, 121}, {192, 146, 87, 91},
    {56, 55, 133, 30},
};
/* A box split by one wall, the goal behind it, a gap of 20 at the far end: small enough for a
 * test to solve in seconds. */
static const otc_maze_wall tiny_walls[] = {
    {0, 0, 100, 0}, {100, 0, 100, 100}, {100, 100, 0, 100}, {0, 100, 0, 0}, {0, 50, 80, 50},
};

static const otc_maze mazes[] = {
    {"medium", 11, medium_walls, 30, 22, 0, 270, 100},
    {"hard", 13, hard_walls, 36, 184, 0, 31, 20},
    {"tiny", 5, tiny_walls, 20, 25, 0, 20, 80},
};

const otc_maze *otc_maze_get(const char *name) {
    for (size_t i = 0; i < sizeof mazes / sizeof mazes[0]; i++)
        if (name && !strcmp(mazes[i].name, name)) return &mazes[i];
    return NULL;
}

static const double PI = 3.14159265358979323846;

/* Distance along the ray from (x, y) in direction (dx, dy) (a unit vector) to wall w when it
 * meets the wall nearer than `best`, else `best`. Signs are tested before dividing: most rays
 * miss most walls, and the divisions were the sensors' main cost. */
static double ray_hit(double x, double y, double dx, double dy, const otc_maze_wall *w,
                      double best) {
    double ex = w->bx - w->ax, ey = w->by - w->ay;
    double den = dx * ey - dy * ex;
    if (den == 0) return best; /* parallel */
    double fx = w->ax - x, fy = w->ay - y;
    double tn = fx * ey - fy * ex; /* t = tn / den along the ray */
    double un = fx * dy - fy * dx; /* u = un / den along the wall */
    if (den < 0) den = -den, tn = -tn, un = -un;
    if (tn < 0 || un < 0 || un > den || tn >= best * den) return best;
    return tn / den;
}

/* The squared distance from (x, y) to wall w. */
static double point_wall2(double x, double y, const otc_maze_wall *w) {
    double ex = w->bx - w->ax, ey = w->by - w->ay, len2 = ex * ex + ey * ey;
    double u = len2 > 0 ? ((x - w->ax) * ex + (y - w->ay) * ey) / len2 : 0;
    u = u < 0 ? 0 : u > 1 ? 1 : u;
    double dx = x - (w->ax + u * ex), dy = y - (w->ay + u * ey);
    return dx * dx + dy * dy;
}

/* The sensors for a heading whose cosine and sine are (c, s): the rangefinders at -90, -45, 0,
 * 45, 90 and 180 degrees are those two rotated exactly (cos 45 = sin 45 = sqrt(1/2)), one
 * sincos a step rather than six (the trigonometry was a fifth of a run). */
static void sense_cs(const otc_maze *m, double x, double y, double heading, double c, double s,
                     float in[OTC_MAZE_N_INPUTS]) {
    const double h = 0.70710678118654752440;
    const double dir[6][2] = {
        {s, -c}, {h * (c + s), h * (s - c)}, {c, s}, {h * (c - s), h * (s + c)}, {-s, c}, {-c, -s}};
    in[0] = 1.0f;
    for (int f = 0; f < 6; f++) {
        double best = OTC_MAZE_RANGE;
        for (int i = 0; i < m->n_walls; i++)
            best = ray_hit(x, y, dir[f][0], dir[f][1], &m->walls[i], best);
        in[1 + f] = (float)(best / OTC_MAZE_RANGE);
    }
    double bearing = atan2(m->goal_y - y, m->goal_x - x) * 180 / PI - heading;
    bearing = fmod(bearing, 360);
    if (bearing < 0) bearing += 360;
    /* Slices start at -45 (the front one wraps through 0): shift so each starts at a multiple
     * of 90. */
    int slice = (int)(fmod(bearing + 45, 360) / 90);
    for (int r = 0; r < 4; r++) in[7 + r] = r == slice ? 1.0f : 0.0f;
}

void otc_maze_sense(const otc_maze *m, double x, double y, double heading,
                    float in[OTC_MAZE_N_INPUTS]) {
    sense_cs(m, x, y, heading, cos(heading * PI / 180), sin(heading * PI / 180), in);
}

static bool collides(const otc_maze *m, double x, double y) {
    for (int i = 0; i < m->n_walls; i++)
        if (point_wall2(x, y, &m->walls[i]) < OTC_MAZE_RADIUS * OTC_MAZE_RADIUS) return true;
    return false;
}

static double clamp3(double v) {
    return v > 3 ? 3 : v < -3 ? -3 : v;
}

otc_status otc_maze_run(const otc_maze *m, otc_maze_policy policy, void *ctx, double *x, double *y,
                        float *path, int *steps, bool *solved) {
    double px = m->start_x, py = m->start_y, heading = m->start_heading, speed = 0, turn = 0;
    bool reached = false;
    int t = 0;
    if (path) path[0] = (float)px, path[1] = (float)py;
    float in0[OTC_MAZE_N_INPUTS], out0[OTC_MAZE_N_OUTPUTS];
    otc_maze_sense(m, px, py, heading, in0);
    for (int w = 0; w < OTC_MAZE_WARMUP; w++) {
        otc_status s = policy(ctx, in0, out0);
        if (s != OTC_OK) return s;
    }
    for (; t < OTC_MAZE_STEPS && !reached; t++) {
        float in[OTC_MAZE_N_INPUTS], out[OTC_MAZE_N_OUTPUTS];
        double c = cos(heading * PI / 180), sn = sin(heading * PI / 180);
        sense_cs(m, px, py, heading, c, sn, in);
        otc_status s = policy(ctx, in, out);
        if (s != OTC_OK) return s;
        /* A non-finite output counts as 0.5: no change. */
        turn = clamp3(turn + (isfinite(out[0]) ? out[0] - 0.5 : 0));
        speed = clamp3(speed + (isfinite(out[1]) ? out[1] - 0.5 : 0));
        double vx = c * speed, vy = sn * speed;
        heading = fmod(heading + turn, 360);
        if (heading < 0) heading += 360;
        if (!collides(m, px + vx, py + vy)) px += vx, py += vy;
        reached = hypot(px - m->goal_x, py - m->goal_y) < OTC_MAZE_GOAL_DIST;
        if (path) path[2 * (t + 1)] = (float)px, path[2 * (t + 1) + 1] = (float)py;
    }
    *x = px;
    *y = py;
    if (steps) *steps = t;
    if (solved) *solved = reached;
    return OTC_OK;
}

static otc_status runner_policy(void *ctx, const float *in, float *out) {
    return otc_neat_runner_forward(ctx, in, 1, out);
}

static otc_status maze_evaluate(const otc_neat_task *task, const otc_neat_config *c,
                                otc_neat_genome *g, uint64_t seed, otc_neat_eval *out) {
    (void)seed; /* the maze is deterministic */
    otc_neat_runner r;
    otc_status s = otc_neat_runner_open(task, c, g, &r);
    if (s != OTC_OK) return s;
    double x, y;
    bool reached = false;
    s = otc_maze_run(task->ctx, runner_policy, &r, &x, &y, NULL, NULL, &reached);
    otc_neat_runner_close(&r);
    if (s != OTC_OK) return s;
    const otc_maze *m = task->ctx;
    double fit = OTC_MAZE_FITNESS_BIAS - hypot(x - m->goal_x, y - m->goal_y);
    out->fitness = fit > 0 ? fit : 0;
    out->solved = reached;
    out->n_bc = 2;
    out->bc[0] = (float)x;
    out->bc[1] = (float)y;
    return OTC_OK;
}

otc_status otc_neat_maze_task_create(const char *name, const otc_neat_config *c,
                                     otc_neat_task **out) {
    const otc_maze *m = otc_maze_get(name);
    if (!m)
        return otc_fail(OTC_ERR_ARG,
                        "unknown maze '%s' (expected maze:medium, maze:hard or "
                        "maze:tiny)",
                        name);
    if (c->num_inputs != OTC_MAZE_N_INPUTS || c->num_outputs != OTC_MAZE_N_OUTPUTS)
        return otc_fail(OTC_ERR_CONFIG,
                        "[DefaultGenome] num_inputs, num_outputs: task maze:%s has %d inputs "
                        "(bias, 6 rangefinders, 4 radars) and %d outputs, the config says %d "
                        "and %d",
                        name, OTC_MAZE_N_INPUTS, OTC_MAZE_N_OUTPUTS, c->num_inputs, c->num_outputs);
    otc_neat_task *t = calloc(1, sizeof *t);
    if (!t) return otc_fail(OTC_ERR_NOMEM, "out of memory for a task");
    snprintf(t->name, sizeof t->name, "maze:%s", name);
    t->n_inputs = OTC_MAZE_N_INPUTS;
    t->n_outputs = OTC_MAZE_N_OUTPUTS;
    t->evaluate = maze_evaluate;
    t->ctx = (void *)m;
    t->n_bc = 2;
    t->novelty_threshold = 6.0; /* the paper's initial archive threshold */
    *out = t;
    return OTC_OK;
}

/* ---- the picture ---------------------------------------------------------------------------- */

typedef struct {
    char *buf;
    size_t len, cap;
    bool failed;
} svg_text;

static void put(svg_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(svg_text *t, const char *fmt, ...) {
    if (t->failed) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->failed = true;
            return;
        }
        if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = (t->cap + (size_t)n + 1) * 2;
        char *b = realloc(t->buf, cap);
        if (!b) {
            t->failed = true;
            return;
        }
        t->buf = b;
        t->cap = cap;
    }
}

otc_status otc_maze_save_svg(const otc_maze *m, const otc_neat_population *p,
                             const otc_neat_task *task, const char *path) {
    if (!m || !p || !path) return otc_fail(OTC_ERR_ARG, "otc_maze_save_svg: NULL argument");
    double x0 = INFINITY, y0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY;
    for (int i = 0; i < m->n_walls; i++) {
        const otc_maze_wall *w = &m->walls[i];
        x0 = fmin(x0, fmin(w->ax, w->bx)), x1 = fmax(x1, fmax(w->ax, w->bx));
        y0 = fmin(y0, fmin(w->ay, w->by)), y1 = fmax(y1, fmax(w->ay, w->by));
    }
    double scale = 600 / fmax(x1 - x0, y1 - y0), pad = 10;
    svg_text t = {0};
#define X(v) (pad + ((v)-x0) * scale)
#define Y(v) (pad + ((v)-y0) * scale)
    put(&t,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\">\n"
        "<title>%s: final positions (grey), novelty archive (blue), champion path (red)</title>\n"
        "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
        2 * pad + (x1 - x0) * scale, 2 * pad + (y1 - y0) * scale, task ? task->name : m->name);
    int n = 0, dim = 0;
    const float *a = otc_neat_novelty_archive(p, &n, &dim);
    for (int i = 0; a && dim == 2 && i < n; i++)
        put(&t, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2\" fill=\"#3060c0\" opacity=\"0.6\"/>\n",
            X(a[2 * i]), Y(a[2 * i + 1]));
    const float *b = otc_neat_behaviours(p, &n, &dim);
    for (int i = 0; b && dim == 2 && i < n; i++)
        put(&t, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2\" fill=\"#808080\"/>\n", X(b[2 * i]),
            Y(b[2 * i + 1]));
    const otc_neat_genome *champ = otc_neat_champion(p);
    float *trail = malloc(sizeof *trail * 2 * (OTC_MAZE_STEPS + 1));
    if (champ && trail && task) {
        otc_neat_runner r;
        int steps = 0;
        double fx, fy;
        if (otc_neat_runner_open(task, &p->config, champ, &r) == OTC_OK) {
            otc_status s = otc_maze_run(m, runner_policy, &r, &fx, &fy, trail, &steps, NULL);
            otc_neat_runner_close(&r);
            if (s == OTC_OK) {
                put(&t,
                    "<polyline fill=\"none\" stroke=\"#d02020\" stroke-width=\"1.5\" points=\"");
                for (int i = 0; i <= steps; i++)
                    put(&t, "%.1f,%.1f ", X(trail[2 * i]), Y(trail[2 * i + 1]));
                put(&t, "\"/>\n");
            }
        }
    }
    free(trail);
    for (int i = 0; i < m->n_walls; i++) {
        const otc_maze_wall *w = &m->walls[i];
        put(&t,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\" "
            "stroke-width=\"3\"/>\n",
            X(w->ax), Y(w->ay), X(w->bx), Y(w->by));
    }
    put(&t, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"none\" stroke=\"green\"/>\n",
        X(m->start_x), Y(m->start_y), OTC_MAZE_RADIUS * scale);
    put(&t, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"gold\" stroke=\"black\"/>\n",
        X(m->goal_x), Y(m->goal_y), OTC_MAZE_GOAL_DIST * scale);
    put(&t, "</svg>\n");
#undef X
#undef Y
    otc_status s = t.failed ? otc_fail(OTC_ERR_NOMEM, "%s: out of memory", path)
                            : otc_write_file_atomic(path, t.buf, t.len);
    free(t.buf);
    return s;
}
