/* The pole physics' sin and cos (pole_trig.h) as a public function, so tests can measure them. */
#include "otc/pole.h"
#include "pole_trig.h"

void otc_pole_sincos(double x, double *s, double *c) {
    pole_sincos(x, s, c);
}
