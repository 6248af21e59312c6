/* Which executor holds newer parameter values than its graph (a compiled backend keeps its
 * own copy while it trains): saving the graph or freeing that executor writes them back
 * first, so a model saved after training holds the trained weights whatever the caller
 * forgot. Internal to the runtime. */
#ifndef OTC_GRAPH_PARAMS_H
#define OTC_GRAPH_PARAMS_H

#include "otc/executor.h"

/* ex trained g's parameters (NULL: the graph holds its newest values). */
void otc_graph_set_params_holder(otc_graph *g, otc_executor *ex);
otc_executor *otc_graph_params_holder(const otc_graph *g);
/* Writes the holder's values into g (the graph's values change, not what it is: a saved or
 * read model means its newest weights). */
otc_status otc_graph_sync_from_holder(const otc_graph *g);

#endif
