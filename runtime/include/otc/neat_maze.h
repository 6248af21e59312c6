/* The maze navigation task of Lehman & Stanley (2011, "Abandoning objectives"): a round robot
 * with six rangefinders and four pie-slice radars towards the goal, in the medium or hard map,
 * and a picture of where a run's robots ended. */
#ifndef OTC_NEAT_MAZE_H
#define OTC_NEAT_MAZE_H

#include "neat.h"

#define OTC_MAZE_N_INPUTS     11  /* bias, 6 rangefinders, 4 radars */
#define OTC_MAZE_N_OUTPUTS    2   /* turning, speed */
#define OTC_MAZE_STEPS        400 /* time steps per episode */
#define OTC_MAZE_RADIUS       8.0 /* the robot's */
#define OTC_MAZE_RANGE        100.0
#define OTC_MAZE_GOAL_DIST    5.0   /* success: the robot comes this close to the goal */
#define OTC_MAZE_FITNESS_BIAS 300.0 /* fitness = this - the final distance to the goal */
#define OTC_MAZE_WARMUP       10    /* activations on the start's inputs before the first step */

typedef struct {
    double ax, ay, bx, by;
} otc_maze_wall;

typedef struct {
    const char *name;
    int n_walls;
    const otc_maze_wall *walls;
    double start_x, start_y, start_heading; /* heading in degrees, 0 along +x */
    double goal_x, goal_y;
} otc_maze;

/* "medium", "hard" (the paper's maps) or "tiny" (a box with one wall, for tests); NULL when
 * unknown. */
const otc_maze *otc_maze_get(const char *name);

/* The network's inputs for a robot at (x, y) heading `heading` degrees: 1 (bias), each
 * rangefinder's distance to the nearest wall along its ray (at -90, -45, 0, 45, 90 and 180
 * degrees from the heading) over OTC_MAZE_RANGE (1 when none is in range), and each radar
 * (the goal's bearing in [-45, 45), [45, 135), [135, 225), [225, 315) degrees from the
 * heading) 1 when the goal lies in it, else 0. */
void otc_maze_sense(const otc_maze *m, double x, double y, double heading,
                    float in[OTC_MAZE_N_INPUTS]);

/* One episode of a network: first OTC_MAZE_WARMUP activations on the start's inputs, outputs
 * unused (the paper's code lets a recurrent net settle so), then each step: outputs[0] turns
 * (angular velocity += out - 0.5), outputs[1] accelerates (speed += out - 0.5), both clamped to +-3
 * per step; a move that would bring the robot within its radius of a wall is not made. It stops on
 * reaching the goal. The final position in *x, *y; the path (steps + 1 points, may be NULL) in
 * path[2 * i], path[2 * i + 1]; *solved when it reached the goal. */
typedef otc_status (*otc_maze_policy)(void *ctx, const float *in, float *out);
otc_status otc_maze_run(const otc_maze *m, otc_maze_policy policy, void *ctx, double *x, double *y,
                        float *path, int *steps, bool *solved);

/* An SVG of the maze: walls, start and goal, every final position of the population's last
 * evaluated generation (grey), the novelty archive (blue) and the champion's path (red). */
otc_status otc_maze_save_svg(const otc_maze *m, const otc_neat_population *p,
                             const otc_neat_task *task, const char *path);

#endif
