/* The loop that feeds a source's trials to lanes (pole_lanes_drive.h): idle lanes take the next
 * trial, the last trial left alone finishes on the scalar loop, ended trials report. */
#include "pole_lanes_drive.h"

/* The larger of the two poles' states, for a trial's start. */
typedef union {
    otc_dpole_state dpole;
    otc_pole1_state pole1;
} any_start;

static void report(const otc_pole_lanes_kind *k, const otc_pole_lane_source *src, int lane) {
    otc_pole_result r;
    k->result(k->L, lane, &r);
    src->done(src->ctx, lane, &r);
}

void otc_pole_lanes_drive(const otc_pole_lanes_kind *k, const otc_pole_lane_source *src) {
    bool retired[OTC_POLE_LANES_MAX] = {false};
    for (;;) {
        int running = 0;
        for (int l = 0; l < k->lanes; l++) running += k->running[l];
        for (int l = 0; l < k->lanes; l++) {
            if (k->running[l] || retired[l]) continue;
            any_start start;
            int r = src->next(src->ctx, l, running == 0, &start);
            if (r == 1) {
                const otc_pole_agent *a = &src->agents[l];
                if (a->reset) a->reset(a->ctx);
                k->start(k->L, l, &start);
                running++;
            } else if (r == 0 || running == 0) {
                retired[l] = true;
            }
        }
        int left = 0, lone = -1;
        for (int l = 0; l < k->lanes; l++) {
            left += !retired[l];
            if (k->running[l]) lone = l;
        }
        if (running == 0) {
            if (!left) return;
            continue;
        }
        if (running == 1 && left == 1) {
            /* The last trial, alone: the scalar loop, without the lanes' bookkeeping. */
            k->finish_alone(k->L, lone, &src->agents[lone]);
            report(k, src, lone);
            continue;
        }
        unsigned ended = k->act(k->L, src);
        for (int l = 0; ended; l++, ended >>= 1)
            if (ended & 1u) report(k, src, l);
    }
}
