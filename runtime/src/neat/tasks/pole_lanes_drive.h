/* The loop that feeds a source's trials to lanes, shared by the double and the single pole. */
#ifndef OTC_POLE_LANES_DRIVE_H
#define OTC_POLE_LANES_DRIVE_H

#include <stdbool.h>

#include "otc/pole_lanes.h"

/* One pole's lanes as the driver sees them: `L` is its otc_dpole_lanes or otc_pole1_lanes. */
typedef struct {
    void *L;
    int lanes;
    const bool *running; /* L's running flags */
    /* Lane `lane` starts the trial at `start` (the source's state). */
    void (*start)(void *L, int lane, const void *start);
    /* The lane's trial to its end on the scalar loop (the last trial, alone). */
    void (*finish_alone)(void *L, int lane, const otc_pole_agent *agent);
    /* Every running lane's policy, then one action on them all: the ended lanes' bits. */
    unsigned (*act)(void *L, const otc_pole_lane_source *src);
    void (*result)(const void *L, int lane, otc_pole_result *result);
} otc_pole_lanes_kind;

/* Runs src's trials on k's lanes until the source has none left for any lane. */
void otc_pole_lanes_drive(const otc_pole_lanes_kind *k, const otc_pole_lane_source *src);

#endif
