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
#include "expr.h"
#include "ops.h"
#include "optim.h"
#include "rng.h"
#include "tensor.h"

/* OTC_VERSION, from project(VERSION) in the top CMakeLists.txt. */
#include "otc/version.h"

#endif
