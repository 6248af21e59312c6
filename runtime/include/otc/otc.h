/* The otc runtime in one include. */
#ifndef OTC_OTC_H
#define OTC_OTC_H

#include "data.h"
#include "error.h"
#include "executor.h"
#include "graph.h"
#include "layers.h"
#include "limits.h"
#include "model.h"
#include "ops.h"
#include "optim.h"
#include "rng.h"
#include "tensor.h"

#define OTC_VERSION "0.1.0"

#endif
